"""
What an action returns, and the errors it raises instead.

An action that was decided returns an :class:`ActionResult`: APPLIED (the
effect happened, or was a recorded no-op), REJECTED (a guard refused it; the
refusal is audited) or REPLAYED (the operation id was seen before with the
same request; nothing was done again and the recorded outcome is reported).
Everything else is an :class:`ActionError` whose message is written for the
operator: it names ids, versions, statuses and codes, never a payload or a
database message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext_lazy as _

from batchboard import db
from batchboard.actions import eligibility
from batchboard.models import OperatorRequest, RetentionAction
from batchboard.vocabulary import APPLIED, REJECTED, REPLAYED, STOP

# Operator-facing explanations of the rejection codes an action can record.
REJECTION_TEXT: dict[str, Any] = {
    "OPTIMISTIC_CONFLICT": _(
        "Someone else changed the execution after you loaded it (its version "
        "moved on). Review its fresh state and decide again."
    ),
    "INVALID_STATE": _("The execution's status does not allow this action."),
    "UNRESOLVED_RECOVERY_REQUIRED": _(
        "The execution may have committed work nobody can see. Record a "
        "recovery decision first, or mark it failed only with the reason "
        "UNKNOWN_EFFECT after checking the effect by hand."
    ),
    "EXECUTION_NOT_FOUND": _("The execution does not exist."),
    "INSTANCE_NOT_FOUND": _("The job instance does not exist."),
}


# What an applied action did, told the operator in one sentence.
APPLIED_TEXT: dict[str, Any] = {
    "STOP": _(
        "Stop requested and recorded. The owning process moves the execution "
        "to STOPPING at its next boundary (a chunk commit or its stop poll), "
        "then to STOPPED; without a live owner nothing moves."
    ),
    "ABANDON": _("The execution is ABANDONED; its instance cannot be restarted."),
    "RECOVER": _("Recovery decision recorded; the execution is resolved."),
    "HOLD": _("The instance is held: purges skip it until the hold is released."),
    "RELEASE_HOLD": _("The hold is released: purges may delete this history again."),
    "APPLY_PURGE": _("The plan was purged; the rows deleted are counted below."),
}


@dataclass(frozen=True)
class ActionResult:
    """
    The decided outcome of one operator or retention action.

    ``audit_model`` is ``"operatorrequest"`` or ``"retentionaction"`` and
    ``audit_id`` the row that records the outcome (for REPLAYED, the row
    recorded the first time). ``recorded_outcome`` is APPLIED or REJECTED:
    the outcome stored in that row.
    """

    outcome: str
    action: str
    operation_id: str
    recorded_outcome: str
    audit_model: str
    audit_id: int
    rejection_code: str | None = None
    prior_status: str | None = None
    result_status: str | None = None
    execution_id: int | None = None
    instance_id: int | None = None
    changed: bool = False
    counts: dict[str, int] = field(default_factory=dict)

    @classmethod
    def recorded(
        cls,
        row: OperatorRequest | RetentionAction,
        outcome: str,
        *,
        changed: bool,
        **details: Any,
    ) -> ActionResult:
        """Return the result told by audit row ``row``; ``details`` add the rest."""
        return cls(
            outcome=outcome,
            action=row.action,
            operation_id=row.operation_id,
            recorded_outcome=row.outcome_class,
            audit_model=row._meta.model_name or "",
            audit_id=row.pk,
            instance_id=row.job_instance_id,
            changed=changed,
            **details,
        )

    @property
    def replayed(self) -> bool:
        return self.outcome == REPLAYED

    @property
    def rejected(self) -> bool:
        return self.recorded_outcome == REJECTED

    @property
    def stop_requested(self) -> bool:
        """
        Return whether this outcome recorded a stop request (spec 4.6).

        A STOP applied to a STARTING or STARTED execution changes no status:
        it records who asked and when, and the owner acts on it later. Its
        prior and resulting statuses are equal, yet something happened.
        """
        return (
            self.action == STOP
            and self.recorded_outcome == APPLIED
            and eligibility.records_stop_request(self.prior_status or "")
        )

    def explanation(self) -> str:
        """Return one sentence telling the operator what happened."""
        if self.recorded_outcome == REJECTED:
            text = str(REJECTION_TEXT.get(self.rejection_code or "", ""))
            prefix = (
                _("This operation was already recorded as rejected")
                if self.replayed
                else _("Rejected")
            )
            return f"{prefix} ({self.rejection_code}). {text}".strip()
        if self.replayed:
            return str(
                _(
                    "This operation was already applied; nothing was done "
                    "again. The recorded outcome is shown."
                )
            )
        if not self.changed:
            return str(
                _("Applied without change: the %(what)s was already in that state.")
                % {"what": _("execution") if self.execution_id else _("instance")}
            )
        return str(APPLIED_TEXT.get(self.action, _("Applied.")))


class ActionError(Exception):
    """
    An action could not be decided; ``message`` is for the operator.

    A subclass words its message once in ``text``, a translatable template
    that the facts given to the constructor fill in (``%(name)s``); the
    message is translated when the error is raised.
    """

    #: Short machine-readable name, shown beside the message.
    code = "ACTION_ERROR"
    text: Any = _("The action could not be decided.")

    def __init__(self, message: Any = None, **facts: Any) -> None:
        text = self.text if message is None else message
        self.message = str(text % facts if facts else text)
        super().__init__(self.message)


class InvalidRequest(ActionError):
    """The submitted request is malformed (envelope or arguments)."""

    code = "INVALID_REQUEST"


class _OperationError(ActionError):
    """An error about one operation id, which the message names."""

    def __init__(self, operation_id: str) -> None:
        super().__init__(id=operation_id)


class OperationIdConflict(_OperationError):
    """The operation id was already used for a different request."""

    code = "OPERATION_ID_CONFLICT"
    text = _(
        "Operation id %(id)s was already used for a different request; "
        "nothing was done. Reload the page to get a fresh form."
    )


class OperationOutcomeUnknown(_OperationError):
    """The commit failed or its result was lost: the outcome is unknown."""

    code = "OPERATION_OUTCOME_UNKNOWN"
    text = _(
        "The database did not confirm operation %(id)s, so its outcome "
        "is unknown. Submit the same form again: the same operation id "
        "will report the recorded outcome, or act if nothing was recorded."
    )


class ConcurrentModification(db.ConcurrentModification, ActionError):
    """
    A concurrent writer changed the rows the action depended on.

    The unit of work's :class:`batchboard.db.ConcurrentModification`, told
    to the operator: catching either class catches it.
    """

    text = _(
        "Another writer changed or held the same rows while the action ran, "
        "and nothing was recorded. Trying again can help: reload the page "
        "and try again."
    )

    def __init__(self) -> None:
        ActionError.__init__(self)


class ConstraintViolation(db.ConstraintViolation, ActionError):
    """
    The action's change breaks a constraint of the schema.

    The unit of work's :class:`batchboard.db.ConstraintViolation`, told to
    the operator: not a race, so trying again as it is cannot succeed.
    """

    text = _(
        "The metadata database refused the change: it would break "
        "%(what)s. Nothing was recorded. Trying again will not help while "
        "the rows stay as they are; reload the page to see their current state."
    )

    def __init__(self, what: str) -> None:
        self.what = what
        ActionError.__init__(self, what=what)


class Unavailable(db.Unavailable, ActionError):
    """
    The metadata database refused the action for another reason.

    The unit of work's :class:`batchboard.db.Unavailable`, told to the
    operator with its SQLSTATE and whether trying again can help.
    """

    text = _(
        "The metadata database refused the action%(state)s and nothing was "
        "recorded. Trying again can help once the database answers again."
    )
    #: A refusal that a retry meets again: a missing privilege, a schema
    #: that is not the one expected.
    lasting = _(
        "The metadata database refused the action%(state)s and nothing was "
        "recorded. Trying again will not help: the database role may lack a "
        "privilege or the schema differ; ask the administrator."
    )

    def __init__(self, sqlstate: str | None) -> None:
        self.sqlstate = sqlstate
        state = f" (SQLSTATE {sqlstate})" if sqlstate else ""
        ActionError.__init__(
            self, self.text if self.retryable else self.lasting, state=state
        )


def told(error: db.RepositoryError) -> ActionError:
    """Return the operator's error for a failed unit of work's ``error``."""
    if isinstance(error, db.ConstraintViolation):
        return ConstraintViolation(error.what)
    if isinstance(error, db.Unavailable):
        return Unavailable(error.sqlstate)
    return ConcurrentModification()


class TargetNotFound(ActionError):
    """The execution or instance does not exist; a refusal cannot be audited."""

    code = "NOT_FOUND"
    text = _(
        "%(what)s #%(id)s does not exist (perhaps it was purged). An "
        "audit row must reference an existing %(what_lower)s, so this "
        "refusal could not be recorded."
    )

    def __init__(self, what: str, ident: int) -> None:
        super().__init__(what=what.capitalize(), id=ident, what_lower=what)


class EvidenceStale(ActionError):
    """The recovery evidence changed since the proposal was reviewed."""

    code = "RECOVERY_EVIDENCE_STALE"
    text = _(
        "The recovery evidence changed since you reviewed the proposal "
        "(the execution, its latest step or its markers moved on). "
        "Nothing was recorded; review the new proposal."
    )


class NotRecoverable(ActionError):
    """The execution is not a recovery candidate (not stale, or owned)."""

    code = "NOT_A_RECOVERY_CANDIDATE"


class PlanStale(ActionError):
    """A purge plan no longer matches the metadata; nothing was deleted."""

    code = "RETENTION_PLAN_STALE"
    text = _(
        "The purge plan is stale: %(detail)s Nothing was deleted and "
        "nothing was recorded. Make a new plan and review it."
    )

    def __init__(self, detail: Any) -> None:
        super().__init__(detail=detail)
