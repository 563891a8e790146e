"""
Reads that relate the rows a page already holds: attempts and partitions.

Each function is one bounded statement over the schema's indexes, keyed by
ids the page has just read, so a page's statement count stays constant:

- an execution's neighbouring attempts come off the unique
  ``(job_instance_id, attempt)`` index, never a scan of
  ``restart_of_execution_id`` (which has no index);
- a parent step's partitions come off ``(step_execution_id, id)``, at most
  1024 per parent (spec: partition ordinals stop at 1024);
- a worker step's partition is looked up among the partitions of its own
  execution's steps, since ``worker_step_execution_id`` has no index.

Like :mod:`.queries`, every read names its columns and never a payload.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from django.db import connections
from django.db.models import Count, F, Q, QuerySet, Sum
from django.db.models.functions import Coalesce

from batchboard import db
from batchboard.explorer.pagination import Row, values_rows
from batchboard.models import JobExecution, StepPartition
from batchboard.schema import ITEM_COUNTERS

#: Partition statuses grouped into a progress bar's segments, in drawing
#: order: what finished well, what failed, what stopped, what runs, what waits.
SEGMENTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("completed", ("COMPLETED",)),
    ("failed", ("FAILED", "UNKNOWN")),
    ("stopped", ("STOPPED", "ABANDONED")),
    ("running", ("STARTED", "STOPPING")),
    ("waiting", ("STARTING",)),
)

#: What places a partition row: its id, its parent and worker steps, its
#: key and ordinal, its status (every partition row read starts with these).
PARTITION_PLACE: Final = (
    "id",
    "step_execution_id",
    "worker_step_execution_id",
    "partition_key",
    "partition_ordinal",
    "status",
)

_PARTITION_COLUMNS = (
    *PARTITION_PLACE,
    "read_count",
    "write_count",
    "filter_count",
    "commit_count",
    "parent_name",
)
_ATTEMPT_COLUMNS = ("id", "job_instance_id", "attempt", "status")


@dataclass(frozen=True)
class Rollup:
    """A parent step's partitions: how many in each segment, and summed counters."""

    total: int
    segments: dict[str, int]
    counters: dict[str, int] = field(default_factory=dict)


def attempts_around(instance_id: int, attempt: int) -> tuple[Row | None, Row | None]:
    """
    Return the attempts just before and just after ``attempt`` of an instance.

    Every poll of a live execution asks: the statement is compiled once
    (:func:`~batchboard.explorer.pagination.values_rows`).
    """
    alias = db.read_alias()

    def build(values: Sequence[Any]) -> QuerySet[Any]:
        attempts: QuerySet[Any] = (
            JobExecution.objects.using(alias)
            .filter(job_instance_id=values[0], attempt__in=[values[1], values[2]])
            .order_by("attempt")
            .values(*_ATTEMPT_COLUMNS)
        )
        return attempts

    rows = values_rows(
        alias, ("attempts_around",), build, [instance_id, attempt - 1, attempt + 1]
    )
    found = {row["attempt"]: row for row in rows}
    return found.get(attempt - 1), found.get(attempt + 1)


def next_attempts(rows: Iterable[Row]) -> dict[int, Row]:
    """
    Map each execution of ``rows`` to the attempt that followed it, if any.

    The attempt after a FAILED or STOPPED one is its restart (spec 2.2).
    One statement of exact ``(job_instance_id, attempt)`` lookups on the
    unique ``(job_instance_id, attempt)`` index, joined from a list of
    constant rows: 50 of them in an ORM ``Q`` tree took longer to compile
    than the statement took to run.
    """
    wanted = {(int(row["job_instance_id"]), int(row["attempt"])): row for row in rows}
    if not wanted:
        return {}
    connection = connections[db.read_alias()]
    pairs, params = db.pairs([(i, a + 1) for i, a in wanted], connection.alias)
    sql = (
        "SELECT x.id, x.job_instance_id, x.attempt, x.status "
        f"FROM {pairs} "
        "JOIN ob_job_execution x "
        "ON x.job_instance_id = w.column1 AND x.attempt = w.column2"
    )
    found: dict[int, Row] = {}
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for values_row in cursor.fetchall():
            row = dict(zip(_ATTEMPT_COLUMNS, values_row, strict=True))
            before = wanted.get((row["job_instance_id"], row["attempt"] - 1))
            if before is not None:
                found[int(before["id"])] = row
    return found


