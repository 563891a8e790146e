"""
``manage.py batchboard_benchmark_admin``: the job-execution admin changelist
beside the explorer's executions page, first page and about a million rows
deep.

Both pages are rendered in process through their real URLs (the admin's
view as the admin site wraps it, with a signed-in staff user), round-robin in
the same run, and the command prints median times and their ratio. The deep
admin page is the one its keyset link leads to (``?after=<id>``); the deep
explorer page is the one its cursor leads to, for the same row, since both
carry only the id of the last row seen.

The command only reads: it never seeds, and it makes its database sessions
read-only before the first query (``query_only`` on SQLite), so it can be
pointed at a shared history. It runs on PostgreSQL and on SQLite.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.core.management.base import CommandError
from django.db import connections
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from batchboard import conf, cursors
from batchboard.admin import registrations as batchboard_admin
from batchboard.demo.commands import check_bounds
from batchboard.demo.measure import BenchmarkCommand, Timer, benchmark_user, measure

#: Both pages list this many rows, the admin's ``list_per_page``.
PAGE_SIZE = batchboard_admin.ReadOnlyAdmin.list_per_page

#: The deep admin page may be at most this many times slower than the
#: explorer's page at the same depth.
TARGET_RATIO = 3.0


@dataclass
class _Pair:
    """The admin and the explorer page for one listing at one depth."""

    listing: str
    depth: str
    admin: Timer
    explorer: Timer


class Command(BenchmarkCommand):
    help = (
        "Print median render times of the job-execution admin changelist and "
        "the explorer's executions page, first page and about a million rows "
        "deep, on PostgreSQL or SQLite. Reads only."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        alias = conf.database_alias()
        check_bounds("depth", options["depth"], 1)
        check_bounds("repeat", options["repeat"], 1)
        for name in {alias, "default"}:
            # Nothing here writes; a read-only session makes sure of it.
            with connections[name].cursor() as cursor:
                if connections[name].vendor == "sqlite":
                    cursor.execute("PRAGMA query_only = ON")
                else:
                    cursor.execute(
                        "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY"
                    )
        with connections[alias].cursor() as cursor:
            # One-off reads for the report and the deep key; no page counts.
            cursor.execute("SELECT count(*), max(id) FROM ob_job_execution")
            executions, max_id = cursor.fetchone()
            if executions < 2:
                raise CommandError("The history needs at least two executions.")
            depth = max(1, min(options["depth"], executions // 2))
            cursor.execute(
                "SELECT id FROM ob_job_execution ORDER BY id DESC LIMIT 1 OFFSET %s",
                [depth],
            )
            (key,) = cursor.fetchone()
        self.stdout.write(
            f"History: {executions:,} executions; deep = {depth:,} rows in "
            f"(rows below id {key:,})."
        )
        pairs = self._pairs(int(key), int(max_id), f"{depth:,} deep")
        self._check_deep_sql(pairs[1].admin, alias)
        repeat = options["repeat"]
        measure((t for pair in pairs for t in (pair.admin, pair.explorer)), repeat)
        self._report(pairs, repeat)

    def _pairs(self, key: int, max_id: int, deep: str) -> list[_Pair]:
        user = benchmark_user()
        changelist = reverse("admin:batchboard_jobexecution_changelist")
        explorer = reverse("batchboard:executions")
        pairs = []
        for listing, status in (("all executions", ""), ("status FAILED", "FAILED")):
            admin_filter = [f"status__exact={status}"] if status else []
            query = f"size={PAGE_SIZE}&status={status}&job="
            cursor = cursors.encode(
                cursors.recent_executions(status, ""),
                PAGE_SIZE,
                cursors.Identity(key),
                max_id,
            )
            pairs.append(
                _Pair(
                    listing,
                    "first page",
                    Timer(f"{changelist}?{'&'.join(admin_filter)}", user),
                    Timer(f"{explorer}?{query}", user),
                )
            )
            pairs.append(
                _Pair(
                    listing,
                    deep,
                    Timer(
                        f"{changelist}?{'&'.join([*admin_filter, f'after={key}'])}",
                        user,
                    ),
                    Timer(f"{explorer}?{query}&cursor={cursor}", user),
                )
            )
        return pairs

    def _check_deep_sql(self, timer: Timer, alias: str) -> None:
        """Render the deep admin page once and refuse OFFSET or COUNT in it."""
        with CaptureQueriesContext(connections[alias]) as captured:
            timer.render()
        statements = [q["sql"] for q in captured.captured_queries]
        offending = [
            sql for sql in statements if re.search(r"\b(OFFSET|COUNT\s*\()", sql, re.I)
        ]
        if offending:
            raise CommandError(
                f"The deep admin page ran OFFSET or COUNT: {offending[0][:200]}"
            )
        self.stdout.write(
            f"Deep admin page: {len(statements)} statement(s), no OFFSET, no COUNT."
        )

    def _report(self, pairs: list[_Pair], repeat: int) -> None:
        self.write_table_head(
            repeat,
            PAGE_SIZE,
            f"{'listing':<16} {'depth':<18} {'admin ms':>9} {'explorer ms':>12} "
            f"{'admin/explorer':>15}",
        )
        worst_deep = 0.0
        for pair in pairs:
            ratio = pair.admin.median / pair.explorer.median
            if pair.depth != "first page":
                worst_deep = max(worst_deep, ratio)
            self.stdout.write(
                f"{pair.listing:<16} {pair.depth:<18} {pair.admin.median:9.2f} "
                f"{pair.explorer.median:12.2f} {ratio:15.2f}"
            )
        self.stdout.write(
            "Filtered deep pages start below the same id as the unfiltered one."
        )
        verdict = "within" if worst_deep <= TARGET_RATIO else "OVER"
        self.stdout.write(
            f"\nDeep admin changelist: {worst_deep:.2f}x the explorer's page, "
            f"{verdict} the {TARGET_RATIO:g}x target."
        )
