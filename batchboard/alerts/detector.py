"""
The detector: one cycle reads what changed and records what the rules match.

A cycle's reads are bounded whatever the history holds:

- Executions that became FAILED, UNKNOWN or (for slow rules) COMPLETED are
  read per status after a watermark ``(updated_at, id)`` off the
  ``(status, updated_at, id)`` index, at most :data:`STREAM_LIMIT` each.
  The watermark stops :data:`LAG` short of now, so a writer's transaction
  that commits a little after its ``updated_at`` is still read; the rows
  read twice are recorded once (the dedupe key).
- Stale and overdue rules read the unresolved executions off their partial
  index (:func:`batchboard.explorer.queries.unresolved`, one page).
- The p95 a rule compares with, and a freshness rule's last success, come
  from each job's latest runs (:func:`batchboard.explorer.overview.latest_runs`,
  the trend's statement), once per cycle for every job concerned.

What matches is recorded by :func:`record`: an :class:`~.models.Alert` per
dedupe key ``(rule, execution id, version)`` (see :data:`ONCE`), its
deliveries (one per enabled channel of the rule) and the rule owner's inbox
item, in one transaction. Detector processes on several hosts coordinate through the
state database: a cycle runs only while it holds the ``CYCLE`` watermark
row (``SELECT ... FOR UPDATE SKIP LOCKED``; another process holding it
skips its cycle), which also guards the other watermarks, and the unique
dedupe key refuses a second alert.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from django.db import IntegrityError, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from batchboard import conf
from batchboard.alerts import delivery
from batchboard.alerts.models import (
    Alert,
    Channel,
    Rule,
    RuleChannel,
    Watermark,
)
from batchboard.explorer import overview, queries
from batchboard.explorer.pagination import Row
from batchboard.explorer.trends import percentile
from batchboard.models import JobDefinition, JobExecution
from batchboard.vocabulary import MAX_PAGE_SIZE

#: The most rows one status's stream yields per cycle.
STREAM_LIMIT: Final = 500
#: How far behind now the watermarks stay (see the module's docstring).
LAG: Final = timedelta(seconds=5)
#: The runs a p95 is taken over when a rule names no window (M).
DEFAULT_WINDOW: Final = 20
#: The fewest COMPLETED runs a p95 is taken from; with fewer, no p95.
MIN_SAMPLES: Final = 3
#: The most job names an all-jobs freshness rule watches.
FRESHNESS_JOBS: Final = 200
#: The version of the dedupe key of an event that happens once per
#: execution: it ended FAILED, became UNKNOWN, overran, finished slow. (A
#: FAILED row's version still moves, e.g. when its instance restarts.)
#: Stale events key on the execution's version: each new silence is one.
ONCE: Final = 0
#: The statuses a run can be overdue in (UNKNOWN is stale, not running).
RUNNING: Final = ("STARTED", "STOPPING")
#: The lock row of a whole cycle.
CYCLE: Final = "CYCLE"

_STREAM_COLUMNS = (
    "id",
    "version",
    "status",
    "failure_category",
    "job_instance_id",
    "started_at",
    "ended_at",
    "updated_at",
)


@dataclass(frozen=True)
class Match:
    """An event a rule matched, with what the alert records of it."""

    rule: Rule
    execution_id: int
    version: int
    job_name: str
    instance_id: int | None = None
    status: str = ""
    failure_category: str = ""
    seconds: float | None = None
    threshold_seconds: float | None = None

    @property
    def key(self) -> tuple[int, int, int]:
        return (self.rule.pk, self.execution_id, self.version)


@dataclass
class Report:
    """What one cycle did."""

    skipped: bool = False
    read: int = 0
    matched: int = 0
    recorded: int = 0
    statements: dict[str, int] = field(default_factory=dict)


def _applies(rule: Rule, job_name: str) -> bool:
    return not rule.job_name or rule.job_name == job_name


def duration(run: Row, now: datetime) -> float | None:
    """Return how long ``run`` ran (until ``now`` if it still runs), in seconds."""
    if run["started_at"] is None:
        return None
    elapsed: timedelta = (run["ended_at"] or now) - run["started_at"]
    return max(elapsed.total_seconds(), 0.0)


# -- the streams ------------------------------------------------------------------


def after(status: str, mark: Watermark) -> QuerySet[Any]:
    """Return the statement of ``status``'s rows after ``mark`` (set)."""
    # The ">=" bound starts the index scan at the watermark; the OR then
    # drops the rows at its very timestamp it has passed.
    rows: QuerySet[Any] = (
        JobExecution.objects.using(conf.database_alias())
        .filter(status=status, updated_at__gte=mark.updated_at)
        .filter(Q(updated_at__gt=mark.updated_at) | Q(id__gt=mark.last_id))
        .order_by("updated_at", "id")
        .values(*_STREAM_COLUMNS, job_name=F("definition__job_name"))[:STREAM_LIMIT]
    )
    return rows


