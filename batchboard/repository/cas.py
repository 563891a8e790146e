"""
Compare-and-swap lifecycle updates shared by job and step executions.

The row is read, the transition checked against it, and the update issued
with ``WHERE id = ? AND version = expected``: its row count decides who
won. A loser re-reads to tell a stale version from a vanished row.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from django.db.models import Model

from batchboard.models import JobExecution, StepExecution
from batchboard.repository.errors import RepositoryError, StaleVersion
from batchboard.repository.lifecycle import (
    Failure,
    transition_timestamps,
    validate_transition,
)

RowT = TypeVar("RowT", JobExecution, StepExecution)


def classify_miss(
    model: type[Model],
    using: str,
    row_id: int,
    expected: int,
    not_found: Callable[[int], RepositoryError],
    *,
    what: str,
) -> RepositoryError:
    """Return the error for a CAS update that matched no row."""
    actual = (
        model._default_manager.using(using)
        .filter(pk=row_id)
        .values_list("version", flat=True)
        .first()
    )
    if actual is None:
        return not_found(row_id)
    return StaleVersion(expected, int(actual), what=what)


def cas_transition(
    row: RowT,
    *,
    using: str,
    expected: int,
    to_status: str,
    at: datetime,
    failure: Failure | None,
    not_found: Callable[[int], RepositoryError],
    what: str,
    extra: dict[str, Any] | None = None,
) -> RowT:
    """
    Move ``row`` to ``to_status`` at ``at`` if it is still at ``expected``.

    Return the row with its new values. ``extra`` adds columns to the same
    update (counters of an aggregated partition parent, for example).
    """
    if row.version != expected:
        raise StaleVersion(expected, row.version, what=what)
    validate_transition(row.status, to_status, failure)
    started_at, ended_at = transition_timestamps(
        created_at=row.created_at,
        started_at=row.started_at,
        ended_at=row.ended_at,
        to_status=to_status,
        at=at,
    )
    kept = failure or Failure.recorded(row.failure_category, row.failure_id)
    values: dict[str, Any] = {
        "status": to_status,
        "failure_category": kept.category if kept else None,
        "failure_id": kept.failure_id if kept else None,
        "started_at": started_at,
        "ended_at": ended_at,
        "updated_at": at,
        "version": expected + 1,
        **(extra or {}),
    }
    model = type(row)
    updated = (
        model._default_manager.using(using)
        .filter(pk=row.pk, version=expected)
        .update(**values)
    )
    if updated != 1:
        raise classify_miss(model, using, row.pk, expected, not_found, what=what)
    for name, value in values.items():
        setattr(row, name, value)
    return row
