"""
The dashboard's bulk actions: plan review, chunked apply and the result.

``bulk_plan`` (GET, Read) plans an action on every record a list's filters
match (the filters are the list's own query string, read by its form) and
shows the review: what the action will do, counts by expected outcome, the
digest, the items keyset-paged, and whether this user may apply it. Its
form POSTs to ``bulk_apply``, which records the operation through the
service (checking the digest; bad input writes nothing) and redirects to
the operation's page. That page drives the apply: an htmx element POSTs to
``bulk_continue``, which applies one chunk of about two seconds and answers
with the progress and, while items remain, the next request; a reload or a
second tab resumes the same bulk id. Once every item is done the page lists
each item's outcome, rejection code and audit row, with counts.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import urlencode

from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseRedirect,
    QueryDict,
    StreamingHttpResponse,
)
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRefresh

from batchboard import actions, export, vocabulary
from batchboard.actions import permissions
from batchboard.actions.bulk import BULK_ACTIONS, EXECUTION_ACTIONS
from batchboard.api import projections
from batchboard.console import forms
from batchboard.console.consequences import audit_row_url, consequence
from batchboard.explorer import inputs, surveys
from batchboard.explorer.access import VIEW_AUDIT, VIEW_EXECUTIONS
from batchboard.explorer.pagination import Page
from batchboard.models import BulkItem, BulkOperation
from batchboard.web import BadInput, NotFound, ReadGate, guarded, wants_fragment

#: What RECOVER will do (its single dialog explains it on the proposal).
RECOVER_CONSEQUENCE: Final = gettext_lazy(
    "Each execution's recovery proposal is taken again under its row lock; "
    "where its evidence is unchanged the directive is applied (mark failed "
    "or abandon) and a recovery decision is recorded. An execution whose "
    "evidence changed is reported STALE and left alone."
)


def _what(action: str) -> str:
    if action == vocabulary.RECOVER:
        return str(RECOVER_CONSEQUENCE)
    return consequence(action)


def _filters_query(request: HttpRequest) -> str:
    """Return the list's filters of ``request`` (no paging) as a query string."""
    return urlencode(
        [
            (key, value)
            for key, values in request.GET.lists()
            if key not in ("after", "size", "cursor")
            for value in values
        ]
    )


@require_http_methods(["GET", "HEAD"])
@guarded(ReadGate(VIEW_EXECUTIONS))
def bulk_plan(request: HttpRequest, source: str, action: str) -> HttpResponse:
    """Plan ``action`` on every record list ``source`` matches, for review."""
    plan, survey = _plan(request, request.GET, source, action)
    context: dict[str, Any] = {
        "plan": plan,
        "source": source,
        # Applying shows the result page, which links the audit rows.
        "may_apply": permissions.may(request.user, action)
        and request.user.has_perms(VIEW_AUDIT),
        "auth_class": vocabulary.ACTION_CLASSES[action],
        "consequence": _what(action),
        "reasons": vocabulary.reasons_for(action),
        "bulk_id": actions.bulk.new_bulk_id(),
        "failure_categories": vocabulary.FAILURE_CATEGORIES,
        "list_url": _list_url(source, survey.filters),
    }
    context.update(_planned_page(request, plan))
    if wants_fragment(request) and "after" in request.GET:
        return render(request, "batchboard/actions/bulk_items.html", context)
    return render(request, "batchboard/actions/bulk_plan.html", context)


def _plan(
    request: HttpRequest, data: QueryDict, source: str, action: str
) -> tuple[actions.BulkPlan, surveys.ListSurvey]:
    """Plan ``action`` on list ``source`` under the filters in ``data``."""
    if action not in BULK_ACTIONS or source not in surveys.LISTS:
        raise NotFound()
    if (source == surveys.INSTANCES) == (action in EXECUTION_ACTIONS):
        raise BadInput(
            _("This action does not act on this list"),
            _("Stop, abandon and recover act on executions; holds on instances."),
        )
    survey = surveys.from_query(source, data)
    try:
        plan = actions.plan_bulk(user=request.user, action=action, survey=survey)
    except actions.BulkTooLarge as error:
        raise BadInput(
            _("Too many records for one bulk action"), error.message
        ) from error
    except actions.ActionError as error:
        raise BadInput(_("The plan could not be made"), error.message) from error
    return plan, survey


#: A bulk plan's item as CSV columns.
ITEM_COLUMNS: Final = (
    "plan_digest",
    "action",
    "kind",
    "target_id",
    "version",
    "status",
    "expected",
    "code",
    "evidence_digest",
)


@require_http_methods(["GET", "HEAD"])
@guarded(ReadGate(VIEW_EXECUTIONS))
def bulk_plan_export(
    request: HttpRequest, source: str, action: str
) -> StreamingHttpResponse:
    """
    Download the plan the review shows: its items, each with the digest.

    The plan is made again from the same filters, as the review's pages
    are; an apply checks the digest, so the file names the plan it shows.
    """
    plan, _survey = _plan(request, export.filters(request.GET), source, action)
    rows = [projections.bulk_plan_item(plan, item) for item in plan.items]
    name = f"bulk-plan-{source}-{action.lower()}"
    return export.download(request, name, ITEM_COLUMNS, lambda _: (rows, None))