def latest_attempts(rows: Iterable[Row]) -> dict[int, Row]:
    """
    Map each execution of ``rows`` to its instance's latest attempt, if later.

    A FAILED execution whose latest later attempt COMPLETED was resolved by
    a restart (a COMPLETED instance takes no further attempt, spec 2.2).
    One statement over the rows given: per row, the greatest attempt of its
    instance and that attempt's row, both exact lookups on the unique
    ``(job_instance_id, attempt)`` index; nothing else of the history is read.
    """
    wanted = {(int(row["job_instance_id"]), int(row["attempt"])): row for row in rows}
    if not wanted:
        return {}
    connection = connections[db.read_alias()]
    pairs, params = db.pairs(list(wanted), connection.alias)
    sql = (
        "SELECT x.id, x.job_instance_id, x.attempt, x.status, w.column2 "
        f"FROM {pairs} "
        "JOIN ob_job_execution x ON x.job_instance_id = w.column1 "
        "AND x.attempt = (SELECT MAX(y.attempt) FROM ob_job_execution y "
        "WHERE y.job_instance_id = w.column1) "
        "AND x.attempt > w.column2"
    )
    found: dict[int, Row] = {}
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for *values_row, before_attempt in cursor.fetchall():
            row = dict(zip(_ATTEMPT_COLUMNS, values_row, strict=True))
            before = wanted.get((row["job_instance_id"], int(before_attempt)))
            if before is not None:
                found[int(before["id"])] = row
    return found


def partition_rollups(parent_ids: Sequence[int]) -> dict[int, Rollup]:
    """Return each parent step's partition counts by segment and summed counters."""
    if not parent_ids:
        return {}
    segments = {
        name: Count("id", filter=Q(status__in=statuses)) for name, statuses in SEGMENTS
    }
    sums = {name: Coalesce(Sum(name), 0) for name in ITEM_COUNTERS}
    rows: list[Any] = list(
        StepPartition.objects.using(db.read_alias())
        .filter(step_execution_id__in=list(parent_ids))
        .order_by()
        .values("step_execution_id")
        .annotate(bb_total=Count("id"), **segments, **sums)
    )
    return {
        int(row["step_execution_id"]): Rollup(
            total=int(row["bb_total"]),
            segments={name: int(row[name]) for name, _statuses in SEGMENTS},
            counters={name: int(row[name]) for name in ITEM_COUNTERS},
        )
        for row in rows
    }


def partitions_of(
    execution_id: int, parent_ids: Sequence[int], worker_ids: Sequence[int]
) -> list[Row]:
    """
    Return the partitions of ``parent_ids``, and those run by ``worker_ids``.

    Both sets belong to one execution; the workers' partitions are found
    among that execution's steps' partitions. Ordered by parent, ordinal.
    """
    if not parent_ids and not worker_ids:
        return []
    condition = Q(step_execution_id__in=list(parent_ids))
    if worker_ids:
        condition |= Q(
            step_execution__job_execution_id=execution_id,
            worker_step_execution_id__in=list(worker_ids),
        )
    rows = (
        StepPartition.objects.using(db.read_alias())
        .filter(condition)
        .annotate(parent_name=F("step_execution__step_name"))
        .order_by("step_execution_id", "partition_ordinal")
        .values(*_PARTITION_COLUMNS)
    )
    return list(rows)


def worker_partition(execution_id: int, step_id: int) -> Row | None:
    """Return the partition a worker step ran (its key and parent), or ``None``."""
    rows: list[Any] = partitions_of(execution_id, (), (step_id,))
    return rows[0] if rows else None
