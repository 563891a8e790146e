"""
STOP, ABANDON and RECOVER: the operator-request service of spec 4.

Each call runs the protocol of spec 4.3:

1. replay probe by ``(action, operation_id)``: the same request digest
   returns the recorded outcome as REPLAYED; a different one raises
   :class:`OperationIdConflict`;
2. guards and effect in one transaction, the execution row locked
   (``SELECT ... FOR UPDATE``) and every update a compare-and-swap on
   ``version``; the APPLIED audit row is inserted in the same transaction;
3. a guard rejection rolls the transaction back and records a REJECTED row
   in a transaction of its own;
4. a failed audit insert (normally the same operation id committed by a
   concurrent submission) re-probes: REPLAYED, a conflict, or the
   failure's own error (:func:`batchboard.actions.unit.settle`);
5. a failed commit raises :class:`OperationOutcomeUnknown`; the operator
   resubmits the same form, whose operation id then reports the outcome.

A request naming an execution that does not exist is refused with
:class:`TargetNotFound` and not audited: the audit row's foreign key cannot
name a missing execution (spec 4.4).

ABANDON uses the write-side repository's transition. STOP's stop request
(no version bump, spec 4.6) and RECOVER's update (failure replaced or
cleared, ``ended_at = updated_at = decided_at``, spec 5.5) are specific to
this layer and written below as compare-and-swaps on the locked row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils.translation import gettext_lazy as _

from batchboard import db, vocabulary
from batchboard.actions import eligibility, envelope, permissions, recovery, unit
from batchboard.actions.results import (
    ActionResult,
    EvidenceStale,
    InvalidRequest,
    NotRecoverable,
    OperationIdConflict,
    TargetNotFound,
)
from batchboard.digests import RecoveryArgument, request_digest
from batchboard.models import JobExecution, OperatorRequest, RecoveryDecision
from batchboard.repository import JobRepository, lifecycle
from batchboard.repository.errors import (
    IllegalTransition,
    RestartRequiresNewAttempt,
    StaleVersion,
)
from batchboard.vocabulary import APPLIED, MAX_BIGINT, REJECTED, REPLAYED

_LOCKED_FIELDS = (
    "id",
    "job_instance_id",
    "status",
    "version",
    "created_at",
    "started_at",
    "ended_at",
    "updated_at",
    "failure_category",
    "failure_id",
    "stop_requested_at",
)


class Rejection(Exception):
    """A guard refused the request; recorded as REJECTED with ``code``."""

    def __init__(self, code: str) -> None:
        assert code in vocabulary.REJECTION_CODES
        self.code = code
        super().__init__(code)


@dataclass(frozen=True)
class Request:
    """The envelope of one execution-targeted operator request."""

    action: str
    operation_id: str
    actor_ref: str
    execution_id: int
    expected_version: int
    reason_code: str | None
    digest: bytes

    @property
    def authorization_class(self) -> str:
        return vocabulary.ACTION_CLASSES[self.action]


@dataclass(frozen=True)
class Effect:
    """What the effect did: statuses before and after, and the instance."""

    instance_id: int
    prior_status: str
    result_status: str
    changed: bool


def not_before(moment: datetime, *bounds: datetime | None) -> datetime:
    """
    Return ``moment``, or the latest of ``bounds`` if that is later.

    The schema requires ``updated_at``/``ended_at`` not to precede the times
    already recorded; when this host's clock is behind the runtime's, the
    recorded time is used rather than failing the check constraint.
    """
    return max([moment, *(bound for bound in bounds if bound is not None)])


def _result(row: OperatorRequest, outcome: str, changed: bool) -> ActionResult:
    return ActionResult.recorded(
        row,
        outcome,
        changed=changed,
        rejection_code=row.rejection_code,
        prior_status=row.prior_status,
        result_status=row.result_status,
        execution_id=row.job_execution_id,
    )


def _probe(request: Request) -> ActionResult | None:
    """Return the recorded outcome as REPLAYED, or None if the id is new."""
    row = (
        OperatorRequest.objects.using(db.alias())
        .filter(action=request.action, operation_id=request.operation_id)
        .first()
    )
    if row is None:
        return None
    if bytes(row.request_digest) != request.digest:
        raise OperationIdConflict(request.operation_id)
    return _result(row, REPLAYED, changed=False)


def _audit(
    request: Request, at: datetime, effect: Effect | None, code: str | None
) -> OperatorRequest:
    return OperatorRequest.objects.using(db.alias()).create(
        job_instance_id=effect.instance_id if effect else None,
        job_execution_id=request.execution_id,
        action=request.action,
        authorization_class=request.authorization_class,
        operation_id=request.operation_id,
        actor_ref=request.actor_ref,
        reason_code=request.reason_code,
        request_digest=request.digest,
        observed_version=request.expected_version,
        prior_status=effect.prior_status if effect else None,
        result_status=effect.result_status if effect else None,
        outcome_class=APPLIED if effect else REJECTED,
        rejection_code=code,
        requested_at=at,
    )


def _run(
    request: Request, effect: Callable[[JobExecution, datetime], Effect]
) -> ActionResult:
    """Run one request through the replay, effect and audit protocol."""
    with unit.writing(db.OPERATOR):
        return _protocol(request, effect)


def _protocol(
    request: Request, effect: Callable[[JobExecution, datetime], Effect]
) -> ActionResult:
    replay = unit.first_probe(request.operation_id, lambda: _probe(request))
    if replay is not None:
        return replay
    at = db.now()

    def apply() -> ActionResult:
        execution = (
            JobExecution.objects.using(db.alias())
            .select_for_update()
            .only(*_LOCKED_FIELDS)
            .filter(pk=request.execution_id)
            .first()
        )
        if execution is None:
            raise TargetNotFound(str(_("execution")), request.execution_id)
        done = effect(execution, at)
        row = _audit(request, at, done, None)
        return _result(row, APPLIED, changed=done.changed)

    try:
        return unit.settle(request.operation_id, apply, lambda: _probe(request))
    except Rejection as rejection:
        return _reject(request, at, rejection.code)


def _reject(request: Request, at: datetime, code: str) -> ActionResult:
    """Record a REJECTED row in its own transaction (spec 4.3.3)."""

    def record() -> ActionResult:
        return _result(_audit(request, at, None, code), REJECTED, changed=False)

    return unit.settle(request.operation_id, record, lambda: _probe(request))


def _guard(answer: eligibility.Eligibility) -> None:
    """Reject the request if the record's answer says the service rejects it."""
    if answer.service == eligibility.REJECTS:
        assert answer.code is not None
        raise Rejection(answer.code)


