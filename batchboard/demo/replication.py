"""
What the benchmark commands observe of replication: where the metadata reads
went, and how far the replicas were behind.

:func:`table_scans` reads a server's own count of the scans (sequential and
index) started on the ``ob_*`` tables, from ``pg_stat_user_tables``; the
difference over a run is what that server read, whoever asked, so it needs
no hook in the processes that serve the pages. A hot standby keeps its own
counts of the scans its readers start. :class:`LagSampler` samples each
replica's lag (:data:`batchboard.replicas.LAG_SQL`) every
:data:`LAG_SAMPLE_SECONDS` in a thread of its own.
"""

from __future__ import annotations

import statistics
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType

from django.db import DatabaseError, connections

from batchboard import replicas

__all__ = [
    "LAG_SAMPLE_SECONDS",
    "LagSampler",
    "ReadShare",
    "describe_lag",
    "read_share",
    "table_scans",
]

#: Seconds between two samples of a replica's lag.
LAG_SAMPLE_SECONDS = 0.5

# Each statement runs in a transaction of its own (autocommit), so the
# cumulative statistics are read afresh every time. No parameters: the
# percent sign is SQL's.
_SCANS_SQL = (
    "SELECT COALESCE(sum(COALESCE(seq_scan, 0) + COALESCE(idx_scan, 0)), 0) "
    "FROM pg_stat_user_tables WHERE relname LIKE 'ob\\_%'"
)


def table_scans(alias: str) -> int | None:
    """Return the scans started on the ``ob_*`` tables of ``alias``'s server so far."""
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute(_SCANS_SQL)
            row = cursor.fetchone()
    except DatabaseError:
        return None
    return int(row[0]) if row else None


@dataclass(frozen=True)
class ReadShare:
    """The ``ob_*`` scans each server started over a run, the primary's first."""

    primary: str
    scans: Mapping[str, int]

    @property
    def total(self) -> int:
        return sum(self.scans.values())

    def percent(self, alias: str) -> float:
        return 100.0 * self.scans.get(alias, 0) / self.total if self.total else 0.0


def read_share(
    primary: str,
    before: Mapping[str, int | None],
    after: Mapping[str, int | None],
) -> ReadShare | None:
    """Return the scans between two samples, or None if a server did not answer."""
    scans: dict[str, int] = {}
    for alias, start in before.items():
        end = after.get(alias)
        if start is None or end is None:
            return None
        scans[alias] = end - start
    return ReadShare(primary, scans)


def describe_lag(lags: Sequence[float]) -> str:
    """
    Return ``max …, median … over N samples (M above zero)``, or that
    nothing was sampled.
    """
    if not lags:
        return "not sampled"
    behind = sum(1 for lag in lags if lag > 0)
    return (
        f"max {max(lags):.2f} s, median {statistics.median(lags):.2f} s "
        f"over {len(lags)} samples ({behind} above zero)"
    )


class LagSampler:
    """
    Sample the lag of each replica alias every :data:`LAG_SAMPLE_SECONDS`
    while the ``with`` block runs; a replica that does not answer is skipped
    for that sample.
    """

    def __init__(self, aliases: Sequence[str]) -> None:
        self.lags: dict[str, list[float]] = {alias: [] for alias in aliases}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> LagSampler:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(60)

    def _run(self) -> None:
        try:
            while not self._stop.wait(LAG_SAMPLE_SECONDS):
                for alias, lags in self.lags.items():
                    try:
                        with connections[alias].cursor() as cursor:
                            cursor.execute(f"SELECT {replicas.LAG_SQL}")
                            row = cursor.fetchone()
                    except DatabaseError:
                        continue
                    if row is not None:
                        lags.append(float(row[0]))
        finally:
            connections.close_all()
