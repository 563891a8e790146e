"""
The JSON API's views: the CLI's commands over HTTP, in its envelope.

Each view names its ``command`` (the CLI's, or batchboard's own for lists
the CLI lacks; docs/api.md lists them) and answers with
:class:`batchboard.api.output.Envelope` at the status of
:mod:`batchboard.api.exits`. Reads go through the explorer's keyset
queries, actions through the action services, so cursors and digests are
the CLI's own.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt

from batchboard import actions, conf, cursors, db, replicas
from batchboard.actions import bulk, results
from batchboard.actions.recovery import CANDIDATE
from batchboard.api import output, projections
from batchboard.api import requests as inputs
from batchboard.api.output import Envelope, diagnostic
from batchboard.api.requests import Refused, refuse
from batchboard.explorer import access, pagination, queries, surveys
from batchboard.explorer import audit as audit_log
from batchboard.explorer.inputs import StatusesField, WindowForm
from batchboard.explorer.pagination import Page
from batchboard.models import (
    BulkOperation,
    JobExecution,
    JobInstance,
    OperatorRequest,
    RetentionAction,
)
from batchboard.vocabulary import FINISHED, STATUSES
from batchboard.web import has_control_characters

ApiView = Callable[..., Envelope]
EVIDENCE_RE = re.compile(r"[0-9A-Fa-f]{64}")

CURSOR_DETAILS = {
    cursors.CursorQueryMismatch: "the continuation token does not belong to this query",
    cursors.CursorInvalid: "the continuation token is not a valid cursor",
}


def _not_found(command: str, what: str) -> Refused:
    return refuse(
        command, "TARGET_NOT_FOUND", "TARGET_NOT_FOUND", f"the {what} does not exist"
    )


def _action_error(command: str, error: results.ActionError) -> Envelope:
    if isinstance(error, results.TargetNotFound):
        what = "instance" if "nstance" in error.message else "execution"
        return output.failure(
            command,
            "TARGET_NOT_FOUND",
            "TARGET_NOT_FOUND",
            f"the {what} does not exist",
        )
    table: list[tuple[type[results.ActionError], str, str, str]] = [
        (
            results.OperationIdConflict,
            "GUARD_REJECTED",
            "OPERATION_ID_CONFLICT",
            "the operation identifier was already recorded for a different request",
        ),
        (
            results.OperationOutcomeUnknown,
            "OUTCOME_UNKNOWN",
            "OUTCOME_UNKNOWN",
            "the durable outcome is undetermined; replay the same operation identifier",
        ),
        (
            results.ConcurrentModification,
            "OPTIMISTIC_CONFLICT",
            "CONCURRENT_MODIFICATION",
            "another committed unit of work invalidated the observed snapshot",
        ),
        (
            results.Unavailable,
            "REPOSITORY_UNAVAILABLE",
            "REPOSITORY_UNAVAILABLE",
            "the repository is unavailable",
        ),
        (
            results.EvidenceStale,
            "GUARD_REJECTED",
            "RECOVERY_EVIDENCE_STALE",
            "the supplied evidence digest does not match the current proposal",
        ),
        (
            results.NotRecoverable,
            "GUARD_REJECTED",
            "RECOVERY_NOT_ALLOWED",
            "the execution is not a recovery candidate",
        ),
        (
            results.PlanStale,
            "OPTIMISTIC_CONFLICT",
            "PLAN_STALE",
            "a candidate changed after the plan was produced; nothing was deleted",
        ),
        (
            results.ConstraintViolation,
            "GUARD_REJECTED",
            "REPOSITORY_REJECTED",
            "the repository rejected the action",
        ),
    ]
    for kind, category, code, detail in table:
        if isinstance(error, kind):
            return output.failure(command, category, code, detail)
    # InvalidRequest: the service's own fixed sentence, never the input.
    return output.failure(command, "USAGE", "INVALID_REQUEST", error.message)


def _database_error(
    command: str, error: DatabaseError, deadline_ms: int | None = None
) -> Envelope:
    """
    A statement stopped by its bound is the CLI's exit 9; anything else exit 7.

    Stopped under the caller's own ``timeout``, it is the CLI's client
    deadline; under the site's ``STATEMENT_TIMEOUT_MS``, its statement timeout.
    """
    cancelled = db.cancelled(error)
    configured = int(conf.get_config()["STATEMENT_TIMEOUT_MS"])
    if (
        cancelled
        and deadline_ms is not None
        and (deadline_ms < configured or db.connection().vendor != "postgresql")
    ):
        return output.failure(
            command,
            "DEADLINE_EXCEEDED",
            "DEADLINE_EXCEEDED",
            "the client deadline elapsed; the durable outcome is undetermined",
            {"operation_id": None},
        )
    if cancelled:
        return output.failure(
            command,
            "DEADLINE_EXCEEDED",
            "STATEMENT_TIMEOUT",
            "the bounded query exceeded its statement timeout",
        )
    return output.failure(
        command,
        "REPOSITORY_UNAVAILABLE",
        "REPOSITORY_UNAVAILABLE",
        "the repository is unavailable",
    )


def endpoint(
    command: str, methods: tuple[str, ...] = ("GET",)
) -> Callable[[ApiView], Callable[..., HttpResponse]]:
    """
    Wrap an API view: method, caller, and every failure as an envelope.

    The view is called with the request, the caller and ``command``, the
    CLI command its envelope names, then the URL's arguments.
    """

    def wrap(view: ApiView) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def run(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method not in (*methods, "HEAD" if "GET" in methods else ""):
                response = output.failure(
                    command, "USAGE", "METHOD_NOT_ALLOWED", "the method is not allowed"
                ).response()
                response.status_code = 405
                response["Allow"] = ", ".join(methods)
                return response
            if has_control_characters(request):
                return output.failure(
                    command,
                    "USAGE",
                    "INVALID_VALUE",
                    "the address holds a control character",
                ).response()
            deadline = None
            try:
                # Authenticating counts the token's call (a write), so it
                # runs before the read: a GET's reads then run in one
                # bounded read transaction, on a replica when one may serve
                # them (batchboard.replicas); actions write on the primary.
                user = inputs.caller(request, command)
                deadline = inputs.deadline_ms(request, command)
                if request.method in ("GET", "HEAD"):
                    session = getattr(request, "session", None)
                    with replicas.reading(
                        session, replica=methods == ("GET",), deadline_ms=deadline
                    ):
                        envelope = view(request, user, command, *args, **kwargs)
                else:
                    envelope = view(request, user, command, *args, **kwargs)
            except Refused as refused:
                envelope = refused.envelope
            except cursors.CursorError as error:
                envelope = output.failure(
                    command,
                    "GUARD_REJECTED",
                    "CURSOR_REJECTED",
                    CURSOR_DETAILS.get(
                        type(error), CURSOR_DETAILS[cursors.CursorInvalid]
                    ),
                )
            except PermissionDenied:
                envelope = output.failure(
                    command,
                    "FORBIDDEN",
                    "PERMISSION_DENIED",
                    "the caller lacks a permission this command needs",
                )
            except results.ActionError as error:
                envelope = _action_error(command, error)
            except DatabaseError as error:
                envelope = _database_error(command, error, deadline)
            return envelope.response()

        guarded = csrf_exempt(run)
        guarded.batchboard_api_command = command  # type: ignore[attr-defined]
        return guarded

    return wrap


def _paged(command: str, page: Page, data: list[Any]) -> Envelope:
    return Envelope(command, data, page=output.page_fields(page, len(data)))


# -- the explorer's queries (contract 3.1) --------------------------------------------

LIST_PARAMS = {"page_size", "cursor"}


@endpoint("job list")
def job_list(request: HttpRequest, user: Any, command: str) -> Envelope:
    inputs.check_params(request, command, LIST_PARAMS)
    inputs.require_perms(user, command, *access.VIEW_EXECUTIONS)
    page = queries.job_names(inputs.page_size(request, command), inputs.cursor(request))
    return _paged(command, page, [{"job_name": row["job_name"]} for row in page.rows])


def _instance_keys(ids: list[int]) -> dict[int, str]:
    rows = (
        JobInstance.objects.using(queries._using())
        .filter(id__in=ids)
        .values_list("id", "instance_key")
    )
    return {int(pk): bytes(key).hex() for pk, key in rows}


@endpoint("job show")
def job_show(request: HttpRequest, user: Any, command: str, job_name: str) -> Envelope:
    inputs.check_params(request, command, set())
    inputs.require_perms(user, command, *access.VIEW_EXECUTIONS)
    page = queries.instances(inputs.job_name(job_name, command), 1)
    if not page.rows:
        raise refuse(
            command, "TARGET_NOT_FOUND", "TARGET_NOT_FOUND", "the job does not exist"
        )
    newest = page.rows[0]
    definition = None
    if newest.get("latest_id") is not None:
        found = queries.execution(int(newest["latest_id"]))
        if found is not None:
            definition = projections.execution(found)["definition"]
    return Envelope(
        command,
        {
            "definition": definition,
            "job_name": newest["job_name"],
            "newest_instance_id": newest["id"],
        },
    )


@endpoint("instance list")
def instance_list(
    request: HttpRequest, user: Any, command: str, job_name: str
) -> Envelope:
    inputs.check_params(request, command, LIST_PARAMS)
    inputs.require_perms(user, command, *access.VIEW_EXECUTIONS)
    page = queries.instances(
        inputs.job_name(job_name, command),
        inputs.page_size(request, command),
        inputs.cursor(request),
    )
    keys = _instance_keys([int(row["id"]) for row in page.rows])
    data = [projections.instance(row, keys[int(row["id"])]) for row in page.rows]
    return _paged(command, page, data)


@endpoint("instance show")
def instance_show(
    request: HttpRequest, user: Any, command: str, instance_id: str
) -> Envelope:
    inputs.check_params(request, command, set())
    inputs.require_perms(user, command, *access.VIEW_EXECUTIONS)
    found = queries.instance(inputs.identifier(instance_id, command, "instance"))
    if found is None:
        raise _not_found(command, "instance")
    return Envelope(command, projections.instance(found, found["instance_key_hex"]))


def _executions(command: str, page: Page) -> Envelope:
    extras = projections.execution_extras([int(row["id"]) for row in page.rows])
    data = [projections.execution(row, extras.get(int(row["id"]))) for row in page.rows]
    return _paged(command, page, data)


@endpoint("execution list")
def instance_executions(
    request: HttpRequest, user: Any, command: str, instance_id: str
) -> Envelope:
    inputs.check_params(request, command, LIST_PARAMS)
    inputs.require_perms(user, command, *access.VIEW_EXECUTIONS)
    ident = inputs.identifier(instance_id, command, "instance")
    page = queries.instance_executions(
        ident, inputs.page_size(request, command), inputs.cursor(request)
    )
    return _executions(command, page)


@endpoint("execution list")
def unresolved(request: HttpRequest, user: Any, command: str) -> Envelope:
    inputs.check_params(request, command, LIST_PARAMS | {"unresolved_age"})
    inputs.require_perms(user, command, *access.VIEW_EXECUTIONS)
    text = request.GET.get("unresolved_age")
    if text is None:
        raise refuse(command, "USAGE", "MISSING_AGE", "the unresolved age is required")
    age = inputs.duration_seconds(text, command, "INVALID_AGE")
    if age < 60:
        raise refuse(
            command,
            "USAGE",
            "AGE_BOUND_TOO_SMALL",
            "the age bound must be at least 60 seconds",
        )
    page = queries.unresolved(
        age, inputs.page_size(request, command), inputs.cursor(request)
    )
    return _executions(command, page)


@endpoint("execution recent")
def recent(request: HttpRequest, user: Any, command: str) -> Envelope:
    """
    batchboard's own list: executions newest first, by status and job; with
    a time window (``since``, ``until``), those last updated in it, by
    last update.
    """
    inputs.check_params(
        request, command, LIST_PARAMS | {"status", "job", "since", "until"}
    )
    inputs.require_perms(user, command, *access.VIEW_EXECUTIONS)
    # The list's own statuses field: a status in any case, a set (active,
    # finished) or a comma-separated list, as the page takes them.
    try:
        statuses = StatusesField().clean(request.GET.getlist("status"))
    except ValidationError as error:
        raise refuse(
            command,
            "USAGE",
            "INVALID_STATUS",
            "the status is not a known status or set (active, finished)",
        ) from error
    job = request.GET.get("job", "")
    if job:
        inputs.job_name(job, command)
    # The executions page's own window fields: the same bounds, the same
    # cursor.
    bounds = WindowForm(
        {name: request.GET.get(name, "") for name in ("since", "until")}
    )
    if not bounds.is_valid():
        raise refuse(
            command,
            "USAGE",
            "INVALID_WINDOW",
            "since and until take ISO-8601 UTC times or 30m, 2h, 7d, "
            "and the window must not end before it starts",
        )
    window = bounds.window
    size, token = inputs.page_size(request, command), inputs.cursor(request)
    if window is None:
        page = queries.recent_executions(statuses, job, size, token)
    else:
        page = queries.windowed_executions(statuses, job, window, size, token)
    return _executions(command, page)


@endpoint("execution show")
def execution_show(
    request: HttpRequest, user: Any, command: str, execution_id: str
) -> Envelope:
    inputs.check_params(request, command, set())
    inputs.require_perms(user, command, *access.VIEW_EXECUTIONS)
    ident = inputs.identifier(execution_id, command, "execution")
    found = queries.execution(ident)
    if found is None:
        raise _not_found(command, "execution")
    data = projections.execution(found)
    data["recovery_proposal"] = _proposal(ident)
    return Envelope(command, data)


def _proposal(execution_id: int) -> dict[str, Any] | None:
    proposal = actions.propose(execution_id)
    if proposal.verdict != CANDIDATE:
        return None
    evidence = proposal.evidence
    latest = None
    if evidence.latest_step is not None:
        checkpoint = evidence.latest_step.checkpoint
        latest = {
            "checkpoint": None
            if checkpoint is None
            else {
                "encoded_len": checkpoint.encoded_len,
                "format_version": checkpoint.format_version,
                "kind": "checkpoint",
                "schema_id": checkpoint.schema_id,
                "schema_version": checkpoint.schema_version,
            },
            "status": evidence.latest_step.status,
            "step_execution_id": evidence.latest_step.step_id,
        }
    return {
        "ambiguous_external_effect": evidence.ambiguous_external_effect,
        "attempt": evidence.attempt,
        "committed_flow_decision": evidence.committed_flow_decision,
        "completed_partition": evidence.completed_partition,
        "evidence_digest": proposal.digest_hex,
        "inactivity_millis": max(0, proposal.measured_at_ms - evidence.updated_at_ms),
        "latest_step": latest,
        "observation_window_millis": 0,
        "observed_clock_offset_millis": 0,
        "observed_version": evidence.version,
        "owner": evidence.owner.lower(),
        "server_time": proposal.server_time_ms // 1000,
        "status": evidence.status,
        "unknown_commit": evidence.unknown_commit,
        "updated_at": evidence.updated_at_ms // 1000,
    }


@endpoint("recovery propose")
def recovery_propose(
    request: HttpRequest, user: Any, command: str, execution_id: str
) -> Envelope:
    """batchboard's own: the recovery proposal alone (null when not a candidate)."""
    inputs.check_params(request, command, set())
    inputs.require_perms(user, command, *access.VIEW_EXECUTIONS)
    ident = inputs.identifier(execution_id, command, "execution")
    if queries.execution(ident) is None:
        raise _not_found(command, "execution")
    return Envelope(command, _proposal(ident))


