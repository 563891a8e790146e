"""
Holds (spec 6.1): HOLD and RELEASE_HOLD, and the retention audit row.

Both holds and purges (:mod:`batchboard.actions.purge`) record an
``ob_retention_action`` row; this module owns how such a row is replayed
and reported.

Replays
    oxide-batch replays a retention operation id without comparing the
    request (spec 6.3.1). batchboard compares what the recorded row holds:
    the instance and reason of a hold or release, the reason, plan digest
    and batch bound of a purge. A mismatch raises
    :class:`OperationIdConflict`, as for operator requests.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils.translation import gettext_lazy as _

from batchboard import db, vocabulary
from batchboard.actions import envelope, permissions, unit
from batchboard.actions.results import (
    ActionResult,
    InvalidRequest,
    OperationIdConflict,
    TargetNotFound,
)
from batchboard.models import JobInstance, RetentionAction
from batchboard.vocabulary import APPLIED, MAX_BIGINT, REPLAYED

#: The seven counted tables, in the order of the audit row's columns.
COUNT_FIELDS = (
    "deleted_flow_decisions",
    "deleted_recovery_decisions",
    "deleted_operator_requests",
    "deleted_step_partitions",
    "deleted_step_executions",
    "deleted_job_executions",
    "deleted_job_instances",
)


def _retention_result(
    row: RetentionAction, outcome: str, changed: bool
) -> ActionResult:
    counts = {name: getattr(row, name) for name in COUNT_FIELDS}
    return ActionResult.recorded(row, outcome, changed=changed, counts=counts)


def _probe(action: str, operation_id: str, **expected: Any) -> ActionResult | None:
    row = (
        RetentionAction.objects.using(db.alias())
        .filter(action=action, operation_id=operation_id)
        .first()
    )
    if row is None:
        return None
    for name, value in expected.items():
        recorded = getattr(row, name)
        if isinstance(recorded, memoryview):
            recorded = bytes(recorded)
        if recorded != value:
            raise OperationIdConflict(operation_id)
    return _retention_result(row, REPLAYED, changed=False)


def _hold(
    action: str, user: Any, instance_id: object, reason_code: str, operation_id: str
) -> ActionResult:
    """Place or release a hold (``action``): permission, then the protocol."""
    permissions.require(user, action)
    with unit.writing(db.RETENTION):
        return _hold_protocol(action, user, instance_id, reason_code, operation_id)


def _hold_protocol(
    action: str, user: Any, instance_id: object, reason_code: str, operation_id: str
) -> ActionResult:
    (ident,) = envelope.whole_numbers(
        instance_id, invalid=_("The instance id must be a number.")
    )
    if not 0 < ident <= MAX_BIGINT:
        raise InvalidRequest(_("The instance id is out of range."))
    reason = envelope.validate_reason(reason_code, action)
    op = envelope.validate_operation_id(operation_id)
    actor = envelope.actor_ref_for(user)
    expected = {"job_instance_id": ident, "reason_code": reason}

    def apply(at: datetime) -> ActionResult:
        instance = (
            JobInstance.objects.using(db.alias())
            .select_for_update()
            .only("id", "hold_actor", "hold_reason", "hold_placed_at")
            .filter(pk=ident)
            .first()
        )
        if instance is None:
            raise TargetNotFound(str(_("job instance")), ident)
        if action == vocabulary.HOLD:
            values = {"hold_actor": actor, "hold_reason": reason, "hold_placed_at": at}
            changed = (instance.hold_actor, instance.hold_reason) != (actor, reason)
        else:
            values = {"hold_actor": None, "hold_reason": None, "hold_placed_at": None}
            changed = instance.hold_actor is not None
        JobInstance.objects.using(db.alias()).filter(pk=ident).update(**values)
        row = RetentionAction.objects.using(db.alias()).create(
            job_instance_id=ident,
            action=action,
            operation_id=op,
            actor_ref=actor,
            reason_code=reason,
            outcome_class=APPLIED,
            applied_at=at,
        )
        return _retention_result(row, APPLIED, changed=changed)

    return unit.decide(op, lambda: _probe(action, op, **expected), apply)


def place_hold(
    *, user: Any, instance_id: int, reason_code: str, operation_id: str
) -> ActionResult:
    """Place (or overwrite) a hold on one job instance; purges then skip it."""
    return _hold(vocabulary.HOLD, user, instance_id, reason_code, operation_id)


def release_hold(
    *, user: Any, instance_id: int, reason_code: str, operation_id: str
) -> ActionResult:
    """Release the hold on one job instance (recorded even if none was placed)."""
    return _hold(vocabulary.RELEASE_HOLD, user, instance_id, reason_code, operation_id)
