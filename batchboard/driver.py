"""
How batchboard's own PostgreSQL connections load timestamps.

Django loads every ``timestamptz`` through a loader written in Python: it
parses the text again in Python and then sets the time zone. A list page
reads four or five timestamps per row, 200 to 250 per page, and that
parsing cost about as much as the statement itself. psycopg's compiled
loader reads the same text into the same aware datetime in a fraction of
the time, and when the session's time zone is UTC it already gives
``datetime.timezone.utc``, which Django's loader would set.

So on the connections batchboard reads oxide-batch's tables through (the
metadata alias, its read replicas and its action logins), and only while
their session is in UTC, the compiled loader loads timestamps. The rows
are the same rows. Every other connection of the site, and every
connection whose session is in another zone, keeps Django's loader.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db.backends.base.base import BaseDatabaseWrapper

from batchboard import conf

#: The session time zones in which the compiled loader gives UTC datetimes.
_UTC_NAMES = frozenset({"UTC", "Etc/UTC"})


@functools.cache
def _loader() -> type[Any] | None:
    """
    Return the loader class to install, or ``None``: without psycopg 3, or
    where psycopg has no compiled implementation.
    """
    try:
        from psycopg import adapters, pq
        from psycopg.adapt import Loader
        from psycopg.types.datetime import TimestamptzLoader
    except ImportError:  # psycopg 2
        return None
    found = adapters.get_loader(adapters.types["timestamptz"].oid, pq.Format.TEXT)
    # The compiled implementation replaces the Python class in psycopg's
    # own adapters map: the Python class there means there is none.
    if pq.__impl__ not in ("c", "binary") or found in (None, TimestamptzLoader):
        return None
    compiled: Any = found

    class UtcTimestampLoader(Loader):
        """
        Load ``timestamptz`` with psycopg's compiled loader, as UTC datetimes.

        ``timezone`` is what Django compares before each cursor, to decide
        whether the connection's loader answers for its time zone.
        """

        timezone = UTC

        def __init__(self, oid: int, context: Any = None) -> None:
            super().__init__(oid, context)
            native = compiled(oid, context)
            # Loader.__init__ keeps the context's connection.
            zone = None
            if self.connection is not None:
                zone = self.connection.pgconn.parameter_status(b"TimeZone")
            if zone is not None and zone.decode() in _UTC_NAMES:
                # The compiled loader already gives datetime.timezone.utc:
                # each value is one call into it.
                self.load = native.load  # type: ignore[method-assign]
            else:
                self._native = native

        def load(self, data: Any) -> datetime:
            # The session left UTC after the connection was set up: read
            # the text, then state the zone, as Django's loader does.
            value: datetime = self._native.load(data)
            return value.replace(tzinfo=self.timezone)

    return UtcTimestampLoader


def load_timestamps_natively(connection: BaseDatabaseWrapper) -> bool:
    """
    Install the compiled timestamp loader on a new connection of batchboard's.

    Only on PostgreSQL through psycopg 3 with its compiled implementation,
    with ``USE_TZ`` on and the connection's time zone UTC (Django's default
    for ``USE_TZ``). Return whether it was installed.
    """
    if (
        connection.vendor != "postgresql"
        or connection.alias not in conf.metadata_aliases()
    ):
        return False
    loader = _loader()
    if loader is None or not settings.USE_TZ:
        return False
    if connection.timezone_name not in _UTC_NAMES:
        return False
    connection.connection.adapters.register_loader("timestamptz", loader)
    return True