@endpoint("execution steps")
def execution_steps(
    request: HttpRequest, user: Any, command: str, execution_id: str
) -> Envelope:
    inputs.check_params(request, command, LIST_PARAMS)
    inputs.require_perms(user, command, *access.VIEW_STEPS)
    ident = inputs.identifier(execution_id, command, "execution")
    page = queries.steps(
        ident,
        inputs.page_size(request, command),
        inputs.cursor(request),
        partitions=False,
    )
    return _paged(command, page, [projections.step(row) for row in page.rows])


@endpoint("step show")
def step_show(request: HttpRequest, user: Any, command: str, step_id: str) -> Envelope:
    """batchboard's own: one step record."""
    inputs.check_params(request, command, set())
    inputs.require_perms(user, command, *access.VIEW_STEPS)
    found = queries.step(inputs.identifier(step_id, command, "step"))
    if found is None:
        raise refuse(
            command, "TARGET_NOT_FOUND", "TARGET_NOT_FOUND", "the step does not exist"
        )
    return Envelope(command, projections.step(found))


@endpoint("execution partitions")
def step_partitions(
    request: HttpRequest, user: Any, command: str, step_id: str
) -> Envelope:
    inputs.check_params(request, command, LIST_PARAMS)
    inputs.require_perms(user, command, *access.VIEW_PARTITIONS)
    ident = inputs.identifier(step_id, command, "step")
    page = queries.partitions(
        ident, inputs.page_size(request, command), inputs.cursor(request)
    )
    return _paged(command, page, [projections.partition(row) for row in page.rows])


