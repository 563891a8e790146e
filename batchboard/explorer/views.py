"""
The explorer's pages: function views over queries, presenters and templates.

Each view reads its query string through a form (:mod:`.inputs`), reads one
page (:mod:`.queries`), has a presenter add what the templates place
(:mod:`.presenters`) and renders. A plain request gets the full page; an
htmx request (that is not a history restore) gets a fragment: the rows of
the next page when a cursor is given, else the page's live region.
Sign-in, permissions and the error pages are :func:`batchboard.web.reader`'s.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.functional import Promise
from django.utils.translation import get_language, gettext_lazy
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods
from django_htmx.http import replace_url

from batchboard import actions, conf, cursors
from batchboard.actions import eligibility, envelope, permissions
from batchboard.digests import PARAMETER_KINDS
from batchboard.explorer import audit as audit_log
from batchboard.explorer import cause, cli, inputs, overview, queries, relations, trends
from batchboard.explorer import compare as comparing
from batchboard.explorer import search as parameter_search_form
from batchboard.explorer.access import (
    PARAMETER_VALUES,
    VIEW_AUDIT,
    VIEW_EXECUTION_PAGE,
    VIEW_EXECUTIONS,
    VIEW_OVERVIEW,
    VIEW_PARTITION_ROWS,
    VIEW_PARTITIONS,
    VIEW_STEP_ROWS,
)
from batchboard.explorer.links import (
    compare_link,
    job_filter_url,
    job_url,
    link,
    url_pattern,
)
from batchboard.explorer.pagination import Page, Row
from batchboard.explorer.presenters import SHOWN_PARAMETERS, Presenter
from batchboard.vocabulary import (
    ACTIVE,
    ATTENTION_FAILURES,
    ATTENTION_LIMIT,
    MAX_PAGE_SIZE,
    PARTITION_WORKER_PREFIX,
    RECOVER,
    RESTART,
    STATUS_SETS,
    STATUSES,
    STOP,
    SUGGESTED_NAMES,
    UNRESOLVED,
    WINDOW_SCAN,
)
from batchboard.web import (
    ErrorPage,
    NotFound,
    ReadGate,
    first_page_url,
    guarded,
    known_id,
    missing,
    reader,
    wants_fragment,
)

#: Rows of each audit list the execution page previews.
PREVIEW_ROWS = 20


# -- helpers -------------------------------------------------------------------


def _next_url(request: HttpRequest, page: Page) -> str | None:
    if page.next_cursor is None:
        return None
    params = [
        (key, value)
        for key, value in request.GET.items()
        if key not in ("cursor", "size")
    ]
    params += [("size", str(page.page_size)), ("cursor", page.next_cursor)]
    return f"{request.path}?{urlencode(params)}"


def _context(request: HttpRequest, present: Presenter, **extra: Any) -> dict[str, Any]:
    return {
        # The language the page renders in, read once (see once_per_language).
        "LANGUAGE_CODE": get_language(),
        "first_url": first_page_url(request),
        "now": present.now,
        "poll_seconds": int(conf.get_config()["POLL_SECONDS"]),
        **extra,
    }


def _rows(
    request: HttpRequest, template: str, token: str | None, context: dict[str, Any]
) -> HttpResponse:
    """
    Render appended rows; the address bar then follows the cursor.

    Only a page that added rows replaces the URL: a reload or a shared link
    shows that page, never the empty page after a full last one.
    """
    response = render(request, template, context)
    if token and context["page"].rows:
        replace_url(response, request.get_full_path())
    return response


@dataclass(frozen=True)
class ListPage:
    """A list's page template and the template of its rows (htmx's next page)."""

    template: str
    rows: str


EXECUTION_ROWS = "batchboard/partials/execution_rows.html"
OVERVIEW = ListPage("batchboard/index.html", "batchboard/partials/job_rows.html")
JOB = ListPage("batchboard/job.html", "batchboard/partials/instance_rows.html")
INSTANCE = ListPage("batchboard/instance.html", EXECUTION_ROWS)
EXECUTIONS = ListPage("batchboard/executions.html", EXECUTION_ROWS)
UNRESOLVED_PAGE = ListPage("batchboard/unresolved.html", EXECUTION_ROWS)
AUDIT = ListPage(
    "batchboard/execution_list.html", "batchboard/partials/audit_rows.html"
)


def _list(
    request: HttpRequest,
    form: inputs.ListForm,
    page: Page,
    present: Presenter,
    shown: ListPage,
    extra: dict[str, Any],
) -> HttpResponse:
    """Render a list's full page, or for htmx its rows and the next sentinel."""
    context = _context(request, present, page=page, next_url=_next_url(request, page))
    context.update(extra)
    if wants_fragment(request):
        return _rows(request, shown.rows, form.token, context)
    return render(request, shown.template, context)


def _polled(
    request: HttpRequest,
    page: tuple[str, int],
    template: str,
    present: Callable[[Presenter], dict[str, Any]],
) -> HttpResponse:
    """
    Render a polled fragment (a live summary or row) from ``present``'s values.

    A plain request, a fragment's address opened by hand, is sent to the
    page the fragment belongs to, ``page`` (its URL name and id).
    """
    if not wants_fragment(request):
        name, pk = page
        return HttpResponseRedirect(reverse(name, args=[pk]))
    presenter = Presenter()
    return render(request, template, _context(request, presenter, **present(presenter)))


