"""
A bulk action's apply: claims, chunks and each item's single action.

See :mod:`batchboard.actions.bulk` for the whole mechanism.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from django.db import IntegrityError, connections, transaction
from django.db.models import Count, F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce, Greatest
from django.utils.translation import gettext_lazy as _

from batchboard import db, vocabulary
from batchboard.actions import envelope, permissions, recovery, unit
from batchboard.actions.bulk.plan import (
    HEX64,
    INSTANCE_ACTIONS,
    Item,
    bulk_digest,
    canonical_filters,
    hold_stamp,
    kind_of,
    new_bulk_id,
    parse_items,
    validate_bulk_id,
)
from batchboard.actions.executions import (
    Directive,
    abandon_execution,
    recover_execution,
    stop_execution,
)
from batchboard.actions.holds import place_hold, release_hold
from batchboard.actions.results import (
    ActionResult,
    EvidenceStale,
    InvalidRequest,
    NotRecoverable,
    OperationIdConflict,
    TargetNotFound,
)
from batchboard.models import (
    JobExecution,
    JobInstance,
    OperatorRequest,
    RetentionAction,
)
from batchboard.state import (
    CLAIMED,
    DONE,
    PENDING,
    STALE,
    BulkItem,
    BulkOperation,
)
from batchboard.vocabulary import (
    ABANDON,
    APPLIED,
    HOLD,
    RECOVER,
    REJECTED,
    RELEASE_HOLD,
    REPLAYED,
    STOP,
)

#: How long one chunk of an apply driven by a page works, in seconds: well
#: under a proxy's timeout, long enough for dozens of items.
CHUNK_SECONDS: Final = 2.0

#: Items claimed by one statement.
CLAIM_BATCH: Final = 50

#: Seconds after which another process may take over a claimed item.
LEASE_SECONDS: Final = 30

# -- apply -----------------------------------------------------------------------


@dataclass(frozen=True)
class ItemResult:
    """
    One item's outcome in an apply.

    ``outcome`` is this apply's: APPLIED, REJECTED, STALE, REPLAYED (done by
    an earlier apply) or PENDING (not reached yet); ``recorded`` the outcome
    the item keeps (APPLIED, REJECTED or STALE; None while pending).
    ``audit_model`` and ``audit_id`` name its audit row, if one was written.
    """

    target_id: int
    version: int
    outcome: str
    recorded: str | None
    rejection_code: str | None = None
    audit_model: str | None = None
    audit_id: int | None = None


@dataclass(frozen=True)
class BulkResult:
    """An apply's per-item results, its counts and the recorded operation."""

    operation: BulkOperation
    items: tuple[ItemResult, ...]
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def bulk_id(self) -> str:
        return self.operation.bulk_id

    @property
    def finished(self) -> bool:
        return self.operation.finished_at is not None


@dataclass(frozen=True)
class _Request:
    """A validated apply: everything an item's single action needs."""

    user: Any
    action: str
    bulk_id: str
    reason_code: str | None
    directive: Directive | None

    def operation_id(self, target_id: int) -> str:
        return f"{self.bulk_id}:{target_id}"


