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
    ``seconds``, whichever ends first; at least one item each), so no
    request runs long; applying the same bulk id again resumes. Items are
    claimed a batch at a time with a conditional UPDATE on their own rows
    (picked ``FOR UPDATE SKIP LOCKED`` on PostgreSQL), so several processes
    applying one bulk id apply each item once; a claim older than
    :data:`LEASE_SECONDS` is taken over (its process is gone), and the
    single action's replay by operation id is the final guard. A batch's
    outcomes are stored in one transaction.

Outcomes
    APPLIED and REJECTED are what the item's audit row records. STALE: the
    item's version moved since the plan (or its record is gone, or its
    recovery evidence changed); nothing was written for it. REPLAYED: the
    item was finished by an earlier apply of the same bulk id; its recorded
    outcome is kept.
"""

from __future__ import annotations

from batchboard.actions.bulk.apply import (
    CHUNK_SECONDS,
    LEASE_SECONDS,
    BulkResult,
    ItemResult,
    apply_bulk,
    resume_bulk,
)
from batchboard.actions.bulk.plan import (
    BULK_ACTIONS,
    BULK_ID_RE,
    EXECUTION_ACTIONS,
    INSTANCE_ACTIONS,
    BulkPlan,
    BulkTooLarge,
    PlannedItem,
    Survey,
    bulk_digest,
    canonical_filters,
    hold_stamp,
    new_bulk_id,
    parse_items,
    plan_bulk,
    validate_bulk_id,
)

__all__ = [
    "BULK_ACTIONS",
    "CHUNK_SECONDS",
    "BULK_ID_RE",
    "EXECUTION_ACTIONS",
    "INSTANCE_ACTIONS",
    "LEASE_SECONDS",
    "BulkPlan",
    "BulkResult",
    "BulkTooLarge",
    "ItemResult",
    "PlannedItem",
    "Survey",
    "apply_bulk",
    "bulk_digest",
    "canonical_filters",
    "hold_stamp",
    "new_bulk_id",
    "parse_items",
    "plan_bulk",
    "resume_bulk",
    "validate_bulk_id",
]