# -- the overview -----------------------------------------------------------------


def _attention(present: Presenter) -> dict[str, Any]:
    """Return what needs attention: stale unresolved runs and recent failures."""
    stale_seconds = int(conf.get_config()["STALE_SECONDS"])
    stale = queries.unresolved(stale_seconds, ATTENTION_LIMIT)
    present.executions(stale.rows)
    # What is still broken comes first: of the latest failures, those whose
    # instance has no later COMPLETED attempt; the ones a restart resolved
    # are only counted and folded.
    # Only the rows the panel lists are presented: of the failures read,
    # at most ATTENTION_LIMIT of each kind are shown.
    failures = queries.recent_failures(ATTENTION_FAILURES)
    latest = relations.latest_attempts(failures)
    broken: list[Row] = []
    resolved: list[Row] = []
    for row in failures:
        after = latest.get(int(row["id"]))
        (resolved if after and after["status"] == "COMPLETED" else broken).append(row)
    shown = {
        "failures": present.failures(broken[:ATTENTION_LIMIT]),
        "resolved": present.failures(resolved[:ATTENTION_LIMIT]),
    }
    for rows in shown.values():
        present.restarts(rows, latest)
    return {
        "stale": stale,
        "stale_seconds": stale_seconds,
        **shown,
        "more_failures": len(broken) > ATTENTION_LIMIT,
        "resolved_count": len(resolved),
        "failures_read": len(failures),
    }


@reader(*VIEW_OVERVIEW)
def index(request: HttpRequest) -> HttpResponse:
    """Show job names with their latest runs and what needs attention."""
    form = inputs.read(inputs.OverviewForm, request)
    page = queries.job_names(form.page_size, form.token)
    names = [row["job_name"] for row in page.rows]
    present = Presenter()
    jobs = present.jobs(
        names, overview.job_strips(names), overview.running_counts(names)
    )
    # The attention panel is its own fragment, loaded with the page and
    # polled while runs are stuck: see attention().
    return _list(request, form, page, present, OVERVIEW, {"jobs": jobs})


@reader(*VIEW_OVERVIEW)
def attention(request: HttpRequest) -> HttpResponse:
    """
    Return the overview's "needs attention" panel.

    The overview's first page asks for it as soon as it is shown, and the
    panel polls itself while it lists stuck runs: the job list never waits
    for its reads (stale unresolved runs, recent failures, their restarts),
    and each region's cost is measured on its own.
    """
    if not wants_fragment(request):
        return HttpResponseRedirect(reverse("batchboard:index"))
    present = Presenter()
    return render(
        request,
        "batchboard/partials/attention.html",
        _context(request, present, **_attention(present)),
    )


# -- jobs, instances and executions ---------------------------------------------------


@reader(*VIEW_EXECUTIONS)
def job(request: HttpRequest, job_name: str) -> HttpResponse:
    """
    Show a job's trend and steps grid, and its instances, newest first,
    optionally only those created within a time window.
    """
    form = inputs.read(inputs.InstancesForm, request)
    window = form.window
    if window is None:
        page = queries.instances(job_name, form.page_size, form.token)
    else:
        page = queries.windowed_instances(job_name, window, form.page_size, form.token)
    if not page.rows and page.first and not queries.job_exists(job_name):
        raise NotFound(_("job named “%(name)s”") % {"name": job_name})
    present = Presenter()
    present.instances(page.rows)
    show_values = request.user.has_perm(PARAMETER_VALUES)
    if show_values:
        _with_values(present, page.rows)
    context: dict[str, Any] = {
        "job_name": job_name,
        "show_values": show_values,
        "window_scan": WINDOW_SCAN,
        **_window_context(request, form),
    }
    if not wants_fragment(request):
        context["trail"] = present.trail(job_name)
        context["executions_url"] = job_filter_url("batchboard:executions", job_name)
        context["audit_url"] = job_filter_url("batchboard:audit", job_name)
        # The trend and the grid are their own fragment, loaded with the
        # page: see job_history().
        context["history_url"] = job_url(
            job_name, url_pattern("batchboard:job_history")
        )
    return _list(request, form, page, present, JOB, context)


@reader(*VIEW_EXECUTIONS)
def job_history(request: HttpRequest, job_name: str) -> HttpResponse:
    """
    Return a job page's recent history: the duration trend and the steps grid.

    The job page asks for it as soon as it is shown, so its instance list
    never waits for these two reads, and each region's cost is measured on
    its own. A plain request (the address opened by hand) goes to the page.
    """
    if not wants_fragment(request):
        return HttpResponseRedirect(_job_location(job_name))
    present = Presenter()
    # The grid lists steps: only for a reader who may view them.
    history = trends.job_history(
        job_name, present.clock, steps=request.user.has_perm(VIEW_STEP_ROWS)
    )
    if not history["trend"].bars and not queries.job_exists(job_name):
        raise NotFound(_("job named “%(name)s”") % {"name": job_name})
    return render(
        request,
        "batchboard/partials/job_history.html",
        _context(request, present, job_name=job_name, **history),
    )