def _compare_and_swap(execution: JobExecution, **values: Any) -> None:
    """Update the locked row if its version is unchanged, else reject."""
    updated = (
        JobExecution.objects.using(db.alias())
        .filter(pk=execution.pk, version=execution.version)
        .update(**values)
    )
    if updated != 1:
        raise Rejection("OPTIMISTIC_CONFLICT")


def _request(
    action: str,
    user: Any,
    execution_id: object,
    expected_version: object,
    operation_id: str,
    reason_code: str | None,
    arguments: RecoveryArgument | None = None,
) -> Request:
    """
    Validate one request and return its envelope, its digest bound (spec 4.2).

    The reason is validated only for the actions that take one: STOP
    carries none.
    """
    ident, version = _ids(execution_id, expected_version)
    reason = (
        envelope.validate_reason(reason_code, action)
        if vocabulary.reasons_for(action)
        else None
    )
    return Request(
        action=action,
        operation_id=envelope.validate_operation_id(operation_id),
        actor_ref=envelope.actor_ref_for(user),
        execution_id=ident,
        expected_version=version,
        reason_code=reason,
        digest=request_digest(
            action=action,
            target=f"execution:{ident}",
            expected_version=version,
            reason_code=reason,
            arguments=arguments,
        ),
    )


def _ids(execution_id: object, expected_version: object) -> tuple[int, int]:
    ident, version = envelope.whole_numbers(
        execution_id,
        expected_version,
        invalid=_("The execution id and version must be numbers."),
    )
    if not (0 < ident <= MAX_BIGINT and 0 <= version <= MAX_BIGINT):
        raise InvalidRequest(_("The execution id or version is out of range."))
    return ident, version


# -- STOP (spec 4.5, 4.6) ---------------------------------------------------------