HISTORY = {
    "operator": ("batchboard.view_operatorrequest",),
    "recovery": ("batchboard.view_recoverydecision",),
    "flow": ("batchboard.view_flowdecision",),
}


@endpoint("execution history")
def execution_history(
    request: HttpRequest, user: Any, command: str, execution_id: str
) -> Envelope:
    inputs.check_params(request, command, LIST_PARAMS | {"record"})
    record = request.GET.get("record", "operator")
    if record not in HISTORY:
        raise refuse(
            command,
            "USAGE",
            "INVALID_VALUE",
            "the record is operator, recovery or flow",
        )
    inputs.require_perms(user, command, *access.VIEW_EXECUTIONS, *HISTORY[record])
    ident = inputs.identifier(execution_id, command, "execution")
    size, token = inputs.page_size(request, command), inputs.cursor(request)
    if record == "operator":
        page = queries.operator_requests(ident, size, token)
        data = [projections.operator_record(row) for row in page.rows]
    elif record == "recovery":
        page = queries.recovery_decisions(ident, size, token)
        data = [projections.recovery_decision(row, ident) for row in page.rows]
    else:
        page = queries.flow_decisions(ident, size, token)
        data = [projections.flow_decision(row, ident) for row in page.rows]
    return _paged(command, page, data)


