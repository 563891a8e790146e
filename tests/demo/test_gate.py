"""
The demo gate: without ``BATCHBOARD_DEMO=1`` no demo command writes anything.

Each writer is run with the variable unset and must refuse with one sentence
naming the variable and the target database, before any statement reaches
any connection: the database is the same afterwards, row for row and (on
PostgreSQL) sequence for sequence. The standalone site's ``manage.py`` runs
prove the exit status and the same on a SQLite file (byte for byte) and on
PostgreSQL in managed and attached mode.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connections
from django.test.utils import CaptureQueriesContext

from batchboard import conf, schema
from batchboard.demo import gate
from tests import factories
from tests.site.commands import connect, manage, scratch_database, url_for

#: Every demo command that writes, with small arguments that would write.
WRITERS: tuple[tuple[str, ...], ...] = (
    ("batchboard_seed", "--instances", "2", "--seed", "1"),
    ("batchboard_seed", "--bulk", "--executions", "5"),
    ("batchboard_simulate", "--max-seconds", "0.3", "--tick", "0.1"),
    ("batchboard_example_job", "--records", "10"),
    ("batchboard_demo_login",),
)


def _ids(writer: tuple[str, ...]) -> str:
    return " ".join(writer[:2])


def refusal(command: str, alias: str, name: object) -> str:
    """Return the gate's sentence for ``command`` writing to ``alias``."""
    return (
        f"{command} writes demo data and runs only with BATCHBOARD_DEMO=1, so "
        f"it left the database {alias!r} (NAME {str(name)!r}) untouched."
    )


def assert_one_sentence(text: str) -> None:
    """One line, one full stop at its end (a path's dots are not stops)."""
    assert "\n" not in text.strip()
    assert text.strip().endswith(".")
    assert not re.search(r"\.\s", text.strip()), text


# -- dumps ---------------------------------------------------------------------


def sqlite_dump(cursor: Any) -> dict[str, Any]:
    """Return the schema and every row of every table of a SQLite database."""
    cursor.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
    master = cursor.fetchall()
    dump: dict[str, Any] = {"schema": master}
    for kind, name, _sql in master:
        if kind == "table":
            cursor.execute(f'SELECT * FROM "{name}"')
            dump[name] = sorted(repr(row) for row in cursor.fetchall())
    return dump


def postgresql_dump(cursor: Any) -> dict[str, Any]:
    """Return every row of every table and every sequence's last value."""
    cursor.execute(
        "SELECT table_schema, table_name FROM information_schema.tables "
        "WHERE table_type = 'BASE TABLE' "
        "AND table_schema NOT IN ('pg_catalog', 'information_schema') "
        "ORDER BY 1, 2"
    )
    dump: dict[str, Any] = {}
    for namespace, table in cursor.fetchall():
        cursor.execute(f'SELECT t::text FROM "{namespace}"."{table}" t ORDER BY 1')
        dump[f"{namespace}.{table}"] = [row[0] for row in cursor.fetchall()]
    cursor.execute(
        "SELECT schemaname, sequencename, last_value FROM pg_sequences ORDER BY 1, 2"
    )
    dump["sequences"] = cursor.fetchall()
    return dump


def dump_alias(alias: str) -> dict[str, Any]:
    connection = connections[alias]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            return postgresql_dump(cursor)
        return sqlite_dump(cursor)


def dump_database(database: str) -> dict[str, Any]:
    """Dump a PostgreSQL database of the suite's server by name."""
    with connect(database) as connection, connection.cursor() as cursor:
        return postgresql_dump(cursor)


def file_bytes(folder: Path) -> dict[str, bytes]:
    """Return every file below ``folder`` (a database and its journals)."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


# -- in process ------------------------------------------------------------------


@pytest.fixture
def history() -> None:
    """Some metadata rows and a user, so that a write would show."""
    instance = factories.instance()
    factories.execution(instance, "FAILED")
    User.objects.create_user("someone", password="x")


@pytest.mark.django_db
@pytest.mark.usefixtures("history")
@pytest.mark.parametrize("writer", WRITERS, ids=_ids)
def test_each_writer_refuses_and_touches_nothing(
    writer: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No statement reaches any connection; every table and sequence is as it was."""
    monkeypatch.delenv(gate.VARIABLE, raising=False)
    alias = conf.database_alias()
    before = {name: dump_alias(name) for name in connections}
    with ExitStack() as stack:
        captured = [
            stack.enter_context(CaptureQueriesContext(connections[name]))
            for name in connections
        ]
        with pytest.raises(CommandError) as refused:
            call_command(*writer, stdout=StringIO(), stderr=StringIO())
    assert str(refused.value) == refusal(
        writer[0], alias, settings.DATABASES[alias]["NAME"]
    )
    assert_one_sentence(str(refused.value))
    assert [len(queries) for queries in captured] == [0] * len(captured)
    assert {name: dump_alias(name) for name in connections} == before


