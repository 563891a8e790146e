"""The migrated schema equals oxide-batch's own, read from the catalog."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

from batchboard import conf, schema
from batchboard.schema import embedded
from tests.pg_catalog import describe

REFERENCE = (
    Path(__file__).resolve().parent.parent / "data" / "oxide_batch_v4_catalog.json"
)


def _reference() -> dict[str, Any]:
    return json.loads(REFERENCE.read_text())


@pytest.mark.postgresql
@pytest.mark.django_db
def test_postgresql_catalog_equals_oxide_batch_migrations() -> None:
    """Tables, columns, constraints and indexes match the reference dump."""
    reference = _reference()
    with connections[conf.database_alias()].cursor() as cursor:
        actual = describe(cursor)
    assert sorted(actual) == sorted(reference)
    for table in reference:
        # Compare table by table so that a failure names the table.
        assert actual[table]["columns"] == reference[table]["columns"], table
        assert actual[table]["constraints"] == reference[table]["constraints"], table
        assert actual[table]["indexes"] == reference[table]["indexes"], table


def test_reference_dump_covers_spec_1_3() -> None:
    """The reference holds the twelve tables and the named spec objects."""
    reference = _reference()
    assert sorted(reference) == sorted(schema.TABLE_NAMES)
    execution = reference["ob_job_execution"]
    assert "ob_job_execution_upgrade_fk" in execution["constraints"]
    one_unresolved = execution["indexes"]["ob_job_execution_one_unresolved"]
    assert one_unresolved.startswith("CREATE UNIQUE INDEX")
    assert "WHERE" in one_unresolved
    assert all(
        column["collation"] == "C"
        for table in reference.values()
        for column in table["columns"]
        if column["type"].startswith("character varying")
    )


def _sqlite_objects(cursor: Any, table: str) -> tuple[list[str], set[str], set[str]]:
    cursor.execute(f'PRAGMA table_info("{table}")')
    columns = [row[1] for row in cursor.fetchall()]
    cursor.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = %s", [table]
    )
    (sql,) = cursor.fetchone()
    constraints = set(re.findall(r'CONSTRAINT "([^"]+)"', sql))
    cursor.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = %s "
        "AND name NOT LIKE 'sqlite_autoindex_%%'",
        [table],
    )
    indexes = {row[0] for row in cursor.fetchall()}
    return columns, constraints, indexes


@pytest.mark.django_db
def test_sqlite_has_the_same_tables_columns_and_names() -> None:
    """SQLite carries every column in order and every constraint name."""
    connection = connections[conf.database_alias()]
    if connection.vendor != "sqlite":
        pytest.skip("the SQLite layout is checked on SQLite")
    reference = _reference()
    with connection.cursor() as cursor:
        for table, expected in reference.items():
            columns, constraints, indexes = _sqlite_objects(cursor, table)
            assert columns == [c["name"] for c in expected["columns"]], table
            named = set(expected["constraints"])
            if expected["columns"][0]["name"] == "id":
                # SQLite declares an identity key inline, without a name.
                named.discard(f"{table}_pkey")
            assert constraints == named, table
            standalone = set(expected["indexes"]) - set(expected["constraints"])
            # Besides oxide-batch's, only batchboard's embedded-only indexes.
            extra = {name for name, on, _ in embedded.SQLITE_INDEXES if on == table}
            assert indexes == standalone | extra, table