# -- actions --------------------------------------------------------------------------


def operator_outcome(command: str, result: actions.ActionResult) -> Envelope:
    """The envelope of an operator action's result (A.3, A.2.4)."""
    request = OperatorRequest.objects.using(queries._using()).get(pk=result.audit_id)
    execution = None
    if result.outcome == actions.APPLIED and result.execution_id is not None:
        row = (
            JobExecution.objects.filter(pk=result.execution_id)
            .values("id", "status", "version")
            .first()
        )
        if row is not None:
            execution = {
                "execution_id": row["id"],
                "status": row["status"],
                "version": row["version"],
            }
    data = {
        "changed": result.changed,
        "execution": execution,
        "operation_id": result.operation_id,
        "outcome": result.outcome,
        "record": projections.operator_request(request),
    }
    return _decided(command, result, data)


def _decided(command: str, result: actions.ActionResult, data: Any) -> Envelope:
    if result.rejected:
        from batchboard.api import exits

        category = exits.of_rejection(result.rejection_code).name
        detail = f"the action was rejected as {result.rejection_code}"
        return Envelope(command, data, category, [diagnostic("GUARD_REJECTED", detail)])
    diagnostics = []
    if result.replayed:
        diagnostics.append(
            diagnostic(
                "REPLAYED",
                "the recorded outcome of this operation identifier was returned",
            )
        )
    return Envelope(command, data, "SUCCESS", diagnostics)