def _stream(status: str, mark: Watermark, now: datetime) -> list[Row]:
    """Read ``status``'s executions after ``mark``, advancing it short of now."""
    executions = JobExecution.objects.using(conf.database_alias()).filter(status=status)
    if mark.updated_at is None:
        # A first cycle starts from the newest row: no alert for history.
        newest = executions.order_by("-updated_at", "-id").values("updated_at", "id")
        found = newest.first()
        mark.updated_at = found["updated_at"] if found else now - LAG
        mark.last_id = int(found["id"]) if found else 0
        mark.save(update_fields=["updated_at", "last_id"])
        return []
    rows = list(after(status, mark))
    settled = [row for row in rows if row["updated_at"] <= now - LAG]
    if settled:
        mark.updated_at = settled[-1]["updated_at"]
        mark.last_id = int(settled[-1]["id"])
        mark.save(update_fields=["updated_at", "last_id"])
    return rows


def _run_match(
    rule: Rule,
    row: Row,
    version: int = ONCE,
    *,
    failure_category: str = "",
    seconds: float | None = None,
    threshold_seconds: float | None = None,
) -> Match:
    """Return ``rule``'s match of the run ``row``."""
    return Match(
        rule,
        int(row["id"]),
        version,
        row["job_name"],
        row["job_instance_id"],
        row["status"],
        failure_category,
        seconds,
        threshold_seconds,
    )


def _finished(rules: Sequence[Rule], rows: Iterable[Row]) -> list[Match]:
    matches = []
    for row in rows:
        for rule in rules:
            if rule.kind != row["status"] or not _applies(rule, row["job_name"]):
                continue
            category = row["failure_category"] or ""
            if rule.categories and category not in rule.categories:
                continue
            matches.append(_run_match(rule, row, failure_category=category))
    return matches


# -- p95 and freshness ------------------------------------------------------------


#: What a p95 needs of a run: its status and, once ended, its duration.
P95_COLUMNS: Final = ("id", "status", "seconds")


def job_history(
    names: Iterable[str],
    length: int = DEFAULT_WINDOW,
    columns: Sequence[str] = P95_COLUMNS,
) -> dict[str, list[Row]]:
    """Return each job's latest ``length`` runs (the trend's one statement)."""
    wanted = sorted(set(names))
    if not wanted:
        return {}
    return overview.latest_runs(wanted, length, columns)


def p95(runs: Sequence[Row], window: int, exclude: int | None = None) -> float | None:
    """Return the p95 duration of the COMPLETED runs among the latest ``window``."""
    durations = [
        float(run["seconds"])
        for run in runs[:window]
        if run["status"] == "COMPLETED"
        and run["seconds"] is not None
        and int(run["id"]) != exclude
    ]
    if len(durations) < MIN_SAMPLES:
        return None
    return percentile(durations, 0.95)


def _window(rule: Rule) -> int:
    return rule.window or DEFAULT_WINDOW