def apply_bulk(
    *,
    user: Any,
    action: str,
    filters: Mapping[str, Any],
    items: object,
    digest: str,
    bulk_id: str | None = None,
    reason_code: str | None = None,
    directive: Directive | None = None,
    limit: int | None = None,
    seconds: float | None = None,
) -> BulkResult:
    """
    Apply a reviewed plan, or the next chunk of it.

    ``items`` and ``digest`` are the plan's (:meth:`BulkPlan.items_text`
    or a sequence of item tuples, and :attr:`BulkPlan.digest`); the digest
    recomputed from ``action``, ``filters`` and ``items`` must equal it.
    ``bulk_id`` names the operation (generated when None); the same id
    applied again resumes it. ``limit`` bounds the items applied by this
    call and ``seconds`` its duration; None applies everything.

    Bad input (an unknown action, a malformed bulk id, item or version, a
    digest that does not match, a bulk id used for another plan) raises
    :class:`InvalidRequest`, and a user without the action's class
    PermissionDenied, before anything is written.
    """
    kind_of(action)
    bulk = validate_bulk_id(new_bulk_id() if bulk_id is None else bulk_id)
    parsed = parse_items(items, action=action)
    reviewed = str(digest or "").strip()
    if not HEX64.fullmatch(reviewed):
        raise InvalidRequest(_("The plan digest must be 64 lowercase hex digits."))
    if bulk_digest(action, filters, parsed) != reviewed:
        raise InvalidRequest(
            _(
                "The plan digest does not match the items submitted with it: "
                "an item was added, removed or changed since the review. "
                "Nothing was done."
            )
        )
    permissions.require(user, action)
    reason = (
        envelope.validate_reason(reason_code, action)
        if vocabulary.reasons_for(action)
        else None
    )
    chosen: Directive | None = None
    if action == RECOVER:
        if directive is None:
            raise InvalidRequest(_("A bulk recovery needs one directive."))
        chosen = directive.validated()
    operation = _operation(
        user, action, filters, parsed, reviewed, bulk, reason, chosen
    )
    request = _Request(user, action, bulk, reason, chosen)
    outcomes = _work(request, operation, limit, seconds)
    return _result(operation, outcomes)


def resume_bulk(
    *,
    user: Any,
    bulk_id: str,
    limit: int | None = None,
    seconds: float | None = None,
) -> BulkResult:
    """
    Apply the next chunk of a recorded bulk operation, by its id.

    The operation's plan, reason and directive are the ones recorded by
    :func:`apply_bulk`, whose digest check they passed; the user needs the
    action's class. An unknown bulk id raises :class:`InvalidRequest`.
    """
    bulk = validate_bulk_id(bulk_id)
    operation = BulkOperation.objects.filter(bulk_id=bulk).first()
    if operation is None:
        raise InvalidRequest(_("No bulk operation %(id)s is recorded.") % {"id": bulk})
    permissions.require(user, operation.action)
    directive = None
    if operation.action == RECOVER:
        directive = Directive(
            operation.resulting_status,
            operation.failure_category or None,
            operation.failure_id,
        )
    request = _Request(
        user, operation.action, bulk, operation.reason_code or None, directive
    )
    outcomes = _work(request, operation, limit, seconds)
    return _result(operation, outcomes)


def _operation(
    user: Any,
    action: str,
    filters: Mapping[str, Any],
    items: Sequence[Item],
    digest: str,
    bulk_id: str,
    reason: str | None,
    directive: Directive | None,
) -> BulkOperation:
    """Record the operation and its items, or find the one recorded for the id."""
    values = {
        "action": action,
        "filters": json.dumps(
            canonical_filters(filters), sort_keys=True, separators=(",", ":")
        ),
        "digest": digest,
        "reason_code": reason or "",
        "resulting_status": directive.resulting_status if directive else "",
        "failure_category": (directive.category or "") if directive else "",
        "failure_id": int(directive.failure_id)
        if directive and directive.failure_id is not None
        else None,
    }
    manager = BulkOperation.objects
    found = manager.filter(bulk_id=bulk_id).first()
    if found is None:
        try:
            with transaction.atomic(using=manager.db):
                found = manager.create(
                    bulk_id=bulk_id,
                    actor_ref=envelope.actor_ref_for(user),
                    item_count=len(items),
                    started_at=db.now(),
                    **values,
                )
                BulkItem.objects.bulk_create(
                    BulkItem(
                        operation=found,
                        target_id=item[0],
                        version=item[1],
                        evidence_digest=item[2] if len(item) == 3 else "",
                    )
                    for item in items
                )
        except IntegrityError:
            # A concurrent apply of the same bulk id recorded it first.
            found = manager.filter(bulk_id=bulk_id).first()
        if found is None:
            raise InvalidRequest(_("The bulk operation could not be recorded."))
    recorded = {name: getattr(found, name) for name in values}
    if recorded != values:
        raise InvalidRequest(
            _(
                "Bulk id %(id)s was already used for another plan or "
                "directive; nothing was done. Plan again for a fresh id."
            )
            % {"id": bulk_id}
        )
    return found


