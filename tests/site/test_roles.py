"""The documented least-privilege roles grant exactly what each class needs."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from batchboard import schema
from tests.site.commands import (
    CHECKOUT,
    connect,
    manage,
    scratch_database,
    scratch_name,
    url_for,
)

pytestmark = [pytest.mark.postgresql, pytest.mark.slow]

CLASSES = ("explorer", "operator", "retention")


def _readme_grants() -> str:
    readme = (CHECKOUT / "docs" / "configuration.md").read_text()
    blocks = re.findall(r"```sql\n(.*?)```", readme, flags=re.S)
    (grants,) = [block for block in blocks if "CREATE ROLE" in block]
    return grants


@pytest.fixture(scope="module")
def roles() -> Iterator[tuple[str, dict[str, str]]]:
    """Apply the documented statements, renamed, to a scratch database."""
    names = {kind: scratch_name(kind) for kind in CLASSES}
    with scratch_database("roles") as database:
        sql = _readme_grants().replace("DATABASE oxide ", f'DATABASE "{database}" ')
        for kind, name in names.items():
            sql = sql.replace(f"batchboard_{kind}", name)
        with connect(database) as connection:
            for name in reversed(names.values()):
                connection.execute(f'DROP ROLE IF EXISTS "{name}"')
            for statement in schema.postgresql_ddl():
                connection.execute(statement)
            connection.execute(sql)
        try:
            yield database, names
        finally:
            with connect(database) as connection:
                for name in reversed(names.values()):
                    connection.execute(f'DROP OWNED BY "{name}"')
                    connection.execute(f'DROP ROLE "{name}"')


def _privilege(database: str, check: str, *args: str) -> bool:
    with connect(database) as connection:
        row = connection.execute(f"SELECT {check}", args).fetchone()
    assert row is not None
    return bool(row[0])


def _table(database: str, role: str, table: str, privilege: str) -> bool:
    return _privilege(
        database,
        "has_table_privilege(%s, %s, %s)",
        role,
        f"oxide_batch.{table}",
        privilege,
    )


def _column(database: str, role: str, table: str, column: str) -> bool:
    return _privilege(
        database,
        "has_column_privilege(%s, %s, %s, 'UPDATE')",
        role,
        f"oxide_batch.{table}",
        column,
    )


def test_explorer_reads_everything_and_writes_nothing(
    roles: tuple[str, dict[str, str]],
) -> None:
    """SELECT on all twelve tables; no INSERT, UPDATE or DELETE anywhere."""
    database, names = roles
    role = names["explorer"]
    for table in schema.TABLE_NAMES:
        assert _table(database, role, table, "SELECT"), table
        for privilege in ("INSERT", "UPDATE", "DELETE"):
            assert not _table(database, role, table, privilege), (table, privilege)
    with psycopg.connect(url_for(database, user=role)) as c:
        (version,) = c.execute("SELECT version FROM ob_schema_version").fetchone()
        assert version == 4
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("DELETE FROM ob_job_instance")


def test_operator_moves_executions_but_never_owner_tokens(
    roles: tuple[str, dict[str, str]],
) -> None:
    """Audit inserts and state columns only; owner_token stays out of reach."""
    database, names = roles
    role = names["operator"]
    assert _table(database, role, "ob_operator_request", "INSERT")
    assert _table(database, role, "ob_recovery_decision", "INSERT")
    assert _column(database, role, "ob_job_execution", "status")
    assert _column(database, role, "ob_job_execution", "stop_requested_by")
    assert not _column(database, role, "ob_job_execution", "owner_token")
    assert not _column(database, role, "ob_job_execution", "parameters")
    assert not _table(database, role, "ob_job_execution", "DELETE")
    assert not _table(database, role, "ob_retention_action", "INSERT")
    assert _table(database, role, "ob_step_partition", "SELECT")


def test_retention_holds_and_purges_only(roles: tuple[str, dict[str, str]]) -> None:
    """Hold columns, purge deletes and retention audit; nothing else."""
    database, names = roles
    role = names["retention"]
    assert _table(database, role, "ob_retention_action", "INSERT")
    assert _column(database, role, "ob_job_instance", "hold_actor")
    assert not _column(database, role, "ob_job_instance", "identifying_parameters")
    assert _column(database, role, "ob_flow_decision", "reused_decision_id")
    for table in ("ob_job_instance", "ob_job_execution", "ob_component_state"):
        assert _table(database, role, table, "DELETE"), table
    assert not _table(database, role, "ob_job_definition", "DELETE")
    assert not _table(database, role, "ob_operator_request", "INSERT")


def test_site_attaches_as_the_explorer(
    roles: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    """The standalone site checks and migrates with the read-only role."""
    database, names = roles
    env = {
        "DJANGO_DEBUG": "1",
        "BATCHBOARD_SCHEMA": "attached",
        "DATABASE_URL": f"sqlite:///{tmp_path}/site.sqlite3",
        "BATCHBOARD_DATABASE_URL": url_for(database, user=names["explorer"]),
    }
    check = manage("check", "--database", "batchboard", env=env)
    assert check.returncode == 0, check.output
    migrate = manage("migrate", "--no-input", env=env)
    assert migrate.returncode == 0, migrate.output