def _job_location(job_name: str) -> str:
    """
    Return a job page's address for a ``Location`` header: a URL, not HTML.

    :func:`job_url` is the link as a template places it, HTML-escaped
    (``&`` as ``&amp;``); a redirect carries the URL itself. Unescaping
    the escaped link gives that URL back exactly, with the job segment
    percent-encoded as every link has it (``/`` as ``%2F``, so the browser
    keeps the name one segment), which ``reverse()`` would not do.
    """
    return html.unescape(job_url(job_name))


def _with_values(present: Presenter, rows: list[Row]) -> None:
    """Give a job's instance rows their parameter values (one statement)."""
    values = queries.parameter_values_of([row["id"] for row in rows])
    for row in rows:
        shown = values.get(row["id"], {})
        row["parameter_values"] = [
            (name, kind, shown.get(name, ""))
            for name, kind in row["parameters"][:SHOWN_PARAMETERS]
        ]
        row["parameter_value_chips"] = present.parameter_values(row["parameter_values"])


@reader(*VIEW_EXECUTIONS)
def instance(request: HttpRequest, instance_id: int) -> HttpResponse:
    """Show an instance, its parameters and its executions."""
    known_id("instance", instance_id)
    form = inputs.read(inputs.ListForm, request)
    present = Presenter()
    found: Row | None = None
    values: dict[str, str] = {}
    show_values = request.user.has_perm(PARAMETER_VALUES)
    if not (form.token and wants_fragment(request)):
        # "Load more" needs only the rows; every other request the instance.
        found = queries.instance(instance_id)
        if found is None:
            raise missing("instance", instance_id)
        present.instance(found)
        found["trail"] = present.trail(found["job_name"], ("instance", instance_id))
        if show_values and not wants_fragment(request):
            values = queries.parameter_values(instance_id)
    page = queries.instance_executions(instance_id, form.page_size, form.token)
    present.executions(page.rows)
    chain: list[Row] = []
    if page.first and not wants_fragment(request):
        # The attempts as a chain, first to latest (the page lists latest first).
        chain = list(reversed(page.rows))
        # Each attempt compares with the one before it.
        for before, run in zip(chain, chain[1:], strict=False):
            run["compare_url"] = compare_link(int(before["id"]), int(run["id"]))
    # What the hold buttons and the CLI commands offer: the eligibility
    # rule's answers; a restart follows the latest attempt (listed first).
    offers = eligibility.for_instance(held=bool(found and found["hold_actor"]))
    latest = page.rows[0] if page.first and page.rows else None
    commands: list[cli.Command] = []
    if found is not None and page.first:
        offers[RESTART] = eligibility.restart(latest["status"] if latest else None)
        commands = cli.for_instance(
            found, offers, actor=envelope.actor_ref_for(request.user), latest=latest
        )
    context = {
        "instance": found,
        "offers": offers,
        "cli_commands": commands,
        "chain": chain,
        "parameter_values": values,
        "show_values": show_values,
        "caption": present.texts["attempts_first"],
    }
    return _list(request, form, page, present, INSTANCE, context)


@reader(*VIEW_EXECUTIONS)
def executions(request: HttpRequest) -> HttpResponse:
    """Show recent executions across all jobs, filterable by status and job."""
    form = inputs.read(inputs.ExecutionsForm, request)
    chosen, job_name, window = form.statuses, form.job_filter, form.window
    page = listed_executions(form, form.page_size, form.token)
    present = Presenter()
    present.executions(page.rows)
    if chosen and set(chosen) <= {"FAILED", "STOPPED"}:
        # The failures list says which attempt followed each failure.
        present.restarts(page.rows, relations.next_attempts(page.rows))
    context: dict[str, Any] = {
        "status": ", ".join(chosen),
        # The statuses as one word of a closed set (a shortcut's name where
        # the choice is one): what the filters' fixed markup varies by.
        "status_key": _status_word(chosen),
        "chosen": chosen,
        "job_filter": job_name,
        "statuses": STATUSES,
        "caption": present.texts[
            "last_updated_first"
            if window is not None
            else "job_order"
            if job_name
            else "newest_first"
        ],
        # The Failures link of the navigation is this list under FAILED.
        "section": "failures" if chosen == ("FAILED",) else "executions",
        **_window_context(request, form),
    }
    if job_name and page.first and not page.rows:
        # The job filter is exact: a name's start finds nothing, so say
        # which names start with it (a few, off the job names list).
        context["near_names"] = [
            (name, _executions_url(",".join(chosen), name))
            for name in queries.job_names_starting(job_name)
            if name != job_name
        ]
    if not wants_fragment(request):
        context["status_sets"] = [
            (
                name,
                _STATUS_SET_LABELS[name],
                _executions_url(name, job_name),
                chosen == members,
            )
            for name, members in STATUS_SETS.items()
        ]
    return _list(request, form, page, present, EXECUTIONS, context)