def stop_execution(
    *,
    user: Any,
    execution_id: int,
    expected_version: int | str | None,
    operation_id: str,
) -> ActionResult:
    """
    Request a cooperative stop of one execution (Lifecycle).

    STARTING/STARTED: record the stop request (no status change, no version
    bump; the owning runtime moves it to STOPPING). STOPPING or finished:
    APPLIED without change. UNKNOWN: rejected INVALID_STATE.
    """
    permissions.require(user, vocabulary.STOP)
    request = _request(
        vocabulary.STOP, user, execution_id, expected_version, operation_id, None
    )  # STOP carries no reason, as in oxide-batch
    version = request.expected_version

    def effect(execution: JobExecution, at: datetime) -> Effect:
        status = execution.status
        answer = eligibility.stop(
            status, stop_requested=execution.stop_requested_at is not None
        )
        _guard(answer)
        if answer.service == eligibility.UNCHANGED:
            return Effect(execution.job_instance_id, status, status, changed=False)
        if execution.version != version:
            raise Rejection("OPTIMISTIC_CONFLICT")
        _compare_and_swap(
            execution,
            stop_requested_at=at,
            stop_requested_by=request.actor_ref,
            updated_at=not_before(at, execution.updated_at),
        )
        return Effect(execution.job_instance_id, status, status, changed=True)

    return _run(request, effect)


# -- ABANDON (spec 4.5, 2.1) ------------------------------------------------------


def abandon_execution(
    *,
    user: Any,
    execution_id: int,
    expected_version: int | str | None,
    reason_code: str,
    operation_id: str,
) -> ActionResult:
    """
    Mark one execution ABANDONED, a terminal state (Destructive).

    STOPPED/FAILED, and UNKNOWN once a recovery decision exists, transition
    with their failure and end time kept; ABANDONED is APPLIED without
    change; anything else is rejected INVALID_STATE, UNKNOWN without a
    decision UNRESOLVED_RECOVERY_REQUIRED, a moved version OPTIMISTIC_CONFLICT.
    """
    permissions.require(user, vocabulary.ABANDON)
    request = _request(
        vocabulary.ABANDON,
        user,
        execution_id,
        expected_version,
        operation_id,
        reason_code,
    )
    version = request.expected_version

    def effect(execution: JobExecution, at: datetime) -> Effect:
        status = execution.status
        # Only an UNKNOWN execution needs its recovery decisions read.
        decided = (
            status == lifecycle.UNKNOWN
            and RecoveryDecision.objects.using(db.alias())
            .filter(job_execution_id=execution.pk)
            .exists()
        )
        answer = eligibility.abandon(status, decided=decided)
        _guard(answer)
        if answer.service == eligibility.UNCHANGED:
            return Effect(execution.job_instance_id, status, status, changed=False)
        moment = not_before(
            at,
            execution.created_at,
            execution.started_at,
            execution.ended_at,
            execution.updated_at,
        )
        # The write side's compare-and-swap transition (spec 2.1): it keeps
        # the failure and an existing end time and bumps the version. It
        # nests as a savepoint in this transaction, under the row lock.
        try:
            JobRepository(using=db.alias()).transition_execution(
                execution.pk, version, lifecycle.ABANDONED, at=moment
            )
        except StaleVersion as error:
            raise Rejection("OPTIMISTIC_CONFLICT") from error
        except (IllegalTransition, RestartRequiresNewAttempt) as error:
            raise Rejection("INVALID_STATE") from error
        return Effect(
            execution.job_instance_id, status, lifecycle.ABANDONED, changed=True
        )

    return _run(request, effect)


# -- RECOVER (spec 4.5, 5.4, 5.5) -------------------------------------------------


