"""
The dashboard's operator actions: confirmation dialogs and their POSTs.

Every action is two requests to one URL. GET renders a confirmation dialog
(an htmx fragment, or a whole page without JavaScript) naming the target,
the authorization class and what will happen, with a fresh operation id in
a hidden field; POST runs the action through :mod:`batchboard.actions` and
renders its result in place of the dialog. Because the operation id is
fixed when the dialog is rendered, a double click or a resubmitted form
replays the recorded outcome instead of acting twice.

Submitted input is parsed by the forms of :mod:`batchboard.console.forms`
(the admin's actions use the same): a malformed form is refused before the
service is called. What each action will do is told in the wording of
:mod:`batchboard.console.consequences`.

Authorization is checked here (403 page) and again by the service. A
dialog also needs the view permissions of the page whose records it
describes: the stop dialog tells an execution's status and version, which a
user who may not read that page must not learn through it. Errors
an operator can cause (a stale plan, a conflict, a malformed form, a
missing row, an unavailable database) render a message, never a traceback.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods
from django_htmx.http import trigger_client_event

from batchboard import actions, export, vocabulary
from batchboard.actions import eligibility, envelope, permissions
from batchboard.api import projections
from batchboard.console import forms
from batchboard.console.consequences import audit_url, consequence
from batchboard.explorer import cli, inputs, queries
from batchboard.explorer.access import VIEW_EXECUTION_PAGE, VIEW_EXECUTIONS
from batchboard.explorer.links import link
from batchboard.explorer.pagination import Page
from batchboard.explorer.presenters import Clock, Presenter, look, outcome_tone
from batchboard.models import JobExecution, JobInstance
from batchboard.vocabulary import MAX_PAGE_SIZE
from batchboard.web import (
    BadInput,
    action_view,
    first_page_url,
    known_id,
    missing,
    wants_fragment,
)


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
    return response


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
    slot: Callable[[], dict[str, Any]] | None = None,
) -> HttpResponse:
    """
    Render an outcome, or an error with a way back to the fresh state.

    An action on one record answers an htmx request with its outcome in the
    record's action slot, named after the record's state now (``slot``
    returns it, and the page's other regions that the action changed, fresh
    and swapped out of band): the page's own refresh then keeps the slot
    and so the outcome. See batchboard/actions/result_slot.html.
    """
    context: dict[str, Any] = {"target_url": target_url, "retry_url": retry_url}
    if result is not None:
        conflict = result.rejection_code == "OPTIMISTIC_CONFLICT"
        context.update(
            result=result,
            # A rejection replayed is still a rejection.
            tone=outcome_tone(
                result.recorded_outcome if result.rejected else result.outcome
            ),
            explanation=result.explanation(),
            audit_url=audit_url(result),
            conflict=conflict,
        )
    else:
        assert error is not None
        context.update(error=error)
    if slot is not None and wants_fragment(request):
        context.update(slot())
        response = render(request, "batchboard/actions/result_slot.html", context)
    else:
        response = _respond(request, "batchboard/actions/result.html", context)
    if result is not None:
        # Every recorded outcome (an applied action, a rejection, a replay)
        # may have changed the target and wrote an audit row: the including
        # page refreshes what shows them (its request is sent as the
        # response is received; the outcome is swapped in before its answer).
        trigger_client_event(
            response,
            "batchboard:changed",
            {"action": result.action, "outcome": result.outcome},
        )
    return response


def _submit(
    request: HttpRequest,
    form: forms.ActionForm,
    *,
    target_url: str | None,
    retry_url: str | None,
    slot: Callable[[], dict[str, Any]] | None = None,
) -> HttpResponse:
    """Run a confirmed action and render its result or its error in place."""
    try:
        result = form.perform(request.user)
    except actions.ActionError as error:
        return _result(
            request, error=error, target_url=target_url, retry_url=retry_url, slot=slot
        )
    return _result(
        request, result=result, target_url=target_url, retry_url=retry_url, slot=slot
    )


# -- the rows an action targets --------------------------------------------------


def _execution(execution_id: int) -> JobExecution:
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
        .filter(pk=known_id("execution", execution_id))
        .first()
    )
    if found is None:
        raise missing("execution", execution_id)
    return found


def _instance(instance_id: int) -> JobInstance:
    found = (
        JobInstance.objects.only("id", "job_name", "hold_actor", "hold_reason")
        .filter(pk=known_id("instance", instance_id))
        .first()
    )
    if found is None:
        raise missing("instance", instance_id)
    return found


@dataclass(frozen=True)
class Target:
    """
    The record a dialog acts on: how the dialog names it, the version the
    operator sees (instances have none) and what it offers, by action.
    """

    described: str
    version: int | None
    offers: dict[str, eligibility.Eligibility]


def _describe_execution(execution_id: int) -> Target:
    """Name an execution in a confirmation dialog, with what it offers."""
    execution = _execution(execution_id)
    described = _(
        "execution #%(id)s of %(job)s, attempt %(attempt)s, %(status)s, "
        "version %(version)s"
    ) % {
        "id": execution.pk,
        "job": execution.job_instance.job_name,
        "attempt": execution.attempt,
        "status": execution.status,
        "version": execution.version,
    }
    return Target(described, execution.version, eligibility.of_execution(execution))


def _describe_instance(instance_id: int) -> Target:
    """Name an instance in a confirmation dialog (instances have no version)."""
    instance = _instance(instance_id)
    described = _("instance #%(id)s of %(job)s") % {
        "id": instance.pk,
        "job": instance.job_name,
    }
    return Target(described, None, eligibility.of_instance(instance))


def _execution_slot(execution_id: int) -> dict[str, Any]:
    """
    Return the execution page's action slot for the execution's status now.

    The live region names its slot after the status it was rendered on, so
    a slot named after the current one survives the refresh an outcome
    triggers, and one a later change of status makes stale does not.
    """
    status = (
        JobExecution.objects.filter(pk=execution_id)
        .values_list("status", flat=True)
        .first()
    )
    return {"slot_id": f"bb-action-slot-{execution_id}-{status or 'GONE'}"}


def _instance_slot(instance_id: int) -> dict[str, Any]:
    """
    Return the instance page's action slot, and its hold and buttons fresh.

    The page has no live region: the hold it shows and the buttons it
    offers are swapped out of band with the outcome.
    """
    context: dict[str, Any] = {"slot_id": f"bb-action-slot-instance-{instance_id}"}
    found = queries.instance(instance_id)
    if found is not None:
        Presenter().instance(found)
        context["instance"] = found
        context["offers"] = eligibility.for_instance(held=bool(found["hold_actor"]))
    return context


#: Per kind of target: the page it is shown on, how a dialog names it, and
#: the slot (with the regions it changes) its outcome is shown in.
_TARGETS: dict[
    str,
    tuple[str, Callable[[int], Target], Callable[[int], dict[str, Any]]],
] = {
    "execution": ("batchboard:execution", _describe_execution, _execution_slot),
    "instance": ("batchboard:instance", _describe_instance, _instance_slot),
}

_TITLES = {
    vocabulary.STOP: gettext_lazy("Stop execution #%(id)s"),
    vocabulary.ABANDON: gettext_lazy("Abandon execution #%(id)s"),
    vocabulary.HOLD: gettext_lazy("Hold instance #%(id)s"),
    vocabulary.RELEASE_HOLD: gettext_lazy("Release the hold on instance #%(id)s"),
}


def _confirmed(
    request: HttpRequest, form_class: type[forms.TargetedActionForm], target_id: int
) -> HttpResponse:
    """
    Show the confirmation dialog of an action on one row, or run it.

    GET renders the dialog with a fresh operation id (and the version the
    operator sees); POST submits the dialog's form.
    """
    known_id(form_class.target, target_id)
    page_name, describe, slot = _TARGETS[form_class.target]
    page = _url(page_name, target_id)
    if request.method == "POST":
        form = form_class(request.POST, target_id=target_id)
        return _submit(
            request,
            form,
            target_url=page,
            retry_url=request.path,
            slot=lambda: slot(target_id),
        )
    target = describe(target_id)
    action = form_class.action
    context = {
        "action": action,
        "title": _TITLES[action] % {"id": target_id},
        "target": target.described,
        "auth_class": vocabulary.ACTION_CLASSES[action],
        "consequence": consequence(action),
        # A record that does not offer the action gets a dialog that says
        # why, and no Confirm (the service would refuse, or change nothing).
        "eligibility": target.offers[action],
        "post_url": request.path,
        "cancel_url": page,
        "operation_id": envelope.new_operation_id(),
        "expected_version": target.version,
        "reasons": form_class.reasons(),
    }
    return _respond(request, "batchboard/actions/dialog.html", context)


# -- STOP and ABANDON -------------------------------------------------------------


@require_http_methods(["GET", "HEAD", "POST"])
@action_view(vocabulary.STOP, *VIEW_EXECUTION_PAGE)
def stop(request: HttpRequest, execution_id: int) -> HttpResponse:
    """Confirm, then request a cooperative stop of one execution."""
    return _confirmed(request, forms.StopForm, execution_id)


@require_http_methods(["GET", "HEAD", "POST"])
@action_view(vocabulary.ABANDON, *VIEW_EXECUTION_PAGE)
def abandon(request: HttpRequest, execution_id: int) -> HttpResponse:
    """Confirm, then mark one finished execution ABANDONED for good."""
    return _confirmed(request, forms.AbandonForm, execution_id)


# -- RECOVER ---------------------------------------------------------------------


@require_http_methods(["GET", "HEAD"])
@action_view(vocabulary.PROPOSE_RECOVERY, *VIEW_EXECUTION_PAGE)
def recovery_proposal(request: HttpRequest, execution_id: int) -> HttpResponse:
    """Show the recovery proposal of one execution, and its form if allowed."""
    try:
        proposal = actions.propose(known_id("execution", execution_id))
    except actions.TargetNotFound as error:
        raise missing("execution", execution_id) from error
    except actions.ActionError as error:
        return _result(request, error=error, target_url=None)
    panel = request.GET.get("panel") == "1"
    # Whether the execution offers a recovery: the eligibility rule's
    # answer on this proposal, which the service asks again on submit.
    offer = eligibility.recover(
        proposal.evidence.status,
        candidate=proposal.is_candidate,
        verdict=proposal.verdict_text(),
    )
    category = (
        "UNKNOWN_COMMIT" if proposal.evidence.unknown_commit else "STALE_RECOVERED"
    )
    # A fresh failure id per proposal, labelled as generated: nine digits,
    # so that an operator can read it out and note it.
    failure_id = secrets.randbelow(900_000_000) + 100_000_000
    context = {
        "proposal": proposal,
        "evidence": proposal.evidence,
        "may_recover": permissions.may(request.user, vocabulary.RECOVER),
        "offer": offer,
        "operation_id": envelope.new_operation_id(),
        "reasons": forms.RecoverForm.reasons(),
        "categories": vocabulary.RECOVERY_CATEGORIES,
        "default_category": category,
        "default_failure_id": failure_id,
        "cli_commands": cli.for_recovery(
            proposal,
            offer,
            actor=envelope.actor_ref_for(request.user),
            failure_category=category,
            failure_id=failure_id,
        ),
        "post_url": reverse("batchboard:action_recover", args=[execution_id]),
        "execution_url": _url("batchboard:execution", execution_id),
        "panel": panel,
        # On the execution page the outcome goes to the page's action slot
        # of the status the page shows (see result_slot.html).
        "form_target": (
            f"#bb-action-slot-{execution_id}-{proposal.evidence.status}"
            if panel
            else "closest .bb-action-slot"
        ),
    }
    return _respond(request, "batchboard/actions/recovery.html", context)


@require_http_methods(["POST"])
@action_view(vocabulary.RECOVER, *VIEW_EXECUTION_PAGE)
def recover(request: HttpRequest, execution_id: int) -> HttpResponse:
    """Apply a reviewed recovery proposal; the server re-proposes first."""
    return _submit(
        request,
        forms.RecoverForm(request.POST, target_id=known_id("execution", execution_id)),
        target_url=_url("batchboard:execution", execution_id),
        retry_url=reverse("batchboard:recovery_proposal", args=[execution_id]),
        slot=lambda: _execution_slot(execution_id),
    )


# -- holds -----------------------------------------------------------------------


@require_http_methods(["GET", "HEAD", "POST"])
@action_view(vocabulary.HOLD, *VIEW_EXECUTIONS)
def hold(request: HttpRequest, instance_id: int) -> HttpResponse:
    """Confirm, then place a hold on one job instance."""
    return _confirmed(request, forms.HoldForm, instance_id)


@require_http_methods(["GET", "HEAD", "POST"])
@action_view(vocabulary.RELEASE_HOLD, *VIEW_EXECUTIONS)
def release(request: HttpRequest, instance_id: int) -> HttpResponse:
    """Confirm, then release the hold on one job instance."""
    return _confirmed(request, forms.ReleaseForm, instance_id)


# -- purge -----------------------------------------------------------------------


@require_http_methods(["GET", "HEAD"])
@action_view(vocabulary.PLAN_PURGE)
def purge_plan(request: HttpRequest) -> HttpResponse:
    """Show the purge form and, once a job is named, the plan it yields."""
    form = forms.PurgeCriteriaForm.from_data(request.GET)
    context: dict[str, Any] = {
        "finished": vocabulary.FINISHED,
        "form": form,
        "may_apply": permissions.may(request.user, vocabulary.APPLY_PURGE),
        "auth_class": vocabulary.ACTION_CLASSES[vocabulary.APPLY_PURGE],
        "consequence": consequence(vocabulary.APPLY_PURGE),
        "reasons": forms.PurgeApplyForm.reasons(),
        "operation_id": envelope.new_operation_id(),
    }
    if request.GET.get("job_name"):
        try:
            context["plan"] = _plan_purge(request, form)
        except actions.ActionError as error:
            context["error"] = error
        else:
            context.update(_candidate_page(request, context["plan"]))
            if wants_fragment(request) and "after" in request.GET:
                return render(
                    request, "batchboard/actions/purge_candidates.html", context
                )
    if not wants_fragment(request):
        context["job_names"] = [
            row["job_name"] for row in queries.job_names(MAX_PAGE_SIZE).rows
        ]
    return render(request, "batchboard/actions/purge.html", context)


def _plan_purge(
    request: HttpRequest, form: forms.PurgeCriteriaForm
) -> actions.PurgePlan:
    """Return the plan of the form's criteria, or raise ActionError."""
    criteria = form.criteria()
    return actions.plan_purge(
        user=request.user,
        job_name=criteria.job_name,
        statuses=criteria.statuses,
        min_age_seconds=criteria.min_age_seconds,
        batch=criteria.batch,
    )