#: The window shortcuts the executions list offers: (``since``, label).
_RECENT_WINDOWS: tuple[tuple[str, Promise], ...] = (
    ("1h", gettext_lazy("last hour")),
    ("24h", gettext_lazy("last 24 hours")),
    ("7d", gettext_lazy("last 7 days")),
)


def _window_context(request: HttpRequest, form: inputs.WindowForm) -> dict[str, Any]:
    """
    Return what a list's window inputs show: the bounds as given, the
    resolved window (UTC) and the shortcuts, which keep the other filters.
    """
    window = form.window
    kept = [
        (key, value)
        for key, values in request.GET.lists()
        if key not in ("since", "until", "cursor")
        for value in values
    ]
    return {
        # The pickers hold the resolved times, UTC, as datetime-local values.
        "since_value": _picker_value(window.lower) if window and window.since else "",
        "until_value": _picker_value(window.upper) if window and window.until else "",
        "window": window,
        "window_lower": cursors.moment(window.lower) if window else None,
        "window_upper": cursors.moment(window.upper) if window else None,
        "recent_windows": [
            (
                label,
                f"{request.path}?{urlencode([*kept, ('since', since)])}",
                window is not None and window.since == since and not window.until,
            )
            for since, label in _RECENT_WINDOWS
        ],
    }


def _picker_value(count: int) -> str:
    """Return a resolved bound as a ``datetime-local`` value (UTC, to the second)."""
    return cursors.moment(count).strftime("%Y-%m-%dT%H:%M:%S")


def listed_executions(
    form: inputs.ExecutionsForm,
    page_size: int,
    token: str | None,
    *,
    shape: queries.Shape = queries.PAGE,
) -> Page:
    """
    Return a page of the executions list under every filter of ``form``.

    The one reading of the list: its page and its export
    (:func:`batchboard.explorer.exports.executions_export`, in the
    shape the file writes) both call it, so a filter
    the form gains and passes on here reaches both.
    """
    if form.window is None:
        return queries.recent_executions(
            form.statuses, form.job_filter, page_size, token, shape=shape
        )
    return queries.windowed_executions(
        form.statuses,
        form.job_filter,
        form.window,
        page_size,
        token,
        shape=shape,
    )


#: What the executions list's status shortcuts read as.
_STATUS_SET_LABELS: dict[str, Promise] = {
    "active": gettext_lazy("All active"),
    "finished": gettext_lazy("All finished"),
}


def _status_word(chosen: tuple[str, ...]) -> str:
    """Return the statuses as a shortcut's name, or comma-separated."""
    for name, members in STATUS_SETS.items():
        if chosen == members:
            return name
    return ",".join(chosen)


def _executions_url(status: str, job_name: str) -> str:
    """Return the executions list under ``status`` (a word) and a job, if any."""
    query = ([("status", status)] if status else []) + (
        [("job", job_name)] if job_name else []
    )
    return f"{reverse('batchboard:executions')}?{urlencode(query)}"


@reader(*VIEW_EXECUTIONS)
def unresolved(request: HttpRequest) -> HttpResponse:
    """Triage: unresolved executions not updated for longer than an age bound."""
    form = inputs.read(inputs.UnresolvedForm, request)
    age = form.age_seconds
    page = queries.unresolved(age, form.page_size, form.token)
    present = Presenter()
    present.executions(page.rows, triage=True)
    context = {
        "age": age,
        "age_choices": inputs.age_choices(),
        "offered_age": age if age in dict(inputs.AGE_CHOICES) else None,
        "custom_age": age not in dict(inputs.AGE_CHOICES),
        "caption": present.texts["oldest_first"],
        "unresolved_text": present.texts["unresolved"],
        "triage": True,
        **_may(request),
    }
    return _list(request, form, page, present, UNRESOLVED_PAGE, context)


# -- one execution ---------------------------------------------------------------------


def _execution_or_404(execution_id: int) -> Row:
    found = queries.execution(known_id("execution", execution_id))
    if found is None:
        raise missing("execution", execution_id)
    return found


@dataclass(frozen=True)
class AuditList:
    """One of an execution's recorded lists, previewed on its page and listed whole."""

    url_name: str
    title: Promise
    empty: Promise
    fetch: Callable[[int, int, str | None], Page]
    present: Callable[[Presenter, list[Row]], list[Row]]
    head: str
    rows: str
    columns: int
    #: The model its rows are records of, as templates mark a region
    #: (``data-bb-records``: the view permission's codename after ``view_``).
    records: str

    def url(self, execution_id: int) -> str | None:
        return link(f"batchboard:{self.url_name}", execution_id)


AUDIT_LISTS = (
    AuditList(
        "flow_decisions",
        gettext_lazy("Flow decisions"),
        gettext_lazy("No flow decisions."),
        queries.flow_decisions,
        Presenter.flow,
        "batchboard/partials/flow_head.html",
        "batchboard/partials/flow_rows.html",
        7,
        "flowdecision",
    ),
    AuditList(
        "recovery_decisions",
        gettext_lazy("Recovery decisions"),
        gettext_lazy("No recovery decisions."),
        queries.recovery_decisions,
        Presenter.recovery,
        "batchboard/partials/recovery_head.html",
        "batchboard/partials/recovery_rows.html",
        7,
        "recoverydecision",
    ),
    AuditList(
        "operator_requests",
        gettext_lazy("Operator requests"),
        gettext_lazy("No operator requests."),
        queries.operator_requests,
        Presenter.requests,
        "batchboard/partials/request_head.html",
        "batchboard/partials/request_rows.html",
        8,
        "operatorrequest",
    ),
)


