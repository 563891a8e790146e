"""
``manage.py batchboard_benchmark``: render times of every explorer list page.

Seeds (or reuses) a bulk history on PostgreSQL, then renders each list page
in process at its first page and about a million rows deep (plus a rare
job's deep page) and prints median times beside a minimal keyset view
measured in the same run: the floor any page could reach. Deep pages are
reached with cursors built for the position, exactly as paging there would
leave them, since cursors only carry a key and a ceiling.
"""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections
from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.test import RequestFactory
from django.urls import reverse

from batchboard import conf, cursors
from batchboard.explorer import views
from batchboard.models import JobExecution

PAGE_SIZE = 50


class _Timer:
    """Render one page on demand and keep the time of every render."""

    def __init__(
        self,
        view: Callable[..., HttpResponse],
        path: str,
        user: User,
        kwargs: dict[str, Any],
    ) -> None:
        self.view, self.path, self.user, self.kwargs = view, path, user, kwargs
        self.samples: list[float] = []
        self.factory = RequestFactory()

    def once(self, keep: bool) -> None:
        request = self.factory.get(self.path)
        request.user = self.user
        started = time.perf_counter()
        response = self.view(request, **self.kwargs)
        response.content  # noqa: B018 - force rendering
        elapsed = time.perf_counter() - started
        if response.status_code != 200:
            raise CommandError(f"{self.path} answered {response.status_code}.")
        if keep:
            self.samples.append(elapsed * 1000)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


@dataclass
class Measured:
    name: str
    first_timer: _Timer
    deep_timer: _Timer | None

    @property
    def first(self) -> float:
        return self.first_timer.median

    @property
    def deep(self) -> float | None:
        return self.deep_timer.median if self.deep_timer else None


_FLOOR_TEMPLATE = (
    "<table>{% for pk, status, created in rows %}<tr>"
    "<td><a href=\"{% url 'batchboard:execution' pk %}\">{{ pk }}</a></td>"
    "<td>{{ status }}</td><td>{{ created|date:'Y-m-d H:i:s' }}</td>"
    "</tr>{% endfor %}</table>"
    '{% if next %}<a href="?after={{ next }}">more</a>{% endif %}'
)


@functools.cache
def _floor_template() -> Any:
    # Compiled once, as a loaded template is: compiling it per render would
    # raise the floor and flatter every page measured against it.
    return engines["django"].from_string(_FLOOR_TEMPLATE)


def _minimal_keyset_view(request: HttpRequest) -> HttpResponse:
    """
    Render the least a keyset page can do: one indexed query, one template.

    This is the view a Django developer writes first (no ceiling, no
    cursor format, no access checks beyond the caller's): the floor.
    """
    after = request.GET.get("after")
    queryset = JobExecution.objects.using(conf.database_alias()).order_by("-id")
    if after:
        queryset = queryset.filter(id__lt=int(after))
    rows = list(queryset.values_list("id", "status", "created_at")[:PAGE_SIZE])
    return HttpResponse(
        _floor_template().render({"rows": rows, "next": rows[-1][0] if rows else None})
    )


_STRICT_TEMPLATE = (
    "<table>{% for pk, status, created, url in rows %}<tr>"
    '<td><a href="{{ url }}">{{ pk }}</a></td>'
    "<td>{{ status }}</td><td>{{ created|date:'Y-m-d H:i:s' }}</td>"
    "</tr>{% endfor %}</table>"
    '{% if next %}<a href="?after={{ next }}">more</a>{% endif %}'
)
_STRICT_SQL = (
    "SELECT id, status, created_at FROM ob_job_execution "
    "WHERE id < %s ORDER BY id DESC LIMIT %s"
)


@functools.cache
def _strict_template() -> Any:
    return engines["django"].from_string(_STRICT_TEMPLATE)


def _strict_keyset_view(request: HttpRequest) -> HttpResponse:
    """
    Render the same table as the floor with none of the ORM's or URLs' work.

    Fixed SQL text and row links built from one reversed prefix: what is
    left is the query and the template, a tighter bound than the floor.
    """
    after = int(request.GET.get("after") or cursors.MAX_KEY)
    prefix, suffix = reverse("batchboard:execution", args=[987654321]).split(
        "987654321"
    )
    with connections[conf.database_alias()].cursor() as cursor:
        cursor.execute(_STRICT_SQL, [after, PAGE_SIZE])
        rows = [
            (pk, status, created, f"{prefix}{pk}{suffix}")
            for pk, status, created in cursor.fetchall()
        ]
    return HttpResponse(
        _strict_template().render({"rows": rows, "next": rows[-1][0] if rows else None})
    )


