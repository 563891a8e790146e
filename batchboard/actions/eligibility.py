"""
Which operator action a record offers, and if not, why not: the one rule.

One function per action answers for one record: :func:`stop`, :func:`abandon`
and :func:`recover` for an execution, :func:`hold` and :func:`release` for an
instance, and :func:`directive` for the request a recovery form builds. Each
returns an :class:`Eligibility`: whether the action is *offered* (a button, a
dialog's Confirm, an admin row), what the service *does* with a request on
that record now, and, when not offered, a code and a sentence for the
operator.

The service's guards (:mod:`batchboard.actions.executions`) ask these
functions, so a page never offers what the service refuses, nor refuses what
it would do; the holds' service is proven to agree by
``tests/actions/test_eligibility.py``, which runs every answer against the
service on real rows. The purge has no per-record answer: it acts on a plan,
whose survey skips held instances and unresolved siblings (spec 6.2).

Offered is narrower than accepted: the service records a request that would
change nothing (a STOP of a finished execution, a RELEASE of an unheld
instance) as APPLIED without change, and overwrites a repeated stop request,
yet none of these is offered. The code of a refusal is a rejection code of
the contract (spec 1.2) where the service would record one, INVALID_STATE
where the status leaves nothing to do, and the service's own error code for
a recovery the proposal does not support (never audited, spec 5.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

from django.utils.translation import gettext_lazy as _

from batchboard import vocabulary
from batchboard.models import JobExecution, JobInstance, RecoveryDecision
from batchboard.vocabulary import (
    ABANDON,
    HOLD,
    RECOVER,
    RELEASE_HOLD,
    RESTART,
    STOP,
    STOPPABLE,
    UNRESOLVED,
    ActionName,
    RejectionCode,
)

__all__ = [
    "CHANGES",
    "NOT_A_CANDIDATE",
    "REFUSES",
    "REJECTS",
    "UNCHANGED",
    "Eligibility",
    "abandon",
    "directive",
    "for_execution",
    "for_instance",
    "hold",
    "of_execution",
    "of_instance",
    "records_stop_request",
    "recover",
    "release",
    "restart",
    "stop",
]

#: What the service does with a request on the record: changes it (APPLIED),
#: records it without change (APPLIED, a no-op), rejects it (REJECTED, with a
#: rejection code, audited) or refuses it (an error, nothing recorded).
ServiceOutcome = Literal["CHANGES", "UNCHANGED", "REJECTS", "REFUSES"]
CHANGES: Final = "CHANGES"
UNCHANGED: Final = "UNCHANGED"
REJECTS: Final = "REJECTS"
REFUSES: Final = "REFUSES"

#: The code of a recovery the proposal does not support (not stale, or
#: clock evidence unusable): the service raises NotRecoverable, whose code
#: this is, and records nothing.
NOT_A_CANDIDATE: Final = "NOT_A_RECOVERY_CANDIDATE"

Code = RejectionCode | Literal["NOT_A_RECOVERY_CANDIDATE"]


@dataclass(frozen=True)
class Eligibility:
    """
    One action's answer for one record.

    ``offered`` says whether a page offers the action; ``service`` what the
    service does with a request now; ``code`` (None when offered) is the
    rejection code the service records, or the code that names why nothing
    is offered; ``why`` is the operator's sentence (empty when offered).
    """

    action: ActionName
    offered: bool
    service: ServiceOutcome
    code: Code | None = None
    why: Any = ""

    @classmethod
    def offer(cls, action: ActionName) -> Eligibility:
        return cls(action, True, CHANGES)

    @classmethod
    def refuse(
        cls, action: ActionName, service: ServiceOutcome, code: Code, why: Any
    ) -> Eligibility:
        return cls(action, False, service, code, why)


# -- executions ------------------------------------------------------------------


def stop(status: str, *, stop_requested: bool = False) -> Eligibility:
    """
    STOP (spec 4.5, 4.6): offered to a STARTING or STARTED execution.

    The service records a stop request there (a repeat overwrites the first,
    so a second one is not offered), records STOPPING and finished
    executions without change and rejects UNKNOWN (INVALID_STATE).
    """
    if status in STOPPABLE:
        if stop_requested:
            return Eligibility.refuse(
                STOP,
                CHANGES,
                "INVALID_STATE",
                _(
                    "A stop is already requested: the owning process moves "
                    "the execution to STOPPING at its next boundary."
                ),
            )
        return Eligibility.offer(STOP)
    if status == "STOPPING":
        why = _("The execution is already stopping.")
        return Eligibility.refuse(STOP, UNCHANGED, "INVALID_STATE", why)
    if status in vocabulary.FINISHED:
        why = _("The execution is %(status)s: it has finished, nothing runs to stop.")
        return Eligibility.refuse(
            STOP, UNCHANGED, "INVALID_STATE", why % {"status": status}
        )
    return Eligibility.refuse(
        STOP,
        REJECTS,
        "INVALID_STATE",
        _(
            "The execution is UNKNOWN: no process is known to run it. Only a "
            "recovery decision resolves it."
        ),
    )


def records_stop_request(status: str) -> bool:
    """Return whether an applied STOP on ``status`` records a stop request."""
    return stop(status).service == CHANGES


def abandon(
    status: str, *, decided: bool = False, superseded: bool = False
) -> Eligibility:
    """
    ABANDON (spec 4.5): offered to a STOPPED or FAILED execution that is its
    instance's latest attempt.

    Also to an UNKNOWN one once a recovery decision is recorded for it
    (``decided``; the service reads it only for UNKNOWN). ABANDONED is
    recorded without change; an active or COMPLETED execution is rejected
    INVALID_STATE and an undecided UNKNOWN one UNRESOLVED_RECOVERY_REQUIRED.
    An attempt restarted already (``superseded``) is abandoned by the
    service all the same, but not offered: its instance runs on in the
    later attempt, so abandoning it ends nothing.
    """
    if status in ("STOPPED", "FAILED") or (status == "UNKNOWN" and decided):
        if superseded:
            return Eligibility.refuse(
                ABANDON,
                CHANGES,
                "INVALID_STATE",
                _(
                    "A later attempt restarted this one: abandoning it would "
                    "not stop its instance. Abandon the latest attempt instead."
                ),
            )
        return Eligibility.offer(ABANDON)
    if status == "ABANDONED":
        return Eligibility.refuse(
            ABANDON,
            UNCHANGED,
            "INVALID_STATE",
            _("The execution is already ABANDONED."),
        )
    if status == "UNKNOWN":
        return Eligibility.refuse(
            ABANDON,
            REJECTS,
            "UNRESOLVED_RECOVERY_REQUIRED",
            _(
                "The execution is UNKNOWN: it may have committed work nobody "
                "can see. Record a recovery decision first; the recovery "
                "proposal can abandon it."
            ),
        )
    why: Any
    if status == "COMPLETED":
        why = _("The execution COMPLETED: a completed run is never abandoned.")
    else:
        why = _(
            "The execution is %(status)s: it may still be running. Stop it "
            "first, or recover it once it is stale."
        ) % {"status": status}
    return Eligibility.refuse(ABANDON, REJECTS, "INVALID_STATE", why)


def recover(status: str, *, candidate: bool, verdict: Any = "") -> Eligibility:
    """
    RECOVER (spec 4.5, 5.2): offered to an unresolved execution its
    recovery proposal names a candidate (``candidate``; ``verdict`` is the
    proposal's sentence).

    A finished execution is rejected INVALID_STATE; an unresolved one the
    proposal does not support is refused unaudited (NotRecoverable).
    """
    if status not in UNRESOLVED:
        return Eligibility.refuse(
            RECOVER,
            REJECTS,
            "INVALID_STATE",
            _("The execution is %(status)s: it is resolved already.")
            % {"status": status},
        )
    if not candidate:
        return Eligibility.refuse(RECOVER, REFUSES, NOT_A_CANDIDATE, verdict)
    return Eligibility.offer(RECOVER)


#: The one reason that lets a recovery mark failed an execution whose last
#: commit's effect is unknown (spec 5.4).
UNKNOWN_EFFECT: Final = "UNKNOWN_EFFECT"


def directive(
    *, unknown_commit: bool, resulting_status: str, reason_code: str
) -> Eligibility:
    """
    The recovery request itself (spec 4.5, 5.4): with an unknown commit,
    mark failed only with the reason UNKNOWN_EFFECT; abandon with any.

    Anything else is rejected UNRESOLVED_RECOVERY_REQUIRED by the service.
    """
    if (
        unknown_commit
        and resulting_status == "FAILED"
        and reason_code != UNKNOWN_EFFECT
    ):
        return Eligibility.refuse(
            RECOVER,
            REJECTS,
            "UNRESOLVED_RECOVERY_REQUIRED",
            _(
                "The last commit's effect is unknown: mark it failed only with "
                "the reason UNKNOWN_EFFECT, after checking the effect by hand, "
                "or abandon it."
            ),
        )
    return Eligibility.offer(RECOVER)


# -- instances -------------------------------------------------------------------


def hold(*, held: bool) -> Eligibility:
    """
    HOLD (spec 6.1): always offered; on a held instance it replaces the
    hold (its actor and reason), so the page calls it "Replace hold".
    """
    return Eligibility.offer(HOLD)


def release(*, held: bool) -> Eligibility:
    """
    RELEASE_HOLD (spec 6.1): offered to a held instance; an unheld one is
    recorded without change.
    """
    if held:
        return Eligibility.offer(RELEASE_HOLD)
    why = _("The instance is not held: there is no hold to release.")
    return Eligibility.refuse(RELEASE_HOLD, UNCHANGED, "INVALID_STATE", why)


# -- restarts ---------------------------------------------------------------------


def restart(latest_status: str | None) -> Eligibility:
    """
    RESTART (spec 2.2, 4.5): offered to an instance whose latest attempt is
    STOPPED or FAILED; ``latest_status`` is that attempt's status (None when
    the instance has none).

    A restart runs in the job's own runtime (the CLI's ``execution
    restart`` is runtime-level, spec A.1), never in batchboard's service:
    offered says that runtime would create the next attempt; refused, the
    code it would record.
    """
    if latest_status in ("STOPPED", "FAILED"):
        return Eligibility.offer(RESTART)
    code: Code
    why: Any
    if latest_status is None:
        code, why = (
            "RESTART_WITHOUT_PRIOR_ATTEMPT",
            _("The instance has no attempt to restart: launch it instead."),
        )
    elif latest_status == "COMPLETED":
        code, why = "INSTANCE_COMPLETED", _("The instance COMPLETED: nothing to rerun.")
    elif latest_status == "ABANDONED":
        code, why = (
            "INSTANCE_ABANDONED",
            _("The instance was ABANDONED: it is never restarted."),
        )
    elif latest_status == "UNKNOWN":
        code, why = (
            "INVALID_STATE",
            _("The latest attempt is UNKNOWN: record a recovery decision first."),
        )
    else:
        code, why = (
            "EXECUTION_ALREADY_ACTIVE",
            _("The latest attempt is %(status)s: it may still be running.")
            % {"status": latest_status},
        )
    return Eligibility.refuse(RESTART, REJECTS, code, why)


# -- a record's answers, for a page ----------------------------------------------


def for_execution(
    status: str,
    *,
    stop_requested: bool,
    decided: bool = False,
    superseded: bool = False,
) -> dict[str, Eligibility]:
    """Return the answers of STOP and ABANDON for one execution, by action."""
    return {
        STOP: stop(status, stop_requested=stop_requested),
        ABANDON: abandon(status, decided=decided, superseded=superseded),
    }


def for_instance(*, held: bool) -> dict[str, Eligibility]:
    """Return the answers of HOLD and RELEASE_HOLD for one instance, by action."""
    return {HOLD: hold(held=held), RELEASE_HOLD: release(held=held)}


def of_execution(execution: JobExecution) -> dict[str, Eligibility]:
    """
    Return what one execution row offers, by action (STOP, ABANDON).

    Needs the row's ``id``, ``job_instance_id``, ``attempt``, ``status`` and
    ``stop_requested_at``; reads more only where an answer needs it: the
    recovery decisions of an UNKNOWN execution, a later attempt of one the
    service would abandon.
    """
    status = execution.status
    decided = (
        status == "UNKNOWN"
        and RecoveryDecision.objects.filter(job_execution_id=execution.pk).exists()
    )
    superseded = (
        status in vocabulary.FINISHED or decided
    ) and JobExecution.objects.filter(
        job_instance_id=execution.job_instance_id, attempt__gt=execution.attempt
    ).exists()
    return for_execution(
        status,
        stop_requested=execution.stop_requested_at is not None,
        decided=decided,
        superseded=superseded,
    )


def of_instance(instance: JobInstance) -> dict[str, Eligibility]:
    """Return what one instance row (its ``hold_actor``) offers, by action."""
    return for_instance(held=instance.hold_actor is not None)
