"""
Partitioned steps: the plan, worker assignment, completion, aggregation
and restart carry-over (spec 7.6).

A parent step plans up to 1024 partitions, each with a key and a small
context whose checksum is stored beside it and verified on every read.
Worker steps of the same job execution are assigned one partition each;
their results are copied onto the partition and finally aggregated onto
the parent: the most severe status, the exit code of the first partition
(in key byte order) with that status, and the summed counters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from batchboard import digests
from batchboard.models import JobExecution, StepExecution, StepPartition
from batchboard.repository.cas import cas_transition, cas_update, check_version
from batchboard.repository.errors import (
    DuplicatePartitionKey,
    EmptyPartitionPlan,
    InvalidArgument,
    PartitionAggregationIncomplete,
    PartitionContextTooLarge,
    PartitionCountOverflow,
    PartitionParentNotActive,
    PartitionPlanExists,
    PartitionPlanNotCommitted,
    PartitionPlanTooLarge,
    PartitionStateCorrupt,
    PartitionUpdateNotAllowed,
    PartitionWorkerAlreadyAssigned,
    PartitionWorkerMismatch,
    PartitionWorkerStale,
    StepExecutionNotFound,
    StepPartitionNotFound,
)
from batchboard.repository.lifecycle import (
    COMPLETED,
    FAILED,
    STARTED,
    STARTING,
    STOPPED,
    STOPPING,
    UNKNOWN,
    Failure,
)
from batchboard.repository.steps import StatePayload, StepsMixin
from batchboard.repository.validation import check_name
from batchboard.schema import ITEM_COUNTERS
from batchboard.vocabulary import MAX_BIGINT

MAX_PARTITIONS = 1024
CONTEXT_ENVELOPE_LIMIT = 4096
# Aggregation severity, least to most severe.
SEVERITY = (COMPLETED, STOPPED, FAILED, UNKNOWN)


@dataclass(frozen=True)
class PartitionEntry:
    """One planned partition: a key (1..128 bytes) and its context."""

    key: str
    context: StatePayload


def _key_order(partition: StepPartition) -> bytes:
    return partition.partition_key.encode("utf-8")


def _envelope(context: StatePayload) -> bytes:
    """Return the canonical envelope of a partition context, which its checksum covers."""
    return digests.partition_context_envelope(
        context.format_version, context.schema, context.schema_version, context.payload
    )


def verify_partition(partition: StepPartition) -> StepPartition:
    """Return ``partition`` if its stored context matches its checksum."""
    stored = StatePayload(
        partition.context_schema,
        partition.context_payload,
        partition.context_schema_version,
        partition.context_format,
    )
    try:
        expected = digests.sha256(_envelope(stored))
    except (TypeError, ValueError):
        expected = b""
    if bytes(partition.context_checksum) != expected:
        raise PartitionStateCorrupt(
            "context checksum mismatch", partition_id=partition.pk
        )
    return partition


class PartitionsMixin(StepsMixin):
    # -- reading --------------------------------------------------------------

    def partitions(self, step_execution_id: int) -> list[StepPartition]:
        """Return a parent step's partitions in key byte order, verified."""
        if (
            not StepExecution.objects.using(self.alias)
            .filter(pk=step_execution_id)
            .exists()
        ):
            raise StepExecutionNotFound(step_execution_id)
        rows = StepPartition.objects.using(self.alias).filter(
            step_execution_id=step_execution_id
        )
        return [verify_partition(row) for row in sorted(rows, key=_key_order)]

    def get_partition(self, partition_id: int) -> StepPartition:
        """Return one partition, verified, or raise :class:`StepPartitionNotFound`."""
        return verify_partition(self._row(StepPartition, partition_id))

    # -- plan -----------------------------------------------------------------

    def plan_partitions(
        self, step_execution_id: int, entries: Sequence[PartitionEntry]
    ) -> list[StepPartition]:
        """
        Record the partition plan of a STARTING or STARTED parent step.

        Ordinals follow the input order from 1; every partition starts
        STARTING without a worker. Raises :class:`EmptyPartitionPlan`,
        :class:`PartitionPlanTooLarge`, :class:`DuplicatePartitionKey`,
        :class:`PartitionContextTooLarge`, :class:`PartitionParentNotActive`
        and :class:`PartitionPlanExists`.
        """
        if not entries:
            raise EmptyPartitionPlan()
        if len(entries) > MAX_PARTITIONS:
            raise PartitionPlanTooLarge(len(entries), MAX_PARTITIONS)
        seen: set[str] = set()
        rows: list[dict[str, Any]] = []
        for ordinal, entry in enumerate(entries, start=1):
            check_name(entry.key, "partition key")
            if entry.key in seen:
                raise DuplicatePartitionKey(ordinal)
            seen.add(entry.key)
            context = entry.context.validated("partition context")
            try:
                envelope = _envelope(context)
            except ValueError:
                raise InvalidArgument(
                    f"partition {ordinal} has a context with floats; use integers"
                ) from None
            if len(envelope) > CONTEXT_ENVELOPE_LIMIT:
                raise PartitionContextTooLarge(
                    ordinal, len(envelope), CONTEXT_ENVELOPE_LIMIT
                )
            rows.append(
                {
                    "partition_key": entry.key,
                    "partition_ordinal": ordinal,
                    **context.columns("context"),
                    "context_checksum": digests.sha256(envelope),
                }
            )
        with self.unit():
            parent = self._lock_step(step_execution_id)
            if parent.status not in (STARTING, STARTED):
                raise PartitionParentNotActive(step_execution_id, parent.status)
            if self._has_plan(step_execution_id):
                raise PartitionPlanExists(step_execution_id)
            self._plans_in_this_unit().add(step_execution_id)
            StepPartition.objects.using(self.alias).bulk_create(
                [
                    StepPartition(
                        step_execution_id=step_execution_id,
                        status=STARTING,
                        exit_code=None,
                        version=0,
                        **row,
                    )
                    for row in rows
                ]
            )
            return self.partitions(step_execution_id)

    def restart_partitions(
        self, source_step_execution_id: int, target_step_execution_id: int
    ) -> list[StepPartition]:
        """
        Carry a failed or stopped attempt's partition plan over to its restart.

        The source step must belong to a FAILED or STOPPED job execution and
        share the target's logical id; the target must be STARTING or
        STARTED without a plan. COMPLETED partitions keep their worker, exit
        code and counters (they never run again); all others restart as
        STARTING without a worker.
        """
        with self.unit():
            target = self._lock_step(target_step_execution_id)
            source = (
                StepExecution.objects.using(self.alias)
                .select_for_update()
                .filter(pk=source_step_execution_id)
                .first()
            )
            if source is None:
                raise PartitionStateCorrupt("the source step does not exist")
            source_job_status = (
                JobExecution.objects.using(self.alias)
                .filter(pk=source.job_execution_id)
                .values_list("status", flat=True)
                .get()
            )
            if (
                source.step_logical_id != target.step_logical_id
                or source_job_status
                not in (
                    FAILED,
                    STOPPED,
                )
            ):
                raise PartitionStateCorrupt(
                    "the source is not a failed or stopped attempt of the same step"
                )
            if target.status not in (STARTING, STARTED):
                raise PartitionParentNotActive(target_step_execution_id, target.status)
            if self._has_plan(target_step_execution_id):
                raise PartitionPlanExists(target_step_execution_id)
            sources = [
                verify_partition(row)
                for row in StepPartition.objects.using(self.alias)
                .select_for_update()
                .filter(step_execution_id=source_step_execution_id)
                .order_by("partition_ordinal")
            ]
            if not sources:
                raise PartitionStateCorrupt("the source step has no partition plan")
            copies = []
            for row in sources:
                completed = row.status == COMPLETED
                if completed and row.worker_step_execution_id is None:
                    raise PartitionStateCorrupt(
                        "a completed partition has no worker", partition_id=row.pk
                    )
                copies.append(
                    StepPartition(
                        step_execution_id=target_step_execution_id,
                        worker_step_execution_id=row.worker_step_execution_id
                        if completed
                        else None,
                        partition_key=row.partition_key,
                        partition_ordinal=row.partition_ordinal,
                        status=COMPLETED if completed else STARTING,
                        exit_code=row.exit_code if completed else None,
                        context_format=row.context_format,
                        context_schema=row.context_schema,
                        context_schema_version=row.context_schema_version,
                        context_payload=row.context_payload,
                        context_checksum=bytes(row.context_checksum),
                        version=0,
                        **{
                            name: getattr(row, name) if completed else 0
                            for name in ITEM_COUNTERS
                        },
                    )
                )
            self._plans_in_this_unit().add(target_step_execution_id)
            StepPartition.objects.using(self.alias).bulk_create(copies)
            return self.partitions(target_step_execution_id)

    # -- workers --------------------------------------------------------------

    def assign_partition(
        self, partition_id: int, expected_version: int, worker_step_execution_id: int
    ) -> StepPartition:
        """
        Assign a worker step to a partition and mark the partition STARTED.

        The plan must have committed before: assigning inside the
        ``repo.unit()`` that planned it raises
        :class:`PartitionPlanNotCommitted`.

        The parent must be STARTED; the partition STARTING without a worker
        (first run) or FAILED/STOPPED with one (a retry); the worker another
        step of the same job execution with no other partition. Counters
        reset to zero and the exit code to NULL.
        """
        with self.unit():
            parent_id = self._parent_of(partition_id)
            parent = self._lock_step(parent_id)
            if parent.status != STARTED:
                raise PartitionParentNotActive(parent_id, parent.status)
            partition = self._lock_partition(partition_id)
            if parent_id in self._plans_in_this_unit():
                raise PartitionPlanNotCommitted(parent_id)
            check_version(partition, expected_version)
            first = (
                partition.status == STARTING
                and partition.worker_step_execution_id is None
            )
            retry = (
                partition.status in (FAILED, STOPPED)
                and partition.worker_step_execution_id is not None
            )
            if not (first or retry):
                raise PartitionUpdateNotAllowed(partition_id, partition.status)
            worker = self._lock_step(worker_step_execution_id)
            if (
                worker.job_execution_id != parent.job_execution_id
                or worker.pk == parent.pk
            ):
                raise PartitionWorkerMismatch(partition_id, worker_step_execution_id)
            if (
                StepPartition.objects.using(self.alias)
                .filter(worker_step_execution_id=worker_step_execution_id)
                .exists()
            ):
                raise PartitionWorkerAlreadyAssigned(worker_step_execution_id)
            values: dict[str, Any] = {
                "worker_step_execution_id": worker_step_execution_id,
                "status": STARTED,
                "exit_code": None,
                "version": expected_version + 1,
                **dict.fromkeys(ITEM_COUNTERS, 0),
            }
            self._update_partition(partition, expected_version, values)
            return partition

    def complete_partition(
        self, partition_id: int, expected_version: int, worker_step_execution_id: int
    ) -> StepPartition:
        """
        Copy a finished worker's status, exit code and counters onto its partition.

        The parent must be STARTED or STOPPING, the partition STARTED with
        this worker (else :class:`PartitionWorkerStale`), and the worker
        COMPLETED, FAILED, STOPPED or UNKNOWN (else
        :class:`PartitionAggregationIncomplete`).
        """
        with self.unit():
            parent_id = self._parent_of(partition_id)
            parent = self._lock_step(parent_id)
            if parent.status not in (STARTED, STOPPING):
                raise PartitionParentNotActive(parent_id, parent.status)
            partition = self._lock_partition(partition_id)
            if partition.worker_step_execution_id != worker_step_execution_id:
                raise PartitionWorkerStale(partition_id, worker_step_execution_id)
            worker = self._lock_step(worker_step_execution_id)
            if worker.job_execution_id != parent.job_execution_id:
                raise PartitionWorkerMismatch(partition_id, worker_step_execution_id)
            if worker.status not in SEVERITY:
                raise PartitionAggregationIncomplete(parent_id)
            check_version(partition, expected_version)
            if partition.status != STARTED:
                raise PartitionUpdateNotAllowed(partition_id, partition.status)
            values: dict[str, Any] = {
                "status": worker.status,
                "exit_code": worker.exit_code,
                "version": expected_version + 1,
                **{name: getattr(worker, name) for name in ITEM_COUNTERS},
            }
            self._update_partition(partition, expected_version, values)
            return partition

    def aggregate_partitions(
        self,
        step_execution_id: int,
        expected_version: int,
        *,
        at: datetime | None = None,
    ) -> StepExecution:
        """
        Finish a parent step from its partitions' results.

        Every partition needs a worker, a finished-or-UNKNOWN status and
        values equal to its worker's row. The parent moves (CAS from
        ``expected_version``, at ``at``) to the most severe status, with the
        exit code of the first such partition in key byte order, the summed
        counters and that worker's failure. Repeating an aggregation that
        already happened returns the parent unchanged.
        """
        with self.unit():
            parent = self._lock_step(step_execution_id)
            partitions = sorted(
                (
                    verify_partition(row)
                    for row in StepPartition.objects.using(self.alias)
                    .select_for_update()
                    .filter(step_execution_id=step_execution_id)
                ),
                key=_key_order,
            )
            if not partitions:
                raise PartitionAggregationIncomplete(step_execution_id)
            for partition in partitions:
                if (
                    partition.worker_step_execution_id is None
                    or partition.status not in SEVERITY
                ):
                    raise PartitionAggregationIncomplete(step_execution_id)
            status = max((p.status for p in partitions), key=SEVERITY.index)
            selected = next(p for p in partitions if p.status == status)
            totals = {
                name: sum(getattr(p, name) for p in partitions)
                for name in ITEM_COUNTERS
            }
            if any(total > MAX_BIGINT for total in totals.values()):
                raise PartitionCountOverflow(step_execution_id)
            # Keyed by worker id; every partition was checked to have one.
            workers: dict[int | None, StepExecution] = {
                row.pk: row
                for row in StepExecution.objects.using(self.alias)
                .select_for_update()
                .filter(pk__in=[p.worker_step_execution_id for p in partitions])
            }
            for partition in partitions:
                worker = workers.get(partition.worker_step_execution_id)
                if worker is None or (
                    worker.status != partition.status
                    or worker.exit_code != partition.exit_code
                    or any(
                        getattr(worker, n) != getattr(partition, n)
                        for n in ITEM_COUNTERS
                    )
                ):
                    raise PartitionStateCorrupt(
                        "a partition differs from its worker", partition_id=partition.pk
                    )
            chosen = workers[selected.worker_step_execution_id]
            failure = Failure.recorded(chosen.failure_category, chosen.failure_id)
            if (
                parent.version == expected_version + 1
                and parent.status == status
                and parent.exit_code == selected.exit_code
                and all(getattr(parent, n) == totals[n] for n in ITEM_COUNTERS)
                and parent.failure_category == (failure.category if failure else None)
                and parent.failure_id == (failure.failure_id if failure else None)
            ):
                return parent
            if parent.status not in (STARTED, STOPPING):
                raise PartitionParentNotActive(step_execution_id, parent.status)
            return cas_transition(
                parent,
                using=self.alias,
                expected=expected_version,
                to_status=status,
                at=self.instant(at),
                failure=failure,
                extra={"exit_code": selected.exit_code, **totals},
            )

    # -- helpers --------------------------------------------------------------

    def _lock_step(self, step_execution_id: int) -> StepExecution:
        return self._row(StepExecution, step_execution_id, lock=True)

    def _lock_partition(self, partition_id: int) -> StepPartition:
        return verify_partition(self._row(StepPartition, partition_id, lock=True))

    def _parent_of(self, partition_id: int) -> int:
        parent_id = (
            StepPartition.objects.using(self.alias)
            .filter(pk=partition_id)
            .values_list("step_execution_id", flat=True)
            .first()
        )
        if parent_id is None:
            raise StepPartitionNotFound(partition_id)
        return int(parent_id)

    def _has_plan(self, step_execution_id: int) -> bool:
        return (
            StepPartition.objects.using(self.alias)
            .filter(step_execution_id=step_execution_id)
            .exists()
        )

    def _update_partition(
        self, partition: StepPartition, expected: int, values: dict[str, Any]
    ) -> None:
        cas_update(StepPartition, self.alias, partition.pk, expected, **values)
        for name, value in values.items():
            setattr(partition, name, value)
