"""
``manage.py batchboard_benchmark``: render times of every explorer list page.

Seeds (or reuses) a bulk history on the metadata database, PostgreSQL or
SQLite, then renders each list page in process at its first page and about
a million rows deep and prints median times beside a minimal keyset view
measured in the same run: the floor any page could reach. The pages are the
overview, the executions list unfiltered and under every status, a busy and
a rare job (their executions and their instances), time windows on the
executions list (an hour in the night; the last week with and without a
status and a job), the unresolved list, the
admin changelist, the record pages and the overdue page; the purge plan
of a busy job (batch 1,000), a bulk ABANDON plan of 1,000 FAILED
executions and one alert detector cycle with :data:`DETECTOR_RULES` rules
are timed as well. Last, 1,000 FAILED executions are abandoned by one bulk
apply and 1,000 others by 1,000 single actions, each timed once (these
write: demo databases only). Deep pages are reached with cursors built for the
position, exactly as paging there would leave them, since cursors only
carry a key and a ceiling.

A history that cannot exercise the overview and the triage pages is
refused: it needs :data:`MIN_JOB_NAMES` job names and unresolved
executions (:func:`unresolved_needed`), which ``batchboard_seed --bulk``
leaves.
"""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError, CommandParser
from django.db import connections, transaction
from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.template.backends.django import Template
from django.test.utils import override_settings
from django.urls import reverse
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from batchboard import conf, cursors, vocabulary
from batchboard.actions import (
    abandon_execution,
    apply_bulk,
    bulk_digest,
    new_operation_id,
    plan_bulk,
)
from batchboard.actions.bulk import Survey
from batchboard.actions.purge import MAX_BATCH, plan_purge
from batchboard.alerts import detector
from batchboard.alerts.models import Rule
from batchboard.demo.commands import add_seed_argument, check_bounds
from batchboard.demo.gate import require_demo
from batchboard.demo.measure import (
    BenchmarkCommand,
    Timer,
    benchmark_user,
    landmarks,
    measure,
    unresolved_executions,
)
from batchboard.explorer import queries, surveys
from batchboard.metrics import budget, database
from batchboard.metrics.views import exposition
from batchboard.models import JobExecution

PAGE_SIZE = 50
#: The overview must list at least this many job names (one page of them).
MIN_JOB_NAMES = 40
#: Every explorer page within this many times the minimal keyset view.
PAGE_TARGET = 1.5
#: The purge plan of a full batch within this many times the same view.
PURGE_TARGET = 15.0
#: A /metrics scrape within this many milliseconds (issue 20).
SCRAPE_TARGET_MS = 50.0
#: A bulk plan of this many items; its target is the purge plan's.
BULK_ITEMS = 1000
#: Single actions run before the applies are timed, uncounted.
WARM_UP = 20
#: The rules one timed detector cycle runs, and its target in milliseconds.
DETECTOR_RULES = 100
DETECTOR_TARGET_MS = 100.0
#: The kinds the benchmark's rules cycle through, with their values.
DETECTOR_KINDS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("FAILED", {}),
    ("UNKNOWN", {}),
    ("STALE", {"minutes": 15}),
    ("OVERDUE", {"factor": 3.0, "window": 20}),
    ("SLOW", {"window": 20}),
    ("FRESHNESS", {"hours": 24}),
)


def _latest_update(alias: str) -> datetime:
    """
    Return the latest update time of the history (one read per status, off
    the ``(status, updated_at, id)`` index).
    """
    latest: datetime | None = None
    for status in vocabulary.STATUSES:
        found = (
            JobExecution.objects.using(alias)
            .filter(status=status)
            .order_by("-updated_at")
            .values_list("updated_at", flat=True)
            .first()
        )
        if found is not None and (latest is None or found > latest):
            latest = found
    if latest is None:
        raise CommandError("The history holds no execution.")
    return latest


def _bound_text(moment: datetime) -> str:
    """Return a whole-second UTC time as a window bound's canonical text."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _RolledBack(Exception):
    """Leave the benchmark's rules and alerts behind no commit."""


