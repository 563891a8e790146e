"""
What the explorer's templates show, computed in one pass per page.

The templates hold every piece of markup: a status badge, a time with its
age, a duration, a parameter chip, a link. A presenter gives them the values
to place: each row of a page gets its links, its status's tone, its times as
:class:`Moment` values and its durations and ages as text, as of one
``now`` per request. A list renders one template per page (its rows in one
loop, no include per row or per cell), so a row costs a few dictionary
lookups per cell; overriding a row template changes every cell of the row.

Rendering a value costs a template about twice as much when it has to be
escaped, and a list places thousands. Values made only of digits, fixed
words and text escaped once per page (the translated units and labels, the
parts of a URL) are therefore handed over as :class:`SafeString`; anything
read from the database is left for the template to escape. Links come from
:mod:`.links`; rows rendered once per shape and filled per row, from
:mod:`.stamps`.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, TypedDict

from django.template.loader import get_template
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.html import escape
from django.utils.safestring import SafeString
from django.utils.text import get_text_list
from django.utils.translation import get_language, ngettext
from django.utils.translation import gettext_lazy as _

from batchboard import spans
from batchboard.actions import eligibility
from batchboard.explorer import cause
from batchboard.explorer.links import Links
from batchboard.explorer.relations import SEGMENTS, Rollup
from batchboard.explorer.stamps import Stamp, slot, stamp
from batchboard.vocabulary import (
    ACTIVE,
    APPLIED,
    PARTITION_PREVIEW,
    REJECTED,
    REPLAYED,
    STOP,
    UNRESOLVED,
)

Row = dict[str, Any]

#: The exit code an execution is created with (spec 7.3); a run that ends
#: without recording its own (recovered, abandoned) keeps it.
_PLACEHOLDER_EXIT_CODE: Final = "UNKNOWN"


def exit_text(
    status: str,
    exit_code: str | None,
    *,
    running: bool,
    words: Mapping[str, SafeString] | None = None,
) -> tuple[SafeString, bool]:
    """
    Return the exit code a run shows, and whether it is pending (no code).

    An unresolved run has no exit code yet (the column holds a placeholder
    such as ``UNKNOWN``, which reads as the status): it shows "running"
    while its owner may still move it, else a dash. A finished run shows
    its code (a dash for none), but a finished execution that still holds
    the creation placeholder (a recovery leaves the exit code as it was,
    spec 5.5) says no exit code was recorded, so it does not read as the
    status UNKNOWN. The one rule for every list, summary, row and the
    admin; the templates only choose the markup. ``words`` are the active
    language's :func:`texts`, read here when not given.
    """
    if words is None:
        words = texts()
    if status in UNRESOLVED:
        return (words["running"] if running else NOTHING), True
    if exit_code == _PLACEHOLDER_EXIT_CODE:
        return words["no_exit_code"], True
    # html.escape is what Django's escape calls, without its check for lazy text.
    return (SafeString(html.escape(exit_code)) if exit_code else NOTHING), False


#: The status of a run no owner moves any more (only a recovery does).
UNKNOWN_STATUS: Final = "UNKNOWN"


def duration_unknown(row: Row) -> bool:
    """Return whether a run's duration is unknown (Presenter.unknown_span)."""
    return row["status"] == UNKNOWN_STATUS or unreported_end(row)


def unreported_end(row: Row) -> bool:
    """
    Return whether a finished execution's end was not reported by the run.

    A run that ends itself records its exit code; a recovery (mark failed or
    abandon) sets the status and ``ended_at`` to the moment of the decision
    and leaves the exit code as created (spec 5.5). Its ``ended_at`` is
    then when it was declared over, maybe days after it was last seen, so
    its duration is unknown.
    """
    return (
        row["status"] not in UNRESOLVED
        and row.get("exit_code") == _PLACEHOLDER_EXIT_CODE
    )


#: Identifying parameters a job's instance list shows per row.
SHOWN_PARAMETERS: Final = 8
#: Characters of a parameter value an instance row shows (with the ellipsis).
PARAMETER_VALUE_CHARS: Final = 80


def _cut(value: str) -> str:
    """Cut ``value`` to PARAMETER_VALUE_CHARS characters, an ellipsis last."""
    if len(value) <= PARAMETER_VALUE_CHARS:
        return value
    return value[: PARAMETER_VALUE_CHARS - 1] + "…"


# -- statuses ------------------------------------------------------------------


@dataclass(frozen=True)
class Look:
    """How a status looks: a colour family and a one-glyph mark for strips.

    The badge always says the status in words; the colour repeats it.
    """

    tone: SafeString
    mark: SafeString