class Command(BaseCommand):
    help = (
        "Seed or reuse a bulk history on PostgreSQL and print median render "
        "times of every explorer list page, first and deep, beside a minimal "
        "keyset view."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--executions",
            type=int,
            default=2_000_000,
            help="Executions the history must hold (seeded if fewer; default 2000000).",
        )
        parser.add_argument(
            "--depth",
            type=int,
            default=1_000_000,
            help=(
                "Rows deep for deep pages (capped at half the history; "
                "default 1000000)."
            ),
        )
        parser.add_argument(
            "--repeat", type=int, default=15, help="Renders per page (default 15)."
        )
        parser.add_argument(
            "--seed", type=int, default=2026, help="Seed for bulk loading."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        alias = conf.database_alias()
        connection = connections[alias]
        if connection.vendor != "postgresql":
            raise CommandError(
                "The benchmark needs the metadata on PostgreSQL: set "
                "BATCHBOARD_DATABASE_URL (or DATABASE_URL) to a postgresql:// URL."
            )
        wanted = options["executions"]
        if wanted < 100:
            raise CommandError("--executions must be at least 100.")
        existing = self._count(alias, "ob_job_execution")
        if existing < wanted:
            self.stdout.write(f"Seeding {wanted - existing:,} executions in bulk…")
            call_command(
                "batchboard_seed",
                bulk=True,
                executions=wanted - existing,
                seed=options["seed"],
                stdout=self.stdout,
            )
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
        else:
            self.stdout.write(f"Reusing {existing:,} executions.")
        executions = self._count(alias, "ob_job_execution")
        steps = self._count(alias, "ob_step_execution")
        self.stdout.write(f"History: {executions:,} executions, {steps:,} steps.")
        depth = min(options["depth"], executions // 2)
        self._run(alias, depth, max(3, options["repeat"]))

    def _count(self, alias: str, table: str) -> int:
        # A one-off count for the report; no page ever counts history.
        with connections[alias].cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {table}")
            return int(cursor.fetchone()[0])

    def _facts(self, alias: str) -> dict[str, Any]:
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT max(id) FROM ob_job_execution")
            max_execution = int(cursor.fetchone()[0])
            cursor.execute("SELECT max(id) FROM ob_job_instance")
            max_instance = int(cursor.fetchone()[0])
            cursor.execute(
                "SELECT job_name, count(*), max(id), min(id) FROM ob_job_instance "
                "GROUP BY job_name ORDER BY 2 DESC"
            )
            jobs = cursor.fetchall()
            cursor.execute(
                "SELECT e.id, e.job_instance_id FROM ob_job_execution e "
                "WHERE EXISTS (SELECT 1 FROM ob_step_execution s "
                "WHERE s.job_execution_id = e.id) ORDER BY e.id DESC LIMIT 1"
            )
            execution_id, instance_id = cursor.fetchone()
            cursor.execute(
                "SELECT id FROM ob_step_execution WHERE job_execution_id = %s "
                "ORDER BY id LIMIT 1",
                [execution_id],
            )
            step_id = cursor.fetchone()[0]
        busy = jobs[0]
        rare = jobs[-1]
        return {
            "max_execution": max_execution,
            "max_instance": max_instance,
            "busy": busy[0],
            "busy_max": busy[2],
            "rare": rare[0],
            "rare_count": rare[1],
            "rare_max": rare[2],
            "rare_min": rare[3],
            "execution": execution_id,
            "instance": instance_id,
            "step": step_id,
        }

    def _run(self, alias: str, depth: int, repeat: int) -> None:
        facts = self._facts(alias)
        # An unsaved superuser holds every permission without touching the
        # database, so only the page's own statements are measured.
        user = User(username="benchmark", is_superuser=True, is_active=True)

        timers: list[_Timer] = []

        def timed(
            view: Callable[..., HttpResponse], path: str, **kwargs: Any
        ) -> _Timer:
            timer = _Timer(view, path, user, kwargs)
            timers.append(timer)
            return timer

        deep_execution = facts["max_execution"] - depth
        size = f"size={PAGE_SIZE}"

        def deep_recent(status: str, job: str) -> str:
            # A job filter pages by (instance, attempt); the others by id.
            key: cursors.Key = cursors.Identity(deep_execution)
            if job:
                key = cursors.Ordered(max(1, facts["busy_max"] - depth), 1)
            return cursors.encode(
                cursors.recent_executions(status, job),
                PAGE_SIZE,
                key,
                facts["max_execution"],
            )

        results: list[Measured] = []
        floor = Measured(
            "minimal keyset view (floor)",
            timed(_minimal_keyset_view, "/floor/"),
            timed(_minimal_keyset_view, f"/floor/?after={deep_execution}"),
        )
        results.append(floor)
        strict = Measured(
            "strict floor (fixed SQL, one reversed link)",
            timed(_strict_keyset_view, "/strict/"),
            timed(_strict_keyset_view, f"/strict/?after={deep_execution}"),
        )
        results.append(strict)
        executions_url = reverse("batchboard:executions")
        for label, status, job in (
            ("executions", "", ""),
            ("executions ?status=FAILED", "FAILED", ""),
            ("executions ?status=COMPLETED", "COMPLETED", ""),
            (f"executions ?job={facts['busy']}", "", facts["busy"]),
        ):
            query = f"{size}&status={status}&job={job}"
            results.append(
                Measured(
                    label,
                    timed(views.executions, f"{executions_url}?{query}"),
                    timed(
                        views.executions,
                        f"{executions_url}?{query}&cursor={deep_recent(status, job)}",
                    ),
                )
            )
        busy_url = reverse("batchboard:job", args=[facts["busy"]])
        busy_deep = cursors.encode(
            cursors.instances(facts["busy"]),
            PAGE_SIZE,
            cursors.Identity(max(1, facts["busy_max"] - depth)),
            facts["busy_max"],
        )
        results.append(
            Measured(
                f"job {facts['busy']} (instances)",
                timed(views.job, f"{busy_url}?{size}", job_name=facts["busy"]),
                timed(
                    views.job,
                    f"{busy_url}?{size}&cursor={busy_deep}",
                    job_name=facts["busy"],
                ),
            )
        )
        rare_url = reverse("batchboard:job", args=[facts["rare"]])
        # The rare job's instance nearest to "depth" executions back: its
        # older instances lie that deep in the (job_name, id DESC) index.
        deep_instance = facts["max_instance"] - depth * facts["max_instance"] // max(
            1, facts["max_execution"]
        )
        with connections[alias].cursor() as cursor:
            cursor.execute(
                "SELECT coalesce(max(id), %s) FROM ob_job_instance "
                "WHERE job_name = %s AND id <= %s",
                [
                    facts["rare_max"],
                    facts["rare"],
                    max(deep_instance, facts["rare_min"] + 1),
                ],
            )
            rare_key = int(cursor.fetchone()[0])
        rare_deep = cursors.encode(
            cursors.instances(facts["rare"]),
            PAGE_SIZE,
            cursors.Identity(rare_key),
            facts["rare_max"],
        )
        results.append(
            Measured(
                f"rare job {facts['rare']} ({facts['rare_count']} instances)",
                timed(views.job, f"{rare_url}?{size}", job_name=facts["rare"]),
                timed(
                    views.job,
                    f"{rare_url}?{size}&cursor={rare_deep}",
                    job_name=facts["rare"],
                ),
            )
        )
        results.append(
            Measured(
                "overview (job names)",
                timed(views.index, f"{reverse('batchboard:index')}?{size}"),
                None,
            )
        )
        results.append(
            Measured(
                "unresolved (15 min)",
                timed(views.unresolved, f"{reverse('batchboard:unresolved')}?{size}"),
                None,
            )
        )
        results.append(
            Measured(
                "instance (executions)",
                timed(
                    views.instance,
                    reverse("batchboard:instance", args=[facts["instance"]])
                    + f"?{size}",
                    instance_id=facts["instance"],
                ),
                None,
            )
        )
        results.append(
            Measured(
                "execution (steps, decisions)",
                timed(
                    views.execution,
                    reverse("batchboard:execution", args=[facts["execution"]])
                    + f"?{size}",
                    execution_id=facts["execution"],
                ),
                None,
            )
        )
        results.append(
            Measured(
                "step (partitions)",
                timed(
                    views.step,
                    f"{reverse('batchboard:step', args=[facts['step']])}?{size}",
                    step_id=facts["step"],
                ),
                None,
            )
        )
        # Renders go round-robin over every page, so a busy moment on the
        # machine slows all pages alike instead of skewing one of them; the
        # first two rounds warm caches and are not kept.
        for round_number in range(repeat + 2):
            for timer in timers:
                timer.once(keep=round_number >= 2)
        self._report(results, floor, depth, repeat)
        pages = results[2:]
        worst_first = max(row.first for row in pages) / strict.first
        worst_deep = max(
            row.deep / strict.deep for row in pages if row.deep is not None
        )
        self.stdout.write(
            f"\nAgainst the strict floor: slowest first page {worst_first:.2f}x, "
            f"slowest deep page {worst_deep:.2f}x."
        )

    def _report(
        self, results: list[Measured], floor: Measured, depth: int, repeat: int
    ) -> None:
        self.stdout.write(
            f"\nMedian render time of {repeat} renders, page size {PAGE_SIZE}, "
            f"deep = {depth:,} rows in.\n"
        )
        header = (
            f"{'page':<46} {'first ms':>9} {'deep ms':>9} {'deep/first':>10} "
            f"{'first/floor':>11} {'deep/floor':>10}"
        )
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        for row in results:
            deep = f"{row.deep:9.2f}" if row.deep is not None else f"{'—':>9}"
            ratio = (
                f"{row.deep / row.first:10.2f}"
                if row.deep is not None
                else f"{'—':>10}"
            )
            deep_floor = (
                f"{row.deep / floor.deep:10.2f}"
                if row.deep is not None and floor.deep
                else f"{'—':>10}"
            )
            self.stdout.write(
                f"{row.name[:46]:<46} {row.first:9.2f} {deep} {ratio} "
                f"{row.first / floor.first:11.2f} {deep_floor}"
            )
