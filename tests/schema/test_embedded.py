"""batchboard's embedded-only indexes exist on managed SQLite and nowhere else."""

from __future__ import annotations

import pytest
from django.db import connections
from django.db.migrations.state import ProjectState

from batchboard import conf
from batchboard.schema import embedded
from batchboard.schema.operations import CreateEmbeddedIndexes

pytestmark = pytest.mark.django_db


def _index_names(alias: str) -> set[str]:
    connection = connections[alias]
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
        else:
            cursor.execute("SELECT indexname FROM pg_indexes")
        return {row[0] for row in cursor.fetchall()}


def test_the_indexes_exist_on_sqlite_only() -> None:
    alias = conf.database_alias()
    names = {name for name, _, _ in embedded.SQLITE_INDEXES}
    present = _index_names(alias) & names
    if connections[alias].vendor == "sqlite":
        assert present == names
    else:
        # PostgreSQL keeps oxide-batch's schema exactly.
        assert present == set()


def test_each_index_serves_the_statement_it_is_for() -> None:
    connection = connections[conf.database_alias()]
    if connection.vendor != "sqlite":
        pytest.skip("the embedded indexes are SQLite's")
    with connection.cursor() as cursor:
        cursor.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM ob_job_execution "
            "WHERE status = 'FAILED' AND id < 100 ORDER BY id DESC LIMIT 50"
        )
        plan = " ".join(row[3] for row in cursor.fetchall())
        assert "bb_execution_status_identity (status=? AND id<?)" in plan
        assert "TEMP B-TREE" not in plan
        for name, table, column in embedded.SQLITE_INDEXES[1:]:
            # The lookup SQLite runs for a foreign key check on delete.
            cursor.execute(
                f"EXPLAIN QUERY PLAN SELECT 1 FROM {table} WHERE {column} = 1"
            )
            plan = " ".join(row[3] for row in cursor.fetchall())
            assert f"USING COVERING INDEX {name}" in plan, plan


@pytest.mark.django_db(transaction=True)
def test_the_operation_adds_and_drops_them_on_sqlite() -> None:
    connection = connections[conf.database_alias()]
    if connection.vendor != "sqlite":
        pytest.skip("the embedded indexes are SQLite's")
    operation = CreateEmbeddedIndexes()
    names = {name for name, _, _ in embedded.SQLITE_INDEXES}
    state = ProjectState()
    with connection.schema_editor() as editor:
        operation.database_backwards("batchboard", editor, state, state)
    assert not _index_names(connection.alias) & names
    with connection.schema_editor() as editor:
        operation.database_forwards("batchboard", editor, state, state)
    assert _index_names(connection.alias) & names == names
    assert operation.deconstruct() == ("CreateEmbeddedIndexes", [], {})
    assert "SQLite" in operation.describe()
    one = CreateEmbeddedIndexes(names=("bb_operator_request_instance",))
    with connection.schema_editor() as editor:
        one.database_backwards("batchboard", editor, state, state)
    assert names - _index_names(connection.alias) == {"bb_operator_request_instance"}
    with connection.schema_editor() as editor:
        one.database_forwards("batchboard", editor, state, state)
    assert _index_names(connection.alias) & names == names
    assert one.deconstruct() == (
        "CreateEmbeddedIndexes",
        [],
        {"names": ("bb_operator_request_instance",)},
    )


def test_the_migrations_add_each_index_once() -> None:
    """Each migration names its own indexes; together they are all of them."""
    from django.db.migrations.loader import MigrationLoader

    loader = MigrationLoader(None, ignore_no_migrations=True)
    added: list[str] = []
    for key, migration in sorted(loader.disk_migrations.items()):
        if key[0] != "batchboard":
            continue
        for operation in migration.operations:
            if isinstance(operation, CreateEmbeddedIndexes):
                assert operation.names is not None, key
                added += operation.names
    assert sorted(added) == sorted(name for name, _, _ in embedded.SQLITE_INDEXES)
    with pytest.raises(ValueError):
        CreateEmbeddedIndexes(names=("bb_no_such_index",))


def test_the_statements_name_every_index() -> None:
    created = embedded.sqlite_statements()
    dropped = embedded.sqlite_statements(drop=True)
    assert len(created) == len(dropped) == len(embedded.SQLITE_INDEXES)
    for (name, table, _), create, drop in zip(
        embedded.SQLITE_INDEXES, created, dropped, strict=True
    ):
        assert f'"{name}" ON "{table}"' in create
        assert drop == f'DROP INDEX IF EXISTS "{name}"'