def _look(tone: str, mark: str) -> Look:
    return Look(SafeString(tone), SafeString(mark))


#: The look of every status of the vocabulary's STATUSES (a test holds the
#: keys to that set).
LOOKS: Final[Mapping[str, Look]] = {
    "STARTING": _look("active", "…"),
    "STARTED": _look("active", "▶"),
    "STOPPING": _look("warn", "◼"),
    "STOPPED": _look("warn", "■"),
    "FAILED": _look("bad", "✕"),
    "COMPLETED": _look("good", "✓"),
    "ABANDONED": _look("muted", "–"),
    "UNKNOWN": _look("bad", "?"),
}
#: A value outside the status set (a newer schema's), and no status at all.
OTHER: Final = _look("muted", "·")
NONE: Final = _look("none", "—")
#: The badge tone of an action's outcome: the two recorded classes, and a
#: replay (nothing done again).
OUTCOME_TONES: Final[Mapping[str, SafeString]] = {
    APPLIED: SafeString("good"),
    REJECTED: SafeString("bad"),
    REPLAYED: SafeString("muted"),
}


def status_change(row: Mapping[str, Any]) -> SafeString:
    """
    Return what an audited operator request did to its execution's status.

    A STOP applied to a running execution moves no status (the owner acts
    on the request later): it reads "stop requested", never "STARTED →
    STARTED".
    """
    prior, result = row.get("prior_status"), row.get("result_status")
    if not prior:
        return NOTHING
    words = texts()
    if (
        row.get("action") == STOP
        and row.get("outcome_class") == APPLIED
        and eligibility.records_stop_request(prior)
    ):
        return SafeString(words["stop_requested"] % {"status": escape(prior)})
    if prior == result:
        return SafeString(words["unchanged"] % {"status": escape(prior)})
    return SafeString(f"{escape(prior)} → {escape(result)}")


def outcome_tone(outcome: str) -> SafeString:
    """Return the badge tone of an outcome (audit rows and action results)."""
    return OUTCOME_TONES.get(outcome, OTHER.tone)


def look(status: str | None) -> Look:
    """Return the look of ``status`` (``None`` or empty: no status yet)."""
    if not status:
        return NONE
    return LOOKS.get(status, OTHER)


# -- text in the request's language ------------------------------------------------

#: What a cell shows for a time or span that has not happened.
NOTHING: Final = SafeString("—")

# Ages, and the text every row of a list shows: a translate tag per row
# would cost more than the rest of the row (spans' units: batchboard.spans).
_TEXTS: Final[Mapping[str, Promise]] = {
    "ago": _("%(span)s ago"),
    "ahead": _("in %(span)s"),
    "chip": _("#%(id)s %(status)s (attempt %(attempt)s)"),
    "attempt": _("attempt %(attempt)s"),
    "instance_no": _("instance #%(id)s"),
    "execution_no": _("execution #%(id)s"),
    "step_no": _("step #%(id)s"),
    "reuses": _("reuses #%(id)s"),
    "end": _("end: %(kind)s"),
    "strip": _("Latest executions of %(name)s, newest first"),
    "newest_first": _("Newest first"),
    "job_order": _("Newest instance first, latest attempt first"),
    "last_updated_first": _("Ordered by last update, newest first, then by id"),
    "oldest_first": _("Oldest first (by id)"),
    "attempts_first": _("Executions, latest attempt first"),
    "progress": _("%(done)s/%(total)s partitions"),
    "restarted": _("restarted as #%(id)s (%(status)s)"),
    "stop_requested": _("stop requested while %(status)s"),
    "unchanged": _("%(status)s, unchanged"),
    "partition_of": _("%(parent)s › %(key)s"),
    "completed": _("completed"),
    "failed": _("failed"),
    "stopped": _("stopped or abandoned"),
    "running": _("running"),
    "no_exit_code": _("no exit code recorded"),
    "unknown_duration": _("unknown"),
    "ended_unreported": _(
        "started %(start)s; its end was recorded at %(end)s by a recovery, not by the run"
    ),
    "last_seen": _("started %(start)s; last update %(end)s, then left %(status)s"),
    "waiting": _("waiting"),
    "created": _("Created"),
    "started": _("Started"),
    "ended": _("Ended"),
    "updated": _("Updated"),
    "read_count": _("Read"),
    "processed_count": _("Processed"),
    "write_count": _("Written"),
    "filter_count": _("Filtered"),
    "commit_count": _("Commits"),
    "rollback_count": _("Rollbacks"),
    "no_rollback_count": _("No-rollback"),
    "read_retry_count": _("Read retries"),
    "process_retry_count": _("Process retries"),
    "write_retry_count": _("Write retries"),
    "read_skip_count": _("Read skips"),
    "process_skip_count": _("Process skips"),
    "write_skip_count": _("Write skips"),
}
#: The counters a step row shows (a parent's are its partitions' sums).
_ROW_COUNTERS: Final = (
    "read_count",
    "write_count",
    "filter_count",
    "commit_count",
    "rollback_count",
)
#: The times a run's summary lists, in order.
_RUN_TIMES: Final = ("created", "started", "ended", "updated")
#: A step's counters as its summary table lays them out, line by line.
_COUNTER_LINES: Final = (
    ("read_count", "processed_count", "write_count", "filter_count"),
    ("commit_count", "rollback_count", "no_rollback_count"),
    ("read_retry_count", "process_retry_count", "write_retry_count"),
    ("read_skip_count", "process_skip_count", "write_skip_count"),
)


