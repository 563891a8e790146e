from __future__ import annotations

import pytest

from batchboard import digests
from batchboard.models import StepPartition
from batchboard.repository import (
    DuplicatePartitionKey,
    EmptyPartitionPlan,
    Failure,
    InvalidArgument,
    JobRepository,
    PartitionAggregationIncomplete,
    PartitionContextTooLarge,
    PartitionEntry,
    PartitionParentNotActive,
    PartitionPlanExists,
    PartitionPlanNotCommitted,
    PartitionPlanTooLarge,
    PartitionStateCorrupt,
    PartitionUpdateNotAllowed,
    PartitionWorkerAlreadyAssigned,
    PartitionWorkerMismatch,
    PartitionWorkerStale,
    StaleVersion,
    StatePayload,
    StepPartitionNotFound,
)
from tests.repository.helpers import FAILURE, drive_execution

pytestmark = pytest.mark.django_db


def entry(key: str, n: int = 0) -> PartitionEntry:
    return PartitionEntry(key, StatePayload("part.ctx", {"n": n}, schema_version=2))


def parent_and_workers(repo: JobRepository, workers: int = 2):  # type: ignore[no-untyped-def]
    execution = drive_execution(repo, repo.launch("j"), "STARTED")
    parent = repo.create_step(execution.pk, "fan-out")
    parent = repo.transition_step(parent.pk, 0, "STARTED")
    steps = []
    for index in range(workers):
        worker = repo.create_step(execution.pk, f"fan-out:w{index}")
        steps.append(repo.transition_step(worker.pk, 0, "STARTED"))
    return execution, parent, steps


def finish_worker(repo: JobRepository, worker, status: str, read: int):  # type: ignore[no-untyped-def]
    from batchboard.repository import ChunkCounts

    worker = repo.commit_chunk(
        worker.pk,
        worker.version,
        job_execution_id=worker.job_execution_id,
        counts=ChunkCounts(read=read, written=read),
        checkpoint=StatePayload("w", {}),
    )
    failure = FAILURE if status == "FAILED" else None
    return repo.transition_step(worker.pk, worker.version, status, failure=failure)


def test_plan_records_partitions_with_checksums(repo: JobRepository) -> None:
    _, parent, _ = parent_and_workers(repo, 0)
    rows = repo.plan_partitions(parent.pk, [entry("b", 2), entry("a", 1)])
    assert [(r.partition_key, r.partition_ordinal) for r in rows] == [
        ("a", 2),
        ("b", 1),
    ]
    first = rows[1]
    assert (
        first.status,
        first.worker_step_execution_id,
        first.exit_code,
        first.version,
    ) == ("STARTING", None, None, 0)
    assert bytes(first.context_checksum) == digests.partition_context_checksum(
        1, "part.ctx", 2, {"n": 2}
    )
    with pytest.raises(PartitionPlanExists):
        repo.plan_partitions(parent.pk, [entry("c")])


def test_plan_validation(repo: JobRepository) -> None:
    _, parent, _ = parent_and_workers(repo, 0)
    with pytest.raises(EmptyPartitionPlan):
        repo.plan_partitions(parent.pk, [])
    with pytest.raises(PartitionPlanTooLarge):
        repo.plan_partitions(parent.pk, [entry(f"k{i}") for i in range(1025)])
    with pytest.raises(DuplicatePartitionKey):
        repo.plan_partitions(parent.pk, [entry("a"), entry("a")])
    with pytest.raises(PartitionContextTooLarge):
        repo.plan_partitions(
            parent.pk, [PartitionEntry("a", StatePayload("s", {"x": "y" * 5000}))]
        )
    with pytest.raises(InvalidArgument):
        repo.plan_partitions(
            parent.pk, [PartitionEntry("a", StatePayload("s", {"ratio": 0.5}))]
        )
    with pytest.raises(InvalidArgument):
        repo.plan_partitions(
            parent.pk, [PartitionEntry("a", StatePayload("s", {"x": float("nan")}))]
        )
    done = repo.transition_step(parent.pk, parent.version, "STOPPING")
    with pytest.raises(PartitionParentNotActive):
        repo.plan_partitions(done.pk, [entry("a")])


def test_reads_verify_the_context_checksum(repo: JobRepository) -> None:
    _, parent, _ = parent_and_workers(repo, 0)
    (row,) = repo.plan_partitions(parent.pk, [entry("a")])
    StepPartition.objects.filter(pk=row.pk).update(context_payload={"n": 99})
    with pytest.raises(PartitionStateCorrupt) as caught:
        repo.get_partition(row.pk)
    assert "99" not in str(caught.value)
    with pytest.raises(StepPartitionNotFound):
        repo.get_partition(10**9)


