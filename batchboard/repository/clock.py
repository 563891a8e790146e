"""
Clocks for the job repository.

oxide-batch writes every timestamp in whole milliseconds from an injected
clock (spec 1.1), so timestamp-binding digests computed from a stored row
equal the ones computed from the value written. Every clock here yields
timezone-aware datetimes truncated to the millisecond.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """Anything with a ``now()`` returning an aware :class:`datetime`."""

    def now(self) -> datetime: ...


def truncate_ms(moment: datetime) -> datetime:
    """Return ``moment`` cut to whole milliseconds; refuse naive datetimes."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("the repository clock must return aware datetimes")
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


class SystemClock:
    """The wall clock, in UTC, to the millisecond."""

    def now(self) -> datetime:
        return truncate_ms(datetime.now(UTC))


class ManualClock:
    """
    A clock that moves only when told to; for tests, demos and simulations.

    ``now()`` returns the same instant until :meth:`advance` or :meth:`set`
    moves it. It is safe to share between threads.
    """

    def __init__(self, start: datetime | None = None) -> None:
        self._now = truncate_ms(start or datetime(2026, 1, 1, tzinfo=UTC))
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, *, milliseconds: int = 0, seconds: float = 0) -> datetime:
        """Move the clock forward and return the new instant."""
        step = timedelta(milliseconds=milliseconds, seconds=seconds)
        if step < timedelta(0):
            raise ValueError("a ManualClock only moves forward")
        with self._lock:
            self._now = truncate_ms(self._now + step)
            return self._now

    def set(self, moment: datetime) -> None:
        with self._lock:
            self._now = truncate_ms(moment)