def _slow(rules: Sequence[Rule], rows: Sequence[Row], history: Any) -> list[Match]:
    matches = []
    for row in rows:
        seconds = duration(row, row["ended_at"] or row["updated_at"])
        if seconds is None:
            continue
        for rule in rules:
            if not _applies(rule, row["job_name"]):
                continue
            limit = p95(history.get(row["job_name"], []), _window(rule), int(row["id"]))
            if limit is not None and seconds > limit:
                matches.append(
                    _run_match(rule, row, seconds=seconds, threshold_seconds=limit)
                )
    return matches


def overdue_limit(rule: Rule, runs: Sequence[Row]) -> float | None:
    """Return the seconds after which ``rule`` calls a run overdue, if any."""
    limits = []
    if rule.factor is not None:
        typical = p95(runs, _window(rule))
        if typical is not None:
            limits.append(rule.factor * typical)
    if rule.limit_minutes is not None:
        limits.append(rule.limit_minutes * 60.0)
    return min(limits) if limits else None


def _unresolved(
    rules: Sequence[Rule], rows: Sequence[Row], history: Any, now: datetime
) -> list[Match]:
    matches = []
    for row in rows:
        for rule in rules:
            if not _applies(rule, row["job_name"]):
                continue
            if rule.kind == "STALE":
                idle = (now - row["updated_at"]).total_seconds()
                if rule.minutes is None or idle <= rule.minutes * 60:
                    continue
                seconds, limit = idle, rule.minutes * 60.0
            elif row["status"] not in RUNNING:
                continue
            else:
                running = duration(row, now)
                limit_or_none = overdue_limit(rule, history.get(row["job_name"], []))
                if running is None or limit_or_none is None:
                    continue
                if running <= limit_or_none:
                    continue
                seconds, limit = running, limit_or_none
            matches.append(
                _run_match(
                    rule,
                    row,
                    # Each silence of a run is an event; its overrun is one.
                    int(row["version"]) if rule.kind == "STALE" else ONCE,
                    seconds=seconds,
                    threshold_seconds=limit,
                )
            )
    return matches


def _freshness(rules: Sequence[Rule], now: datetime) -> list[Match]:
    names: set[str] = {rule.job_name for rule in rules if rule.job_name}
    if any(not rule.job_name for rule in rules):
        names |= set(
            JobDefinition.objects.using(conf.database_alias())
            .order_by("job_name")
            .values_list("job_name", flat=True)
            .distinct()[:FRESHNESS_JOBS]
        )
    length = max(_window(rule) for rule in rules)
    # A success is told by its status and end: no start is read.
    history = job_history(names, length, ("id", "status", "ended_at"))
    matches = []
    for rule in rules:
        for name in [rule.job_name] if rule.job_name else sorted(names):
            runs = history.get(name, [])[: _window(rule)]
            completed = [run for run in runs if run["status"] == "COMPLETED"]
            since = now - timedelta(hours=rule.hours or 0)
            if any(run["ended_at"] and run["ended_at"] >= since for run in completed):
                continue
            # Once per miss: keyed by the last success seen (0: none).
            last = int(completed[0]["id"]) if completed else 0
            matches.append(
                Match(
                    rule,
                    last,
                    ONCE,
                    name,
                    threshold_seconds=(rule.hours or 0) * 3600.0,
                )
            )
    return matches


# -- recording --------------------------------------------------------------------