def _stale(found: Row) -> bool:
    """
    Return whether an unresolved execution waits for recovery, not its owner.

    UNKNOWN always does; an active one once it has not been updated for
    longer than the stale threshold, measured on the database server's clock
    by the recovery proposal's rule. The page reads this where it reads the
    rest of the execution (a replica, when one serves it): the proposal
    itself, with its evidence, is read on the primary by the console when
    an operator opens it.
    """
    status = found["status"]
    if status not in UNRESOLVED:
        return False
    if status not in ACTIVE:
        return True
    try:
        threshold = actions.stale_threshold_seconds()
    except actions.ActionError:
        return False
    return queries.inactive_longer_than(found, threshold)


def _may(request: HttpRequest) -> dict[str, bool]:
    """Return which row actions the user may take (checked once per page)."""
    return {
        "may_stop": permissions.may(request.user, STOP),
        "may_recover": permissions.may(request.user, RECOVER),
    }


def _step_rows(
    present: Presenter, found: Row, page: Page, with_partitions: bool
) -> list[Row]:
    """
    Return a page of an execution's steps, worker steps grouped under parents.

    Two bounded reads beside the page: the parents' partition rollups, and
    the partitions of the parents and of the workers on the page. Without
    ``with_partitions`` (a reader who may not view them, whose page of steps
    counted none) neither is read: each step is a row of its own.
    """
    execution_id = int(found["id"])
    rows = present.steps(page.rows, found)
    if not with_partitions:
        return present.group(rows, [], {})
    parents = [int(row["id"]) for row in rows if row["partitions_total"]]
    workers = [
        int(row["id"])
        for row in rows
        if row["step_name"].startswith(PARTITION_WORKER_PREFIX)
    ]
    rollups = relations.partition_rollups(parents)
    partitions = relations.partitions_of(execution_id, parents, workers)
    return present.group(rows, partitions, rollups)


def _steps_next_url(execution_id: int, page: Page, shown: int) -> str | None:
    """
    Return the execution page's "load more" link for its steps, if any.

    Always the page's own address (the live region's is not a list), with
    the page size the cursor is bound to and how many rows are ``shown``.
    """
    if page.next_cursor is None:
        return None
    params = {"size": page.page_size, "shown": shown, "cursor": page.next_cursor}
    return f"{link('batchboard:execution', execution_id)}?{urlencode(params)}"


def _live_region(
    request: HttpRequest, found: Row, size: int, token: str | None
) -> dict[str, Any]:
    """
    Return everything the execution page's live region shows, from one read.

    Summary, lineage, actions, recovery, timeline, steps and the recorded
    lists are rendered together each time, so no region can contradict
    another; the region polls only while an owner may still move the
    execution, and refreshes on ``batchboard:changed`` (an action's result).
    Its steps are the first ``size`` rows: as many as the reader has loaded
    (the region sends them as ``shown``), so a refresh keeps them.
    """
    execution_id = int(found["id"])
    present = Presenter()
    stale = _stale(found)
    present.execution(found, stale=stale)
    before, after = relations.attempts_around(
        int(found["job_instance_id"]), int(found["attempt"])
    )
    found["previous_attempt"] = present.attempt(before)
    found["next_attempt"] = present.attempt(after)
    if before is not None:
        before["compare_url"] = compare_link(int(before["id"]), execution_id)
    if after is not None:
        after["compare_url"] = compare_link(execution_id, int(after["id"]))
    partitions = request.user.has_perm(VIEW_PARTITION_ROWS)
    page = queries.steps(execution_id, size, token, partitions=partitions)
    top = _step_rows(present, found, page, partitions)
    preview = min(size, PREVIEW_ROWS)
    sections = []
    for audit in AUDIT_LISTS:
        audit_page = audit.fetch(execution_id, preview, None)
        audit.present(present, audit_page.rows)
        sections.append((audit, audit_page, audit.url(execution_id)))
    # What the action buttons offer, by action: the eligibility rule's
    # answers. An UNKNOWN execution may be abandoned once a recovery
    # decision is recorded, which the decisions' preview shows. A restart
    # follows the instance's latest attempt: offered on that one's page.
    offers = eligibility.for_execution(
        found["status"],
        stop_requested=found["stop_requested_at"] is not None,
        superseded=after is not None,
        decided=any(
            audit_page.rows
            for audit, audit_page, _all in sections
            if audit.url_name == "recovery_decisions"
        ),
    )
    if after is None:
        offers[RESTART] = eligibility.restart(found["status"])
    return _context(
        request,
        present,
        execution=found,
        page=page,
        steps=top,
        shown=size,
        next_url=(
            _next_url(request, page)
            if token
            else _steps_next_url(execution_id, page, size)
        ),
        timeline=present.timeline(found, top),
        cause_links=cause.execution_links(found),
        audit=sections,
        show_partitions=partitions,
        # The recovery form is offered only to an execution that qualifies.
        recovery_url=(
            link("batchboard:recovery_proposal", execution_id) if stale else None
        ),
        offers=offers,
        cli_commands=cli.for_execution(
            found, offers, actor=envelope.actor_ref_for(request.user)
        ),
    )


