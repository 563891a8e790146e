"""Attached mode on PostgreSQL: migrate issues no DDL and checks name faults."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from batchboard import schema
from tests.pg_catalog import snapshot
from tests.schema.test_catalog import REFERENCE
from tests.site.commands import connect, manage, scratch_database, url_for

pytestmark = [pytest.mark.postgresql, pytest.mark.slow]


def _catalog(database: str) -> dict[str, Any]:
    with connect(database) as connection, connection.cursor() as cursor:
        return snapshot(cursor)


def _run_sql(database: str, *statements: str) -> None:
    with connect(database) as connection:
        for statement in statements:
            connection.execute(statement)


@pytest.fixture(scope="module")
def oxide_batch_database() -> Iterator[str]:
    """Hold schema version 4 as oxide-batch's migrator would have left it."""
    with scratch_database("attached") as name:
        _run_sql(name, *schema.postgresql_ddl())
        yield name


def _attached_env(metadata: str, default_url: str) -> dict[str, str]:
    return {
        "DJANGO_DEBUG": "1",
        "BATCHBOARD_SCHEMA": "attached",
        "BATCHBOARD_DATABASE_URL": url_for(metadata),
        "DATABASE_URL": default_url,
    }


def test_migrate_leaves_a_separate_metadata_database_untouched(
    oxide_batch_database: str, tmp_path: Path
) -> None:
    """migrate with Django's tables in SQLite changes nothing in the catalog."""
    before = _catalog(oxide_batch_database)
    env = _attached_env(oxide_batch_database, f"sqlite:///{tmp_path}/site.sqlite3")
    result = manage("migrate", "--no-input", env=env)
    assert result.returncode == 0, result.output
    assert "Applying auth.0001_initial" in result.stdout
    assert _catalog(oxide_batch_database) == before
    # batchboard's own state went to the site's database instead.
    site = sqlite3.connect(tmp_path / "site.sqlite3")
    tables = {row[0] for row in site.execute("SELECT name FROM sqlite_master")}
    site.close()
    assert {"batchboard_bulk_operation", "batchboard_bulk_item"} <= tables


def test_migrate_with_both_databases_on_postgresql(oxide_batch_database: str) -> None:
    """The production layout: Django's tables in one database, metadata in another."""
    before = _catalog(oxide_batch_database)
    with scratch_database("site") as site:
        env = _attached_env(oxide_batch_database, url_for(site))
        result = manage("migrate", "--no-input", env=env)
        assert result.returncode == 0, result.output
        created = {relation[1] for relation in _catalog(site)["relations"]}
        login = manage("batchboard_demo_login", env={**env, "BATCHBOARD_DEMO": "1"})
        assert login.returncode == 0, login.output
    assert "django_migrations" in created
    assert "auth_permission" in created
    assert {"batchboard_bulk_operation", "batchboard_bulk_item"} <= created
    assert _catalog(oxide_batch_database) == before


def test_migrate_database_batchboard_is_refused(
    oxide_batch_database: str, tmp_path: Path
) -> None:
    """Migrating the metadata alias stops with one sentence and no DDL."""
    before = _catalog(oxide_batch_database)
    env = _attached_env(oxide_batch_database, f"sqlite:///{tmp_path}/site.sqlite3")
    result = manage("migrate", "--database", "batchboard", "--no-input", env=env)
    assert result.returncode != 0
    assert "Traceback" not in result.output
    assert "never migrates it" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert _catalog(oxide_batch_database) == before


def test_migrate_with_metadata_in_the_default_database(tmp_path: Path) -> None:
    """Sharing one database, only Django's own tables appear, in public."""
    with scratch_database("shared") as name:
        _run_sql(name, *schema.postgresql_ddl())
        before = _catalog(name)
        env = {
            "DJANGO_DEBUG": "1",
            "BATCHBOARD_SCHEMA": "attached",
            "DATABASE_URL": url_for(name),
        }
        result = manage("migrate", "--no-input", env=env)
        assert result.returncode == 0, result.output
        after = _catalog(name)
        assert after["schemas"]["oxide_batch"] == before["schemas"]["oxide_batch"]
        assert after["namespaces"] == before["namespaces"]
        created = set(after["relations"]) - set(before["relations"])
        assert {r[0] for r in created} == {"public"}
        assert ("public", "django_migrations", "r") in created
        # Django's tables and batchboard's own state (bulk operations,
        # tokens, alerts; their indexes are named bb_...), never in the
        # oxide_batch schema.
        assert all(
            r[1].startswith(("django_", "auth_", "batchboard_", "bb_")) for r in created
        )
        assert ("public", "batchboard_bulk_item", "r") in created
        check = manage("check", "--database", "default", env=env)
        assert check.returncode == 0, check.output


