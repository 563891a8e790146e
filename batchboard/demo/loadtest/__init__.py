"""
The load benchmark: gunicorn with DEBUG off, driven by ``wrk`` on loopback.

:mod:`batchboard.demo.management.commands.batchboard_loadtest` prepares the
history, starts the server and the simulator, runs ``wrk`` with
``mix.lua`` (the operators' page mix, bounded in requests and time) and
prints requests per second, p50, p95 and p99 per page and the errors. The
figures here are computed from wrk's per-response samples.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from batchboard.explorer import trends

__all__ = ["MIX_SCRIPT", "Page", "Report", "percentile", "read_samples"]

MIX_SCRIPT = Path(__file__).with_name("mix.lua")


@dataclass(frozen=True)
class Page:
    """One entry of the mix: a page kind, its weight and the path requested."""

    name: str
    weight: int
    path: str
    htmx: bool = False

    def line(self) -> str:
        return f"{self.weight}\t{self.name}\t{int(self.htmx)}\t{self.path}"


def percentile(values: list[float], fraction: float) -> float:
    """Return the nearest-rank percentile of ``values``; NaN for none."""
    return trends.percentile(values, fraction) if values else math.nan


@dataclass
class Report:
    """Per page: latencies (ms) and failed responses; overall: the span."""

    latencies: dict[str, list[float]] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    statuses: dict[int, int] = field(default_factory=dict)
    socket_errors: int = 0
    first_start: float = math.inf
    last_end: float = 0.0

    @property
    def requests(self) -> int:
        return sum(len(values) for values in self.latencies.values())

    @property
    def seconds(self) -> float:
        return max(0.0, (self.last_end - self.first_start) / 1_000_000)

    @property
    def errors(self) -> int:
        return sum(self.failures.values()) + self.socket_errors

    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def rows(self) -> Iterable[tuple[str, int, float, float, float, float, int]]:
        """Yield (page, requests, rps, p50, p95, p99, errors), then the mix."""
        everything: list[float] = []
        for name in sorted(self.latencies):
            values = sorted(self.latencies[name])
            everything.extend(values)
            yield (
                name,
                len(values),
                len(values) / self.seconds if self.seconds else 0.0,
                percentile(values, 0.50),
                percentile(values, 0.95),
                percentile(values, 0.99),
                self.failures.get(name, 0),
            )
        everything.sort()
        yield (
            "all pages",
            len(everything),
            self.rate(),
            percentile(everything, 0.50),
            percentile(everything, 0.95),
            percentile(everything, 0.99),
            self.errors,
        )


def read_samples(lines: Iterable[str]) -> Report:
    """
    Read mix.lua's samples: ``page, status, start µs, end µs`` per line, and
    one ``#errors`` line of wrk's socket errors (connect, read, write,
    timeout) and non-2xx/3xx count.
    """
    report = Report()
    for line in lines:
        parts = line.rstrip("\n").split("\t")
        if parts[0] == "#errors":
            connect, read, write, timeout = (int(value) for value in parts[1:5])
            report.socket_errors = connect + read + write + timeout
            continue
        if len(parts) != 4:
            continue
        name, status, start, end = (
            parts[0],
            int(parts[1]),
            float(parts[2]),
            float(parts[3]),
        )
        report.latencies.setdefault(name, []).append((end - start) / 1000)
        report.statuses[status] = report.statuses.get(status, 0) + 1
        # Every page of the mix answers 200: a redirect (to sign in) fails too.
        if status != 200:
            report.failures[name] = report.failures.get(name, 0) + 1
        report.first_start = min(report.first_start, start)
        report.last_end = max(report.last_end, end)
    return report
