"""
Row lookups and compare-and-swap updates shared by every repository part.

A versioned row (job execution, step execution, step partition) changes
only by ``UPDATE ... WHERE id = ? AND version = expected``: its row count
decides who won, and a loser re-reads to tell a stale version from a
vanished row. Lifecycle transitions are such updates after the rules of
:mod:`~batchboard.repository.lifecycle` accepted them.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from django.db.models import Model

from batchboard.models import JobExecution, JobInstance, StepExecution, StepPartition
from batchboard.repository.errors import (
    JobExecutionNotFound,
    JobInstanceNotFound,
    RepositoryError,
    StaleVersion,
    StepExecutionNotFound,
    StepPartitionNotFound,
)
from batchboard.repository.lifecycle import (
    Failure,
    transition_timestamps,
    validate_transition,
)

ModelT = TypeVar("ModelT", bound=Model)
RowT = TypeVar("RowT", JobExecution, StepExecution)
Versioned = JobExecution | StepExecution | StepPartition

#: How messages name each table's rows, and the error for a missing one.
KINDS: dict[type[Model], tuple[str, Callable[[int], RepositoryError]]] = {
    JobInstance: ("job instance", JobInstanceNotFound),
    JobExecution: ("job execution", JobExecutionNotFound),
    StepExecution: ("step execution", StepExecutionNotFound),
    StepPartition: ("step partition", StepPartitionNotFound),
}


def fetch(
    model: type[ModelT], using: str, row_id: int, *, lock: bool = False
) -> ModelT:
    """Return row ``row_id`` (locked ``FOR UPDATE`` if asked) or raise its not-found."""
    rows = model._default_manager.using(using)
    if lock:
        rows = rows.select_for_update()
    row = rows.filter(pk=row_id).first()
    if row is None:
        raise KINDS[model][1](row_id)
    return row


def stale(model: type[Model], row_id: int, expected: int, actual: int) -> StaleVersion:
    """Return the error for a row at ``actual`` when ``expected`` was asked for."""
    return StaleVersion(expected, actual, what=f"{KINDS[model][0]} {row_id}")


def check_version(row: Versioned, expected: int) -> None:
    """Raise :class:`StaleVersion` unless ``row`` is at version ``expected``."""
    if row.version != expected:
        raise stale(type(row), row.pk, expected, row.version)


def classify_miss(
    model: type[Model], using: str, row_id: int, expected: int
) -> RepositoryError:
    """Return the error for a compare-and-swap update that matched no row."""
    actual = (
        model._default_manager.using(using)
        .filter(pk=row_id)
        .values_list("version", flat=True)
        .first()
    )
    if actual is None:
        return KINDS[model][1](row_id)
    return stale(model, row_id, expected, int(actual))


def cas_update(
    model: type[Model], using: str, row_id: int, expected: int, **values: Any
) -> None:
    """Update row ``row_id`` with ``values`` if it is still at ``expected``."""
    updated = (
        model._default_manager.using(using)
        .filter(pk=row_id, version=expected)
        .update(**values)
    )
    if updated != 1:
        raise classify_miss(model, using, row_id, expected)


def cas_transition(
    row: RowT,
    *,
    using: str,
    expected: int,
    to_status: str,
    at: datetime,
    failure: Failure | None,
    extra: dict[str, Any] | None = None,
) -> RowT:
    """
    Move ``row`` to ``to_status`` at ``at`` if it is still at ``expected``.

    Return the row with its new values. ``extra`` adds columns to the same
    update (counters of an aggregated partition parent, for example).
    """
    check_version(row, expected)
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
    cas_update(type(row), using, row.pk, expected, **values)
    for name, value in values.items():
        setattr(row, name, value)
    return row