@reader(*VIEW_EXECUTION_PAGE)
def execution(request: HttpRequest, execution_id: int) -> HttpResponse:
    """Show an execution: summary, steps and timeline, decisions and requests."""
    form = inputs.read(inputs.ExecutionForm, request)
    size, token = form.page_size, form.token
    found = _execution_or_404(execution_id)
    if token and wants_fragment(request):
        return _more_steps(request, found, form)
    context = _live_region(request, found, size if token else form.rows, token)
    if wants_fragment(request):
        return render(request, "batchboard/partials/execution_live.html", context)
    context["trail"] = Presenter().trail(
        found["job_name"],
        ("instance", found["job_instance_id"]),
        ("execution", execution_id),
    )
    return render(request, "batchboard/execution.html", context)


def _more_steps(
    request: HttpRequest, found: Row, form: inputs.ExecutionForm
) -> HttpResponse:
    """
    Return the next rows of an execution's steps ("load more").

    The live region learns how many rows are now shown (an out-of-band
    swap of its ``shown`` input, up to the page bound), so its next refresh
    re-reads them all in one statement instead of dropping them; the
    address bar becomes the page that shows them.
    """
    execution_id = int(found["id"])
    present = Presenter()
    partitions = request.user.has_perm(VIEW_PARTITION_ROWS)
    page = queries.steps(
        execution_id, form.page_size, form.token, partitions=partitions
    )
    shown = min(form.rows + form.page_size, MAX_PAGE_SIZE)
    context = _context(
        request,
        present,
        page=page,
        steps=_step_rows(present, found, page, partitions),
        next_url=_steps_next_url(execution_id, page, shown),
        shown=shown,
        shown_out_of_band=True,
    )
    response = render(request, "batchboard/partials/step_rows.html", context)
    if page.rows:
        # A header carries the URL itself, not the escaped link of a template.
        page_url = reverse("batchboard:execution", args=[execution_id])
        replace_url(response, f"{page_url}?{urlencode({'shown': shown})}")
    return response


@reader(*VIEW_EXECUTION_PAGE)
def execution_live(request: HttpRequest, execution_id: int) -> HttpResponse:
    """Return an execution's live region (polled while an owner may move it)."""
    found = _execution_or_404(execution_id)
    if not wants_fragment(request):
        return HttpResponseRedirect(
            reverse("batchboard:execution", args=[execution_id])
        )
    form = inputs.read(inputs.ExecutionForm, request)
    context = _live_region(request, found, form.rows, None)
    return render(request, "batchboard/partials/execution_live.html", context)


@reader(*VIEW_EXECUTIONS)
def execution_row(request: HttpRequest, execution_id: int) -> HttpResponse:
    """Return one execution's table row (polled while it is unresolved)."""
    found = _execution_or_404(execution_id)
    triage = request.GET.get("triage") == "1"
    return _polled(
        request,
        ("batchboard:execution", execution_id),
        "batchboard/partials/execution_row.html",
        lambda present: {
            "rows": present.executions([found], triage=triage),
            "triage": triage,
            **_may(request),
        },
    )


def _audit_list(
    request: HttpRequest, execution_id: int, audit: AuditList
) -> HttpResponse:
    """List one of an execution's recorded lists, page by page."""
    form = inputs.read(inputs.ListForm, request)
    found: Row = {"id": execution_id}
    if not (form.token and wants_fragment(request)):
        found = _execution_or_404(execution_id)
    else:
        known_id("execution", execution_id)
    page = audit.fetch(execution_id, form.page_size, form.token)
    present = Presenter()
    audit.present(present, page.rows)
    trail = []
    if "job_name" in found:
        label = str(audit.title).lower()
        trail = present.trail(
            found["job_name"], ("execution", execution_id), current=label
        )
    context = {"execution": found, "audit": audit, "trail": trail}
    return _list(request, form, page, present, AUDIT, context)


@reader(*VIEW_EXECUTION_PAGE)
def flow_decisions(request: HttpRequest, execution_id: int) -> HttpResponse:
    """List an execution's flow decisions in sequence order."""
    return _audit_list(request, execution_id, AUDIT_LISTS[0])


@reader(*VIEW_EXECUTION_PAGE)
def recovery_decisions(request: HttpRequest, execution_id: int) -> HttpResponse:
    """List an execution's recovery decisions."""
    return _audit_list(request, execution_id, AUDIT_LISTS[1])


@reader(*VIEW_EXECUTION_PAGE)
def operator_requests(request: HttpRequest, execution_id: int) -> HttpResponse:
    """List the audited operator requests on an execution."""
    return _audit_list(request, execution_id, AUDIT_LISTS[2])


# -- steps and partitions -----------------------------------------------------------------


