"""
The explorer's pages: function views over :mod:`batchboard.explorer.queries`.

Every view answers a plain request with a full page and an htmx request
(``HX-Request`` that is not a history restore) with a partial template: the
rows of the next page when a cursor is given, else the page's live region.
Responses vary on ``HX-Request`` so a cache never serves one for the other.
Errors an operator can cause (a damaged or foreign cursor, a page size out
of range, an unknown filter value, an unknown id) get a 400 or 404 page that
says what was wrong; an unreachable or failing database gets a 503 page.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote, unquote, urlencode

from django.contrib.auth.views import redirect_to_login
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import replace_url
from django_htmx.middleware import HtmxDetails

from batchboard import conf, cursors, schema
from batchboard.explorer import queries
from batchboard.explorer.queries import Page
from batchboard.templatetags import batchboard as tags

# Identifying parameters a job's instance list shows per row.
_SHOWN_PARAMETERS = 8
# Django's reverse() leaves these characters unquoted in paths.
_PATH_SAFE = "!$&'()*+,;=/~:@"

logger = logging.getLogger("batchboard.explorer")

VIEW_EXECUTIONS = (
    "batchboard.view_jobinstance",
    "batchboard.view_jobexecution",
)
VIEW_OVERVIEW = ("batchboard.view_jobdefinition", *VIEW_EXECUTIONS)
VIEW_STEPS = (*VIEW_EXECUTIONS, "batchboard.view_stepexecution")
VIEW_EXECUTION_PAGE = (
    *VIEW_STEPS,
    "batchboard.view_jobdefinition",
    "batchboard.view_flowdecision",
    "batchboard.view_recoverydecision",
    "batchboard.view_operatorrequest",
)
VIEW_PARTITIONS = (*VIEW_STEPS, "batchboard.view_steppartition")
PARAMETER_VALUES = "batchboard.view_parameter_values"

AGE_CHOICES = (
    (60, "1 minute"),
    (300, "5 minutes"),
    (900, "15 minutes"),
    (3600, "1 hour"),
    (6 * 3600, "6 hours"),
    (24 * 3600, "24 hours"),
)


class JobNameConverter:
    """
    Keep a job name (any text up to 128 bytes) inside one URL path segment.

    ``to_url`` escapes ``%`` and ``/`` (and a name made only of dots, which
    browsers would resolve as ``.`` or ``..``) before Django percent-encodes
    the URL; ``to_python`` reverses it on the way in.
    """

    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        name = unquote(value, errors="strict")
        if not name or len(name.encode("utf-8")) > 128:
            raise ValueError("not a job name")
        return name

    def to_url(self, value: str) -> str:
        escaped = value.replace("%", "%25").replace("/", "%2F")
        if set(value) <= {"."}:
            escaped = escaped.replace(".", "%2E")
        return escaped


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


class NotFound(Exception):
    """An id or name names nothing; ``what`` is shown on the 404 page."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


def _wants_fragment(request: HtmxHttpRequest) -> bool:
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.history_restore_request


def _error(
    request: HttpRequest,
    status: int,
    title: str,
    message: str,
    first_page: str | None = None,
) -> HttpResponse:
    context: dict[str, Any] = {
        "title": title,
        "message": message,
        "first_page": first_page,
        "status": status,
    }
    if status == 503:
        # The database may be what failed: render without touching the
        # signed-in user, whose lookup could fail again.
        context["user"] = None
    return render(request, "batchboard/error.html", context, status=status)


def _first_page_url(request: HttpRequest, drop: Sequence[str]) -> str:
    """Return the current page without its cursor and the offending parameters."""
    params = [
        (key, value)
        for key, value in request.GET.items()
        if key not in ("cursor", *drop)
    ]
    return request.path + (f"?{urlencode(params)}" if params else "")


