"""
``manage.py batchboard_benchmark_replicas``: the explorer's page mix with a
replica taking the reads.

``--threads`` signed-in clients (Django's test client, through the whole
middleware stack, so the replica choice, the read transaction and the
session are all measured) request a mix of explorer pages round-robin for
``--seconds``. The command prints requests per second, the median and p99
latency, the statuses, the primary's share of the metadata reads (statements
on ``ob_*`` tables, counted per alias in every client's connections), the
transactions each server counted (``pg_stat_database``), and the replica's
lag, sampled every half second during the run.

It acts for nobody: run it beside ``batchboard_simulate`` (or oxide-batch
runtimes) for a primary that writes while the replica serves. It needs the
metadata on PostgreSQL and ``READ_DATABASES`` (``BATCHBOARD_READ_DATABASE_URL``).
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, connections
from django.test import Client
from django.urls import reverse

from batchboard import conf
from batchboard.demo.commands import check_bounds
from batchboard.demo.loadtest import percentile
from batchboard.demo.replication import LagSampler, describe_lag


class _Tally:
    """What every client thread adds up, under one lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latencies: list[float] = []
        self.statuses: Counter[int] = Counter()
        self.reads: Counter[str] = Counter()

    def add(self, latency: float, status: int, reads: Counter[str]) -> None:
        with self.lock:
            self.latencies.append(latency)
            self.statuses[status] += 1
            self.reads.update(reads)


def _counter(alias: str, reads: Counter[str]) -> Callable[..., Any]:
    def count(execute: Callable[..., Any], sql: str, *args: Any) -> Any:
        if "ob_" in sql:
            reads[alias] += 1
        return execute(sql, *args)

    return count


def _transactions(alias: str) -> int | None:
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute(
                "SELECT xact_commit + xact_rollback FROM pg_stat_database "
                "WHERE datname = current_database()"
            )
            row = cursor.fetchone()
    except DatabaseError:
        return None
    return int(row[0]) if row else None


def _host() -> str:
    """Return a host name the site accepts (ALLOWED_HOSTS), for the clients."""
    for host in settings.ALLOWED_HOSTS:
        if host and host != "*" and not host.startswith("."):
            return str(host)
    return "localhost"