def _version(document: dict[str, Any], command: str) -> int:
    value = document["expected_version"]
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        raise refuse(
            command,
            "USAGE",
            "INVALID_EXPECTED_VERSION",
            "the expected version is a whole number",
        )
    return value


@endpoint("execution stop", ("POST",))
def stop(request: HttpRequest, user: Any, command: str, execution_id: str) -> Envelope:
    ident = inputs.identifier(execution_id, command, "execution")
    document = inputs.body(request, command, {"expected_version", "operation_id"})
    result = actions.stop_execution(
        user=user,
        execution_id=ident,
        expected_version=_version(document, command),
        operation_id=inputs.text_field(document, "operation_id", command),
    )
    return operator_outcome(command, result)


@endpoint("execution abandon", ("POST",))
def abandon(
    request: HttpRequest, user: Any, command: str, execution_id: str
) -> Envelope:
    ident = inputs.identifier(execution_id, command, "execution")
    document = inputs.body(
        request, command, {"expected_version", "operation_id", "reason"}
    )
    result = actions.abandon_execution(
        user=user,
        execution_id=ident,
        expected_version=_version(document, command),
        reason_code=inputs.text_field(document, "reason", command),
        operation_id=inputs.text_field(document, "operation_id", command),
    )
    return operator_outcome(command, result)


@endpoint("execution recover", ("POST",))
def recover(
    request: HttpRequest, user: Any, command: str, execution_id: str
) -> Envelope:
    ident = inputs.identifier(execution_id, command, "execution")
    document = inputs.body(
        request,
        command,
        {"expected_version", "operation_id", "reason", "directive", "evidence_digest"},
        frozenset({"failure_category", "failure_id"}),
    )
    version = _version(document, command)
    directive_name = inputs.text_field(document, "directive", command)
    if directive_name == "abandon" and (
        "failure_category" in document or "failure_id" in document
    ):
        raise refuse(
            command,
            "USAGE",
            "CONTRADICTORY_OPTIONS",
            "abandon takes no failure category or failure id",
        )
    directive = _directive(directive_name, document, command)
    digest_text = inputs.text_field(document, "evidence_digest", command)
    if not EVIDENCE_RE.fullmatch(digest_text):
        raise refuse(
            command, "USAGE", "INVALID_EVIDENCE", "the evidence digest is 64 hex digits"
        )
    proposal = actions.propose(ident)
    if proposal.observed_version != version:
        return Envelope(
            command,
            {"current_version": proposal.observed_version},
            "OPTIMISTIC_CONFLICT",
            [
                diagnostic(
                    "RECOVERY_EVIDENCE_STALE",
                    "the supplied version does not match the recovery evidence",
                )
            ],
        )
    result = actions.recover_execution(
        user=user,
        execution_id=ident,
        expected_version=version,
        evidence_digest=bytes.fromhex(digest_text),
        unknown_commit=proposal.evidence.unknown_commit,
        directive=directive,
        reason_code=inputs.text_field(document, "reason", command),
        operation_id=inputs.text_field(document, "operation_id", command),
    )
    return operator_outcome(command, result)


