"""
Bulk actions by filter: a reviewed plan, applied item by item.

:func:`plan_bulk` freezes the records a list's filters match (at most
``BATCHBOARD["BULK_MAX_ITEMS"]``) with their versions and expected
outcomes, and digests them; :func:`apply_bulk` applies a reviewed plan,
each item through the single action's own service (its permission, guards,
compare-and-swap on the version, audit row and replay), under the operation
id ``<bulk id>:<target id>``. docs/bulk-actions.md describes both for
Python callers, and the digest byte for byte.

The records
    The service reads no list itself: a :class:`Survey` (built by the
    explorer's read side, :mod:`batchboard.explorer.surveys`) holds the
    filters and reads the matching rows off the list's own keyset
    statements. An instance has no version column; its version in a plan is
    its hold stamp: 0 when unheld, else the hold's ``hold_placed_at`` in
    milliseconds since the epoch, which moves with every hold and release.

Chunks and claims
    An apply works through the plan in chunks (``limit`` items or
    ``seconds``, whichever ends first), so no request runs long; applying
    the same bulk id again resumes. An item is claimed with a conditional
    UPDATE on its own row before it is applied, so several processes
    applying one bulk id apply each item once; a claim older than
    :data:`LEASE_SECONDS` is taken over (its process is gone), and the
    single action's replay by operation id is the final guard.

Outcomes
    APPLIED and REJECTED are what the item's audit row records. STALE: the
    item's version moved since the plan (or its record is gone, or its
    recovery evidence changed); nothing was written for it. REPLAYED: the
    item was finished by an earlier apply of the same bulk id; its recorded
    outcome is kept.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final, Literal, Protocol

from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.db.models import Count, Max, Q
from django.utils.translation import gettext_lazy as _

from batchboard import conf, db, vocabulary
from batchboard.actions import eligibility, envelope, permissions, recovery
from batchboard.actions.executions import (
    Directive,
    abandon_execution,
    recover_execution,
    stop_execution,
)
from batchboard.actions.holds import place_hold, release_hold
from batchboard.actions.results import (
    ActionError,
    ActionResult,
    EvidenceStale,
    InvalidRequest,
    NotRecoverable,
    OperationIdConflict,
    TargetNotFound,
)
from batchboard.digests import epoch_ms
from batchboard.models import (
    JobExecution,
    JobInstance,
    OperatorRequest,
    RecoveryDecision,
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
    MAX_BIGINT,
    READ,
    RECOVER,
    REJECTED,
    RELEASE_HOLD,
    REPLAYED,
    STOP,
    parse_whole_number,
)

__all__ = [
    "BULK_ACTIONS",
    "BulkPlan",
    "BulkResult",
    "BulkTooLarge",
    "ItemResult",
    "PlannedItem",
    "Survey",
    "apply_bulk",
    "bulk_digest",
    "canonical_filters",
    "new_bulk_id",
    "parse_items",
    "plan_bulk",
]

EXECUTION_ACTIONS: Final = (STOP, ABANDON, RECOVER)
INSTANCE_ACTIONS: Final = (HOLD, RELEASE_HOLD)
BULK_ACTIONS: Final = EXECUTION_ACTIONS + INSTANCE_ACTIONS

#: A bulk id: with ``:`` and a target id it stays an OperationId (spec 4.1).
BULK_ID_RE: Final = re.compile(r"[A-Za-z0-9._-]{1,40}")

#: Seconds after which another process may take over a claimed item.
LEASE_SECONDS: Final = 30

#: What the plan expects the service to do with an item, by eligibility's
#: answer: change it, record it without change, reject it (audited) or
#: refuse it (an error, nothing recorded).
Expected = Literal["APPLIED", "UNCHANGED", "REJECTED", "REFUSED"]
EXPECTED: Final[dict[str, Expected]] = {
    eligibility.CHANGES: "APPLIED",
    eligibility.UNCHANGED: "UNCHANGED",
    eligibility.REJECTS: "REJECTED",
    eligibility.REFUSES: "REFUSED",
}

Kind = Literal["execution", "instance"]


class Survey(Protocol):
    """
    The records a list's filters match, as a plan reads them.

    ``kind`` is ``"execution"`` or ``"instance"``; ``filters`` the filters
    as submitted (``{"list": ..., ...}``); :meth:`read` returns at most
    ``limit`` matching rows, each with ``id`` and, for executions,
    ``version``, ``status``, ``stop_requested_at``, ``job_instance_id`` and
    ``attempt``, for instances ``hold_placed_at``.
    """

    @property
    def kind(self) -> Kind: ...

    @property
    def filters(self) -> Mapping[str, Any]: ...

    def read(self, limit: int) -> Sequence[Mapping[str, Any]]: ...


class BulkTooLarge(InvalidRequest):
    """The filter matches more records than one bulk action takes."""

    code = "BULK_TOO_LARGE"
    text = _(
        "The filter matches more than %(bound)s records, the most one bulk "
        "action takes. Narrow the filter (one job, one status, an older age) "
        "and plan again."
    )

    def __init__(self, bound: int) -> None:
        self.bound = bound
        super().__init__(bound=bound)


# -- the digest ------------------------------------------------------------------


def canonical_filters(filters: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``filters`` canonicalised: lists sorted (keys sort when dumped)."""
    out: dict[str, Any] = {}
    for key, value in filters.items():
        if isinstance(value, (list, tuple, set, frozenset)):
            value = sorted(value)
        out[str(key)] = value
    return out