def unresolved_needed(executions: int) -> int:
    """
    Return how many unresolved executions a history of this size must hold.

    300 at 2,000,000 executions, in proportion below that, and at least one:
    the unresolved page and the overview's attention panel are measured on
    real rows, never on an empty list.
    """
    return max(1, min(300, executions * 300 // 2_000_000))


@dataclass
class Measured:
    name: str
    first_timer: Timer
    deep_timer: Timer | None

    @property
    def first(self) -> float:
        return self.first_timer.median

    @property
    def deep(self) -> float | None:
        return self.deep_timer.median if self.deep_timer else None


def _table_source(row: str, link: str) -> str:
    """Return a reference view's template: ``row`` unpacks a row, ``link`` links it."""
    return (
        f"<table>{{% for {row} in rows %}}<tr>"
        f'<td><a href="{link}">{{{{ pk }}}}</a></td>'
        "<td>{{ status }}</td><td>{{ created|date:'Y-m-d H:i:s' }}</td>"
        "</tr>{% endfor %}</table>"
        '{% if next %}<a href="?after={{ next }}">more</a>{% endif %}'
    )


#: The floor reverses each row's link in the template, as a page would.
_FLOOR_TEMPLATE = _table_source(
    "pk, status, created", "{% url 'batchboard:execution' pk %}"
)
#: The strict floor prints links built beforehand from one reversed prefix.
_STRICT_TEMPLATE = _table_source("pk, status, created, url", "{{ url }}")
_STRICT_SQL = (
    "SELECT id, status, created_at FROM ob_job_execution "
    "WHERE id < %s ORDER BY id DESC LIMIT %s"
)


@functools.cache
def _compiled(source: str) -> Template:
    # Compiled once, as a loaded template is: compiling it per render would
    # raise the floor and flatter every page measured against it.
    return engines["django"].from_string(source)  # type: ignore[return-value]


def _keyset_table(source: str, rows: list[tuple[Any, ...]]) -> HttpResponse:
    """Render ``rows`` (id first) with the reference template ``source``."""
    return HttpResponse(
        _compiled(source).render({"rows": rows, "next": rows[-1][0] if rows else None})
    )


def _minimal_keyset_view(request: HttpRequest) -> HttpResponse:
    """
    Render the least a keyset page can do: one indexed query, one template.

    This is the view a Django developer writes first (no ceiling, no
    cursor format, no access checks beyond the caller's): the floor.
    """
    after = vocabulary.parse_whole_number(request.GET.get("after", ""))
    queryset = JobExecution.objects.using(conf.database_alias()).order_by("-id")
    if after is not None:
        queryset = queryset.filter(id__lt=after)
    rows = list(queryset.values_list("id", "status", "created_at")[:PAGE_SIZE])
    return _keyset_table(_FLOOR_TEMPLATE, rows)


def _strict_keyset_view(request: HttpRequest) -> HttpResponse:
    """
    Render the same table as the floor with none of the ORM's or URLs' work.

    Fixed SQL text and row links built from one reversed prefix: what is
    left is the query and the template, a tighter bound than the floor.
    """
    after = (
        vocabulary.parse_whole_number(request.GET.get("after", "")) or cursors.MAX_KEY
    )
    prefix, suffix = reverse("batchboard:execution", args=[987654321]).split(
        "987654321"
    )
    with connections[conf.database_alias()].cursor() as cursor:
        cursor.execute(_STRICT_SQL, [after, PAGE_SIZE])
        rows = [
            (pk, status, created, f"{prefix}{pk}{suffix}")
            for pk, status, created in cursor.fetchall()
        ]
    return _keyset_table(_STRICT_TEMPLATE, rows)


def _purge_plan_view(request: HttpRequest, job_name: str) -> HttpResponse:
    """
    Plan a purge of ``job_name`` (batch 1,000, default age) and answer its size.

    Planning reads only: the survey, the restart-chain rule, the counts.
    """
    plan = plan_purge(user=request.user, job_name=job_name, batch=MAX_BATCH)
    return HttpResponse(f"{len(plan.candidates)} candidates")


def _scrape_view(request: HttpRequest) -> HttpResponse:
    """
    Answer a /metrics scrape as the endpoint does, reading the database.

    The cache is dropped first, so every sample pays the reads a scrape
    past its interval pays; the token check is left out.
    """
    database.CACHE.clear()
    body, content_type = exposition(None)
    return HttpResponse(body, content_type=content_type)


def scrape_series(allowlist: list[str]) -> int:
    """Return the most label sets one family of a scrape holds."""
    with override_settings(BATCHBOARD={**conf.get_config(), "METRICS_JOBS": allowlist}):
        database.CACHE.clear()
        body, _type = exposition(None)
        database.CACHE.clear()
    families = text_string_to_metric_families(body.decode())
    return max(
        len(
            {
                tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
                for s in f.samples
            }
        )
        for f in families
    )


@dataclass(frozen=True)
class FirstRows:
    """A survey's first ``count`` rows: a full plan of a filter matching more."""

    survey: Survey
    count: int

    @property
    def kind(self) -> Any:
        return self.survey.kind

    @property
    def filters(self) -> Any:
        return self.survey.filters

    def read(self, limit: int) -> Any:
        return self.survey.read(min(limit, self.count))


def _bulk_plan_view(request: HttpRequest) -> HttpResponse:
    """
    Plan ABANDON on the first 1,000 FAILED executions and answer its size.

    The executions list's keyset pages (500 rows each) and the two
    statements that answer ABANDON for every item (recovery decisions,
    later attempts).
    """
    plan = plan_bulk(
        user=request.user,
        action="ABANDON",
        survey=FirstRows(surveys.executions(status="FAILED"), BULK_ITEMS),
    )
    return HttpResponse(f"{len(plan.items)} items")


class Command(BenchmarkCommand):
    help = (
        "Seed or reuse a bulk history (PostgreSQL or SQLite) and print median "
        "render times of every explorer list page, first and deep, and of a "
        "purge plan, beside a minimal keyset view. Seeding is demo only "
        "(BATCHBOARD_DEMO=1)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--executions",
            type=int,
            default=2_000_000,
            help="Executions the history must hold (seeded if fewer; default 2000000).",
        )
        super().add_arguments(parser)
        add_seed_argument(parser, 2026, of="Random seed of a bulk load")

    def handle(self, *args: Any, **options: Any) -> None:
        alias = conf.database_alias()
        connection = connections[alias]
        wanted = options["executions"]
        check_bounds("executions", wanted, 100)
        existing = self._count(alias, "ob_job_execution")
        if existing < wanted:
            # Seeding writes history: only a demo database may receive it.
            require_demo("batchboard_benchmark", alias)
            self.stdout.write(f"Seeding {wanted - existing:,} executions in bulk…")
            call_command(
                "batchboard_seed",
                bulk=True,
                executions=wanted - existing,
                seed=options["seed"],
                stdout=self.stdout,
            )
            if connection.vendor == "postgresql":
                # SQLite is measured as a new embedded database is: without
                # the statistics ANALYZE would add.
                with connection.cursor() as cursor:
                    cursor.execute("ANALYZE")
        else:
            self.stdout.write(f"Reusing {existing:,} executions.")
        executions = self._count(alias, "ob_job_execution")
        steps = self._count(alias, "ob_step_execution")
        self.stdout.write(
            f"History ({connection.vendor}): {executions:,} executions, "
            f"{steps:,} steps."
        )
        self._require_triage_rows(alias, executions)
        depth = min(options["depth"], executions // 2)
        self._run(alias, depth, max(3, options["repeat"]))

    def _count(self, alias: str, table: str) -> int:
        # A one-off count for the report; no page ever counts history.
        with connections[alias].cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {table}")
            return int(cursor.fetchone()[0])

    def _require_triage_rows(self, alias: str, executions: int) -> None:
        """Refuse a history the overview and triage pages cannot be measured on."""
        with connections[alias].cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM (SELECT DISTINCT job_name FROM ob_job_instance) n"
            )
            names = int(cursor.fetchone()[0])
        unresolved = unresolved_executions(alias)
        self.stdout.write(f"Job names: {names}; unresolved executions: {unresolved:,}.")
        needed = unresolved_needed(executions)
        if names < MIN_JOB_NAMES or unresolved < needed:
            raise CommandError(
                f"This history has {names} job names and {unresolved:,} "
                f"unresolved executions; the benchmark needs at least "
                f"{MIN_JOB_NAMES} and {needed:,}, or the overview and the "
                "triage pages are measured on too little. Load one with "
                "batchboard_seed --bulk into an empty database."
            )

    def _facts(self, alias: str) -> dict[str, Any]:
        marks = landmarks(alias)
        busy = marks.jobs[0]
        rare = marks.jobs[-1]
        return {
            "max_execution": marks.max_execution,
            "max_instance": marks.max_instance,
            "busy": busy[0],
            "busy_max": busy[2],
            "rare": rare[0],
            "rare_count": rare[1],
            "rare_max": rare[2],
            "rare_min": rare[3],
            "execution": marks.execution,
            "instance": marks.instance,
            "step": marks.step,
            "job_names": len(marks.jobs),
        }

    def _unresolved_key(self, alias: str) -> cursors.Key | None:
        """Return the key halfway down the unresolved list (few rows by nature)."""
        marks = ", ".join(["%s"] * len(vocabulary.UNRESOLVED))
        with connections[alias].cursor() as cursor:
            cursor.execute(
                f"SELECT attempt, id FROM ob_job_execution WHERE status IN ({marks}) "
                "ORDER BY id",
                list(vocabulary.UNRESOLVED),
            )
            rows = cursor.fetchall()
        if len(rows) < 2:
            return None
        attempt, pk = rows[len(rows) // 2]
        return cursors.Ordered(int(attempt), int(pk))

    def _run(self, alias: str, depth: int, repeat: int) -> None:
        facts = self._facts(alias)
        user = benchmark_user()
        deep_execution = facts["max_execution"] - depth
        size = f"size={PAGE_SIZE}"

        def page(
            name: str,
            first: str,
            deep: str | None = None,
            view: Callable[[HttpRequest], HttpResponse] | None = None,
            fragment: bool = False,
        ) -> Measured:
            deep_timer = None
            if deep is not None:
                deep_timer = Timer(deep, user, view, fragment=fragment)
            return Measured(
                name, Timer(first, user, view, fragment=fragment), deep_timer
            )

        def deep_recent(status: str, job: str, newest: int) -> str:
            # A job filter pages by (instance, attempt); the others by id.
            key: cursors.Key = cursors.Identity(deep_execution)
            if job:
                key = cursors.Ordered(max(1, newest - depth), 1)
            # A shortcut binds its statuses, as the list reads them.
            statuses = vocabulary.STATUS_SETS.get(status, status)
            return cursors.encode(
                cursors.recent_executions(statuses, job),
                PAGE_SIZE,
                key,
                facts["max_execution"],
            )

        floor = page(
            "minimal keyset view (floor)",
            "/floor/",
            f"/floor/?after={deep_execution}",
            _minimal_keyset_view,
        )
        strict = page(
            "strict floor (fixed SQL, one reversed link)",
            "/strict/",
            f"/strict/?after={deep_execution}",
            _strict_keyset_view,
        )
        results = [floor, strict]
        # The overview at the page size operators get (OVERVIEW_PAGE_SIZE
        # jobs, each with its strip), and its next page.
        overview_url = reverse("batchboard:index")
        names = queries.job_names(vocabulary.OVERVIEW_PAGE_SIZE)
        overview_deep = None
        if names.next_cursor:
            overview_deep = f"{overview_url}?cursor={names.next_cursor}"
        shown = f"{vocabulary.OVERVIEW_PAGE_SIZE} of {facts['job_names']} jobs"
        results.append(page(f"overview ({shown})", overview_url, overview_deep))
        # Loaded by the overview as soon as it is shown, and polled.
        results.append(
            page(
                "overview's attention panel (fragment)",
                reverse("batchboard:attention"),
                fragment=True,
            )
        )
        executions_url = reverse("batchboard:executions")
        filters = [("executions", "", "", 0)]
        filters += [
            (f"executions ?status={status}", status, "", 0)
            for status in vocabulary.STATUSES
        ]
        # Several statuses at once: one walk per status, merged.
        filters += [
            (f"executions ?status={name} (several)", name, "", 0)
            for name in vocabulary.STATUS_SETS
        ]
        filters += [
            (f"executions ?job={facts['busy']}", "", facts["busy"], facts["busy_max"]),
            (
                f"executions ?job={facts['rare']} (rare)",
                "",
                facts["rare"],
                facts["rare_max"],
            ),
        ]
        api = f"{reverse('batchboard:api-executions')}?page_size={PAGE_SIZE}"
        # Each API list beside the page that shows the same rows.
        pairs: list[tuple[Measured, Measured]] = []
        for label, status, job, newest in filters:
            first = f"{executions_url}?{size}&status={status}&job={job}"
            deep_token = deep_recent(status, job, newest)
            html = page(label, first, f"{first}&cursor={deep_token}")
            results.append(html)
            api_first = f"{api}&status={status}&job={job}"
            pairs.append(
                (
                    page(f"API {label}", api_first, f"{api_first}&cursor={deep_token}"),
                    html,
                )
            )
        results += self._windows(alias, page, facts, executions_url)
        busy_url = f"{reverse('batchboard:job', args=[facts['busy']])}?{size}"
        busy_deep = cursors.encode(
            cursors.instances(facts["busy"]),
            PAGE_SIZE,
            cursors.Identity(max(1, facts["busy_max"] - depth)),
            facts["busy_max"],
        )
        busy_html = page(
            f"job {facts['busy']} (instances)",
            busy_url,
            f"{busy_url}&cursor={busy_deep}",
        )
        results.append(busy_html)
        busy_api = (
            f"{reverse('batchboard:api-instance-list', args=[facts['busy']])}"
            f"?page_size={PAGE_SIZE}"
        )
        pairs.append(
            (
                page(
                    f"API instance list {facts['busy']}",
                    busy_api,
                    f"{busy_api}&cursor={busy_deep}",
                ),
                busy_html,
            )
        )
        # Loaded by the job page as soon as it is shown.
        results.append(
            page(
                f"job {facts['busy']} history (fragment)",
                reverse("batchboard:job_history", args=[facts["busy"]]),
                fragment=True,
            )
        )
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
        rare_url = f"{reverse('batchboard:job', args=[facts['rare']])}?{size}"
        rare_deep = cursors.encode(
            cursors.instances(facts["rare"]),
            PAGE_SIZE,
            cursors.Identity(rare_key),
            facts["rare_max"],
        )
        results.append(
            page(
                f"rare job {facts['rare']} ({facts['rare_count']} instances)",
                rare_url,
                f"{rare_url}&cursor={rare_deep}",
            )
        )
        unresolved_url = f"{reverse('batchboard:unresolved')}?{size}"
        halfway = self._unresolved_key(alias)
        unresolved_deep = None
        if halfway is not None:
            token = cursors.encode(
                cursors.unresolved_executions(int(conf.get_config()["STALE_SECONDS"])),
                PAGE_SIZE,
                halfway,
                facts["max_execution"],
            )
            unresolved_deep = f"{unresolved_url}&cursor={token}"
        unresolved_html = page("unresolved (15 min)", unresolved_url, unresolved_deep)
        results.append(unresolved_html)
        stale = int(conf.get_config()["STALE_SECONDS"])
        unresolved_api = (
            f"{reverse('batchboard:api-unresolved')}?page_size={PAGE_SIZE}"
            f"&unresolved_age={stale}s"
        )
        pairs.append(
            (
                page(
                    "API unresolved (15 min)",
                    unresolved_api,
                    unresolved_deep
                    and f"{unresolved_api}&cursor={unresolved_deep.split('cursor=')[1]}",
                ),
                unresolved_html,
            )
        )
        changelist = reverse("admin:batchboard_jobexecution_changelist")
        for label, query in (
            ("admin changelist", ""),
            ("admin changelist, FAILED", "status__exact=FAILED&"),
        ):
            results.append(
                page(
                    label,
                    f"{changelist}?{query}",
                    f"{changelist}?{query}after={deep_execution}",
                )
            )
        for name, url_name, args, api_name in (
            (
                "instance (executions)",
                "batchboard:instance",
                [facts["instance"]],
                "batchboard:api-execution-list",
            ),
            (
                "execution (steps, decisions)",
                "batchboard:execution",
                [facts["execution"]],
                "batchboard:api-execution-steps",
            ),
            (
                "step (partitions)",
                "batchboard:step",
                [facts["step"]],
                "batchboard:api-step-partitions",
            ),
        ):
            html = page(name, f"{reverse(url_name, args=args)}?{size}")
            results.append(html)
            api_url = f"{reverse(api_name, args=args)}?page_size={PAGE_SIZE}"
            pairs.append((page(f"API {name}", api_url), html))
        planned = plan_purge(user=user, job_name=facts["busy"], batch=MAX_BATCH)
        purge = page(
            f"purge plan {facts['busy']} ({len(planned.candidates):,} candidates)",
            "/purge-plan/",
            view=functools.partial(_purge_plan_view, job_name=facts["busy"]),
        )
        results.append(purge)
        results.append(page("overdue and slow", reverse("batchboard:overdue")))
        bulk = page(
            f"bulk plan ABANDON, {BULK_ITEMS:,} FAILED items",
            "/bulk-plan/",
            view=_bulk_plan_view,
        )
        results.append(bulk)
        # /metrics with the busiest jobs on its allowlist (at most 50): the
        # join to the instances and the job label's CASE are measured too.
        allowlist = [name for name, *_rest in landmarks(alias).jobs][
            : budget.MAX_NAME_ALLOWLIST
        ]
        series = scrape_series(allowlist)
        scrape = page(
            f"/metrics scrape ({len(allowlist)} jobs named, <= {series} series)",
            "/metrics-scrape/",
            view=_scrape_view,
        )
        results.append(scrape)
        with override_settings(
            BATCHBOARD={**conf.get_config(), "METRICS_JOBS": allowlist}
        ):
            self._measure([*results, *(api_row for api_row, _html in pairs)], repeat)
        self._report(results, floor, depth, repeat)
        self._verdict(results[2:-1], floor, strict, purge, bulk)
        verdict = "within" if scrape.first <= SCRAPE_TARGET_MS else "OVER"
        self.stdout.write(
            f"/metrics scrape: {scrape.first:.2f} ms, {verdict} the "
            f"{SCRAPE_TARGET_MS:g} ms target; at most {series} label sets in "
            f"a family (budget {budget.SERIES_BUDGET})."
        )
        self._api_report(pairs)
        self._detector(facts, repeat)
        self._applies(alias, user)

    def _windows(
        self,
        alias: str,
        page: Callable[[str, str, str | None], Measured],
        facts: dict[str, Any],
        executions_url: str,
    ) -> list[Measured]:
        """
        Return the executions list's time windows: an hour in the night and
        the last week of the history, with and without a status and a job,
        and the week of the rarest job.

        Deep pages continue from the middle of the window (its time, the
        newest id), as paging there would leave them.
        """
        latest = _latest_update(alias)
        night = (latest - timedelta(days=1)).replace(
            hour=2, minute=0, second=0, microsecond=0
        )
        hour = (night, night + timedelta(hours=1))
        week = (latest.replace(microsecond=0) - timedelta(days=7), latest)
        week = (week[0], week[0] + timedelta(days=7))
        rows = [
            ("window: 1 h at night", hour, (), ""),
            ("window: 1 week", week, (), ""),
            ("window: 1 week ?status=FAILED", week, ("FAILED",), ""),
            (f"window: 1 week ?job={facts['busy']}", week, (), facts["busy"]),
            (
                f"window: 1 week ?status=FAILED&job={facts['busy']}",
                week,
                ("FAILED",),
                facts["busy"],
            ),
            # A rare job's page reads down every status's range of the week.
            (f"window: 1 week ?job={facts['rare']} (rare)", week, (), facts["rare"]),
        ]
        measured = []
        for label, (start, end), statuses, job in rows:
            since, until = _bound_text(start), _bound_text(end)
            window = cursors.TimeWindow(
                since, until, cursors.micros(start), cursors.micros(end)
            )
            middle = (window.lower + window.upper) // 2
            token = cursors.encode(
                cursors.windowed_executions(statuses, job, window),
                PAGE_SIZE,
                cursors.Windowed(
                    middle, facts["max_execution"], window.lower, window.upper
                ),
                facts["max_execution"],
            )
            query = urlencode(
                [
                    ("size", PAGE_SIZE),
                    ("since", since),
                    ("until", until),
                    *(("status", status) for status in statuses),
                    *((("job", job),) if job else ()),
                ]
            )
            first = f"{executions_url}?{query}"
            measured.append(page(label, first, f"{first}&cursor={token}"))
        return measured

    def _measure(self, results: list[Measured], repeat: int) -> None:
        measure(
            (
                timer
                for row in results
                for timer in (row.first_timer, row.deep_timer)
                if timer is not None
            ),
            repeat,
        )

    def _applies(self, alias: str, user: Any) -> None:
        """
        Time one bulk apply of up to 1,000 FAILED executions against as many
        single ABANDON actions on others (they write).

        The executions are the oldest FAILED ones. A few single actions
        warm up first, uncounted; the two sides take
        alternate rows, and half the single actions run before the bulk
        apply and half after, so that neither the rows nor a drift of the
        machine's speed favour one side.
        """
        require_demo("batchboard_benchmark", alias)
        # The oldest FAILED executions: abandoning the newest would empty
        # the head of the FAILED list, and each later run would measure the
        # failures pages over a gap this command made.
        rows = list(
            JobExecution.objects.using(alias)
            .filter(status="FAILED")
            .order_by("id")
            .values("id", "version")[: 2 * BULK_ITEMS + WARM_UP]
        )
        count = (len(rows) - WARM_UP) // 2
        if count <= 1:
            self.stdout.write("Too few FAILED executions left to abandon.")
            return
        warm, rest = rows[:WARM_UP], rows[WARM_UP:]
        # Alternate rows between the two sides: abandoning costs more for
        # some executions than others (newer ones are read and written
        # nearer each other), so each side gets the same mix.
        bulk_rows, single_rows = rest[0 : 2 * count : 2], rest[1 : 2 * count : 2]

        def singles(chosen: Any) -> float:
            started = time.perf_counter()
            for row in chosen:
                abandon_execution(
                    user=user,
                    execution_id=int(row["id"]),
                    expected_version=int(row["version"]),
                    reason_code="OPERATOR_DECISION",
                    operation_id=new_operation_id(),
                )
            return (time.perf_counter() - started) * 1000

        singles(warm)
        single_ms = singles(single_rows[: count // 2])
        filters = {"list": "benchmark"}
        items = [(int(row["id"]), int(row["version"])) for row in bulk_rows]
        started = time.perf_counter()
        result = apply_bulk(
            user=user,
            action="ABANDON",
            filters=filters,
            items=items,
            digest=bulk_digest("ABANDON", filters, items),
            reason_code="OPERATOR_DECISION",
        )
        bulk_ms = (time.perf_counter() - started) * 1000
        single_ms += singles(single_rows[count // 2 :])
        ratio = bulk_ms / single_ms
        verdict = "within" if ratio <= 1.0 else "OVER"
        self.stdout.write(
            f"\nApply ABANDON to {count:,} executions: one bulk apply "
            f"{bulk_ms:,.0f} ms ({result.counts['APPLIED']:,} applied), "
            f"{count:,} single actions {single_ms:,.0f} ms: {ratio:.2f}x, "
            f"{verdict} the 1x target."
        )

    def _api_report(self, pairs: list[tuple[Measured, Measured]]) -> None:
        """Print each API list beside its HTML page: times and API/HTML ratios."""
        self.stdout.write(
            f"\n{'API list':<46} {'first ms':>9} {'deep ms':>9} "
            f"{'first/HTML':>10} {'deep/HTML':>10}"
        )
        slower = []
        for api_row, html in pairs:
            ratios = [api_row.first / html.first]
            deep = f"{'—':>9}"
            deep_ratio = f"{'—':>10}"
            if api_row.deep is not None and html.deep is not None:
                ratios.append(api_row.deep / html.deep)
                deep = f"{api_row.deep:9.2f}"
                deep_ratio = f"{ratios[-1]:10.2f}"
            self.stdout.write(
                f"{api_row.name[:46]:<46} {api_row.first:9.2f} {deep} "
                f"{ratios[0]:10.2f} {deep_ratio}"
            )
            if max(ratios) > 1:
                slower.append(f"{api_row.name} ({max(ratios):.2f}x)")
        self.stdout.write(
            "API lists slower than their HTML page: "
            + (", ".join(slower) if slower else "none.")
        )

    def _detector(self, facts: dict[str, Any], repeat: int) -> None:
        """
        Time detector cycles with :data:`DETECTOR_RULES` rules, then roll back.

        The rules watch single jobs (the overview's first names, the busy and
        the rare one) and every tenth all jobs, across every kind. The first
        cycle sets the watermarks and records what the history already
        matches; the cycles timed after it are the steady state.
        """
        state = conf.state_alias()
        names = [row["job_name"] for row in queries.job_names(40).rows]
        names += [facts["busy"], facts["rare"]]
        timings: list[float] = []
        first = 0.0
        try:
            with transaction.atomic(using=state):
                owner = User.objects.db_manager(state).create_user(
                    f"benchmark-{time.monotonic_ns()}"
                )
                for number in range(DETECTOR_RULES):
                    kind, values = DETECTOR_KINDS[number % len(DETECTOR_KINDS)]
                    Rule.objects.using(state).create(
                        name=f"benchmark {number}",
                        owner=owner,
                        kind=kind,
                        job_name="" if number % 10 == 9 else names[number % len(names)],
                        created_at=timezone.now(),
                        **values,
                    )
                began = time.perf_counter()
                detector.cycle()
                first = (time.perf_counter() - began) * 1000
                for _ in range(repeat):
                    began = time.perf_counter()
                    detector.cycle()
                    timings.append((time.perf_counter() - began) * 1000)
                raise _RolledBack
        except _RolledBack:
            pass
        median = statistics.median(timings)
        verdict = "within" if median <= DETECTOR_TARGET_MS else "OVER"
        self.stdout.write(
            f"Detector cycle, {DETECTOR_RULES} rules: {median:.2f} ms median "
            f"(first cycle {first:.2f} ms), {verdict} the "
            f"{DETECTOR_TARGET_MS:g} ms target."
        )

    def _verdict(
        self,
        pages: list[Measured],
        floor: Measured,
        strict: Measured,
        purge: Measured,
        bulk: Measured,
    ) -> None:
        strict_deep = strict.deep
        floor_deep = floor.deep
        assert strict_deep is not None and floor_deep is not None
        explorer = [row for row in pages if row is not purge and row is not bulk]
        worst_first = max(row.first for row in explorer) / strict.first
        worst_deep = max(
            row.deep / strict_deep for row in explorer if row.deep is not None
        )
        self.stdout.write(
            f"\nAgainst the strict floor: slowest first page {worst_first:.2f}x, "
            f"slowest deep page {worst_deep:.2f}x."
        )
        over = [
            f"{row.name} ({ratio:.2f}x)"
            for row in explorer
            if not row.name.startswith("admin")
            for ratio in (
                row.first / floor.first,
                *((row.deep / floor_deep,) if row.deep is not None else ()),
            )
            if ratio > PAGE_TARGET
        ]
        self.stdout.write(
            f"Explorer pages over {PAGE_TARGET:g}x the minimal keyset view: "
            + (", ".join(over) if over else "none.")
        )
        ratio = purge.first / floor.first
        verdict = "within" if ratio <= PURGE_TARGET else "OVER"
        self.stdout.write(
            f"Purge plan: {ratio:.2f}x the minimal keyset view, {verdict} the "
            f"{PURGE_TARGET:g}x target."
        )
        ratio = bulk.first / floor.first
        verdict = "within" if ratio <= PURGE_TARGET else "OVER"
        self.stdout.write(
            f"Bulk plan: {ratio:.2f}x the minimal keyset view, {verdict} the "
            f"{PURGE_TARGET:g}x target."
        )

    def _report(
        self, results: list[Measured], floor: Measured, depth: int, repeat: int
    ) -> None:
        self.write_table_head(
            repeat,
            PAGE_SIZE,
            f"{'page':<46} {'first ms':>9} {'deep ms':>9} {'deep/first':>10} "
            f"{'first/floor':>11} {'deep/floor':>10}",
            detail=f", deep = {depth:,} rows in",
        )
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