def test_assign_complete_aggregate(repo: JobRepository) -> None:
    execution, parent, (w0, w1) = parent_and_workers(repo)
    a, b = repo.plan_partitions(parent.pk, [entry("a"), entry("b")])
    a = repo.assign_partition(a.pk, 0, w0.pk)
    assert (a.status, a.worker_step_execution_id, a.version) == ("STARTED", w0.pk, 1)
    with pytest.raises(PartitionWorkerAlreadyAssigned):
        repo.assign_partition(b.pk, 0, w0.pk)
    with pytest.raises(PartitionWorkerMismatch):
        repo.assign_partition(b.pk, 0, parent.pk)
    with pytest.raises(StaleVersion):
        repo.assign_partition(b.pk, 3, w1.pk)
    with pytest.raises(PartitionUpdateNotAllowed):
        repo.assign_partition(a.pk, 1, w1.pk)
    b = repo.assign_partition(b.pk, 0, w1.pk)
    with pytest.raises(PartitionAggregationIncomplete):
        repo.complete_partition(a.pk, 1, w0.pk)  # the worker is still STARTED
    w0 = finish_worker(repo, w0, "COMPLETED", 5)
    w1 = finish_worker(repo, w1, "FAILED", 7)
    with pytest.raises(PartitionWorkerStale):
        repo.complete_partition(a.pk, 1, w1.pk)
    with pytest.raises(PartitionAggregationIncomplete):
        repo.aggregate_partitions(parent.pk, parent.version)
    a = repo.complete_partition(a.pk, 1, w0.pk)
    b = repo.complete_partition(b.pk, 1, w1.pk)
    assert (a.status, a.read_count, b.status, b.exit_code) == (
        "COMPLETED",
        5,
        "FAILED",
        "UNKNOWN",
    )
    aggregated = repo.aggregate_partitions(parent.pk, parent.version)
    assert (aggregated.status, aggregated.read_count, aggregated.commit_count) == (
        "FAILED",
        12,
        2,
    )
    assert (aggregated.failure_category, aggregated.version) == (
        "TRANSIENT_INFRASTRUCTURE",
        parent.version + 1,
    )
    again = repo.aggregate_partitions(parent.pk, parent.version)
    assert again.version == aggregated.version
    assert execution.pk == aggregated.job_execution_id


def test_aggregate_detects_a_partition_that_drifted_from_its_worker(
    repo: JobRepository,
) -> None:
    _, parent, (w0,) = parent_and_workers(repo, 1)
    (a,) = repo.plan_partitions(parent.pk, [entry("a")])
    repo.assign_partition(a.pk, 0, w0.pk)
    w0 = finish_worker(repo, w0, "COMPLETED", 3)
    repo.complete_partition(a.pk, 1, w0.pk)
    StepPartition.objects.filter(pk=a.pk).update(read_count=4)
    with pytest.raises(PartitionStateCorrupt):
        repo.aggregate_partitions(parent.pk, parent.version)


def test_retry_assignment_after_a_failed_worker(repo: JobRepository) -> None:
    _, parent, (w0, w1) = parent_and_workers(repo)
    (a,) = repo.plan_partitions(parent.pk, [entry("a")])
    repo.assign_partition(a.pk, 0, w0.pk)
    w0 = finish_worker(repo, w0, "FAILED", 1)
    a = repo.complete_partition(a.pk, 1, w0.pk)
    a = repo.assign_partition(a.pk, 2, w1.pk)
    assert (a.status, a.worker_step_execution_id, a.read_count, a.exit_code) == (
        "STARTED",
        w1.pk,
        0,
        None,
    )


def test_restart_carries_completed_partitions(repo: JobRepository) -> None:
    execution, parent, (w0, w1) = parent_and_workers(repo)
    a, b = repo.plan_partitions(parent.pk, [entry("a", 1), entry("b", 2)])
    repo.assign_partition(a.pk, 0, w0.pk)
    repo.assign_partition(b.pk, 0, w1.pk)
    w0 = finish_worker(repo, w0, "COMPLETED", 4)
    w1 = finish_worker(repo, w1, "FAILED", 1)
    repo.complete_partition(a.pk, 1, w0.pk)
    repo.complete_partition(b.pk, 1, w1.pk)
    parent = repo.aggregate_partitions(parent.pk, parent.version)
    with pytest.raises(PartitionStateCorrupt):
        repo.restart_partitions(parent.pk, parent.pk)  # the source job is still running
    repo.transition_execution(
        execution.pk, execution.version, "FAILED", failure=Failure("USER_COMPONENT", 3)
    )
    second = drive_execution(repo, repo.launch("j"), "STARTED")
    target = repo.create_step(second.pk, "fan-out")
    rows = repo.restart_partitions(parent.pk, target.pk)
    carried, reset = rows
    assert (carried.status, carried.worker_step_execution_id, carried.read_count) == (
        "COMPLETED",
        w0.pk,
        4,
    )
    assert (
        reset.status,
        reset.worker_step_execution_id,
        reset.read_count,
        reset.exit_code,
    ) == ("STARTING", None, 0, None)
    assert reset.context_payload == {"n": 2} and carried.version == reset.version == 0
    with pytest.raises(PartitionPlanExists):
        repo.restart_partitions(parent.pk, target.pk)


def test_workers_wait_for_the_plan_to_commit(repo: JobRepository) -> None:
    _, parent, (w0,) = parent_and_workers(repo, 1)
    with pytest.raises(PartitionPlanNotCommitted), repo.unit():
        (a,) = repo.plan_partitions(parent.pk, [entry("a")])
        repo.assign_partition(a.pk, 0, w0.pk)
    assert not StepPartition.objects.filter(step_execution_id=parent.pk).exists()
    (a,) = repo.plan_partitions(parent.pk, [entry("a")])
    assert repo.assign_partition(a.pk, 0, w0.pk).status == "STARTED"
