"""
The dashboard's operator actions: confirmation dialogs and their POSTs.

Every action is two requests to one URL. GET renders a confirmation dialog
(an htmx fragment, or a whole page without JavaScript) naming the target,
the authorization class and what will happen, with a fresh operation id in
a hidden field; POST runs the action through :mod:`batchboard.actions` and
renders its result in place of the dialog. Because the operation id is
fixed when the dialog is rendered, a double click or a resubmitted form
replays the recorded outcome instead of acting twice.

Authorization is checked here (403 page) and again by the service. Errors
an operator can cause (a stale plan, a conflict, a malformed form, a
missing row, an unavailable database) render a message, never a traceback.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods
from django_htmx.http import trigger_client_event

from batchboard import actions, schema, vocabulary
from batchboard.actions import envelope, permissions
from batchboard.actions.retention import DEFAULT_AGE_SECONDS, DEFAULT_BATCH
from batchboard.models import JobExecution, JobInstance
from batchboard.web import action_view, wants_fragment

logger = logging.getLogger(__name__)

View = Callable[..., HttpResponse]
MAX_ID = 2**63 - 1


def _respond(
    request: HttpRequest, partial: str, context: dict[str, Any], status: int = 200
) -> HttpResponse:
    """Render ``partial`` alone for htmx, inside a page otherwise."""
    context = {**context, "partial": partial}
    if wants_fragment(request):
        response = render(request, partial, context, status=status)
    else:
        response = render(
            request, "batchboard/actions/page.html", context, status=status
        )
    response["Vary"] = "HX-Request"
    return response


def _audit_url(result: actions.ActionResult) -> str | None:
    try:
        return reverse(
            f"admin:batchboard_{result.audit_model}_change", args=[result.audit_id]
        )
    except NoReverseMatch:
        return None


def _url(name: str, *args: Any) -> str | None:
    try:
        return reverse(name, args=args)
    except NoReverseMatch:
        return None


def _result(
    request: HttpRequest,
    *,
    result: actions.ActionResult | None = None,
    error: actions.ActionError | None = None,
    target_url: str | None,
    retry_url: str | None = None,
) -> HttpResponse:
    """Render an outcome, or an error with a way back to the fresh state."""
    context: dict[str, Any] = {"target_url": target_url, "retry_url": retry_url}
    if result is not None:
        conflict = result.rejection_code == "OPTIMISTIC_CONFLICT"
        context.update(
            result=result,
            explanation=result.explanation(),
            audit_url=_audit_url(result),
            conflict=conflict,
        )
    else:
        assert error is not None
        context.update(error=error)
    response = _respond(request, "batchboard/actions/result.html", context)
    if result is not None and result.outcome == actions.APPLIED:
        # Lets the including page refresh what the action changed.
        trigger_client_event(
            response, "batchboard:action-applied", {"action": result.action}
        )
    return response


def _in_range(ident: int, what: str) -> None:
    # Ids are bigint: a larger number names nothing (and would make the
    # database raise a type error rather than find no row).
    if not 0 < ident <= MAX_ID:
        raise Http404(f"{what} {ident}")


def _execution(execution_id: int) -> JobExecution:
    _in_range(execution_id, "execution")
    found = (
        JobExecution.objects.select_related("job_instance")
        .only(
            "id",
            "status",
            "version",
            "attempt",
            "updated_at",
            "stop_requested_at",
            "job_instance__id",
            "job_instance__job_name",
        )
        .filter(pk=execution_id)
        .first()
    )
    if found is None:
        raise Http404(f"execution {execution_id}")
    return found


def _instance(instance_id: int) -> JobInstance:
    _in_range(instance_id, "instance")
    found = (
        JobInstance.objects.only("id", "job_name", "hold_actor", "hold_reason")
        .filter(pk=instance_id)
        .first()
    )
    if found is None:
        raise Http404(f"instance {instance_id}")
    return found


def _dialog(
    request: HttpRequest,
    *,
    action: str,
    title: str,
    target: str,
    consequence: str,
    post_url: str,
    cancel_url: str | None,
    expected_version: int | None = None,
    reasons: bool = True,
    extra: dict[str, Any] | None = None,
) -> HttpResponse:
    context = {
        "action": action,
        "title": title,
        "target": target,
        "auth_class": vocabulary.ACTION_CLASSES[action],
        "consequence": consequence,
        "post_url": post_url,
        "cancel_url": cancel_url,
        "operation_id": envelope.new_operation_id(),
        "expected_version": expected_version,
        "reasons": vocabulary.reasons_for(action) if reasons else [],
        **(extra or {}),
    }
    return _respond(request, "batchboard/actions/dialog.html", context)


# -- shared by the actions -------------------------------------------------------


def _describe(execution: JobExecution) -> str:
    """Name an execution in a confirmation dialog."""
    return _(
        "execution #%(id)s of %(job)s, attempt %(attempt)s, %(status)s, "
        "version %(version)s"
    ) % {
        "id": execution.pk,
        "job": execution.job_instance.job_name,
        "attempt": execution.attempt,
        "status": execution.status,
        "version": execution.version,
    }


def _submit(
    request: HttpRequest, page: str, act: Callable[[], actions.ActionResult]
) -> HttpResponse:
    """Run a confirmed action and render its result or its error in place."""
    try:
        result = act()
    except actions.ActionError as error:
        return _result(request, error=error, target_url=page, retry_url=request.path)
    return _result(request, result=result, target_url=page, retry_url=request.path)


# -- STOP and ABANDON -------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@action_view(vocabulary.STOP)
def stop(request: HttpRequest, execution_id: int) -> HttpResponse:
    """Confirm, then request a cooperative stop of one execution."""
    page = _url("batchboard:execution", execution_id)
    if request.method == "POST":
        return _submit(
            request,
            page,
            lambda: actions.stop_execution(
                user=request.user,
                execution_id=execution_id,
                expected_version=request.POST.get("expected_version"),
                operation_id=request.POST.get("operation_id", ""),
            ),
        )
    execution = _execution(execution_id)
    return _dialog(
        request,
        action=vocabulary.STOP,
        title=_("Stop execution #%(id)s") % {"id": execution.pk},
        target=_describe(execution),
        consequence=_(
            "A stop request is recorded on the execution. Its owning process "
            "sees it at its next commit or poll and moves it to STOPPING, then "
            "STOPPED; without a live owner nothing moves (recover it instead). "
            "Stopping a STOPPING or finished execution changes nothing."
        ),
        post_url=request.path,
        cancel_url=page,
        expected_version=execution.version,
        reasons=False,
    )


@require_http_methods(["GET", "POST"])
@action_view(vocabulary.ABANDON)
def abandon(request: HttpRequest, execution_id: int) -> HttpResponse:
    """Confirm, then mark one finished execution ABANDONED for good."""
    page = _url("batchboard:execution", execution_id)
    if request.method == "POST":
        return _submit(
            request,
            page,
            lambda: actions.abandon_execution(
                user=request.user,
                execution_id=execution_id,
                expected_version=request.POST.get("expected_version"),
                reason_code=request.POST.get("reason_code", ""),
                operation_id=request.POST.get("operation_id", ""),
            ),
        )
    execution = _execution(execution_id)
    return _dialog(
        request,
        action=vocabulary.ABANDON,
        title=_("Abandon execution #%(id)s") % {"id": execution.pk},
        target=_describe(execution),
        consequence=_(
            "The execution becomes ABANDONED, which is final: its instance can "
            "never be restarted again. Its failure and end time are kept."
        ),
        post_url=request.path,
        cancel_url=page,
        expected_version=execution.version,
    )


# -- RECOVER ---------------------------------------------------------------------


@require_http_methods(["GET"])
@action_view("PROPOSE_RECOVERY")
def recovery_proposal(request: HttpRequest, execution_id: int) -> HttpResponse:
    """Show the recovery proposal of one execution, and its form if allowed."""
    _in_range(execution_id, "execution")
    try:
        proposal = actions.propose(execution_id)
    except actions.TargetNotFound as error:
        raise Http404(str(error)) from error
    except actions.ActionError as error:
        return _result(request, error=error, target_url=None)
    context = {
        "proposal": proposal,
        "evidence": proposal.evidence,
        "may_recover": permissions.may(request.user, vocabulary.RECOVER),
        "operation_id": envelope.new_operation_id(),
        "reasons": vocabulary.reasons_for(vocabulary.RECOVER),
        "categories": schema.FAILURE_CATEGORIES,
        "default_category": "UNKNOWN_COMMIT"
        if proposal.evidence.unknown_commit
        else "STALE_RECOVERED",
        # A fresh failure id per proposal, so two recoveries never share one.
        "default_failure_id": secrets.randbelow(2**63 - 1) + 1,
        "post_url": reverse("batchboard:action_recover", args=[execution_id]),
        "execution_url": _url("batchboard:execution", execution_id),
        "panel": request.GET.get("panel") == "1",
    }
    return _respond(request, "batchboard/actions/recovery.html", context)


@require_http_methods(["POST"])
@action_view(vocabulary.RECOVER)
def recover(request: HttpRequest, execution_id: int) -> HttpResponse:
    """Apply a reviewed recovery proposal; the server re-proposes first."""
    page = _url("batchboard:execution", execution_id)
    retry = reverse("batchboard:recovery_proposal", args=[execution_id])
    post = request.POST
    try:
        try:
            digest = bytes.fromhex(post.get("evidence_digest", ""))
        except ValueError as error:
            raise actions.InvalidRequest(
                _("The evidence digest must be 64 hex digits.")
            ) from error
        directive = (
            actions.Directive.abandon()
            if post.get("directive") == "ABANDONED"
            else actions.Directive(
                post.get("directive", ""),
                post.get("failure_category"),
                post.get("failure_id"),
            )
        )
        result = actions.recover_execution(
            user=request.user,
            execution_id=execution_id,
            expected_version=post.get("expected_version"),
            evidence_digest=digest,
            unknown_commit=post.get("unknown_commit") == "1",
            directive=directive,
            reason_code=post.get("reason_code", ""),
            operation_id=post.get("operation_id", ""),
        )
    except actions.ActionError as error:
        return _result(request, error=error, target_url=page, retry_url=retry)
    return _result(request, result=result, target_url=page, retry_url=retry)


# -- holds -----------------------------------------------------------------------


def _hold_view(request: HttpRequest, instance_id: int, action: str) -> HttpResponse:
    page = _url("batchboard:instance", instance_id)
    if request.method == "POST":
        call = actions.place_hold if action == vocabulary.HOLD else actions.release_hold
        return _submit(
            request,
            page,
            lambda: call(
                user=request.user,
                instance_id=instance_id,
                reason_code=request.POST.get("reason_code", ""),
                operation_id=request.POST.get("operation_id", ""),
            ),
        )
    instance = _instance(instance_id)
    target = _("instance #%(id)s of %(job)s") % {
        "id": instance.pk,
        "job": instance.job_name,
    }
    if action == vocabulary.HOLD:
        title = _("Hold instance #%(id)s") % {"id": instance.pk}
        consequence = _(
            "Purges will skip this instance and all its executions until the "
            "hold is released. Nothing else changes: it can still run and "
            "restart. An existing hold is replaced by yours."
        )
    else:
        title = _("Release the hold on instance #%(id)s") % {"id": instance.pk}
        consequence = _(
            "Purges may delete this instance's history again once it is old "
            "enough. The release is recorded even if no hold is in place."
        )
    return _dialog(
        request,
        action=action,
        title=title,
        target=target,
        consequence=consequence,
        post_url=request.path,
        cancel_url=page,
        extra={"instance": instance},
    )


@require_http_methods(["GET", "POST"])
@action_view(vocabulary.HOLD)
def hold(request: HttpRequest, instance_id: int) -> HttpResponse:
    """Confirm, then place a hold on one job instance."""
    return _hold_view(request, instance_id, vocabulary.HOLD)


@require_http_methods(["GET", "POST"])
@action_view(vocabulary.RELEASE_HOLD)
def release(request: HttpRequest, instance_id: int) -> HttpResponse:
    """Confirm, then release the hold on one job instance."""
    return _hold_view(request, instance_id, vocabulary.RELEASE_HOLD)


# -- purge -----------------------------------------------------------------------


def _criteria_from(data: Any) -> dict[str, Any]:
    return {
        "job_name": data.get("job_name", ""),
        "statuses": data.getlist("statuses") or None,
        "min_age_seconds": data.get("min_age_seconds") or DEFAULT_AGE_SECONDS,
        "batch": data.get("batch") or DEFAULT_BATCH,
    }


@require_http_methods(["GET"])
@action_view("PLAN_PURGE")
def purge_plan(request: HttpRequest) -> HttpResponse:
    """Show the purge form and, once a job is named, the plan it yields."""
    context: dict[str, Any] = {
        "finished": schema.FINISHED,
        "form": {
            "job_name": request.GET.get("job_name", ""),
            "statuses": request.GET.getlist("statuses") or list(schema.FINISHED),
            "min_age_seconds": request.GET.get("min_age_seconds")
            or DEFAULT_AGE_SECONDS,
            "batch": request.GET.get("batch") or DEFAULT_BATCH,
        },
        "may_apply": permissions.may(request.user, vocabulary.APPLY_PURGE),
        "reasons": vocabulary.reasons_for(vocabulary.APPLY_PURGE),
        "operation_id": envelope.new_operation_id(),
    }
    if request.GET.get("job_name"):
        try:
            context["plan"] = actions.plan_purge(
                user=request.user, **_criteria_from(request.GET)
            )
        except actions.ActionError as error:
            context["error"] = error
    return render(request, "batchboard/actions/purge.html", context)


@require_http_methods(["POST"])
@action_view(vocabulary.APPLY_PURGE)
def purge_apply(request: HttpRequest) -> HttpResponse:
    """Apply a reviewed purge plan, or delete nothing and say why."""
    page = reverse("batchboard:purge_plan")
    try:
        criteria = actions.PurgeCriteria.validated(**_criteria_from(request.POST))
        result = actions.apply_purge(
            user=request.user,
            criteria=criteria,
            candidates=actions.parse_candidates(request.POST.get("candidates", "")),
            plan_digest_hex=request.POST.get("plan_digest", ""),
            reason_code=request.POST.get("reason_code", ""),
            operation_id=request.POST.get("operation_id", ""),
        )
    except actions.ActionError as error:
        return _result(request, error=error, target_url=page)
    return _result(request, result=result, target_url=page)
