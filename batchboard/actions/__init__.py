"""
batchboard's operator actions: one service for the dashboard and the admin.

STOP (Lifecycle), ABANDON, RECOVER, HOLD, RELEASE_HOLD and APPLY_PURGE
(Destructive), the purge plan and the recovery proposal (Read), and bulk
actions by filter (:mod:`batchboard.actions.bulk`: a reviewed plan applied
item by item through those single actions). Each action
checks its authorization class, builds the envelope of spec 4.1, replays a
known operation id, runs its effect and its audit row in one transaction and
reports an :class:`ActionResult`, or raises an :class:`ActionError` whose
message is written for the operator.

A process acting without a signed-in user passes a :class:`ServiceActor`
(its own ActorRef and explicit authorization classes) as the user; a writer
recording history on its own clock runs the actions inside
:func:`back_dated`.
"""

from __future__ import annotations

from batchboard.actions import bulk
from batchboard.actions.bulk import (
    BulkPlan,
    BulkResult,
    BulkTooLarge,
    apply_bulk,
    bulk_digest,
    plan_bulk,
    resume_bulk,
)
from batchboard.actions.envelope import (
    ServiceActor,
    actor_ref_for,
    new_operation_id,
)
from batchboard.actions.executions import (
    Directive,
    abandon_execution,
    recover_execution,
    stop_execution,
)
from batchboard.actions.holds import place_hold, release_hold
from batchboard.actions.permissions import action_permissions, may, require
from batchboard.actions.purge import (
    PurgeCriteria,
    PurgeFacts,
    PurgePlan,
    apply_purge,
    parse_candidates,
    plan_purge,
)
from batchboard.actions.recovery import (
    RecoveryProposal,
    propose,
    stale_threshold_seconds,
)
from batchboard.actions.results import (
    ActionError,
    ActionResult,
    ConcurrentModification,
    ConstraintViolation,
    EvidenceStale,
    InvalidRequest,
    NotRecoverable,
    OperationIdConflict,
    OperationOutcomeUnknown,
    PlanStale,
    TargetNotFound,
    Unavailable,
)
from batchboard.db import back_dated
from batchboard.vocabulary import (
    APPLIED,
    REASON_CODES,
    REJECTED,
    REPLAYED,
    Reason,
    reasons_for,
)

__all__ = [
    "APPLIED",
    "REASON_CODES",
    "REJECTED",
    "REPLAYED",
    "ActionError",
    "ActionResult",
    "BulkPlan",
    "BulkResult",
    "BulkTooLarge",
    "ConcurrentModification",
    "ConstraintViolation",
    "Directive",
    "EvidenceStale",
    "InvalidRequest",
    "NotRecoverable",
    "OperationIdConflict",
    "OperationOutcomeUnknown",
    "PlanStale",
    "PurgeCriteria",
    "PurgeFacts",
    "PurgePlan",
    "Reason",
    "RecoveryProposal",
    "ServiceActor",
    "TargetNotFound",
    "Unavailable",
    "abandon_execution",
    "action_permissions",
    "actor_ref_for",
    "apply_bulk",
    "apply_purge",
    "bulk",
    "bulk_digest",
    "back_dated",
    "may",
    "new_operation_id",
    "parse_candidates",
    "place_hold",
    "plan_bulk",
    "plan_purge",
    "propose",
    "stale_threshold_seconds",
    "reasons_for",
    "recover_execution",
    "release_hold",
    "require",
    "resume_bulk",
    "stop_execution",
]