Item = tuple[int, int] | tuple[int, int, str]


def bulk_digest(action: str, filters: Mapping[str, Any], items: Iterable[Item]) -> str:
    """
    Return the plan digest: lowercase hex SHA-256 of the canonical JSON.

    The document is ``{"action": A, "filters": F, "items": I}`` with keys
    sorted and no whitespace, encoded in UTF-8 (docs/bulk-actions.md).
    """
    document = {
        "action": action,
        "filters": canonical_filters(filters),
        "items": [list(item) for item in sorted(items)],
    }
    text = json.dumps(
        document, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- the plan --------------------------------------------------------------------


@dataclass(frozen=True)
class PlannedItem:
    """One frozen record: its id, version, expected outcome and why."""

    target_id: int
    version: int
    expected: Expected
    code: str | None = None
    why: Any = ""
    status: str | None = None
    evidence: str | None = None

    @property
    def item(self) -> Item:
        if self.evidence is not None:
            return (self.target_id, self.version, self.evidence)
        return (self.target_id, self.version)


@dataclass(frozen=True)
class BulkPlan:
    """A reviewed bulk action: its items in target order, counts and digest."""

    action: str
    kind: Kind
    filters: dict[str, Any]
    items: tuple[PlannedItem, ...]
    digest: str
    counts: dict[str, int]

    def items_text(self) -> str:
        """Return the items as ``id:version[:evidence]`` words (a form field)."""
        return " ".join(
            ":".join(str(part) for part in item.item) for item in self.items
        )

    @property
    def filters_json(self) -> str:
        return json.dumps(canonical_filters(self.filters), sort_keys=True)


def _kind(action: object) -> Kind:
    if action in EXECUTION_ACTIONS:
        return "execution"
    if action in INSTANCE_ACTIONS:
        return "instance"
    raise InvalidRequest(
        _("%(action)s is not a bulk action; use one of %(actions)s.")
        % {"action": str(action)[:32], "actions": ", ".join(BULK_ACTIONS)}
    )


def hold_stamp(placed_at: datetime | None) -> int:
    """Return an instance's version in a plan: its hold's time in ms, or 0."""
    return 0 if placed_at is None else max(0, epoch_ms(placed_at))


def plan_bulk(
    *,
    user: Any,
    action: str,
    survey: Survey,
    directive: Directive | None = None,
    reason_code: str | None = None,
) -> BulkPlan:
    """
    Return the plan of ``action`` on the records ``survey`` matches (Read).

    A survey matching more than ``BULK_MAX_ITEMS`` records raises
    :class:`BulkTooLarge` (reading stops at the bound plus one). RECOVER's
    ``directive`` and ``reason_code``, when given, make the expected
    outcomes say which items the directive's own rule would reject.
    """
    if not permissions.has_class(user, READ):
        raise PermissionDenied("planning a bulk action needs the Read class")
    kind = _kind(action)
    if survey.kind != kind:
        raise InvalidRequest(
            _("%(action)s acts on %(kind)ss; plan it from such a list.")
            % {"action": action, "kind": kind}
        )
    bound = conf.bulk_max_items()
    rows = list(survey.read(bound + 1))
    if len(rows) > bound:
        raise BulkTooLarge(bound)
    rows.sort(key=lambda row: int(row["id"]))
    if kind == "instance":
        planned = [_planned_instance(action, row) for row in rows]
    elif action == RECOVER:
        planned = [_planned_recovery(row, directive, reason_code) for row in rows]
    else:
        planned = _planned_executions(action, rows)
    counts: dict[str, int] = dict.fromkeys(EXPECTED.values(), 0)
    for item in planned:
        counts[item.expected] += 1
    filters = canonical_filters(survey.filters)
    return BulkPlan(
        action=action,
        kind=kind,
        filters=filters,
        items=tuple(planned),
        digest=bulk_digest(action, filters, (item.item for item in planned)),
        counts=counts,
    )


def _answer(
    row: Mapping[str, Any], answer: eligibility.Eligibility, **extra: Any
) -> PlannedItem:
    return PlannedItem(
        target_id=int(row["id"]),
        version=int(extra.pop("version", row.get("version") or 0)),
        expected=EXPECTED[answer.service],
        code=answer.code if answer.service != eligibility.CHANGES else None,
        why=answer.why,
        **extra,
    )


def _planned_instance(action: str, row: Mapping[str, Any]) -> PlannedItem:
    held = row.get("hold_placed_at") is not None
    answer = (
        eligibility.hold(held=held)
        if action == HOLD
        else eligibility.release(held=held)
    )
    return _answer(row, answer, version=hold_stamp(row.get("hold_placed_at")))


def _planned_executions(
    action: str, rows: Sequence[Mapping[str, Any]]
) -> list[PlannedItem]:
    """
    Answer STOP or ABANDON for every row, with two statements at most.

    ABANDON needs to know which UNKNOWN executions have a recovery decision
    (read on the decisions' execution index) and which executions a later
    attempt superseded (the instances' latest attempt, read on
    ``(job_instance_id, attempt DESC)``).
    """
    decided: set[int] = set()
    latest: dict[int, int] = {}
    if action == ABANDON and rows:
        unknown = [int(r["id"]) for r in rows if r["status"] == "UNKNOWN"]
        if unknown:
            decided = set(
                RecoveryDecision.objects.using(db.alias())
                .filter(job_execution_id__in=unknown)
                .values_list("job_execution_id", flat=True)
            )
        instances = sorted({int(r["job_instance_id"]) for r in rows})
        latest = dict(
            JobExecution.objects.using(db.alias())
            .filter(job_instance_id__in=instances)
            .values("job_instance_id")
            .annotate(latest=Max("attempt"))
            .values_list("job_instance_id", "latest")
        )
    planned = []
    for row in rows:
        status = str(row["status"])
        if action == STOP:
            answer = eligibility.stop(
                status, stop_requested=row.get("stop_requested_at") is not None
            )
        else:
            ident = int(row["id"])
            answer = eligibility.abandon(
                status,
                decided=ident in decided,
                superseded=latest.get(int(row["job_instance_id"]), 0)
                > int(row["attempt"]),
            )
        planned.append(_answer(row, answer, status=status))
    return planned


def _planned_recovery(
    row: Mapping[str, Any], directive: Directive | None, reason_code: str | None
) -> PlannedItem:
    """Answer RECOVER for one row from its proposal (one snapshot statement)."""
    proposal = recovery.propose(int(row["id"]))
    status = proposal.evidence.status
    answer = eligibility.recover(
        status, candidate=proposal.is_candidate, verdict=proposal.verdict_text()
    )
    if answer.offered and directive is not None and reason_code:
        answer = eligibility.directive(
            unknown_commit=proposal.evidence.unknown_commit,
            resulting_status=directive.resulting_status,
            reason_code=reason_code,
        )
    return _answer(
        row,
        answer,
        version=proposal.observed_version,
        status=status,
        evidence=proposal.digest_hex,
    )


# -- parsing what a form or a caller submits -------------------------------------


def new_bulk_id() -> str:
    """Return a fresh bulk id for a plan about to be rendered."""
    return f"bulk-{uuid.uuid4().hex}"


def validate_bulk_id(value: object) -> str:
    """Return ``value`` if it is a bulk id (``[A-Za-z0-9._-]{1,40}``)."""
    if not isinstance(value, str) or not BULK_ID_RE.fullmatch(value):
        raise InvalidRequest(
            _(
                "The bulk id must be 1 to 40 letters, digits, dots, "
                "underscores or hyphens."
            )
        )
    return value


_HEX64 = re.compile(r"[0-9a-f]{64}")


def parse_items(items: object, *, action: str) -> list[Item]:
    """
    Return a plan's items from :meth:`BulkPlan.items_text` or a sequence.

    RECOVER's items carry an evidence digest (64 lowercase hex digits),
    the others none. Ids and versions are whole numbers in the bigint range,
    each target once.
    """
    recover = action == RECOVER
    words: Iterable[Sequence[object]]
    if isinstance(items, str):
        words = [word.split(":") for word in items.split()]
    elif isinstance(items, Iterable):
        words = [tuple(item) if isinstance(item, Sequence) else () for item in items]
    else:
        raise InvalidRequest(_("The plan's items are malformed."))
    out: list[Item] = []
    seen: set[int] = set()
    for parts in words:
        if len(parts) != (3 if recover else 2):
            raise InvalidRequest(_("The plan's items are malformed."))
        numbers = [_whole(part) for part in parts[:2]]
        if None in numbers:
            raise InvalidRequest(_("An item's id and version must be whole numbers."))
        ident, version = (int(n or 0) for n in numbers)
        if not 0 < ident <= MAX_BIGINT or ident in seen:
            raise InvalidRequest(_("The plan's items are malformed."))
        seen.add(ident)
        if recover:
            evidence = parts[2]
            if not isinstance(evidence, str) or not _HEX64.fullmatch(evidence):
                raise InvalidRequest(
                    _("An item's evidence digest must be 64 lowercase hex digits.")
                )
            out.append((ident, version, evidence))
        else:
            out.append((ident, version))
    if len(out) > conf.bulk_max_items():
        raise BulkTooLarge(conf.bulk_max_items())
    return sorted(out)


def _whole(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= MAX_BIGINT else None
    return parse_whole_number(value) if isinstance(value, str) else None


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
    _kind(action)
    bulk = validate_bulk_id(new_bulk_id() if bulk_id is None else bulk_id)
    parsed = parse_items(items, action=action)
    reviewed = str(digest or "").strip()
    if not _HEX64.fullmatch(reviewed):
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
    """Claim and apply items until none is left, ``limit`` or ``seconds``."""
    deadline = None if seconds is None else time.monotonic() + seconds
    token = uuid.uuid4().hex
    done: dict[int, _Outcome] = {}
    try:
        while limit is None or len(done) < limit:
            if deadline is not None and time.monotonic() >= deadline:
                break
            lease = db.now() - timedelta(seconds=LEASE_SECONDS)
            batch = list(
                BulkItem.objects.filter(operation=operation)
                .filter(Q(state=PENDING) | Q(state=CLAIMED, claimed_at__lt=lease))
                .exclude(target_id__in=list(done))
                .order_by("target_id")[:50]
            )
            if not batch:
                break
            for item in batch:
                if limit is not None and len(done) >= limit:
                    break
                if deadline is not None and time.monotonic() >= deadline:
                    break
                if not _claim(item, token, lease):
                    continue
                done[item.target_id] = _finish(item, token, _apply_item(request, item))
    finally:
        _count(operation)
    return done


def _claim(item: BulkItem, token: str, lease: datetime) -> bool:
    """Take ``item`` for this apply: a conditional UPDATE on its own row."""
    taken = (
        BulkItem.objects.filter(pk=item.pk)
        .filter(Q(state=PENDING) | Q(state=CLAIMED, claimed_at__lt=lease))
        .update(state=CLAIMED, claim=token, claimed_at=db.now())
    )
    return taken == 1


def _finish(item: BulkItem, token: str, outcome: _Outcome) -> _Outcome:
    BulkItem.objects.filter(pk=item.pk, claim=token).update(
        state=DONE,
        outcome=outcome.outcome,
        rejection_code=outcome.code or "",
        audit_model=outcome.audit_model or "",
        audit_id=outcome.audit_id,
        finished_at=db.now(),
    )
    return outcome


def _release(item: BulkItem) -> None:
    BulkItem.objects.filter(pk=item.pk, state=CLAIMED).update(
        state=PENDING, claim="", claimed_at=None
    )


def _apply_item(request: _Request, item: BulkItem) -> _Outcome:
    """
    Apply one item through its single action, or report it STALE.

    A recorded operation id is replayed first (the item was applied by a
    process that stopped before marking it done); otherwise an item whose
    version moved since the plan is STALE and its action is never called.
    An error that is not the item's own outcome (a permission withdrawn,
    the database unavailable) puts the item back and ends the apply.
    """
    op = request.operation_id(item.target_id)
    try:
        if not _recorded(request.action, op) and (
            _current_version(request.action, item.target_id) != item.version
        ):
            return _Outcome(STALE)
        result = _call(request, item, op)
    except (TargetNotFound, EvidenceStale):
        return _Outcome(STALE)
    except NotRecoverable as error:
        return _Outcome(REJECTED, error.code)
    except OperationIdConflict as error:
        return _Outcome(REJECTED, error.code)
    except (ActionError, PermissionDenied):
        _release(item)
        raise
    return _Outcome(
        result.recorded_outcome,
        result.rejection_code,
        result.audit_model,
        result.audit_id,
    )


def _recorded(action: str, operation_id: str) -> bool:
    model = RetentionAction if action in INSTANCE_ACTIONS else OperatorRequest
    return (
        model.objects.using(db.alias())
        .filter(action=action, operation_id=operation_id)
        .exists()
    )


def _current_version(action: str, target_id: int) -> int | None:
    """Return the target's version now, read on the primary; None if gone."""
    if action in INSTANCE_ACTIONS:
        rows = list(
            JobInstance.objects.using(db.alias())
            .filter(pk=target_id)
            .values_list("hold_placed_at", flat=True)
        )
        return hold_stamp(rows[0]) if rows else None
    versions = list(
        JobExecution.objects.using(db.alias())
        .filter(pk=target_id)
        .values_list("version", flat=True)
    )
    return int(versions[0]) if versions else None


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
    """Store the operation's counts from its items; mark it finished when done."""
    rows = dict(
        BulkItem.objects.filter(operation=operation, state=DONE)
        .values("outcome")
        .annotate(n=Count("id"))
        .values_list("outcome", "n")
    )
    counts = {
        "applied": rows.get(APPLIED, 0),
        "rejected": rows.get(REJECTED, 0),
        "stale": rows.get(STALE, 0),
    }
    done = sum(counts.values())
    unchanged = all(getattr(operation, k) == v for k, v in counts.items())
    if unchanged and (operation.finished_at is not None or done < operation.item_count):
        return
    finished = db.now() if done >= operation.item_count else None
    updated = BulkOperation.objects.filter(pk=operation.pk)
    updated.update(**counts)
    if finished is not None:
        updated.filter(finished_at__isnull=True).update(finished_at=finished)
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
