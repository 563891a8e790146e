"""
A bulk action's plan: the survey, the digest, and what a form submits.

See :mod:`batchboard.actions.bulk` for the whole mechanism.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal, Protocol

from django.core.exceptions import PermissionDenied
from django.utils.translation import gettext_lazy as _

from batchboard import conf, db
from batchboard.actions import eligibility, permissions, recovery
from batchboard.actions.executions import (
    Directive,
)
from batchboard.actions.results import (
    InvalidRequest,
)
from batchboard.digests import epoch_ms
from batchboard.vocabulary import (
    ABANDON,
    HOLD,
    MAX_BIGINT,
    READ,
    RECOVER,
    RELEASE_HOLD,
    STOP,
    parse_whole_number,
)

EXECUTION_ACTIONS: Final = (STOP, ABANDON, RECOVER)
INSTANCE_ACTIONS: Final = (HOLD, RELEASE_HOLD)
BULK_ACTIONS: Final = EXECUTION_ACTIONS + INSTANCE_ACTIONS

#: A bulk id: with ``:`` and a target id it stays an OperationId (spec 4.1).
BULK_ID_RE: Final = re.compile(r"[A-Za-z0-9._-]{1,40}")

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


def kind_of(action: object) -> Kind:
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
    kind = kind_of(action)
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
        with db.connection().cursor() as cursor:
            if unknown:
                among, params = db.among("job_execution_id", unknown)
                cursor.execute(
                    "SELECT DISTINCT job_execution_id FROM ob_recovery_decision "
                    f"WHERE {among}",
                    params,
                )
                decided = {int(found) for (found,) in cursor.fetchall()}
            among, params = db.among(
                "job_instance_id", sorted({int(r["job_instance_id"]) for r in rows})
            )
            cursor.execute(
                "SELECT job_instance_id, MAX(attempt) FROM ob_job_execution "
                f"WHERE {among} GROUP BY job_instance_id",
                params,
            )
            latest = {int(instance): int(last) for instance, last in cursor.fetchall()}
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


#: A SHA-256 in lowercase hex: a plan digest or an evidence digest.
HEX64: Final = re.compile(r"[0-9a-f]{64}")


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
            if not isinstance(evidence, str) or not HEX64.fullmatch(evidence):
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
