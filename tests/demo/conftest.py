"""Fixtures of the demo tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connections

from batchboard import conf, schema
from batchboard.demo import gate
from tests.conftest import wipe_metadata


def wipe(*, restart_ids: bool = False) -> None:
    """
    Delete every metadata row; with ``restart_ids`` also restart the id
    sequences, so the next rows get the ids an empty database would give
    them.
    """
    connection = connections[conf.database_alias()]
    wipe_metadata()
    if not restart_ids:
        return
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for table in schema.TABLES:
                if any(column.identity for column in table.columns):
                    cursor.execute(f"ALTER TABLE {table.name} ALTER COLUMN id RESTART")
        else:
            cursor.execute("DELETE FROM sqlite_sequence")


@pytest.fixture(autouse=True)
def _wipe_upgraded_restarts(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    marker = request.node.get_closest_marker("django_db")
    if marker and marker.kwargs.get("transaction"):
        with request.getfixturevalue("django_db_blocker").unblock():
            wipe()


@pytest.fixture(autouse=True)
def _demo_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run as the demo runs (``BATCHBOARD_DEMO=1``); the gate's tests unset it."""
    monkeypatch.setenv(gate.VARIABLE, "1")