def _step_or_404(step_id: int) -> Row:
    found = queries.step(known_id("step", step_id))
    if found is None:
        raise missing("step", step_id)
    return found


def _step_values(present: Presenter, found: Row) -> dict[str, Any]:
    """
    Return what a step's summary shows: the step, its partitions' rollup,
    and for a worker step the partition it ran.
    """
    step_id = int(found["id"])
    present.step(found)
    rollup = None
    if found["partitions_total"]:
        rollup = relations.partition_rollups([step_id]).get(step_id)
    found["segments"] = present.segments(rollup)
    if found["step_name"].startswith(PARTITION_WORKER_PREFIX):
        present.worker(
            found,
            relations.worker_partition(int(found["job_execution_id"]), step_id),
        )
    return {
        "step": found,
        "totals": rollup.counters if rollup else None,
        "cause_links": cause.step_links(found),
    }


@reader(*VIEW_PARTITIONS)
def step(request: HttpRequest, step_id: int) -> HttpResponse:
    """Show a step: counters, descriptors and its partitions."""
    form = inputs.read(inputs.ListForm, request)
    size, token = form.page_size, form.token
    present = Presenter()
    if token and wants_fragment(request):
        known_id("step", step_id)
        page = queries.partitions(step_id, size, token)
        present.partitions(page.rows)
        context = _context(
            request, present, page=page, next_url=_next_url(request, page)
        )
        return _rows(request, "batchboard/partials/partition_rows.html", token, context)
    found = _step_or_404(step_id)
    page = queries.partitions(step_id, size, token)
    present.partitions(page.rows)
    context = _context(request, present, page=page, next_url=_next_url(request, page))
    context.update(_step_values(present, found))
    if not wants_fragment(request):
        context["trail"] = present.trail(
            found["job_name"],
            ("instance", found["job_instance_id"]),
            ("execution", found["job_execution_id"]),
            ("step", step_id),
        )
    if wants_fragment(request):
        return render(request, "batchboard/partials/step_summary.html", context)
    return render(request, "batchboard/step.html", context)


@reader(*VIEW_PARTITIONS)
def step_live(request: HttpRequest, step_id: int) -> HttpResponse:
    """Return a step's live summary (polled while it is unresolved)."""
    found = _step_or_404(step_id)
    return _polled(
        request,
        ("batchboard:step", step_id),
        "batchboard/partials/step_summary.html",
        lambda present: _step_values(present, found),
    )


@reader(*VIEW_PARTITIONS)
def step_row(request: HttpRequest, step_id: int) -> HttpResponse:
    """Return one step's table row (polled while it is unresolved)."""
    found = _step_or_404(step_id)
    return _polled(
        request,
        ("batchboard:step", step_id),
        "batchboard/partials/step_row.html",
        lambda present: {"rows": present.steps([found])},
    )


@reader(*VIEW_PARTITIONS)
def partition_row(request: HttpRequest, partition_id: int) -> HttpResponse:
    """Return one partition's table row (polled while it is unresolved)."""
    found = queries.partition(known_id("partition", partition_id))
    if found is None:
        raise missing("partition", partition_id)
    return _polled(
        request,
        ("batchboard:step", found["step_execution_id"]),
        "batchboard/partials/partition_row.html",
        lambda present: {"rows": present.partitions([found])},
    )


@reader(*VIEW_EXECUTIONS)
def jump(request: HttpRequest) -> HttpResponse:
    """
    Open what the header's jump box names: a record by id, a job by name,
    an operation by its id.

    A job name opens the job whose name it is, or the one job whose name
    starts with it; several such jobs are listed (SUGGESTED_NAMES at most).
    An operation id opens its audit row (the audit log filtered by it), a
    bulk id its bulk operation.
    """
    kind, target = inputs.read(inputs.JumpForm, request).target
    if kind == "job":
        return _jump_to_job(request, str(target))
    if kind == "operation":
        return HttpResponseRedirect(_operation_location(request, str(target)))
    return HttpResponseRedirect(reverse(f"batchboard:{kind}", args=[target]))


def _jump_to_job(request: HttpRequest, start: str) -> HttpResponse:
    """Open the job ``start`` names, or list the jobs whose names start so."""
    if not request.user.has_perms(VIEW_OVERVIEW):
        raise PermissionDenied
    names = queries.job_names_starting(start)
    if start in names or (not names and queries.job_exists(start)):
        return HttpResponseRedirect(_job_location(start))
    if len(names) == 1:
        return HttpResponseRedirect(_job_location(names[0]))
    if not names:
        raise NotFound(_("job whose name starts with “%(name)s”") % {"name": start})
    context = {
        "start": start,
        "jobs": [(name, job_url(name)) for name in names],
        "more": len(names) == SUGGESTED_NAMES,
    }
    return render(request, "batchboard/jump_jobs.html", context)


def _operation_location(request: HttpRequest, operation: str) -> str:
    """
    Return where an operation id leads: its bulk operation if it is a bulk
    id (for a reader of the audit log), else the audit log filtered by it.
    """
    if request.user.has_perms(VIEW_AUDIT) and audit_log.is_bulk(operation):
        return reverse("batchboard:bulk_operation", args=[operation])
    return f"{reverse('batchboard:audit')}?{urlencode({'operation': operation})}"