def _check(database: str, tmp_path: Path) -> Any:
    env = _attached_env(database, f"sqlite:///{tmp_path}/site.sqlite3")
    return manage("check", "--database", "batchboard", env=env)


def test_check_reports_missing_schema(tmp_path: Path) -> None:
    """A database without the schema: E011, and nothing is created."""
    with scratch_database("empty") as name:
        before = _catalog(name)
        result = _check(name, tmp_path)
        assert result.returncode != 0
        assert "batchboard.E011" in result.stderr
        assert "Traceback" not in result.output
        assert _catalog(name) == before


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("DELETE FROM oxide_batch.ob_schema_version", "batchboard.E012"),
        ("UPDATE oxide_batch.ob_schema_version SET version = 3", "batchboard.E013"),
        ("UPDATE oxide_batch.ob_schema_version SET version = 5", "batchboard.E014"),
    ],
)
def test_check_reports_version_faults(
    statement: str, expected: str, tmp_path: Path
) -> None:
    """A missing row, version 3 and version 5 each get their own id."""
    with scratch_database("version") as name:
        _run_sql(name, *schema.postgresql_ddl(), statement)
        result = _check(name, tmp_path)
    assert result.returncode != 0
    assert expected in result.stderr
    assert "HINT:" in result.stderr
    assert "Traceback" not in result.output


def test_check_reports_unreachable_server(tmp_path: Path) -> None:
    """A server that refuses connections: E010 naming BATCHBOARD_DATABASE_URL."""
    env = {
        "DJANGO_DEBUG": "1",
        "BATCHBOARD_SCHEMA": "attached",
        "BATCHBOARD_DATABASE_URL": "postgresql://postgres@127.0.0.1:1/nothing",
        "DATABASE_URL": f"sqlite:///{tmp_path}/site.sqlite3",
    }
    result = manage("check", "--database", "batchboard", env=env)
    assert result.returncode != 0
    assert "batchboard.E010" in result.stderr
    assert "BATCHBOARD_DATABASE_URL" in result.stderr
    assert "Traceback" not in result.output


def test_check_passes_on_a_supported_schema(
    oxide_batch_database: str, tmp_path: Path
) -> None:
    """Version 4 attached: the database check is silent."""
    result = _check(oxide_batch_database, tmp_path)
    assert result.returncode == 0, result.output
    assert "no issues" in result.stdout


def test_managed_migrate_refuses_an_existing_schema(tmp_path: Path) -> None:
    """Managed mode stops before any DDL on a database oxide-batch created."""
    with scratch_database("managed") as name:
        _run_sql(name, *schema.postgresql_ddl())
        before = _catalog(name)["schemas"]["oxide_batch"]
        env = {
            "DJANGO_DEBUG": "1",
            "DATABASE_URL": f"sqlite:///{tmp_path}/site.sqlite3",
            "BATCHBOARD_DATABASE_URL": url_for(name),
        }
        result = manage("migrate", "--database", "batchboard", "--no-input", env=env)
        assert result.returncode == 2
        assert "already has the oxide-batch schema" in result.stderr
        assert "Traceback" not in result.output
        assert _catalog(name)["schemas"]["oxide_batch"] == before


def test_managed_separate_database_holds_exactly_the_reference(tmp_path: Path) -> None:
    """A managed metadata database gets oxide-batch's catalog, bookkeeping apart."""
    reference = json.loads(REFERENCE.read_text())
    with scratch_database("managed_fresh") as name:
        env = {
            "DJANGO_DEBUG": "1",
            "DATABASE_URL": f"sqlite:///{tmp_path}/site.sqlite3",
            "BATCHBOARD_DATABASE_URL": url_for(name),
        }
        result = manage("migrate", "--database", "batchboard", "--no-input", env=env)
        assert result.returncode == 0, result.output
        catalog = _catalog(name)
        check = manage("check", "--database", "batchboard", env=env)
    assert catalog["schemas"]["oxide_batch"] == reference
    assert ("public", "django_migrations", "r") in catalog["relations"]
    assert check.returncode == 0, check.output
