"""Read-your-writes bookkeeping and the replica choice, without a standby."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connections
from django.test import override_settings

from batchboard import db, replicas


def test_positions_compare_as_wal_positions() -> None:
    """ "X/Y" is compared as a 64-bit position, not as text."""
    assert replicas.position_value("0/A") < replicas.position_value("0/1B")
    assert replicas.position_value("1/0") > replicas.position_value("0/FFFFFFFF")
    for bad in ("", "12", "/1", "1/", "G/1", "123456789/0"):
        with pytest.raises(ValueError):
            replicas.position_value(bad)


def test_session_keeps_the_latest_position() -> None:
    """A later commit moves the position forward, an earlier one never back."""
    session: dict[str, Any] = {}
    replicas.remember(session, ["0/3000000", "0/2FFFFFF"])
    assert session[replicas.SESSION_KEY] == "0/3000000"
    replicas.remember(session, ["0/1000000"])
    assert session[replicas.SESSION_KEY] == "0/3000000"
    replicas.remember(session, ["1/0"])
    assert replicas.session_position(session) == "1/0"


def test_damaged_session_position_is_ignored() -> None:
    """A session value that is not a position is no position at all."""
    assert replicas.session_position({replicas.SESSION_KEY: "drop table"}) is None
    assert replicas.session_position({replicas.SESSION_KEY: 7}) is None
    assert replicas.session_position(None) is None
    session: dict[str, Any] = {replicas.SESSION_KEY: "junk"}
    replicas.remember(session, ["0/10"])
    assert session[replicas.SESSION_KEY] == "0/10"


def test_lag_notice_follows_the_threshold() -> None:
    """Only a replica lagging past REPLICA_LAG_NOTICE_SECONDS is worth a notice."""
    with override_settings(BATCHBOARD={"REPLICA_LAG_NOTICE_SECONDS": 5}):
        assert (
            replicas.ReadChoice("r", replica=True, lag_seconds=12.2).notice_seconds()
            == 13
        )
        assert (
            replicas.ReadChoice("r", replica=True, lag_seconds=5).notice_seconds()
            is None
        )
        assert replicas.ReadChoice("default", lag_seconds=99).notice_seconds() is None


def test_reads_stay_on_the_writer_inside_an_action() -> None:
    """Inside writing() the explorer's alias is the writer's, never a replica."""
    with db.reading_from("replica"):
        assert db.read_alias() == "replica"
        with db.writing(db.OPERATOR):
            assert db.read_alias() == "default"
    assert db.read_alias() == "default"


@pytest.mark.django_db
def test_sqlite_reads_run_as_they_are() -> None:
    """Without PostgreSQL no transaction is opened and the primary serves."""
    if connections["default"].vendor != "sqlite":
        pytest.skip("SQLite only")
    with replicas.reading({}, replica=True) as choice:
        assert choice == replicas.ReadChoice("default")
        assert replicas.current() == choice
    assert replicas.current() is None