@pytest.mark.postgresql
@pytest.mark.django_db
@pytest.mark.usefixtures("history")
def test_the_benchmark_refuses_to_seed_outside_the_demo(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With too little history the benchmark would seed: the gate stops it."""
    monkeypatch.delenv(gate.VARIABLE, raising=False)
    alias = conf.database_alias()
    before = dump_alias(alias)
    with pytest.raises(CommandError, match="runs only with BATCHBOARD_DEMO=1"):
        call_command("batchboard_benchmark", executions=100, stdout=StringIO())
    assert dump_alias(alias) == before


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["0", "true", " 1", ""])
def test_only_the_value_1_opens_the_gate(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(gate.VARIABLE, value)
    assert not gate.demo_enabled()
    with pytest.raises(CommandError, match="BATCHBOARD_DEMO=1"):
        gate.require_demo("batchboard_seed", "default")
    monkeypatch.setenv(gate.VARIABLE, "1")
    assert gate.demo_enabled()
    gate.require_demo("batchboard_seed", "default")


def test_the_refusal_names_no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the alias and the database NAME appear, never user, host or password."""
    monkeypatch.delenv(gate.VARIABLE, raising=False)
    databases = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": "ops",
            "USER": "ob_reader",
            "PASSWORD": "s3cret-pass",
            "HOST": "db.example.org",
            "PORT": "6432",
        }
    }
    monkeypatch.setattr(settings, "DATABASES", databases)
    with pytest.raises(CommandError) as refused:
        gate.require_demo("batchboard_simulate", "default")
    message = str(refused.value)
    assert message == refusal("batchboard_simulate", "default", "ops")
    for secret in ("ob_reader", "s3cret-pass", "db.example.org", "6432", "://"):
        assert secret not in message


# -- through manage.py -------------------------------------------------------------


def _site_env(**variables: str) -> dict[str, str]:
    return {"DJANGO_DEBUG": "1", **variables}


def _must_succeed(*args: str, env: dict[str, str]) -> str:
    result = manage(*args, env=env, timeout=120)
    assert result.returncode == 0, result.output
    return result.stdout


def _refusals(env: dict[str, str], alias: str, name: str) -> Iterator[str]:
    """Run every writer without the variable; yield each one's stderr."""
    for writer in WRITERS:
        result = manage(*writer, env=env)
        assert result.returncode != 0, result.output
        assert "Traceback" not in result.output
        target = "default" if writer[0] == "batchboard_demo_login" else alias
        expected_name = name if target == alias else None
        message = result.stderr.strip().removeprefix("CommandError: ")
        assert_one_sentence(message)
        assert f"BATCHBOARD_DEMO=1, so it left the database {target!r}" in message
        if expected_name is not None:
            assert f"(NAME {expected_name!r})" in message
        assert "://" not in message
        yield message


@pytest.mark.slow
def test_a_sqlite_file_is_byte_identical_after_every_refusal(tmp_path: Path) -> None:
    """The standalone site on its SQLite file: exit 1 each time, not a byte changed."""
    folder = tmp_path / "site"
    folder.mkdir()
    database = folder / "db.sqlite3"
    env = _site_env(DATABASE_URL=f"sqlite:///{database}", BATCHBOARD_SCHEMA="managed")
    _must_succeed("migrate", "--no-input", env=env)
    demo = {**env, gate.VARIABLE: "1"}
    assert "Seeded" in _must_succeed(
        "batchboard_seed", "--instances", "2", "--seed", "1", env=demo
    )
    _must_succeed("batchboard_demo_login", env=demo)
    before = file_bytes(folder)
    refusals = list(_refusals(env, "default", str(database)))
    assert len(refusals) == len(WRITERS)
    assert file_bytes(folder) == before


@pytest.mark.postgresql
@pytest.mark.slow
def test_postgresql_managed_is_unchanged_after_every_refusal() -> None:
    """Managed mode on PostgreSQL: rows and sequences as they were."""
    with scratch_database("gate_managed") as name:
        env = _site_env(DATABASE_URL=url_for(name), BATCHBOARD_SCHEMA="managed")
        _must_succeed("migrate", "--no-input", env=env)
        demo = {**env, gate.VARIABLE: "1"}
        _must_succeed("batchboard_seed", "--instances", "2", "--seed", "1", env=demo)
        _must_succeed("batchboard_demo_login", env=demo)
        before = dump_database(name)
        assert before[f"{schema.SCHEMA_NAME}.ob_job_execution"]
        assert len(list(_refusals(env, "default", name))) == len(WRITERS)
        assert dump_database(name) == before


@pytest.mark.postgresql
@pytest.mark.slow
def test_postgresql_attached_is_unchanged_after_every_refusal() -> None:
    """Attached mode: neither the metadata nor the site's database changes."""
    with (
        scratch_database("gate_metadata") as metadata,
        scratch_database("gate_site") as site,
    ):
        with connect(metadata) as connection:
            for statement in schema.postgresql_ddl():
                connection.execute(statement)
        env = _site_env(
            DATABASE_URL=url_for(site),
            BATCHBOARD_DATABASE_URL=url_for(metadata),
            BATCHBOARD_SCHEMA="attached",
        )
        _must_succeed("migrate", "--no-input", env=env)
        demo = {**env, gate.VARIABLE: "1"}
        _must_succeed("batchboard_seed", "--instances", "2", "--seed", "1", env=demo)
        _must_succeed("batchboard_demo_login", env=demo)
        before = (dump_database(metadata), dump_database(site))
        assert before[0][f"{schema.SCHEMA_NAME}.ob_job_execution"]
        refusals = list(_refusals(env, "batchboard", metadata))
        assert len(refusals) == len(WRITERS)
        assert (dump_database(metadata), dump_database(site)) == before