@dataclass(frozen=True)
class Directive:
    """
    A recovery directive: mark failed with a failure, or abandon.

    ``category`` is a FAILURE_CATEGORY name (upper case, as stored);
    ``failure_id`` a positive opaque reference such as an incident number.
    """

    resulting_status: str
    category: str | None = None
    failure_id: int | str | None = None

    @classmethod
    def mark_failed(cls, category: str, failure_id: int) -> Directive:
        return cls(lifecycle.FAILED, category, failure_id)

    @classmethod
    def abandon(cls) -> Directive:
        return cls(lifecycle.ABANDONED)

    def validated(self) -> Directive:
        if self.resulting_status == lifecycle.ABANDONED:
            return Directive.abandon()
        if self.resulting_status != lifecycle.FAILED:
            raise InvalidRequest(_("The directive must be mark failed or abandon."))
        category = str(self.category or "").upper()
        if category not in vocabulary.FAILURE_CATEGORIES:
            raise InvalidRequest(_("Pick a failure category from the list."))
        (failure_id,) = envelope.whole_numbers(
            self.failure_id, invalid=_("The failure id must be a number.")
        )
        if not 0 < failure_id <= MAX_BIGINT:
            raise InvalidRequest(_("The failure id must be a positive number."))
        return Directive(lifecycle.FAILED, category, failure_id)


def recover_execution(
    *,
    user: Any,
    execution_id: int,
    expected_version: int | str | None,
    evidence_digest: object,
    unknown_commit: bool,
    directive: Directive,
    reason_code: str,
    operation_id: str,
) -> ActionResult:
    """
    Apply a reviewed recovery proposal (Destructive).

    The proposal is re-read on the server under the execution's row lock:
    a moved version is rejected OPTIMISTIC_CONFLICT (audited); changed
    evidence at the same version raises :class:`EvidenceStale` and an
    execution that is unresolved but not stale :class:`NotRecoverable`
    (neither is audited: the request was never valid). Then the guards of
    spec 4.5 run; the decision row, the execution update and the audit row
    commit together.
    """
    permissions.require(user, vocabulary.RECOVER)
    directive = directive.validated()
    if not isinstance(evidence_digest, bytes | bytearray) or len(evidence_digest) != 32:
        raise InvalidRequest(_("The evidence digest must be 32 bytes."))
    evidence = bytes(evidence_digest)
    argument = RecoveryArgument(
        resulting_status=directive.resulting_status,  # type: ignore[arg-type]
        evidence_digest=evidence,
        unknown_commit=bool(unknown_commit),
        category=directive.category,
        # validated() made it an int (or None for abandon).
        failure_id=None if directive.failure_id is None else int(directive.failure_id),
    )
    request = _request(
        vocabulary.RECOVER,
        user,
        execution_id,
        expected_version,
        operation_id,
        reason_code,
        argument,
    )
    # _request() validated the reason (RECOVER takes one) and the ids.
    ident, version, reason = request.execution_id, request.expected_version, reason_code

    def effect(execution: JobExecution, at: datetime) -> Effect:
        if execution.version != version:
            raise Rejection("OPTIMISTIC_CONFLICT")
        # Re-propose under the lock: the evidence compared is the evidence
        # the decision is taken on. A back-dated writer decides at its own
        # moment, which propose() bounds by the server's clock.
        back_dated = db.back_dated_now() is not None
        proposal = recovery.propose(ident, as_of=at if back_dated else None)
        if proposal.digest != evidence or proposal.evidence.unknown_commit != bool(
            unknown_commit
        ):
            raise EvidenceStale()
        _guard(
            eligibility.directive(
                unknown_commit=bool(unknown_commit),
                resulting_status=directive.resulting_status,
                reason_code=reason,
            )
        )
        answer = eligibility.recover(
            execution.status,
            candidate=proposal.is_candidate,
            verdict=proposal.verdict_text(),
        )
        if answer.service == eligibility.REFUSES:
            raise NotRecoverable(answer.why)
        _guard(answer)
        decided_at = not_before(
            at, execution.created_at, execution.started_at, execution.updated_at
        )
        _compare_and_swap(
            execution,
            status=directive.resulting_status,
            ended_at=decided_at,
            updated_at=decided_at,
            failure_category=directive.category,
            failure_id=directive.failure_id,
            version=version + 1,
        )
        RecoveryDecision.objects.using(db.alias()).create(
            job_execution_id=ident,
            execution_version=version,
            prior_status=execution.status,
            resulting_status=directive.resulting_status,
            reason_code=reason,
            operator_reference=request.actor_ref,
            evidence_digest=evidence,
            decided_at=decided_at,
        )
        return Effect(
            execution.job_instance_id,
            execution.status,
            directive.resulting_status,
            changed=True,
        )

    return _run(request, effect)