@dataclass(frozen=True)
class _Outcome:
    outcome: str
    code: str | None = None
    audit_model: str | None = None
    audit_id: int | None = None


def _work(
    request: _Request,
    operation: BulkOperation,
    limit: int | None,
    seconds: float | None,
) -> dict[int, _Outcome]:
    """
    Claim and apply items until none is left, ``limit`` or ``seconds``.

    Items are claimed a batch at a time (:data:`CLAIM_BATCH`), their
    versions and recorded operation ids read with one statement each, and
    their outcomes stored in one transaction: each item's own single action
    is then nearly all an item costs.
    """
    deadline = None if seconds is None else time.monotonic() + seconds
    token = uuid.uuid4().hex
    done: dict[int, _Outcome] = {}
    try:
        while limit is None or len(done) < limit:
            if _late(deadline, done):
                break
            size = CLAIM_BATCH if limit is None else min(CLAIM_BATCH, limit - len(done))
            found, claimed = _claim(operation, token, size)
            if not found:
                break
            if claimed:
                done.update(_apply_batch(request, claimed, token, deadline, done))
    finally:
        _count(operation)
    return done


def _late(deadline: float | None, done: dict[int, _Outcome]) -> bool:
    """Return whether the chunk is over; every chunk applies one item at least."""
    return deadline is not None and bool(done) and time.monotonic() >= deadline


def _claimable(lease: datetime) -> Q:
    return Q(state=PENDING) | Q(state=CLAIMED, claimed_at__lt=lease)


def _claim(
    operation: BulkOperation, token: str, size: int
) -> tuple[bool, list[BulkItem]]:
    """
    Take up to ``size`` items for this apply: a conditional UPDATE.

    Return whether any item was left to take, and the items taken. On
    PostgreSQL the items are picked with ``FOR UPDATE SKIP LOCKED`` in the
    claim's transaction, so processes claiming at once take disjoint sets
    and never wait on (or deadlock over) each other's rows. SQLite has one
    writer at a time: the UPDATE re-checks each row's state, so a row
    another process took first is skipped. Items a chunk does not reach
    before its time is up are put back.
    """
    manager = BulkItem.objects
    now = db.now()
    lease = now - timedelta(seconds=LEASE_SECONDS)
    skip_locked = connections[manager.db].features.has_select_for_update_skip_locked
    claiming = transaction.atomic(using=manager.db) if skip_locked else nullcontext()
    with claiming:
        # Waiting items first, then claims whose process is gone: each
        # condition is served by (operation, state, target_id) on its own.
        picked: list[int] = []
        for condition in (
            Q(state=PENDING),
            Q(state=CLAIMED, claimed_at__lt=lease),
        ):
            candidates = (
                manager.filter(operation=operation)
                .filter(condition)
                .order_by("target_id")
            )
            if skip_locked:
                candidates = candidates.select_for_update(skip_locked=True)
            picked = list(candidates.values_list("pk", flat=True)[:size])
            if picked:
                break
        if not picked:
            return False, []
        manager.filter(pk__in=picked).filter(_claimable(lease)).update(
            state=CLAIMED, claim=token, claimed_at=now
        )
    claimed = list(
        manager.filter(pk__in=picked, state=CLAIMED, claim=token).order_by("target_id")
    )
    return True, claimed