def explorer_view(
    permissions: Sequence[str],
) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """
    Wrap a page view with login, the Read permissions and error pages.

    Anonymous viewers are sent to the login page; a signed-in viewer without
    the view permissions of the models a page shows gets a 403 page. Bad
    input becomes a 400 page, an unknown id a 404 page and a database
    failure a 503 page, never a traceback.
    """

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        @require_GET
        @vary_on_headers("HX-Request")
        def wrapped(
            request: HtmxHttpRequest, *args: Any, **kwargs: Any
        ) -> HttpResponse:
            try:
                # Reading the user may reach the session and auth tables,
                # so it belongs inside the database-error guard too.
                if not request.user.is_authenticated:
                    return redirect_to_login(request.get_full_path())
                if not request.user.has_perms(permissions):
                    return _error(
                        request,
                        403,
                        "Permission needed",
                        "Your account may not read these batch records. Ask an "
                        "administrator for the view permissions of batchboard.",
                    )
                return view(request, *args, **kwargs)
            except cursors.CursorError as error:
                return _error(
                    request,
                    400,
                    "This link cannot continue the list",
                    str(error),
                    _first_page_url(request, ()),
                )
            except queries.PageSizeOutOfRange as error:
                return _error(
                    request,
                    400,
                    "Page size out of range",
                    str(error),
                    _first_page_url(request, ("size",)),
                )
            except queries.FilterInvalid as error:
                return _error(
                    request,
                    400,
                    "Unknown filter value",
                    str(error),
                    _first_page_url(request, (error.param,)),
                )
            except NotFound as missing:
                return _error(
                    request,
                    404,
                    "Not found",
                    f"There is no {missing.what}. It may never have existed or "
                    "may have been purged by retention.",
                    reverse("batchboard:index"),
                )
            except DatabaseError as error:
                # Log the failure's class only: the message of a database
                # error may quote row values, which must not reach a log.
                logger.error(
                    "explorer page %s failed: database error %s",
                    request.resolver_match.url_name if request.resolver_match else "?",
                    type(error).__name__,
                )
                return _error(
                    request,
                    503,
                    "Batch metadata unavailable",
                    "The metadata database did not answer. The page will work "
                    "again once the database is reachable; retry in a moment.",
                    request.get_full_path(),
                )

        return wrapped

    return decorator


# -- helpers -------------------------------------------------------------------


