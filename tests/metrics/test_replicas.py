"""The replica families: each READ_DATABASES alias is asked on the scrape."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections
from django.test import override_settings

from batchboard.metrics import database
from tests.metrics.conftest import settings_with


@pytest.fixture
def replica_aliases() -> Iterator[None]:
    """Two extra aliases: the test database itself, and a server that is down."""
    if connections["default"].vendor != "postgresql":
        pytest.skip("replicas are PostgreSQL streaming standbys")
    base = connections.settings["default"]
    connections.settings["metrics_same"] = {**base}
    connections.settings["metrics_down"] = {
        **base,
        "HOST": "127.0.0.1",
        "PORT": "1",
        "OPTIONS": {**base.get("OPTIONS", {}), "connect_timeout": 2},
    }
    try:
        yield
    finally:
        for alias in ("metrics_same", "metrics_down"):
            connections[alias].close()
            del connections[alias]
            del connections.settings[alias]


def test_a_primary_or_a_dead_replica_is_not_up(
    django_db_setup: None, django_db_blocker: Any, replica_aliases: None
) -> None:
    # Outside a test case's transaction: each alias is its own connection.
    with (
        django_db_blocker.unblock(),
        override_settings(
            BATCHBOARD=settings_with(READ_DATABASES=["metrics_same", "metrics_down"])
        ),
    ):
        lag, up = database.replica_families()
    found = {
        (sample.name, sample.labels["replica"]): sample.value
        for family in (lag, up)
        for sample in family.samples
    }
    # The test database is not in recovery: a primary, not a replica; it
    # has received nothing it has not replayed, so no lag. The dead one
    # has no lag to tell.
    assert found == {
        ("batchboard_replica_up", "metrics_same"): 0,
        ("batchboard_replica_up", "metrics_down"): 0,
        ("batchboard_replica_lag_seconds", "metrics_same"): 0,
    }