def record(matches: Sequence[Match], now: datetime) -> int:
    """
    Record each match not recorded yet; return how many were new.

    One read finds the keys already recorded; each new alert, its
    deliveries and its inbox item are written in one transaction, and a
    key another detector recorded meanwhile is skipped.
    """
    if not matches:
        return 0
    alias = conf.state_alias()
    known = set(
        Alert.objects.using(alias)
        .filter(
            rule_id__in={match.rule.pk for match in matches},
            execution_id__in={match.execution_id for match in matches},
        )
        .values_list("rule_id", "execution_id", "version")
    )
    new = [match for match in matches if match.key not in known]
    if not new:
        return 0
    # The channels of the rules with something new (one statement).
    channels: dict[int, list[Channel]] = defaultdict(list)
    links = RuleChannel.objects.using(alias).filter(
        rule_id__in={match.rule.pk for match in new}, channel__enabled=True
    )
    for link in links.select_related("channel"):
        channels[link.rule_id].append(link.channel)
    recorded = 0
    seen: set[tuple[int, int, int]] = set()
    for match in new:
        if match.key in seen:
            continue
        seen.add(match.key)
        try:
            with transaction.atomic(using=alias):
                alert = Alert.objects.using(alias).create(
                    rule=match.rule,
                    execution_id=match.execution_id,
                    version=match.version,
                    kind=match.rule.kind,
                    job_name=match.job_name,
                    instance_id=match.instance_id,
                    status=match.status,
                    failure_category=match.failure_category,
                    seconds=match.seconds,
                    threshold_seconds=match.threshold_seconds,
                    detected_at=now,
                )
                delivery.enqueue(
                    alert, channels[match.rule.pk], match.rule.owner_id, now
                )
        except IntegrityError:
            # Another detector recorded this key first.
            continue
        recorded += 1
    return recorded


# -- the cycle --------------------------------------------------------------------


def _cycle_lock() -> bool:
    """Take the cycle's row lock, or return False if another process holds it."""
    alias = conf.state_alias()
    locking = (
        Watermark.objects.using(alias)
        .select_for_update(skip_locked=True)
        .filter(stream=CYCLE)
        .values_list("id", flat=True)
    )
    if list(locking):
        return True
    # Missing (a first cycle), or held: make sure it exists, then try again.
    Watermark.objects.using(alias).get_or_create(stream=CYCLE)
    return bool(list(locking.all()))  # a fresh query, not the cached result


def _marks(streams: Sequence[str]) -> dict[str, Watermark]:
    """Return the watermarks of ``streams`` (the cycle's lock guards them)."""
    alias = conf.state_alias()
    found = {
        mark.stream: mark
        for mark in Watermark.objects.using(alias).filter(stream__in=streams)
    }
    for stream in streams:
        if stream not in found:
            found[stream] = Watermark.objects.using(alias).create(stream=stream)
    return found


def cycle(now: datetime | None = None) -> Report:
    """Run one detector cycle (see the module's docstring)."""
    report = Report()
    rules = list(
        Rule.objects.using(conf.state_alias()).filter(enabled=True).order_by("id")
    )
    if not rules:
        return report
    by_kind: dict[str, list[Rule]] = defaultdict(list)
    for rule in rules:
        by_kind[rule.kind].append(rule)
    with transaction.atomic(using=conf.state_alias()):
        if not _cycle_lock():
            report.skipped = True
            return report
        now = now or timezone.now()
        matches: list[Match] = []
        slow = by_kind.get("SLOW", [])
        streams = [status for status in ("FAILED", "UNKNOWN") if by_kind.get(status)]
        marks = _marks([*streams, *(["COMPLETED"] if slow else [])])
        for status in streams:
            if by_kind.get(status):
                rows = _stream(status, marks[status], now)
                report.read += len(rows)
                matches += _finished(by_kind[status], rows)
        if slow:
            rows = _stream("COMPLETED", marks["COMPLETED"], now)
            report.read += len(rows)
            length = max(_window(rule) for rule in slow) + 1
            history = job_history((row["job_name"] for row in rows), length)
            matches += _slow(slow, rows, history)
        waiting = by_kind.get("STALE", []) + by_kind.get("OVERDUE", [])
        if waiting:
            running = queries.unresolved(0, MAX_PAGE_SIZE).rows
            report.read += len(running)
            overdue = by_kind.get("OVERDUE", [])
            history = (
                job_history(
                    (row["job_name"] for row in running),
                    max(_window(rule) for rule in overdue),
                )
                if overdue and running
                else {}
            )
            matches += _unresolved(waiting, running, history, now)
        if by_kind.get("FRESHNESS"):
            matches += _freshness(by_kind["FRESHNESS"], now)
        report.matched = len(matches)
        report.recorded = record(matches, now)
    return report
