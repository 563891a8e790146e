"""Fixtures shared by the whole suite."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connections, transaction

from batchboard import conf, schema


def wipe_metadata(alias: str | None = None) -> None:
    """
    Delete every metadata row but the schema version.

    Django's flush between transactional tests skips unmanaged tables, so
    tests that commit must clean up after themselves; this does it in
    foreign-key order on both backends.
    """
    connection = connections[alias or conf.database_alias()]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            names = ", ".join(
                table.name
                for table in schema.TABLES
                if table.name != "ob_schema_version"
            )
            cursor.execute(f"TRUNCATE {names}")
        else:
            cursor.execute('UPDATE "ob_flow_decision" SET reused_decision_id = NULL')
            for table in reversed(schema.TABLES):
                if table.name == "ob_schema_version":
                    continue
                if table.name == "ob_job_execution":
                    # The upgrade-shape check needs both links cleared at once.
                    cursor.execute(
                        'UPDATE "ob_job_execution" SET upgrade_from_definition_id '
                        "= NULL, restart_of_execution_id = NULL"
                    )
                cursor.execute(f'DELETE FROM "{table.name}"')


@contextmanager
def held_lock(sql: str, ident: int) -> Iterator[None]:
    """
    Hold the row lock ``sql`` takes (for ``ident``) until the block ends.

    The lock is taken in a transaction of another thread, so on another
    connection; the test's rows must be committed (a transactional test).
    """
    holder: dict[str, Any] = {}
    locked = threading.Event()
    release = threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic(using=conf.database_alias()):
                with connections[conf.database_alias()].cursor() as cursor:
                    cursor.execute(sql, [ident])
                locked.set()
                release.wait(10)
        except Exception as error:
            holder["error"] = error
            locked.set()
        finally:
            connections.close_all()

    thread = threading.Thread(target=hold)
    thread.start()
    locked.wait(10)
    try:
        yield
    finally:
        release.set()
        thread.join(10)
    assert "error" not in holder


@pytest.fixture(autouse=True)
def _forget_busy_jobs() -> Iterator[None]:
    """Each test's jobs are its own: what an earlier test found of them goes."""
    from batchboard.explorer import queries

    queries._BUSY_JOBS.clear()
    yield
    queries._BUSY_JOBS.clear()


@pytest.fixture(autouse=True)
def _wipe_metadata_after_transactional_tests(
    request: pytest.FixtureRequest,
) -> Iterator[None]:
    yield
    marker = request.node.get_closest_marker("django_db")
    transactional = bool(marker and marker.kwargs.get("transaction")) or any(
        name in request.fixturenames for name in ("transactional_db", "live_server")
    )
    if transactional:
        with request.getfixturevalue("django_db_blocker").unblock():
            wipe_metadata()


def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Skip tests marked ``postgresql`` when the suite runs on SQLite."""
    from django.conf import settings

    vendor = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    if vendor == "postgresql":
        return
    skip = pytest.mark.skip(reason="needs PostgreSQL (set DATABASE_URL)")
    for item in items:
        if item.get_closest_marker("postgresql"):
            item.add_marker(skip)