def _apply_batch(
    request: _Request,
    items: Sequence[BulkItem],
    token: str,
    deadline: float | None,
    done: dict[int, _Outcome],
) -> dict[int, _Outcome]:
    """Apply claimed ``items`` and store their outcomes; release any left."""
    ids = [item.target_id for item in items]
    recorded = _recorded(request, ids)
    versions = _current_versions(request.action, ids)
    outcomes: dict[int, _Outcome] = {}
    # The statement above was the batch's probe: an item whose id it found
    # unrecorded goes straight to its single action's unit.
    new = (request.operation_id(ident) for ident in ids)
    try:
        with unit.unrecorded(op for op in new if op not in recorded):
            for item in items:
                if outcomes and _late(deadline, {**done, **outcomes}):
                    break
                outcomes[item.target_id] = _apply_item(
                    request, item, recorded, versions
                )
    finally:
        _finish(items, token, outcomes)
    return outcomes


def _finish(
    items: Sequence[BulkItem], token: str, outcomes: Mapping[int, _Outcome]
) -> None:
    """
    Store the outcomes and put back what was not reached, in one transaction.

    The outcomes are written by one prepared UPDATE run for each item
    (``executemany``): building an ORM statement per item, or one CASE
    expression over the batch, costs more than the writes. Should another
    process have taken over an item (its lease ran out), both recorded the
    same operation id's outcome, so either write tells the truth.
    """
    manager = BulkItem.objects
    connection = connections[manager.db]
    finished_at = connection.ops.adapt_datetimefield_value(db.now())
    rows = [
        (
            DONE,
            outcome.outcome,
            outcome.code or "",
            outcome.audit_model or "",
            outcome.audit_id,
            finished_at,
            item.pk,
        )
        for item in items
        for outcome in [outcomes.get(item.target_id)]
        if outcome is not None
    ]
    table = connection.ops.quote_name(BulkItem._meta.db_table)
    with transaction.atomic(using=manager.db):
        if rows:
            with connection.cursor() as cursor:
                cursor.executemany(
                    f"UPDATE {table} SET state = %s, outcome = %s,"
                    " rejection_code = %s, audit_model = %s, audit_id = %s,"
                    " finished_at = %s WHERE id = %s",
                    rows,
                )
        left = [item.pk for item in items if item.target_id not in outcomes]
        if left:
            manager.filter(pk__in=left, claim=token, state=CLAIMED).update(
                state=PENDING, claim="", claimed_at=None
            )


def _apply_item(
    request: _Request,
    item: BulkItem,
    recorded: set[str],
    versions: Mapping[int, int],
) -> _Outcome:
    """
    Apply one item through its single action, or report it STALE.

    A recorded operation id is replayed first (the item was applied by a
    process that stopped before marking it done); otherwise an item whose
    version moved since the plan is STALE and its action is never called.
    An error that is not the item's own outcome (a permission withdrawn,
    the database unavailable) ends the apply; the item is put back.
    """
    op = request.operation_id(item.target_id)
    if op not in recorded and versions.get(item.target_id) != item.version:
        return _Outcome(STALE)
    try:
        result = _call(request, item, op)
    except (TargetNotFound, EvidenceStale):
        return _Outcome(STALE)
    except (NotRecoverable, OperationIdConflict) as error:
        return _Outcome(REJECTED, error.code)
    return _Outcome(
        result.recorded_outcome,
        result.rejection_code,
        result.audit_model,
        result.audit_id,
    )


def _recorded(request: _Request, ids: Sequence[int]) -> set[str]:
    """Return the operation ids of ``ids`` already recorded (one statement)."""
    model = RetentionAction if request.action in INSTANCE_ACTIONS else OperatorRequest
    return set(
        model.objects.using(db.alias())
        .filter(
            action=request.action,
            operation_id__in=[request.operation_id(ident) for ident in ids],
        )
        .values_list("operation_id", flat=True)
    )


def _current_versions(action: str, ids: Sequence[int]) -> dict[int, int]:
    """Return the targets' versions now, read on the primary; gone ones left out."""
    if action in INSTANCE_ACTIONS:
        return {
            ident: hold_stamp(placed)
            for ident, placed in JobInstance.objects.using(db.alias())
            .filter(pk__in=ids)
            .values_list("pk", "hold_placed_at")
        }
    return dict(
        JobExecution.objects.using(db.alias())
        .filter(pk__in=ids)
        .values_list("pk", "version")
    )


