"""
``manage.py batchboard_benchmark_export``: the executions list's download.

Streams the executions list's export (all executions, newest first) through
its real view, as a signed-in superuser, up to ``--rows`` rows, and prints
the rows a second and how much the process grew while streaming: its peak
resident set (``getrusage``) and its resident set at the end, against
before. The file is counted and dropped as it arrives, as a server hands
it to the socket. It also prints the rows per second of the process's own
CPU time, which other work on a shared machine does not slow. Reads only; it runs on PostgreSQL and on SQLite. Run it
with ``DEBUG`` off: with it on, Django keeps every statement in memory.
"""

from __future__ import annotations

import resource
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.test import RequestFactory, override_settings
from django.urls import reverse

from batchboard import conf
from batchboard.checks import MAX_EXPORT_ROWS
from batchboard.demo.commands import check_bounds
from batchboard.demo.measure import benchmark_user
from batchboard.explorer.exports import executions_export

#: Bytes per resident page, for ``/proc/self/statm``.
_PAGE_BYTES = resource.getpagesize()


def _resident_bytes() -> int | None:
    """Return the process's resident set now (Linux), or ``None``."""
    statm = Path("/proc/self/statm")
    if not statm.exists():
        return None
    return int(statm.read_text().split()[1]) * _PAGE_BYTES


def _peak_bytes() -> int:
    """Return the process's peak resident set (``ru_maxrss``, in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _mb(count: float) -> str:
    return f"{count / 1_000_000:.1f} MB"


class Command(BaseCommand):
    help = (
        "Stream the executions list's CSV or NDJSON download and print rows "
        "a second and the process's memory growth. Reads only."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--rows",
            type=int,
            default=1_000_000,
            help="Rows to stream at most (EXPORT_MAX_ROWS for the run; "
            "default 1000000).",
        )
        parser.add_argument(
            "--format", choices=("csv", "ndjson"), default="csv", help="csv or ndjson."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        rows, form = options["rows"], options["format"]
        check_bounds("rows", rows, 1, MAX_EXPORT_ROWS)
        if settings.DEBUG:
            self.stderr.write(
                "DEBUG is on: every statement is kept in memory, so the memory "
                "growth below is not the export's. Run with DJANGO_DEBUG=0."
            )
        request = RequestFactory().get(
            reverse("batchboard:executions_export"), {"format": form}
        )
        request.user = benchmark_user()
        bounded = {**conf.get_config(), "EXPORT_MAX_ROWS": rows}
        with override_settings(BATCHBOARD=bounded):
            peak_before, resident_before = _peak_bytes(), _resident_bytes()
            started, worked = time.perf_counter(), time.process_time()
            response = executions_export(request)
            lines = size = 0
            last = b""
            for piece in response.streaming_content:  # type: ignore[attr-defined]
                lines += piece.count(b"\n")
                size += len(piece)
                if piece:
                    last = piece
            seconds = time.perf_counter() - started
            busy = time.process_time() - worked
            peak_after, resident_after = _peak_bytes(), _resident_bytes()
        final = last.rsplit(b"\n", 2)[-2]
        truncated = final.startswith(b"# truncated") or final.endswith(
            b'"truncated":true}'
        )
        records = lines - (1 if form == "csv" else 0) - (1 if truncated else 0)
        self.stdout.write(
            f"export {form}: {records} rows, {_mb(size)} in {seconds:.2f} s: "
            f"{records / seconds:,.0f} rows/s"
            + (" (stopped at --rows)" if truncated else "")
        )
        # On a shared machine the wall clock counts other processes' turns;
        # the process's own CPU time does not (the database's is not in it).
        self.stdout.write(
            f"this process's CPU: {busy:.2f} s: {records / busy:,.0f} rows per CPU second"
        )
        self.stdout.write(f"peak resident set growth: {_mb(peak_after - peak_before)}")
        if resident_before is not None and resident_after is not None:
            self.stdout.write(
                f"resident set growth: {_mb(resident_after - resident_before)}"
            )