def _hold_outcome(command: str, result: actions.ActionResult) -> Envelope:
    action = RetentionAction.objects.using(queries._using()).get(pk=result.audit_id)
    hold = None
    if result.outcome == actions.APPLIED and action.action == "HOLD":
        held = action.job_instance_id
        instance = JobInstance.objects.filter(pk=held).first() if held else None
        if instance is not None and instance.hold_actor is not None:
            hold = {
                "actor": instance.hold_actor,
                "instance_id": instance.pk,
                "placed_at": projections.seconds(instance.hold_placed_at),
                "reason": instance.hold_reason,
            }
    data = {
        "hold": hold,
        "operation_id": result.operation_id,
        "outcome": result.outcome,
        "record": projections.retention_record(action),
    }
    return _decided(command, result, data)


def _hold_view(place: bool) -> Callable[..., Envelope]:
    def view(
        request: HttpRequest, user: Any, command: str, instance_id: str
    ) -> Envelope:
        ident = inputs.identifier(instance_id, command, "instance")
        document = inputs.body(request, command, {"operation_id", "reason"})
        service = actions.place_hold if place else actions.release_hold
        result = service(
            user=user,
            instance_id=ident,
            reason_code=inputs.text_field(document, "reason", command),
            operation_id=inputs.text_field(document, "operation_id", command),
        )
        return _hold_outcome(command, result)

    view.__name__ = "retention_hold" if place else "retention_release"
    return view


hold = endpoint("retention hold", ("POST",))(_hold_view(True))
release = endpoint("retention release", ("POST",))(_hold_view(False))


def _purge_inputs(document: dict[str, Any], command: str) -> dict[str, Any]:
    job = inputs.text_field(document, "job", command)
    older = inputs.duration_seconds(
        inputs.text_field(document, "older_than", command), command, "INVALID_AGE"
    )
    if older < 3600:
        raise refuse(
            command,
            "USAGE",
            "AGE_BOUND_TOO_SMALL",
            "the purge age bound must be at least 3600 seconds",
        )
    batch = document.get("batch", 1000)
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= 1000:
        raise refuse(
            command, "USAGE", "BATCH_BOUND_OUT_OF_RANGE", "the batch bound is 1 to 1000"
        )
    statuses = document.get("status", list(FINISHED))
    if (
        not isinstance(statuses, list)
        or not statuses
        or not all(isinstance(s, str) and s in FINISHED for s in statuses)
    ):
        raise refuse(
            command,
            "USAGE",
            "NON_TERMINAL_STATUS",
            "each status must be a finished status",
        )
    return {
        "job_name": job,
        "statuses": statuses,
        "min_age_seconds": older,
        "batch": batch,
    }


def _plan_data(plan: actions.PurgePlan) -> dict[str, Any]:
    criteria = plan.criteria
    return {
        "batch_bound": criteria.batch,
        "candidates": [
            {"execution_id": e, "instance_id": i, "version": v}
            for i, e, v in plan.candidates
        ],
        "counts": {
            name: int(plan.counts.get(f"deleted_{name}", plan.counts.get(name, 0)))
            for name in projections.PURGE_COUNT_NAMES
        },
        "empty": not plan.candidates,
        "job_name": criteria.job_name,
        "minimum_age_seconds": criteria.min_age_seconds,
        "plan_digest": plan.digest_hex,
        "statuses": [s for s in STATUSES if s in criteria.statuses],
    }


PURGE_FIELDS = {"job", "older_than"}
PURGE_OPTIONAL = frozenset({"batch", "status"})


@endpoint("retention plan", ("POST",))
def purge_plan(request: HttpRequest, user: Any, command: str) -> Envelope:
    document = inputs.body(request, command, PURGE_FIELDS, PURGE_OPTIONAL)
    plan = actions.plan_purge(user=user, **_purge_inputs(document, command))
    return Envelope(command, _plan_data(plan))


@endpoint("retention apply", ("POST",))
def purge_apply(request: HttpRequest, user: Any, command: str) -> Envelope:
    document = inputs.body(
        request,
        command,
        PURGE_FIELDS | {"plan_digest", "reason", "operation_id"},
        PURGE_OPTIONAL | {"dry_run"},
    )
    dry_run = document.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise refuse(command, "USAGE", "INVALID_VALUE", "dry_run is true or false")
    plan = actions.plan_purge(user=user, **_purge_inputs(document, command))
    supplied = inputs.text_field(document, "plan_digest", command).lower()
    if supplied != plan.digest_hex:
        return output.failure(
            command,
            "OPTIMISTIC_CONFLICT",
            "PLAN_STALE",
            "the observed plan digest does not match the supplied digest; nothing was deleted",
            {"observed_plan_digest": plan.digest_hex},
        )
    if dry_run:
        return Envelope(
            command,
            {"applied": False, "dry_run": True, "plan": _plan_data(plan)},
            "SUCCESS",
            [
                diagnostic(
                    "DRY_RUN", "the plan was validated and no durable change was made"
                )
            ],
        )
    result = actions.apply_purge(
        user=user,
        criteria=plan.criteria,
        candidates=plan.candidates,
        plan_digest_hex=plan.digest_hex,
        reason_code=inputs.text_field(document, "reason", command),
        operation_id=inputs.text_field(document, "operation_id", command),
    )
    action = RetentionAction.objects.using(queries._using()).get(pk=result.audit_id)
    record = projections.retention_record(action)
    data = {
        "counts": record["counts"],
        "operation_id": result.operation_id,
        "outcome": result.outcome,
        "record": record,
    }
    return _decided(command, result, data)


