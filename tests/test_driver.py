"""The compiled timestamp loader on batchboard's own PostgreSQL connections."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import DataError, connection
from django.test import override_settings

from batchboard import conf, driver

pytestmark = pytest.mark.postgresql

# Text as PostgreSQL writes timestamptz, and the edges of Python's range.
EDGES = [
    "2026-03-01 14:02:03+00",
    "2026-03-01 14:02:03.1+00",
    "2026-03-01 14:02:03.123456+00",
    "2026-03-01 14:02:03.000001+00",
    "0001-01-01 00:00:00+00",
    "9999-12-31 23:59:59.999999+00",
    "2024-02-29 23:59:59.5+00",
    "1969-12-31 23:59:59.999+00",
]


def _loader_of(wrapper: Any) -> type[Any]:
    from psycopg import adapters, pq

    oid = adapters.types["timestamptz"].oid
    loader: type[Any] = wrapper.connection.adapters.get_loader(oid, pq.Format.TEXT)
    return loader


def _read(values: list[str]) -> list[tuple[Any, ...]]:
    literals = ", ".join(f"('{value}'::timestamptz)" for value in values)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT v FROM (VALUES {literals}) AS t(v)")
        return cursor.fetchall()


def test_the_metadata_connection_loads_timestamps_with_the_compiled_loader(
    db: None,
) -> None:
    connection.ensure_connection()
    assert connection.alias == conf.database_alias()
    loader = _loader_of(connection)
    assert loader is driver._loader()
    # Django compares it before every cursor: no per-cursor adapters copy.
    assert loader.timezone == connection.timezone


def test_it_reads_what_django_s_loader_reads(db: None) -> None:
    """Every value equal, and its zone Django's ``datetime.timezone.utc``."""
    from django.db.backends.postgresql.psycopg_any import register_tzloader

    ours = _read(EDGES)
    register_tzloader(connection.timezone, connection.connection)
    try:
        theirs = _read(EDGES)
    finally:
        driver.load_timestamps_natively(connection)
    assert ours == theirs
    for (value,) in ours:
        assert value.tzinfo is UTC
        assert value.utcoffset() == timedelta(0)
    assert ours[2][0] == datetime(2026, 3, 1, 14, 2, 3, 123456, tzinfo=UTC)


def test_a_time_beyond_python_s_range_is_still_a_data_error(db: None) -> None:
    """``infinity`` fails as it did, a DataError the callers already handle."""
    with pytest.raises(DataError):
        _read(["infinity"])


def test_a_session_moved_off_utc_still_reads_utc_times(db: None) -> None:
    """A loader made after the session left UTC states the zone itself."""
    with connection.cursor() as cursor:
        cursor.execute("SET TIME ZONE 'Europe/Paris'")
        try:
            cursor.execute("SELECT '2026-03-01 14:02:03+00'::timestamptz")
            (value,) = cursor.fetchone()
        finally:
            cursor.execute("SET TIME ZONE 'UTC'")
    # The text is 15:02:03+01; Django's loader would also set UTC on the
    # same wall time, and this one does exactly that.
    assert value.tzinfo is UTC
    assert value.replace(tzinfo=None) == datetime(2026, 3, 1, 15, 2, 3)


class _Wrapper:
    """A connection wrapper as the receiver sees it, with no connection."""

    vendor = "postgresql"
    timezone_name = "UTC"

    def __init__(self, alias: str, **attributes: Any) -> None:
        self.alias = alias
        self.__dict__.update(attributes)


def test_only_batchboard_s_aliases_get_it(db: None) -> None:
    assert connection.alias in conf.metadata_aliases()
    other = _Wrapper("someone-elses")
    assert driver.load_timestamps_natively(other) is False  # type: ignore[arg-type]


@override_settings(USE_TZ=False)
def test_not_without_use_tz(db: None) -> None:
    assert driver.load_timestamps_natively(connection) is False


def test_not_on_a_connection_in_another_time_zone(db: None) -> None:
    paris = _Wrapper(connection.alias, timezone_name="Europe/Paris")
    assert driver.load_timestamps_natively(paris) is False  # type: ignore[arg-type]


def test_not_on_sqlite() -> None:
    embedded = _Wrapper(conf.database_alias(), vendor="sqlite")
    assert driver.load_timestamps_natively(embedded) is False  # type: ignore[arg-type]