@reader(*VIEW_OVERVIEW)
def job_names(request: HttpRequest) -> HttpResponse:
    """
    Return the job names that start with what a job filter holds, as options.

    The ``<datalist>`` a job-name input swaps in as its value changes: up
    to SUGGESTED_NAMES names from the job names list, by prefix only. A
    plain request (the address opened by hand) goes to the executions list.
    """
    prefix = inputs.read(inputs.JobNamesForm, request).start
    if not wants_fragment(request):
        return HttpResponseRedirect(reverse("batchboard:executions"))
    names = queries.job_names_starting(prefix)
    return render(request, "batchboard/partials/job_names.html", {"names": names})


# -- the audit log --------------------------------------------------------------------

AUDIT_LOG = ListPage("batchboard/audit.html", "batchboard/partials/audit_log_rows.html")


@reader(*VIEW_AUDIT)
def audit(request: HttpRequest) -> HttpResponse:
    """List operator requests and retention actions, newest first."""
    form = inputs.read(audit_log.AuditForm, request)
    found = audit_log.read(form)
    present = Presenter()
    audit_log.present(found.page.rows, present.clock)
    context = {
        "filters": form.cleaned_data,
        "actions": audit_log.ACTIONS,
        # Filters a link named that no index serves: the page says so.
        "ignored": [str(audit_log.FILTER_LABELS[name]) for name in found.ignored],
        "filtered": bool(form.asked()),
        "other_filters": bool(set(form.asked()) - {"operation"}),
        # Each row's operation id links to the log filtered by it.
        "audit_url": reverse("batchboard:audit"),
    }
    if found.page.first and not wants_fragment(request):
        context["bulk_operations"] = audit_log.bulk_operations()
    return _list(request, form, found.page, present, AUDIT_LOG, context)


# -- two executions side by side --------------------------------------------------------


@reader(*VIEW_EXECUTION_PAGE)
def compare(request: HttpRequest, a: int, b: int) -> HttpResponse:
    """Set two executions side by side: runs, definitions, steps, flow, parameters."""
    left, right = a, b
    if left == right:
        raise ErrorPage(
            _("Two executions are needed"),
            _("Execution #%(id)s was given twice: compare it with another one.")
            % {"id": left},
        )
    one, other = _execution_or_404(left), _execution_or_404(right)
    present = Presenter()
    found = comparing.compare(
        one, other, partitions=request.user.has_perm(VIEW_PARTITION_ROWS)
    )
    comparing.present(found, present)
    context = _context(
        request,
        present,
        comparison=found,
        left=found.left,
        right=found.right,
        sides=(found.left, found.right),
        same_job=one["job_name"] == other["job_name"],
        swap_url=compare_link(right, left),
        compared_steps=comparing.COMPARED_STEPS,
    )
    return render(request, "batchboard/compare.html", context)


@reader(*VIEW_EXECUTIONS)
def compare_selected(request: HttpRequest) -> HttpResponse:
    """Open the comparison of the two executions a list's rows selected."""
    form = inputs.CompareForm(request.GET)
    if not form.is_valid():
        raise ErrorPage(_("Choose two executions"), str(form.errors["execution"][0]))
    return HttpResponseRedirect(reverse("batchboard:compare", args=form.pair))


# -- parameter search ------------------------------------------------------------------


@require_http_methods(["GET", "HEAD", "POST"])
@guarded(ReadGate((*VIEW_EXECUTIONS, PARAMETER_VALUES)), source="replica")
def parameter_search(request: HttpRequest) -> HttpResponse:
    """
    Find a job's instance by its typed identifying parameters (a POST).

    A match opens the instance's page. The form (a GET, ``?job=`` naming
    the job) offers the names and kinds of the job's newest instance; given
    back after a search it keeps names and kinds, never a value.
    """
    if request.method != "POST":
        job_name = inputs.read(inputs.JobNamesForm, request).start
        known: list[tuple[str, str]] = []
        if job_name:
            newest = queries.instances(job_name, 1).rows
            known = list(newest[0]["parameters"]) if newest else []
        return _search_page(request, job_name, known, [], 200)
    search = parameter_search_form.read(request.POST)
    if search.errors:
        return _search_page(request, search.job_name, search.rows, search.errors, 400)
    found = parameter_search_form.find(search)
    if found is None:
        message = _(
            "No instance of job “%(name)s” has these identifying parameters."
        ) % {"name": search.job_name}
        return _search_page(request, search.job_name, search.rows, [message], 404)
    return HttpResponseRedirect(reverse("batchboard:instance", args=[found]))


def _search_page(
    request: HttpRequest,
    job_name: str,
    known: list[tuple[str, str]],
    errors: list[str],
    status: int,
) -> HttpResponse:
    context = {
        "job_name": job_name,
        "rows": parameter_search_form.form_rows(known),
        "kinds": PARAMETER_KINDS,
        "errors": errors,
        "job_url": job_url(job_name) if job_name else None,
    }
    return render(request, "batchboard/parameter_search.html", context, status=status)