@endpoint("api index", ("GET", "POST", "PUT", "PATCH", "DELETE"))
def unknown(request: HttpRequest, user: Any, command: str) -> Envelope:
    """The API's root lists its commands; any other unrouted path is unknown."""
    from batchboard.api import schema

    root = reverse("batchboard:api-index")
    if request.path != root or request.method != "GET":
        raise refuse(
            "unknown", "USAGE", "UNKNOWN_COMMAND", "no command answers at this path"
        )
    commands = [
        {"command": command, "method": method.upper(), "path": route.lstrip("/")}
        for route, method, command, _params, _fields in schema.OPERATIONS
    ]
    return Envelope("api index", commands)


# -- batchboard's own lists ---------------------------------------------------------


@endpoint("audit list")
def audit(request: HttpRequest, user: Any, command: str) -> Envelope:
    """batchboard's own: the audit log, newest first (both audit tables merged)."""
    inputs.check_params(request, command, LIST_PARAMS | {"action", "job", "operation"})
    inputs.require_perms(user, command, *access.VIEW_AUDIT)
    size = inputs.page_size(request, command)
    data = {
        name: request.GET[name]
        for name in ("action", "job", "operation", "cursor")
        if name in request.GET
    }
    form = audit_log.AuditForm({**data, "size": str(size)})
    if not form.is_valid():
        raise refuse(command, "USAGE", "INVALID_VALUE", "a filter value is not valid")
    found = audit_log.read(form)
    rows = [projections.audit_row(row) for row in found.page.rows]
    return _paged(command, found.page, rows)


@endpoint("bulk list")
def bulk_list(request: HttpRequest, user: Any, command: str) -> Envelope:
    """batchboard's own: bulk operations, newest first."""
    inputs.check_params(request, command, LIST_PARAMS)
    inputs.require_perms(user, command, *access.VIEW_AUDIT)
    size = inputs.page_size(request, command)
    window = pagination.Window.open(
        cursors.bulk_operations(), size, inputs.cursor(request)
    )
    operations = BulkOperation.objects.order_by("-id")
    if window.after is not None:
        operations = operations.filter(id__lt=cursors.identity_key(window.after))
    if window.ceiling is not None:
        operations = operations.filter(id__lte=window.ceiling)
    rows = [
        {
            **row,
            pagination.CEILING: window.ceiling
            if window.ceiling is not None
            else BulkOperation.objects.order_by("-id")
            .values_list("id", flat=True)
            .first(),
        }
        for row in operations.values()[:size]
    ]
    page = pagination.assemble(
        rows, window, lambda row: cursors.Identity(row["id"]), lambda row: 512
    )
    data = [
        {
            "action": row["action"],
            "actor": row["actor_ref"],
            "applied": row["applied"],
            "bulk_id": row["bulk_id"],
            "digest": row["digest"],
            "filters": json.loads(row["filters"]),
            "finished_at": projections.seconds(row["finished_at"]),
            "item_count": row["item_count"],
            "reason": row["reason_code"] or None,
            "rejected": row["rejected"],
            "stale": row["stale"],
            "started_at": projections.seconds(row["started_at"]),
        }
        for row in page.rows
    ]
    return _paged(command, page, data)


# -- bulk actions -------------------------------------------------------------------


def _survey(document: dict[str, Any], command: str) -> surveys.ListSurvey:
    source = document.get("list")
    if source == surveys.EXECUTIONS:
        status = document.get("status", "")
        job = document.get("job", "")
        if not isinstance(status, str) or (status and status not in STATUSES):
            raise refuse(
                command, "USAGE", "INVALID_STATUS", "the status is not a known status"
            )
        if not isinstance(job, str) or len(job) > 128:
            raise refuse(
                command, "USAGE", "INVALID_JOB", "the job name is 1 to 128 bytes"
            )
        return surveys.executions(status, job)
    if source == surveys.UNRESOLVED:
        age = document.get("age")
        if isinstance(age, bool) or not isinstance(age, int) or not 60 <= age < 2**31:
            raise refuse(
                command,
                "USAGE",
                "AGE_BOUND_TOO_SMALL",
                "the age bound must be at least 60 seconds",
            )
        return surveys.unresolved(age)
    if source == surveys.INSTANCES:
        return surveys.instances(
            inputs.job_name(inputs.text_field(document, "job", command), command)
        )
    raise refuse(
        command,
        "USAGE",
        "INVALID_VALUE",
        "the list is executions, unresolved or instances",
    )