def _call(request: _Request, item: BulkItem, op: str) -> ActionResult:
    """Run the item's single action under its operation id."""
    user, target, version = request.user, item.target_id, item.version
    reason = request.reason_code or ""
    calls: dict[str, Callable[[], ActionResult]] = {
        STOP: lambda: stop_execution(
            user=user, execution_id=target, expected_version=version, operation_id=op
        ),
        ABANDON: lambda: abandon_execution(
            user=user,
            execution_id=target,
            expected_version=version,
            reason_code=reason,
            operation_id=op,
        ),
        RECOVER: lambda: recover_execution(
            user=user,
            execution_id=target,
            expected_version=version,
            evidence_digest=bytes.fromhex(item.evidence_digest or ""),
            unknown_commit=_unknown_commit(target),
            directive=request.directive or Directive.abandon(),
            reason_code=reason,
            operation_id=op,
        ),
        HOLD: lambda: place_hold(
            user=user, instance_id=target, reason_code=reason, operation_id=op
        ),
        RELEASE_HOLD: lambda: release_hold(
            user=user, instance_id=target, reason_code=reason, operation_id=op
        ),
    }
    return calls[request.action]()


def _unknown_commit(execution_id: int) -> bool:
    """
    Return the proposal's unknown-commit marker, as its form submits it.

    The service re-proposes under the row lock and compares both the marker
    and the evidence digest, so a marker read here that moved is caught
    there (EvidenceStale).
    """
    return bool(recovery.propose(execution_id).evidence.unknown_commit)


def _count(operation: BulkOperation) -> None:
    """
    Store the operation's counts from its items; mark it finished when done.

    Each count is recounted inside the UPDATE that stores it and never goes
    down (an item's outcome is final), so processes finishing at once
    cannot overwrite a newer count with the one they read earlier.
    """
    done_items = BulkItem.objects.filter(operation=OuterRef("pk"), state=DONE)

    def recount(field: str, outcome: str) -> Greatest:
        counted = (
            done_items.filter(outcome=outcome)
            .order_by()
            .values("operation")
            .annotate(n=Count("id"))
            .values("n")
        )
        return Greatest(F(field), Coalesce(Subquery(counted), 0))

    updated = BulkOperation.objects.filter(pk=operation.pk)
    updated.update(
        applied=recount("applied", APPLIED),
        rejected=recount("rejected", REJECTED),
        stale=recount("stale", STALE),
    )
    updated.filter(
        finished_at__isnull=True,
        item_count__lte=F("applied") + F("rejected") + F("stale"),
    ).update(finished_at=db.now())
    operation.refresh_from_db()


def _result(operation: BulkOperation, outcomes: dict[int, _Outcome]) -> BulkResult:
    """Report every item: this apply's outcome, REPLAYED or PENDING."""
    results = []
    for item in BulkItem.objects.filter(operation=operation).order_by("target_id"):
        mine = outcomes.get(item.target_id)
        recorded: str | None
        if mine is not None:
            outcome, recorded = mine.outcome, mine.outcome
        elif item.state == DONE:
            outcome, recorded = REPLAYED, item.outcome or None
        else:
            outcome, recorded = PENDING, None
        results.append(
            ItemResult(
                target_id=item.target_id,
                version=item.version,
                outcome=outcome,
                recorded=recorded,
                rejection_code=(item.rejection_code or None)
                if mine is None
                else mine.code,
                audit_model=(item.audit_model or None)
                if mine is None
                else mine.audit_model,
                audit_id=item.audit_id if mine is None else mine.audit_id,
            )
        )
    counts: dict[str, int] = dict.fromkeys(
        (APPLIED, REJECTED, STALE, REPLAYED, PENDING), 0
    )
    for result in results:
        counts[result.outcome] += 1
    return BulkResult(operation=operation, items=tuple(results), counts=counts)