@functools.lru_cache(maxsize=64)
def _texts_in(language: str | None) -> Mapping[str, SafeString]:
    # Escaped once: a format's numbers and escaped values keep it safe.
    texts = {key: escape(str(text)) for key, text in _TEXTS.items()}
    # "STARTING, STARTED, STOPPING or UNKNOWN", from the vocabulary.
    texts["unresolved"] = escape(get_text_list(list(UNRESOLVED), str(_("or"))))
    return texts


def texts() -> Mapping[str, SafeString]:
    """Return the row texts and unit formats in the active language, escaped."""
    return _texts_in(get_language())


def group_digits(value: int | None) -> SafeString:
    """Group a count's digits with thin spaces so large counters stay readable."""
    if value is None:
        return NOTHING
    return SafeString(f"{int(value):,}".replace(",", "\u2009"))


# -- times ----------------------------------------------------------------------


class Moment(TypedDict):
    """
    A time as a template shows it: machine-readable (UTC), as text in the
    request's time zone, as text in UTC (its ``title``), and its age.
    """

    iso: SafeString
    text: SafeString
    utc: SafeString
    ago: SafeString


def utc_text(moment: datetime) -> str:
    """Return a UTC time as the pages write it: ``2026-03-01 14:02:03Z``."""
    iso = moment.astimezone(UTC).isoformat()
    return f"{iso[:10]} {iso[11:19]}Z"


class Clock:
    """Times, ages and durations as of one moment, in the request's language."""

    def __init__(self, now: datetime | None = None) -> None:
        self.now = now or timezone.now()
        self._formats = texts()
        self._units = spans.formats()
        # The zone the texts are in: the request's (personal.zones), read
        # once; None when it is UTC.
        zone = timezone.get_current_timezone()
        self._zone = None if getattr(zone, "key", "") == "UTC" else zone

    def span(self, seconds: float, whole: bool = False) -> SafeString:
        """Return a span in human units (:func:`batchboard.spans.span`)."""
        return spans.span(seconds, whole, self._units)

    def age(self, moment: datetime | None) -> SafeString:
        """Return how long ago ``moment`` was, e.g. ``"4 min 03 s ago"``."""
        if moment is None:
            return NOTHING
        delta = (self.now - moment).total_seconds()
        if delta < 0:
            return SafeString(self._formats["ahead"] % {"span": self.span(-delta)})
        return SafeString(self._formats["ago"] % {"span": self.span(delta)})

    def duration(self, start: datetime | None, end: datetime | None) -> SafeString:
        """Return a human duration; an unfinished span runs to now."""
        if start is None:
            return NOTHING
        return self.span(((end or self.now) - start).total_seconds())

    def day(self, moment: datetime | None) -> SafeString:
        """Return the UTC day of ``moment``, ISO (``2026-03-01``); a dash for none."""
        if moment is None:
            return NOTHING
        return SafeString(moment.astimezone(UTC).date().isoformat())

    def moment(self, moment: datetime | None) -> Moment | None:
        """Return a time in UTC with its age, or ``None`` for no time."""
        if moment is None:
            return None
        if moment.tzinfo is not UTC:
            moment = moment.astimezone(UTC)
        utc = SafeString(utc_text(moment))
        text = utc
        if self._zone is not None:
            local = moment.astimezone(self._zone)
            text = SafeString(f"{local:%Y-%m-%d %H:%M:%S} {local.tzname() or ''}")
        return {
            "iso": SafeString(moment.isoformat()),
            "text": text,
            "utc": utc,
            "ago": self.age(moment),
        }