BULK_FILTERS = frozenset({"status", "job", "age"})


def _bulk_action(document: dict[str, Any], command: str) -> str:
    action = document.get("action")
    if action not in bulk.BULK_ACTIONS:
        raise refuse(
            command, "USAGE", "INVALID_VALUE", "the action cannot be applied in bulk"
        )
    return str(action)


def _directive(
    name: object, document: dict[str, Any], command: str
) -> actions.Directive:
    """Return the recovery directive ``name`` with its failure fields."""
    if name == "abandon":
        return actions.Directive.abandon()
    if name == "mark-failed":
        category = inputs.text_field(document, "failure_category", command)
        failure_id = document.get("failure_id")
        if isinstance(failure_id, bool) or not isinstance(failure_id, int):
            raise refuse(
                command,
                "USAGE",
                "INVALID_FAILURE_ID",
                "the failure id is a whole number",
            )
        return actions.Directive.mark_failed(category.upper(), failure_id)
    raise refuse(
        command, "USAGE", "INVALID_VALUE", "the directive is mark-failed or abandon"
    )


def _bulk_directive(document: dict[str, Any], command: str) -> actions.Directive | None:
    name = document.get("directive")
    return None if name is None else _directive(name, document, command)


@endpoint("bulk plan", ("POST",))
def bulk_plan(request: HttpRequest, user: Any, command: str) -> Envelope:
    """batchboard's own: the reviewed plan of a bulk action on a list's filter."""
    document = inputs.body(
        request,
        command,
        {"action", "list"},
        BULK_FILTERS | {"directive", "reason", "failure_category", "failure_id"},
    )
    action = _bulk_action(document, command)
    survey = _survey(document, command)
    reason = document.get("reason")
    plan = actions.plan_bulk(
        user=user,
        action=action,
        survey=survey,
        directive=_bulk_directive(document, command),
        reason_code=reason if isinstance(reason, str) else None,
    )
    return Envelope(
        command,
        {
            "action": plan.action,
            "counts": plan.counts,
            "digest": plan.digest,
            "filters": plan.filters,
            "items": [projections.bulk_item(item) for item in plan.items],
            "kind": plan.kind,
        },
    )


@endpoint("bulk apply", ("POST",))
def bulk_apply(request: HttpRequest, user: Any, command: str) -> Envelope:
    """
    batchboard's own: apply a reviewed plan, one chunk a call.

    The body repeats the plan's action, filters and items with its digest;
    ``bulk_id`` (returned by the first call) continues an apply. Each item
    goes through its single action under ``<bulk id>:<target id>``.
    """
    document = inputs.body(
        request,
        command,
        {"action", "filters", "items", "digest"},
        frozenset({"bulk_id", "reason", "directive", "failure_category", "failure_id"}),
    )
    action = _bulk_action(document, command)
    filters = document["filters"]
    items = document["items"]
    if not isinstance(filters, dict) or not isinstance(items, list):
        raise refuse(
            command, "USAGE", "INVALID_VALUE", "filters is an object and items a list"
        )
    plain = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("target_id"), int):
            raise refuse(
                command, "USAGE", "INVALID_VALUE", "an item is not a planned item"
            )
        parts = [item.get("target_id"), item.get("version")]
        if item.get("evidence_digest") is not None:
            parts.append(item["evidence_digest"])
        plain.append(":".join(str(part) for part in parts))
    bulk_id = document.get("bulk_id")
    reason = document.get("reason")
    result = actions.apply_bulk(
        user=user,
        action=action,
        filters=filters,
        items=" ".join(plain),
        digest=str(document["digest"]),
        bulk_id=bulk_id if isinstance(bulk_id, str) else None,
        reason_code=reason if isinstance(reason, str) else None,
        directive=_bulk_directive(document, command),
        seconds=2.0,
    )
    return Envelope(
        command,
        {
            "bulk_id": result.bulk_id,
            "counts": result.counts,
            "finished": result.finished,
            "items": [
                {
                    "outcome": item.outcome,
                    "recorded": item.recorded,
                    "rejection": item.rejection_code,
                    "target_id": item.target_id,
                    "version": item.version,
                }
                for item in result.items
            ],
        },
    )