class Command(BaseCommand):
    help = (
        "Request a mix of explorer pages from several threads with a replica "
        "taking the reads; print requests per second, p99, the primary's share "
        "of the metadata reads and the replica's lag. Reads only."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--threads", type=int, default=4, help="Client threads (default 4)."
        )
        parser.add_argument(
            "--seconds", type=float, default=10, help="Length of the run (default 10)."
        )
        parser.add_argument(
            "--user",
            default="viewer",
            help="The user the clients sign in as (default viewer, from "
            "batchboard_demo_login).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        threads = int(options["threads"])
        seconds = float(options["seconds"])
        check_bounds("threads", threads, 1, 64)
        check_bounds("seconds", seconds, 0.5, 3600)
        primary = conf.database_alias()
        readers = conf.read_aliases()
        if connections[primary].vendor != "postgresql" or not readers:
            raise CommandError(
                "The benchmark needs the metadata on PostgreSQL and at least one "
                "replica: set BATCHBOARD_READ_DATABASE_URL (READ_DATABASES)."
            )
        user = (
            get_user_model()._default_manager.filter(username=options["user"]).first()
        )
        if user is None:
            raise CommandError(
                f"No user {options['user']!r}: create it (batchboard_demo_login) "
                "or name another with --user."
            )
        pages = self._pages(primary)
        before = {alias: _transactions(alias) for alias in (primary, *readers)}
        tally = _Tally()
        stop = threading.Event()
        workers = [
            threading.Thread(
                target=self._client,
                args=(user, pages, number, (primary, *readers), tally, stop),
            )
            for number in range(threads)
        ]
        started = time.monotonic()
        with LagSampler(readers[:1]) as sampler:
            for worker in workers:
                worker.start()
            time.sleep(seconds)
            stop.set()
            for worker in workers:
                worker.join(120)
        elapsed = time.monotonic() - started
        lags = sampler.lags[readers[0]]
        time.sleep(1)  # pg_stat_database counts what backends flushed
        after = {alias: _transactions(alias) for alias in before}
        self._report(threads, elapsed, tally, lags, before, after, primary, readers)

    def _pages(self, alias: str) -> list[tuple[str, bool]]:
        with connections[alias].cursor() as cursor:
            cursor.execute(
                "SELECT e.id, i.job_name, (SELECT min(s.id) FROM ob_step_execution s "
                "WHERE s.job_execution_id = e.id) FROM ob_job_execution e JOIN "
                "ob_job_instance i ON i.id = e.job_instance_id ORDER BY e.id DESC "
                "LIMIT 1"
            )
            row = cursor.fetchone()
        connections[alias].close()
        if row is None:
            raise CommandError("The history has no execution: seed it first.")
        execution, job, step = row
        # (path, requested by htmx): pages, and the poll of a live region.
        pages = [
            (reverse("batchboard:index"), False),
            (reverse("batchboard:executions"), False),
            (reverse("batchboard:executions") + "?status=FAILED", False),
            (reverse("batchboard:execution", args=[execution]), False),
            (reverse("batchboard:execution_live", args=[execution]), True),
            (reverse("batchboard:job", args=[job]), False),
            (reverse("batchboard:unresolved"), False),
        ]
        if step is not None:
            pages.append((reverse("batchboard:step", args=[step]), False))
        return pages

    def _client(
        self,
        user: Any,
        pages: list[tuple[str, bool]],
        number: int,
        aliases: tuple[str, ...],
        tally: _Tally,
        stop: threading.Event,
    ) -> None:
        client = Client(SERVER_NAME=_host())
        client.force_login(user)
        turn = number
        try:
            while not stop.is_set():
                reads: Counter[str] = Counter()
                with ExitStack() as stack:
                    for alias in aliases:
                        stack.enter_context(
                            connections[alias].execute_wrapper(_counter(alias, reads))
                        )
                    begun = time.perf_counter()
                    path, htmx = pages[turn % len(pages)]
                    headers = {"HX-Request": "true"} if htmx else {}
                    response = client.get(path, secure=True, headers=headers)
                    latency = time.perf_counter() - begun
                tally.add(latency, response.status_code, reads)
                turn += 1
        finally:
            connections.close_all()

    def _report(
        self,
        threads: int,
        elapsed: float,
        tally: _Tally,
        lags: list[float],
        before: dict[str, int | None],
        after: dict[str, int | None],
        primary: str,
        readers: list[str],
    ) -> None:
        requests = len(tally.latencies)
        if not requests:
            raise CommandError("No request completed.")
        write = self.stdout.write
        write(f"Explorer page mix, {threads} threads, {elapsed:.1f} s, nobody acting")
        write(f"  requests           {requests:,} ({requests / elapsed:.1f}/s)")
        write(
            f"  latency            median {statistics.median(tally.latencies) * 1000:.1f} ms, "
            f"p99 {percentile(tally.latencies, 0.99) * 1000:.1f} ms"
        )
        statuses = ", ".join(
            f"{code}: {n}" for code, n in sorted(tally.statuses.items())
        )
        write(f"  statuses           {statuses}")
        total = sum(tally.reads.values())
        on_primary = tally.reads[primary]
        share = 100.0 * on_primary / total if total else 0.0
        write(
            f"  metadata reads     {total:,}: primary {on_primary:,} ({share:.2f} %), "
            + ", ".join(f"{alias} {tally.reads[alias]:,}" for alias in readers)
        )
        for alias in (primary, *readers):
            start, end = before.get(alias), after.get(alias)
            if start is not None and end is not None:
                write(
                    f"  transactions       {alias}: {end - start:,} (pg_stat_database)"
                )
        write(f"  replica lag        {describe_lag(lags)}")