class _Links:
    """
    Add the URLs each row links to, reversing every URL name once per request.

    A page of rows links to several pages per row; reversing each link cost
    more than the query that read the rows, so each name is reversed around
    a placeholder once and the ids are substituted. Execution rows also get
    their formatted cells here (badge, times, ages) as of ``now``: one pass
    in Python costs a fraction of the template tags per row it replaces.
    """

    _PLACEHOLDER = "987654321987"

    def __init__(self, now: datetime | None = None) -> None:
        self._bases: dict[str, str] = {}
        self.now = now or timezone.now()

    def _base(self, name: str) -> str:
        base = self._bases.get(name)
        if base is None:
            base = self._bases[name] = reverse(name, args=[self._PLACEHOLDER])
        return base

    def id(self, name: str, pk: int) -> str:
        return self._base(name).replace(self._PLACEHOLDER, str(int(pk)))

    def job(self, job_name: str) -> str:
        segment = quote(JobNameConverter().to_url(job_name), safe=_PATH_SAFE)
        return self._base("batchboard:job").replace(self._PLACEHOLDER, segment)

    def executions(
        self, rows: list[dict[str, Any]], triage: bool = False, cells: bool = True
    ) -> list[dict[str, Any]]:
        """Add links, and unless ``cells`` is false the formatted row cells."""
        now = self.now
        unresolved = schema.UNRESOLVED
        for row in rows:
            row["url"] = self.id("batchboard:execution", row["id"])
            row["job_url"] = self.job(row["job_name"])
            row["instance_url"] = self.id("batchboard:instance", row["job_instance_id"])
            row["row_url"] = self.id("batchboard:execution_row", row["id"]) + (
                "?triage=1" if triage else ""
            )
            if not cells:
                continue
            row["live"] = row["status"] in unresolved
            row["badge"] = tags.status(row["status"])
            row["created_cell"] = tags.utc(row["created_at"], now)
            row["duration"] = tags.duration(row["started_at"], row["ended_at"], now)
            row["updated_age"] = tags.age(row["updated_at"], now)
        return rows

    def steps(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for row in rows:
            row["url"] = self.id("batchboard:step", row["id"])
            row["row_url"] = self.id("batchboard:step_row", row["id"])
        return rows

    def partitions(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for row in rows:
            row["row_url"] = self.id("batchboard:partition_row", row["id"])
            worker = row["worker_step_execution_id"]
            row["worker_url"] = self.id("batchboard:step", worker) if worker else None
        return rows

    def instances(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        now = self.now
        for row in rows:
            row["url"] = self.id("batchboard:instance", row["id"])
            latest = row["latest_id"]
            row["latest_url"] = (
                self.id("batchboard:execution", latest) if latest else None
            )
            row["badge"] = tags.status(row["latest_status"]) if latest else None
            row["created_cell"] = tags.utc(row["created_at"], now)
            parameters = row["parameters"]
            # Names and kinds only (never values), escaped by format_html_join.
            row["parameters_html"] = format_html_join(
                "",
                '<span class="bb-param"><span class="bb-param-name">{}</span> '
                '<span class="bb-param-kind">{}</span></span>',
                parameters[:_SHOWN_PARAMETERS],
            )
            row["more_parameters"] = max(0, len(parameters) - _SHOWN_PARAMETERS)
        return rows


def _size(request: HttpRequest) -> int:
    return queries.parse_page_size(request.GET.get("size"))


def _cursor(request: HttpRequest) -> str | None:
    token = request.GET.get("cursor")
    return token if token else None


def _next_url(request: HttpRequest, page: Page, path: str | None = None) -> str | None:
    if page.next_cursor is None:
        return None
    params = [
        (key, value)
        for key, value in request.GET.items()
        if key not in ("cursor", "size")
    ]
    params.append(("size", str(page.page_size)))
    params.append(("cursor", page.next_cursor))
    return (path or request.path) + "?" + urlencode(params)


def _poll_seconds() -> int:
    return int(conf.get_config()["POLL_SECONDS"])


def _base_context(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    return {
        "first_url": _first_page_url(request, ()),
        "now": timezone.now(),
        "poll_seconds": _poll_seconds(),
        "unresolved_statuses": schema.UNRESOLVED,
        **extra,
    }


def _list_response(
    request: HtmxHttpRequest,
    template: str,
    context: dict[str, Any],
    rows_template: str,
) -> HttpResponse:
    """Render the full page, or for htmx the rows (and the next sentinel)."""
    if _wants_fragment(request):
        return _rows(request, rows_template, context)
    return render(request, template, context)


def _rows(
    request: HtmxHttpRequest, template: str, context: dict[str, Any]
) -> HttpResponse:
    """
    Render appended rows; the address bar then follows the cursor.

    Only a page that added rows replaces the URL: a reload or a shared link
    shows that page, never the empty page after a full last one.
    """
    response = render(request, template, context)
    if _cursor(request) and context["page"].rows:
        replace_url(response, request.get_full_path())
    return response


def _int_id(value: int, what: str) -> int:
    if not 0 < value <= cursors.MAX_KEY:
        raise NotFound(what)
    return value


# -- pages ------------------------------------------------------------------------


@explorer_view(VIEW_OVERVIEW)
def index(request: HtmxHttpRequest) -> HttpResponse:
    """Show job names with their latest runs and what needs attention."""
    size = _size(request)
    page = queries.job_names(size, _cursor(request))
    names = [row["job_name"] for row in page.rows]
    strips = queries.job_strips(names)
    running = queries.running_counts(names)
    links = _Links()
    executions_url = reverse("batchboard:executions")
    jobs = []
    for name in names:
        strip = strips.get(name, [])
        last = strip[0] if strip else None
        jobs.append(
            {
                "name": name,
                "url": links.job(name),
                "running_url": f"{executions_url}?{urlencode({'job': name})}",
                "strip": strip,
                # A dozen chips per job: built in one pass, escaped by
                # format_html_join, rather than a dozen template loops.
                "chips": format_html_join(
                    "",
                    '<li><a class="bb-chip bb-chip--{}" href="{}" '
                    'title="#{} {} (attempt {})"><span class="bb-visually-hidden">'
                    '#{} </span><span aria-hidden="true">{}</span>'
                    '<span class="bb-visually-hidden">{}</span></a></li>',
                    (
                        (
                            run["status"].lower(),
                            links.id("batchboard:execution", run["id"]),
                            run["id"],
                            run["status"],
                            run["attempt"],
                            run["id"],
                            tags.status_mark(run["status"]),
                            run["status"],
                        )
                        for run in strip
                    ),
                ),
                "last_cell": (
                    format_html(
                        "{} {}",
                        tags.status(last["status"]),
                        tags.utc(last["created_at"], links.now),
                    )
                    if last
                    else None
                ),
                "running": running.get(name, 0),
            }
        )
    context = _base_context(
        request,
        now=links.now,
        page=page,
        jobs=jobs,
        next_url=_next_url(request, page),
    )
    if page.first and not _wants_fragment(request):
        context.update(_attention(links))
    return _list_response(
        request,
        "batchboard/index.html",
        context,
        "batchboard/partials/job_rows.html",
    )


def _attention(links: _Links) -> dict[str, Any]:
    """Return what needs attention: stale unresolved runs and recent failures."""
    stale_seconds = int(conf.get_config()["STALE_SECONDS"])
    stale = queries.unresolved(stale_seconds, queries.ATTENTION_LIMIT)
    # The panel lists links and an age, never the table cells.
    links.executions(stale.rows, cells=False)
    return {
        "stale": stale,
        "stale_seconds": stale_seconds,
        "failures": links.executions(queries.recent_failures(), cells=False),
    }


@explorer_view(VIEW_OVERVIEW)
def attention(request: HtmxHttpRequest) -> HttpResponse:
    """Return the overview's "needs attention" panel (polled while runs are stuck)."""
    if not _wants_fragment(request):
        return HttpResponseRedirect(reverse("batchboard:index"))
    return render(
        request,
        "batchboard/partials/attention.html",
        _base_context(request, **_attention(_Links())),
    )


@explorer_view(VIEW_EXECUTIONS)
def job(request: HtmxHttpRequest, job_name: str) -> HttpResponse:
    """Show a job's instances, newest first."""
    size = _size(request)
    page = queries.instances(job_name, size, _cursor(request))
    if not page.rows and page.first and not queries.job_exists(job_name):
        raise NotFound(f"job named “{job_name}”")
    links = _Links()
    links.instances(page.rows)
    context = _base_context(
        request,
        now=links.now,
        job_name=job_name,
        page=page,
        next_url=_next_url(request, page),
    )
    return _list_response(
        request,
        "batchboard/job.html",
        context,
        "batchboard/partials/instance_rows.html",
    )


@explorer_view(VIEW_EXECUTIONS)
def instance(request: HtmxHttpRequest, instance_id: int) -> HttpResponse:
    """Show an instance, its parameters and its executions."""
    _int_id(instance_id, f"instance {instance_id}")
    size = _size(request)
    token = _cursor(request)
    found: dict[str, Any] | None = None
    if not (token and _wants_fragment(request)):
        # "Load more" needs only the rows; every other request the instance.
        found = queries.instance(instance_id)
        if found is None:
            raise NotFound(f"instance {instance_id}")
    page = queries.instance_executions(instance_id, size, token)
    links = _Links()
    links.executions(page.rows)
    show_values = request.user.has_perm(PARAMETER_VALUES)
    values: dict[str, str] = {}
    if found is not None and show_values and not _wants_fragment(request):
        values = queries.parameter_values(instance_id)
    context = _base_context(
        request,
        now=links.now,
        instance=found,
        parameter_values=values,
        show_values=show_values,
        page=page,
        next_url=_next_url(request, page),
    )
    return _list_response(
        request,
        "batchboard/instance.html",
        context,
        "batchboard/partials/execution_rows.html",
    )


@explorer_view(VIEW_EXECUTIONS)
def executions(request: HtmxHttpRequest) -> HttpResponse:
    """Show recent executions across all jobs, filterable by status and job."""
    size = _size(request)
    status = queries.parse_status(request.GET.get("status"))
    job_name = queries.parse_job_filter(request.GET.get("job"))
    page = queries.recent_executions(status, job_name, size, _cursor(request))
    links = _Links()
    links.executions(page.rows)
    context = _base_context(
        request,
        now=links.now,
        page=page,
        status=status,
        job_filter=job_name,
        statuses=schema.STATUSES,
        next_url=_next_url(request, page),
    )
    return _list_response(
        request,
        "batchboard/executions.html",
        context,
        "batchboard/partials/execution_rows.html",
    )


@explorer_view(VIEW_EXECUTIONS)
def unresolved(request: HtmxHttpRequest) -> HttpResponse:
    """Triage: unresolved executions not updated for longer than an age bound."""
    size = _size(request)
    age = queries.parse_age(
        request.GET.get("age"), int(conf.get_config()["STALE_SECONDS"])
    )
    page = queries.unresolved(age, size, _cursor(request))
    links = _Links()
    links.executions(page.rows, triage=True)
    context = _base_context(
        request,
        now=links.now,
        page=page,
        age=age,
        age_choices=AGE_CHOICES,
        custom_age=age not in dict(AGE_CHOICES),
        next_url=_next_url(request, page),
        triage=True,
    )
    return _list_response(
        request,
        "batchboard/unresolved.html",
        context,
        "batchboard/partials/execution_rows.html",
    )


def _execution_or_404(execution_id: int) -> dict[str, Any]:
    _int_id(execution_id, f"execution {execution_id}")
    found = queries.execution(execution_id)
    if found is None:
        raise NotFound(f"execution {execution_id}")
    return found


@explorer_view(VIEW_EXECUTION_PAGE)
def execution(request: HtmxHttpRequest, execution_id: int) -> HttpResponse:
    """Show an execution: summary, steps and timeline, decisions and requests."""
    size = _size(request)
    token = _cursor(request)
    after = request.GET.get("after")
    if after is not None and _wants_fragment(request):
        return _step_tail(request, execution_id, after, size)
    found = _execution_or_404(execution_id)
    page = queries.steps(execution_id, size, token)
    _Links().steps(page.rows)
    context = _base_context(
        request,
        execution=found,
        page=page,
        next_url=_next_url(request, page),
        tail_url=_tail_url(found["id"], found["status"], page.rows, page, size),
    )
    if _wants_fragment(request):
        if token:
            # "Load more" on the steps table needs only the next rows.
            return _rows(request, "batchboard/partials/step_rows.html", context)
        return render(request, "batchboard/partials/execution_summary.html", context)
    context["timeline"] = _timeline(found, page.rows)
    preview = min(size, 20)
    context["flow"] = queries.flow_decisions(execution_id, preview)
    context["recovery"] = queries.recovery_decisions(execution_id, preview)
    context["requests"] = queries.operator_requests(execution_id, preview)
    return render(request, "batchboard/execution.html", context)


def _tail_url(
    execution_id: int,
    status: str,
    rows: list[dict[str, Any]],
    page: Page | None,
    size: int,
    after_id: int = 0,
) -> str | None:
    """
    Return the URL that watches a running execution for new steps.

    Only at the end of the list (no next page) and only while the execution
    is unresolved: a finished execution gets no watcher, so polling stops.
    """
    if status not in schema.UNRESOLVED or (page is not None and page.has_more):
        return None
    if rows:
        after_id = rows[-1]["id"]
    elif page is not None:
        after_id = int(page.extra.get("after_id", 0))
    query = urlencode({"after": after_id, "size": size})
    return f"{reverse('batchboard:execution', args=[execution_id])}?{query}"


def _step_tail(
    request: HtmxHttpRequest, execution_id: int, after: str, size: int
) -> HttpResponse:
    """Return steps created since ``after`` and, while running, a new watcher."""
    if not after.isdigit() or int(after) > cursors.MAX_KEY:
        raise queries.FilterInvalid("The step position must be a step id.", "after")
    _int_id(execution_id, f"execution {execution_id}")
    status = queries.execution_status(execution_id)
    if status is None:
        raise NotFound(f"execution {execution_id}")
    rows = _Links().steps(queries.steps_after(execution_id, int(after), size))
    context = _base_context(
        request,
        rows=rows,
        tail_url=_tail_url(execution_id, status, rows, None, size, int(after)),
    )
    return render(request, "batchboard/partials/step_tail.html", context)


@explorer_view(VIEW_EXECUTIONS)
def execution_live(request: HtmxHttpRequest, execution_id: int) -> HttpResponse:
    """Return an execution's live summary (polled while it is unresolved)."""
    found = _execution_or_404(execution_id)
    if not _wants_fragment(request):
        return HttpResponseRedirect(
            reverse("batchboard:execution", args=[execution_id])
        )
    return render(
        request,
        "batchboard/partials/execution_summary.html",
        _base_context(request, execution=found),
    )


@explorer_view(VIEW_EXECUTIONS)
def execution_row(request: HtmxHttpRequest, execution_id: int) -> HttpResponse:
    """Return one execution's table row (polled while it is unresolved)."""
    found = _execution_or_404(execution_id)
    if not _wants_fragment(request):
        return HttpResponseRedirect(
            reverse("batchboard:execution", args=[execution_id])
        )
    links = _Links()
    links.executions([found], triage=request.GET.get("triage") == "1")
    return render(
        request,
        "batchboard/partials/execution_row.html",
        _base_context(request, now=links.now, rows=[found]),
    )


def _execution_list(
    request: HtmxHttpRequest,
    execution_id: int,
    title: str,
    fetch: Callable[[int, int, str | None], Page],
    rows_template: str,
) -> HttpResponse:
    found: dict[str, Any] = {"id": execution_id}
    if not (_cursor(request) and _wants_fragment(request)):
        found = _execution_or_404(execution_id)
    else:
        _int_id(execution_id, f"execution {execution_id}")
    page = fetch(execution_id, _size(request), _cursor(request))
    context = _base_context(
        request,
        execution=found,
        page=page,
        title=title,
        rows_template=rows_template,
        next_url=_next_url(request, page),
    )
    return _list_response(
        request,
        "batchboard/execution_list.html",
        context,
        rows_template,
    )


@explorer_view(VIEW_EXECUTION_PAGE)
def flow_decisions(request: HtmxHttpRequest, execution_id: int) -> HttpResponse:
    """List an execution's flow decisions in sequence order."""
    return _execution_list(
        request,
        execution_id,
        "Flow decisions",
        queries.flow_decisions,
        "batchboard/partials/flow_rows.html",
    )


@explorer_view(VIEW_EXECUTION_PAGE)
def recovery_decisions(request: HtmxHttpRequest, execution_id: int) -> HttpResponse:
    """List an execution's recovery decisions."""
    return _execution_list(
        request,
        execution_id,
        "Recovery decisions",
        queries.recovery_decisions,
        "batchboard/partials/recovery_rows.html",
    )


@explorer_view(VIEW_EXECUTION_PAGE)
def operator_requests(request: HtmxHttpRequest, execution_id: int) -> HttpResponse:
    """List the audited operator requests on an execution."""
    return _execution_list(
        request,
        execution_id,
        "Operator requests",
        queries.operator_requests,
        "batchboard/partials/request_rows.html",
    )


def _step_or_404(step_id: int) -> dict[str, Any]:
    _int_id(step_id, f"step {step_id}")
    found = queries.step(step_id)
    if found is None:
        raise NotFound(f"step {step_id}")
    return found


@explorer_view(VIEW_PARTITIONS)
def step(request: HtmxHttpRequest, step_id: int) -> HttpResponse:
    """Show a step: counters, descriptors and its partitions."""
    size = _size(request)
    token = _cursor(request)
    if token and _wants_fragment(request):
        _int_id(step_id, f"step {step_id}")
        page = queries.partitions(step_id, size, token)
        _Links().partitions(page.rows)
        return _rows(
            request,
            "batchboard/partials/partition_rows.html",
            _base_context(request, page=page, next_url=_next_url(request, page)),
        )
    found = _step_or_404(step_id)
    page = queries.partitions(step_id, size, token)
    _Links().partitions(page.rows)
    context = _base_context(
        request,
        step=found,
        page=page,
        next_url=_next_url(request, page),
        totals=queries.partition_totals(step_id) if found["partitions_total"] else None,
    )
    if _wants_fragment(request):
        return render(request, "batchboard/partials/step_summary.html", context)
    return render(request, "batchboard/step.html", context)


@explorer_view(VIEW_PARTITIONS)
def step_live(request: HtmxHttpRequest, step_id: int) -> HttpResponse:
    """Return a step's live summary (polled while it is unresolved)."""
    found = _step_or_404(step_id)
    if not _wants_fragment(request):
        return HttpResponseRedirect(reverse("batchboard:step", args=[step_id]))
    context = _base_context(
        request,
        step=found,
        totals=queries.partition_totals(step_id) if found["partitions_total"] else None,
    )
    return render(request, "batchboard/partials/step_summary.html", context)


@explorer_view(VIEW_PARTITIONS)
def step_row(request: HtmxHttpRequest, step_id: int) -> HttpResponse:
    """Return one step's table row (polled while it is unresolved)."""
    found = _step_or_404(step_id)
    if not _wants_fragment(request):
        return HttpResponseRedirect(reverse("batchboard:step", args=[step_id]))
    return render(
        request,
        "batchboard/partials/step_row.html",
        _base_context(request, row=_Links().steps([found])[0]),
    )


@explorer_view(VIEW_PARTITIONS)
def partition_row(request: HtmxHttpRequest, partition_id: int) -> HttpResponse:
    """Return one partition's table row (polled while it is unresolved)."""
    _int_id(partition_id, f"partition {partition_id}")
    found = queries.partition(partition_id)
    if found is None:
        raise NotFound(f"partition {partition_id}")
    if not _wants_fragment(request):
        return HttpResponseRedirect(
            reverse("batchboard:step", args=[found["step_execution_id"]])
        )
    return render(
        request,
        "batchboard/partials/partition_row.html",
        _base_context(request, row=_Links().partitions([found])[0]),
    )


JUMP_TARGETS = {
    "execution": "batchboard:execution",
    "instance": "batchboard:instance",
    "step": "batchboard:step",
}


@explorer_view(VIEW_EXECUTIONS)
def jump(request: HtmxHttpRequest) -> HttpResponse:
    """Open an execution, instance or step by id (the header's jump box)."""
    kind = request.GET.get("kind", "execution")
    raw = (request.GET.get("id") or "").strip().lstrip("#")
    if kind not in JUMP_TARGETS:
        raise queries.FilterInvalid(
            "Jump to an execution, an instance or a step.", "kind"
        )
    if not raw.isdigit() or not 0 < int(raw) <= cursors.MAX_KEY:
        raise queries.FilterInvalid(
            "Type the numeric id of an execution, an instance or a step.", "id"
        )
    return HttpResponseRedirect(reverse(JUMP_TARGETS[kind], args=[int(raw)]))


def _timeline(
    execution_row: dict[str, Any], steps: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """
    Place each step as a bar on the execution's time span (percentages).

    Unfinished steps run to now; steps that never started are left out.
    """
    now = timezone.now()
    start = execution_row["started_at"] or execution_row["created_at"]
    end = execution_row["ended_at"] or now
    for row in steps:
        if row["started_at"] is not None:
            start = min(start, row["started_at"])
            end = max(end, row["ended_at"] or now)
    span = max((end - start).total_seconds(), 0.001)
    bars = []
    for row in steps:
        if row["started_at"] is None:
            continue
        left = (row["started_at"] - start).total_seconds() / span * 100
        width = (
            ((row["ended_at"] or now) - row["started_at"]).total_seconds() / span * 100
        )
        bars.append(
            {
                "step": row,
                "left": round(max(0.0, min(left, 100.0)), 2),
                "width": round(max(0.4, min(width, 100.0 - left)), 2),
            }
        )
    return bars