#: A purge plan's candidate as CSV columns.
PURGE_COLUMNS: Final = (
    "plan_digest",
    "job_name",
    "instance_id",
    "execution_id",
    "version",
    "status",
    "ended_at",
    "updated_at",
)


@require_http_methods(["GET", "HEAD"])
@action_view(vocabulary.PLAN_PURGE)
def purge_export(request: HttpRequest) -> StreamingHttpResponse:
    """
    Download the purge plan the page shows: its candidates and digest.

    The plan is made again from the page's criteria, as each page of its
    candidates is; every row carries the digest of the plan it belongs to.
    """
    form = forms.PurgeCriteriaForm.from_data(export.filters(request.GET))
    try:
        plan = _plan_purge(request, form)
    except actions.ActionError as error:
        raise BadInput(_("The plan could not be made"), error.message) from error
    rows = [
        projections.purge_candidate(plan, candidate, projections.iso)
        for candidate in plan.candidates
    ]
    return export.download(request, "purge-plan", PURGE_COLUMNS, lambda _: (rows, None))


def _candidate_page(request: HttpRequest, plan: actions.PurgePlan) -> dict[str, Any]:
    """
    Return one page of a plan's candidates (at most 1000, held in memory).

    Paged as every list is (``size``, and the sentinel row that loads the
    next page in place), continuing after the execution id ``after``. The
    plan is computed again for each page; each page shows its digest.
    """
    form = inputs.read(forms.CandidatesForm, request)
    after = form.position
    rows = list(plan.candidates)
    if after is not None:
        rows = [row for row in rows if (row[0], row[1]) > after]
    shown = rows[: form.page_size]
    next_url = None
    if len(rows) > len(shown):
        flat = [
            (key, value)
            for key, values in request.GET.lists()
            if key != "after"
            for value in values
        ]
        flat.append(("after", f"{shown[-1][0]}:{shown[-1][1]}"))
        next_url = f"{request.path}?{urlencode(flat)}"
    # Ages as of the survey's clock: what the minimum age was measured by.
    clock = Clock(plan.at)
    page = Page(
        [
            {
                "instance_id": instance_id,
                "execution_id": execution_id,
                "version": version,
                "instance_url": link("batchboard:instance", instance_id),
                "execution_url": link("batchboard:execution", execution_id),
                **_facts(plan.facts.get(execution_id), clock),
            }
            for instance_id, execution_id, version in shown
        ],
        form.page_size,
        first=after is None,
    )
    return {
        "candidates": page,
        "page": page,
        "next_url": next_url,
        "first_url": first_page_url(request, drop=("after", "size")),
    }


def _facts(facts: actions.PurgeFacts | None, clock: Clock) -> dict[str, Any]:
    """Return what a candidate's row shows: status, end and age (the plan's read)."""
    if facts is None:
        return {}
    return {
        "status": facts.status,
        "tone": look(facts.status).tone,
        "ended": clock.moment(facts.ended_at),
        # The age the minimum age is compared with: since the last update.
        "age": clock.span((clock.now - facts.updated_at).total_seconds()),
    }


@require_http_methods(["POST"])
@action_view(vocabulary.APPLY_PURGE)
def purge_apply(request: HttpRequest) -> HttpResponse:
    """Apply a reviewed purge plan, or delete nothing and say why."""
    return _submit(
        request,
        forms.PurgeApplyForm.from_data(request.POST),
        target_url=reverse("batchboard:purge_plan"),
        retry_url=None,
    )