def _list_url(source: str, filters: Any) -> str:
    if source == surveys.INSTANCES:
        return reverse("batchboard:job", args=[filters["job"]])
    query = {k: v for k, v in filters.items() if k != "list"}
    return reverse(f"batchboard:{source}") + (f"?{urlencode(query)}" if query else "")


def _after(request: HttpRequest) -> int:
    raw = request.GET.get("after", "")
    after = vocabulary.parse_whole_number(raw) if raw else 0
    if after is None:
        raise BadInput(
            _("This link cannot continue the list"),
            _("“after” must name a record's id."),
            "after",
        )
    return after


def _next_url(request: HttpRequest, last: int) -> str:
    flat = [
        (key, value)
        for key, values in request.GET.lists()
        if key != "after"
        for value in values
    ]
    flat.append(("after", str(last)))
    return f"{request.path}?{urlencode(flat)}"


def _planned_page(request: HttpRequest, plan: actions.BulkPlan) -> dict[str, Any]:
    """Return one page of the plan's items, after the target id ``after``."""
    form = inputs.read(inputs.ListForm, request)
    after = _after(request)
    rows = [item for item in plan.items if item.target_id > after]
    shown = rows[: form.page_size]
    page = Page(list(shown), form.page_size, first=not after)  # type: ignore[arg-type]
    return {
        "items": page,
        "page": page,
        "next_url": _next_url(request, shown[-1].target_id)
        if len(rows) > len(shown)
        else None,
        "first_url": f"{request.path}?{_filters_query(request)}",
        "target_name": "instance" if plan.kind == "instance" else "execution",
    }


@require_POST
@guarded(ReadGate(VIEW_AUDIT))
def bulk_apply(request: HttpRequest) -> HttpResponse:
    """Record a reviewed plan as a bulk operation, then show it applying."""
    form = forms.BulkApplyForm.for_action(request.POST)
    try:
        result = form.perform(request.user)
    except actions.InvalidRequest as error:
        raise BadInput(_("The plan was not applied"), error.message) from error
    url = reverse("batchboard:bulk_operation", args=[result.bulk_id])
    return HttpResponseRedirect(url, status=303)


def _operation(bulk_id: str) -> BulkOperation:
    try:
        actions.bulk.validate_bulk_id(bulk_id)
    except actions.InvalidRequest as error:
        raise BadInput(_("No such bulk operation"), error.message) from error
    operation = BulkOperation.objects.filter(bulk_id=bulk_id).first()
    if operation is None:
        raise NotFound()
    return operation


@require_http_methods(["GET", "HEAD"])
@guarded(ReadGate(VIEW_AUDIT))
def bulk_operation(request: HttpRequest, bulk_id: str) -> HttpResponse:
    """Show a bulk operation: its progress while it runs, its items' results."""
    operation = _operation(bulk_id)
    after = _after(request)
    form = inputs.read(inputs.ListForm, request)
    rows = list(
        BulkItem.objects.filter(operation=operation, target_id__gt=after).order_by(
            "target_id"
        )[: form.page_size + 1]
    )
    shown = rows[: form.page_size]
    page = Page(
        [_item_row(operation, item) for item in shown],
        form.page_size,
        first=not after,
    )
    context = {
        "operation": operation,
        "page": page,
        "next_url": _next_url(request, shown[-1].target_id)
        if len(rows) > len(shown)
        else None,
        "first_url": request.path,
        "may_apply": permissions.may(request.user, operation.action),
        "target_name": "execution"
        if operation.action in EXECUTION_ACTIONS
        else "instance",
    }
    if wants_fragment(request) and "after" in request.GET:
        return render(request, "batchboard/actions/bulk_results.html", context)
    return render(request, "batchboard/actions/bulk_operation.html", context)


def _item_row(operation: BulkOperation, item: BulkItem) -> dict[str, Any]:
    executions = operation.action in EXECUTION_ACTIONS
    return {
        "target_id": item.target_id,
        "target_url": reverse(
            "batchboard:execution" if executions else "batchboard:instance",
            args=[item.target_id],
        ),
        "version": item.version,
        "outcome": item.outcome or "PENDING",
        "rejection_code": item.rejection_code,
        "audit_url": audit_row_url(item.audit_model, item.audit_id)
        if item.audit_id
        else None,
        "audit_id": item.audit_id,
    }


@require_POST
@guarded(ReadGate(VIEW_AUDIT))
def bulk_continue(request: HttpRequest, bulk_id: str) -> HttpResponse:
    """Apply the next chunk of a bulk operation and answer with its progress."""
    operation = _operation(bulk_id)
    try:
        actions.resume_bulk(
            user=request.user,
            bulk_id=operation.bulk_id,
            seconds=actions.bulk.CHUNK_SECONDS,
        )
    except actions.ActionError as error:
        operation.refresh_from_db()
        context = {"operation": operation, "error": error, "may_apply": True}
        return render(request, "batchboard/actions/bulk_progress.html", context)
    operation.refresh_from_db()
    if not wants_fragment(request):
        url = reverse("batchboard:bulk_operation", args=[operation.bulk_id])
        return HttpResponseRedirect(url, status=303)
    if operation.finished_at is not None:
        # The page shows the results once every item is done.
        return HttpResponseClientRefresh()
    context = {"operation": operation, "may_apply": True}
    return render(request, "batchboard/actions/bulk_progress.html", context)