# -- the presenter ------------------------------------------------------------------


@dataclass
class Bar:
    """One step on an execution's timeline, as percentages of its span."""

    step: Row
    left: float
    width: float
    duration: SafeString
    #: A parent step's partitions (their worker steps), drawn under it.
    children: list[Bar] = field(default_factory=list)


class Presenter:
    """
    One request's presenter: a clock and links shared by every row it shows.

    Each method adds the values its templates place to the rows it is given
    (and returns them), in one pass.
    """

    def __init__(self, now: datetime | None = None) -> None:
        self.clock = Clock(now)
        self.now = self.clock.now
        self.links = Links()
        self.texts = texts()
        self._chips: dict[tuple[tuple[str, str], ...], SafeString] = {}
        self._value_stamps: dict[tuple[tuple[str, str], ...], Stamp] = {}

    # Runs: executions and steps.

    def run(self, row: Row) -> Row:
        """Add an execution's or a step's summary values (its page's head)."""
        clock = self.clock
        row["live"] = row["status"] in UNRESOLVED
        row["tone"] = look(row["status"]).tone
        row["times"] = [
            (self.texts[column], clock.moment(row[f"{column}_at"]))
            for column in _RUN_TIMES
        ]
        row["duration"] = clock.duration(row["started_at"], row["ended_at"])
        self.unknown_span(row)
        self.exit(row, running=row["status"] in ACTIVE)
        return row

    def unknown_span(self, row: Row) -> bool:
        """
        Say so if a run's duration is not known; return whether it is not.

        A run whose end a recovery declared (:func:`unreported_end`) is
        known between its start and that declaration; an UNKNOWN run, which
        no owner moves any more, between its start and its last update.
        """
        if unreported_end(row):
            self.unknown_duration(row, row["ended_at"], "ended_unreported")
            return True
        if row["status"] == UNKNOWN_STATUS:
            self.unknown_duration(row, row["updated_at"], "last_seen")
            return True
        return False

    def unknown_duration(self, row: Row, end: datetime | None, text: str) -> Row:
        """
        Say a run's duration is unknown, and the times it is known between.

        ``row["duration"]`` becomes "unknown" and ``row["duration_bounds"]``
        names its start and ``end`` (where the record stops telling).
        """
        start = self.clock.moment(row["started_at"] or row.get("created_at"))
        until = self.clock.moment(end)
        row["duration"] = self.texts["unknown_duration"]
        row["unreported"] = True
        row["duration_bounds"] = SafeString(
            self.texts[text]
            % {
                "start": start["text"] if start else NOTHING,
                "end": until["text"] if until else NOTHING,
                "status": escape(row["status"]),
            }
        )
        return row

    def exit(self, row: Row, *, running: bool) -> Row:
        """Add the exit code a run's cell shows (:func:`exit_text`)."""
        row["exit_text"], row["exit_pending"] = exit_text(
            row["status"], row.get("exit_code"), running=running, words=self.texts
        )
        return row

    def execution(self, row: Row, *, stale: bool = False) -> Row:
        """
        Add what the execution page shows of the execution itself.

        The page ``polls`` while an owner may still move the execution
        (STARTING, STARTED, STOPPING); it claims to be ``live`` only while it
        is not ``stale`` (a recovery candidate by the database's clock). An
        UNKNOWN execution waits for an operator: only a recovery moves it.
        """
        self.run(row)
        status = row["status"]
        row["polls"] = status in ACTIVE
        row["live"] = status in ACTIVE and not stale
        row["stale"] = status in UNRESOLVED and not row["live"]
        row["finished"] = status not in UNRESOLVED
        row["updated_for"] = self.clock.span(
            (self.now - row["updated_at"]).total_seconds()
        )
        row["stop_requested"] = self.clock.moment(row["stop_requested_at"])
        row["live_url"] = self.links.link("batchboard:execution_live", row["id"])
        row["audit_url"] = self.links.job_filter("batchboard:audit", row["job_name"])
        row["restart_url"] = self.links.link(
            "batchboard:execution", row["restart_of_execution_id"]
        )
        return row

    def attempt(self, row: Row | None) -> Row | None:
        """Add a neighbouring attempt's link and tone (lineage)."""
        if row is not None:
            row["url"] = self.links.link("batchboard:execution", row["id"])
            row["tone"] = look(row["status"]).tone
        return row

    def restarts(self, rows: Iterable[Row], following: Mapping[int, Row]) -> None:
        """Say of each row that was restarted which attempt followed and how."""
        text = self.texts["restarted"]
        head, tail = self.links.pattern("batchboard:execution")
        for row in rows:
            after = following.get(int(row["id"]))
            if after is None:
                continue
            row["restart"] = {
                "url": SafeString(f"{head}{int(after['id'])}{tail}"),
                "tone": look(after["status"]).tone,
                "text": SafeString(
                    text % {"id": int(after["id"]), "status": escape(after["status"])}
                ),
            }

    def step(self, row: Row) -> Row:
        """
        Add what the step page's summary shows.

        A step left unresolved by a finished execution is not running: not
        live, and its duration is unknown; it is known between its start
        and its last update.
        """
        self.run(row)
        if row["live"] and row.get("execution_status", "STARTED") not in UNRESOLVED:
            row["live"] = False
            self.unknown_duration(row, row["updated_at"], "last_seen")
        self.exit(row, running=row["live"] and row["status"] in ACTIVE)
        row["live_url"] = self.links.link("batchboard:step_live", row["id"])
        row["counters"] = [
            [(self.texts[name], group_digits(row[name])) for name in line]
            for line in _COUNTER_LINES
        ]
        total = row["partitions_total"]
        row["percent_done"] = (
            int(round(100 * (row["partitions_done"] or 0) / total)) if total else 0
        )
        row["label"] = row["step_name"]
        return row

    def worker(self, row: Row, partition: Row | None) -> Row:
        """Label a worker step by the partition it ran (key under its parent)."""
        if partition is not None:
            row["partition"] = partition
            row["label"] = SafeString(
                self.texts["partition_of"]
                % {
                    "parent": escape(partition["parent_name"]),
                    "key": escape(partition["partition_key"]),
                }
            )
            row["parent_url"] = self.links.link(
                "batchboard:step", partition["step_execution_id"]
            )
        return row

    def segments(self, rollup: Rollup | None) -> list[Row]:
        """
        Return a partition progress bar's segments: tone, extent and count.

        Each segment is a share of the partitions (completed, failed,
        stopped, running, waiting), placed left to right in percent.
        """
        if rollup is None or not rollup.total:
            return []
        parts, left = [], 0.0
        for name, _statuses in SEGMENTS:
            count = rollup.segments.get(name, 0)
            if not count:
                continue
            width = 100.0 * count / rollup.total
            parts.append(
                {
                    "name": name,
                    "label": self.texts[name],
                    "count": count,
                    "x": round(left, 2),
                    "width": round(width, 2),
                }
            )
            left += width
        return parts

    def executions(self, rows: list[Row], *, triage: bool = False) -> list[Row]:
        """Add the cells of execution rows (lists and the overview's panel)."""
        clock, job = self.clock, self.links.job
        page_head, page_tail = self.links.pattern("batchboard:execution")
        row_head, row_tail = self.links.pattern("batchboard:execution_row")
        instance_head, instance_tail = self.links.pattern("batchboard:instance")
        # Triage rows carry action links: built from one reversed pattern
        # each, never reversed per row.
        stop_head, stop_tail = self.links.pattern("batchboard:action_stop")
        recover_head, recover_tail = self.links.pattern("batchboard:recovery_proposal")
        if triage:
            row_tail = SafeString(row_tail + escape("?triage=1"))
        for row in rows:
            pk, status = row["id"], row["status"]
            row["url"] = SafeString(f"{page_head}{pk}{page_tail}")
            row["row_url"] = SafeString(f"{row_head}{pk}{row_tail}")
            row["instance_url"] = SafeString(
                f"{instance_head}{row['job_instance_id']}{instance_tail}"
            )
            row["job_url"] = job(row["job_name"])
            row["live"] = status in UNRESOLVED
            row["active"] = status in ACTIVE
            row["tone"] = look(status).tone
            self.exit(row, running=row["active"])
            row["created"] = clock.moment(row["created_at"])
            if not self.unknown_span(row):
                row["duration"] = clock.duration(row["started_at"], row["ended_at"])
            row["updated_age"] = clock.age(row["updated_at"])
            if triage:
                row["stop_url"] = SafeString(f"{stop_head}{pk}{stop_tail}")
                row["recover_url"] = SafeString(f"{recover_head}{pk}{recover_tail}")
        cause.failure_links(rows)
        return rows

    def failures(self, rows: list[Row]) -> list[Row]:
        """Add the overview's recent failures' links and ages."""
        self.executions(rows)
        for row in rows:
            row["ended_age"] = self.clock.age(row["ended_at"])
        return rows

    def steps(self, rows: list[Row], execution: Row | None = None) -> list[Row]:
        """
        Add the cells of step rows.

        A step still unresolved in a finished ``execution`` (say UNKNOWN
        after its execution was recovered as FAILED) is not running: it is
        not live, its duration is unknown, and its span ends at its last
        update, the last time it was seen.
        """
        clock, progress = self.clock, self.texts["progress"]
        page_head, page_tail = self.links.pattern("batchboard:step")
        row_head, row_tail = self.links.pattern("batchboard:step_row")
        ended = None
        if execution is not None and execution["status"] not in UNRESOLVED:
            ended = execution["ended_at"] or execution["updated_at"]
        for row in rows:
            pk, status = row["id"], row["status"]
            row["url"] = SafeString(f"{page_head}{pk}{page_tail}")
            row["row_url"] = SafeString(f"{row_head}{pk}{row_tail}")
            row["live"] = status in UNRESOLVED and ended is None
            row["tone"] = look(status).tone
            self.exit(row, running=row["live"] and status in ACTIVE)
            row["started"] = clock.moment(row["started_at"])
            row["until"] = row["ended_at"] or ended
            row["duration"] = clock.duration(row["started_at"], row["until"])
            if status in UNRESOLVED and ended is not None:
                # Not running: drawn muted, to its last update, not on.
                row["tone"] = "muted"
                row["until"] = row.get("updated_at") or ended
                self.unknown_duration(row, row["until"], "last_seen")
            row["label"] = row["step_name"]
            row["counts"] = {name: row[name] for name in _ROW_COUNTERS}
            total = row["partitions_total"]
            if total:
                row["progress_label"] = SafeString(
                    progress
                    % {"done": int(row["partitions_done"]), "total": int(total)}
                )
        return rows

    def group(
        self, rows: list[Row], partitions: list[Row], rollups: Mapping[int, Rollup]
    ) -> list[Row]:
        """
        Group a page's worker steps under their parents; return the top rows.

        A parent gets its partitions (the first ``PARTITION_PREVIEW``), its
        progress segments and its partitions' summed counters in place of
        its own; a worker step whose parent is on the page moves under it,
        any other is labelled by its partition key.
        """
        by_worker: dict[int, Row] = {}
        by_parent: dict[int, list[Row]] = {}
        head, tail = self.links.pattern("batchboard:step")
        for part in partitions:
            worker = part["worker_step_execution_id"]
            part["tone"] = look(part["status"]).tone
            part["worker_url"] = (
                SafeString(f"{head}{int(worker)}{tail}") if worker is not None else None
            )
            if worker is not None:
                by_worker[int(worker)] = part
            by_parent.setdefault(int(part["step_execution_id"]), []).append(part)
        shown_parents = {int(row["id"]) for row in rows if int(row["id"]) in rollups}
        top = []
        for row in rows:
            pk = int(row["id"])
            rollup = rollups.get(pk)
            if rollup is not None:
                row["rollup"] = rollup
                row["segments"] = self.segments(rollup)
                row["counts"] = rollup.counters
                listed = by_parent.get(pk, [])
                row["partition_rows"] = listed[:PARTITION_PREVIEW]
                row["more_partitions"] = max(0, rollup.total - PARTITION_PREVIEW)
                row["workers"] = []
            ran = by_worker.get(pk)
            if ran is not None:
                self.worker(row, ran)
                parent = int(ran["step_execution_id"])
                if parent in shown_parents:
                    row["grouped_under"] = parent
                    continue
            top.append(row)
        parents = {int(row["id"]): row for row in top if "workers" in row}
        for row in rows:
            parent_row = parents.get(row.get("grouped_under", 0))
            if parent_row is not None:
                parent_row["workers"].append(row)
        return top

    def partitions(self, rows: list[Row]) -> list[Row]:
        """Add the cells of partition rows."""
        worker_label = self.texts["step_no"]
        row_head, row_tail = self.links.pattern("batchboard:partition_row")
        for row in rows:
            status, worker = row["status"], row["worker_step_execution_id"]
            row["row_url"] = SafeString(f"{row_head}{row['id']}{row_tail}")
            row["worker_url"] = self.links.link("batchboard:step", worker)
            if worker is not None:
                row["worker_label"] = SafeString(worker_label % {"id": int(worker)})
            row["live"] = status in UNRESOLVED
            row["tone"] = look(status).tone
            self.exit(row, running=status in ACTIVE)
        return rows

    def instances(self, rows: list[Row]) -> list[Row]:
        """Add the cells of a job's instance rows (parameter names and kinds only)."""
        clock, attempt = self.clock, self.texts["attempt"]
        head, tail = self.links.pattern("batchboard:instance")
        for row in rows:
            row["url"] = SafeString(f"{head}{row['id']}{tail}")
            latest = row["latest_id"]
            row["latest_url"] = self.links.link("batchboard:execution", latest)
            if latest is not None:
                row["latest_label"] = SafeString(
                    attempt % {"attempt": int(row["latest_attempt"])}
                )
            row["tone"] = look(row["latest_status"]).tone
            row["created"] = clock.moment(row["created_at"])
            parameters = row["parameters"]
            row["parameter_chips"] = self.parameter_chips(parameters[:SHOWN_PARAMETERS])
            row["more_parameters"] = max(0, len(parameters) - SHOWN_PARAMETERS)
        return rows

    def parameter_chips(self, parameters: Sequence[tuple[str, str]]) -> SafeString:
        """
        Render parameter chips (``batchboard/partials/parameter_chips.html``).

        A job's instances mostly share one list of names and kinds, so each
        distinct list is rendered once per page: a template loop per row
        cost more than the rest of the row.
        """
        key = tuple(parameters)
        chips = self._chips.get(key)
        if chips is None:
            template = get_template("batchboard/partials/parameter_chips.html")
            # A rendered template is escaped already.
            chips = self._chips[key] = SafeString(template.render({"parameters": key}))
        return chips

    def parameter_values(
        self, parameters: Sequence[tuple[str, str, str]]
    ) -> SafeString:
        """
        Render parameter chips with values (``partials/parameter_values.html``).

        Rendered once per distinct list of names and kinds on a page, as a
        stamp whose slots take the values, each escaped and cut to
        :data:`PARAMETER_VALUE_CHARS` characters (an ellipsis ending a cut one).
        """
        shape = tuple((name, kind) for name, kind, _value in parameters)
        drawn = self._value_stamps.get(shape)
        if drawn is None:
            drawn = self._value_stamps[shape] = stamp(
                "batchboard/partials/parameter_values.html",
                {
                    "parameters": [
                        (name, kind, slot(number))
                        for number, (name, kind) in enumerate(shape)
                    ]
                },
                len(shape),
                key=("values", shape),
            )
        return SafeString(
            drawn.fill(*(escape(_cut(value)) for _name, _kind, value in parameters))
        )

    def instance(self, row: Row) -> Row:
        """Add what the instance page's head shows."""
        row["created"] = self.clock.moment(row["created_at"])
        row["hold_placed"] = self.clock.moment(row["hold_placed_at"])
        row["job_url"] = self.links.job(row["job_name"])
        row["audit_url"] = self.links.job_filter("batchboard:audit", row["job_name"])
        return row

    def jobs(
        self,
        names: Iterable[str],
        strips: Mapping[str, list[Row]],
        running: Mapping[str, int],
    ) -> list[Row]:
        """Return the overview's job rows: each job's latest runs as chips."""
        clock, job, title = self.clock, self.links.job, self.texts["chip"]
        strip_label = self.texts["strip"]
        head, tail = self.links.pattern("batchboard:execution")
        jobs = []
        chip_url = SafeString(f"{head}{slot(0)}{tail}")
        chips: dict[str, Stamp] = {}
        for name in names:
            strip = strips.get(name, [])
            placed = []
            for run in strip:
                status = run["status"]
                chip = chips.get(status)
                if chip is None:
                    seen = look(status)
                    title_text = title % {
                        "id": slot(0),
                        "status": escape(status),
                        "attempt": slot(1),
                    }
                    chip = chips[status] = stamp(
                        "batchboard/partials/strip_chip.html",
                        {
                            "tone": seen.tone,
                            "mark": seen.mark,
                            "status": status,
                            "url": chip_url,
                            "title": SafeString(title_text),
                            "id": slot(0),
                        },
                        2,
                    )
                placed.append(chip.fill(int(run["id"]), int(run["attempt"])))
            last = strip[0] if strip else None
            if last is not None:
                last["tone"] = look(last["status"]).tone
                last["created"] = clock.moment(last["created_at"])
            count = running.get(name, 0)
            jobs.append(
                {
                    "name": name,
                    "url": job(name),
                    # The running count counts unresolved executions: the
                    # link lists the same ones, the "active" shortcut.
                    "running_url": self.links.job_filter(
                        "batchboard:executions", name, "active"
                    ),
                    "strip": strip,
                    # Rendered already (each chip from its stamp).
                    "chips": SafeString("".join(placed)),
                    "strip_label": SafeString(strip_label % {"name": escape(name)}),
                    "last": last,
                    "running": count,
                    "running_label": (
                        ngettext("%(count)s running", "%(count)s running", count)
                        % {"count": count}
                        if count
                        else None
                    ),
                }
            )
        return jobs

    def flow(self, rows: list[Row]) -> list[Row]:
        """Add the cells of flow decision rows."""
        texts = self.texts
        for row in rows:
            source, reused = row["source_step_execution_id"], row["reused_decision_id"]
            row["source_url"] = self.links.link("batchboard:step", source)
            if source is not None:
                row["source_label"] = SafeString(texts["step_no"] % {"id": int(source)})
            if reused is not None:
                row["reuse_label"] = SafeString(texts["reuses"] % {"id": int(reused)})
            if not row["target_node_id"]:
                row["end_label"] = SafeString(
                    texts["end"] % {"kind": escape(row["terminal_kind"] or "")}
                )
            row["decided"] = self.clock.moment(row["decided_at"])
        return rows

    def recovery(self, rows: list[Row]) -> list[Row]:
        """Add the cells of recovery decision rows."""
        for row in rows:
            row["prior_tone"] = look(row["prior_status"]).tone
            row["resulting_tone"] = look(row["resulting_status"]).tone
            row["decided"] = self.clock.moment(row["decided_at"])
        return rows

    def requests(self, rows: list[Row]) -> list[Row]:
        """Add the cells of operator request rows."""
        for row in rows:
            row["outcome_tone"] = outcome_tone(row["outcome_class"])
            row["change"] = status_change(row)
            row["requested"] = self.clock.moment(row["requested_at"])
        return rows

    def trail(
        self,
        job_name: str,
        *ids: tuple[str, int],
        current: str | None = None,
    ) -> list[tuple[SafeString | str, SafeString | None]]:
        """
        Return a page's breadcrumbs after "Jobs": the job, then each record.

        ``ids`` are ``(kind, id)`` pairs (``"instance"``, ``"execution"``,
        ``"step"``); the last is the page itself unless ``current`` names
        the page below it. Each crumb is ``(label, link)``; the page's own
        has no link.
        """
        crumbs: list[tuple[SafeString | str, SafeString | None]] = [
            (job_name, self.links.job(job_name))
        ]
        for kind, pk in ids:
            label = SafeString(self.texts[f"{kind}_no"] % {"id": int(pk)})
            crumbs.append((label, self.links.link(f"batchboard:{kind}", pk)))
        if current is None:
            crumbs[-1] = (crumbs[-1][0], None)
        else:
            crumbs.append((current, None))
        return crumbs

    def timeline(self, execution: Row, steps: Sequence[Row]) -> list[Bar]:
        """
        Place each step as a bar on the execution's time span (percentages).

        ``steps`` are the top rows of :meth:`group`: a parent's worker
        steps are drawn as its children. Unfinished steps run to now (to
        the execution's end once it finished); steps that never started
        are left out.
        """
        now = self.now
        start = execution["started_at"] or execution["created_at"]
        end = execution["ended_at"] or now
        if unreported_end(execution):
            # Declared over long after it was last seen: the span is its
            # steps' own, not the wait for the recovery.
            end = start
        every = [
            row
            for top in steps
            for row in (top, *top.get("workers", ()))
            if row["started_at"] is not None
        ]
        for row in every:
            start = min(start, row["started_at"])
            end = max(end, row.get("until") or row["ended_at"] or now)
        span = max((end - start).total_seconds(), 0.001)

        def bar(row: Row) -> Bar:
            finish = row.get("until") or row["ended_at"] or now
            left = (row["started_at"] - start).total_seconds() / span * 100
            width = (finish - row["started_at"]).total_seconds() / span * 100
            return Bar(
                step=row,
                left=round(max(0.0, min(left, 100.0)), 2),
                width=round(max(0.4, min(width, 100.0 - left)), 2),
                duration=(
                    self.texts["unknown_duration"]
                    if row.get("unreported")
                    else self.clock.duration(row["started_at"], finish)
                ),
            )

        bars = []
        for row in steps:
            if row["started_at"] is None:
                continue
            placed = bar(row)
            placed.children = [
                bar(worker)
                for worker in row.get("workers", ())
                if worker["started_at"] is not None
            ]
            bars.append(placed)
        return bars
