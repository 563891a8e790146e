"""
Races on PostgreSQL, with real threads and one connection per thread.

Each test starts its threads at a barrier so they collide, and each thread
closes its own connection when done (they are thread-local in Django).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connections

from batchboard.models import JobExecution, JobInstance, StepExecution, StepPartition
from batchboard.repository import (
    ChunkCounts,
    ExecutionAlreadyActive,
    JobRepository,
    PartitionEntry,
    PartitionWorkerAlreadyAssigned,
    StaleVersion,
    StatePayload,
)
from tests.repository.conftest import params

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]
THREADS = 6


def race(work: Callable[[int], Any], threads: int = THREADS) -> list[Any]:
    """Run ``work(i)`` in ``threads`` threads at once; return results or errors."""
    barrier = threading.Barrier(threads)
    results: list[Any] = [None] * threads

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=10)
            results[index] = work(index)
        except Exception as error:  # collected and asserted on by the caller
            results[index] = error
        finally:
            connections.close_all()

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
        assert not worker.is_alive(), "a thread hung (deadlock?)"
    return results


def test_simultaneous_launches_create_one_instance_and_one_attempt() -> None:
    results = race(lambda _: JobRepository().launch("race", params()))
    winners = [r for r in results if isinstance(r, JobExecution)]
    losers = [r for r in results if isinstance(r, ExecutionAlreadyActive)]
    assert len(winners) == 1 and len(losers) == THREADS - 1, results
    assert {loser.execution_id for loser in losers} == {winners[0].pk}
    assert {loser.status for loser in losers} == {"STARTING"}
    assert JobInstance.objects.filter(job_name="race").count() == 1
    assert list(JobExecution.objects.values_list("status", "attempt")) == [
        ("STARTING", 1)
    ]


def test_simultaneous_transitions_from_one_version_have_one_winner() -> None:
    execution = JobRepository().launch("race")
    targets = ["STARTED", "STOPPING", "UNKNOWN", "STARTED", "STOPPING", "UNKNOWN"]
    results = race(
        lambda i: JobRepository().transition_execution(execution.pk, 0, targets[i])
    )
    winners = [r for r in results if isinstance(r, JobExecution)]
    assert len(winners) == 1, results
    assert all(isinstance(r, StaleVersion) for r in results if r not in winners)
    stored = JobExecution.objects.get(pk=execution.pk)
    assert (stored.status, stored.version) == (winners[0].status, 1)


def test_simultaneous_assignments_of_one_worker_have_one_winner() -> None:
    repo = JobRepository()
    execution = repo.launch("race")
    execution = repo.transition_execution(execution.pk, 0, "STARTED")
    parent = repo.transition_step(
        repo.create_step(execution.pk, "parent").pk, 0, "STARTED"
    )
    worker = repo.transition_step(
        repo.create_step(execution.pk, "worker").pk, 0, "STARTED"
    )
    plan = repo.plan_partitions(
        parent.pk,
        [
            PartitionEntry(f"p{i}", StatePayload("ctx", {"i": i}))
            for i in range(THREADS)
        ],
    )
    results = race(lambda i: JobRepository().assign_partition(plan[i].pk, 0, worker.pk))
    winners = [r for r in results if isinstance(r, StepPartition)]
    assert len(winners) == 1, results
    assert all(
        isinstance(r, PartitionWorkerAlreadyAssigned)
        for r in results
        if r not in winners
    )
    assert StepPartition.objects.filter(worker_step_execution_id=worker.pk).count() == 1


def test_concurrent_chunk_commits_lose_no_update() -> None:
    repo = JobRepository()
    execution = repo.transition_execution(repo.launch("race").pk, 0, "STARTED")
    step = repo.transition_step(repo.create_step(execution.pk, "load").pk, 0, "STARTED")
    per_thread = 5

    def commit_with_retries(index: int) -> int:
        mine = JobRepository()
        done = conflicts = 0
        while done < per_thread:
            current = mine.get_step(step.pk)
            try:
                mine.commit_chunk(
                    step.pk,
                    current.version,
                    job_execution_id=execution.pk,
                    counts=ChunkCounts(read=1, written=1),
                    checkpoint=StatePayload("pos", {"thread": index, "done": done}),
                )
                done += 1
            except StaleVersion:
                conflicts += 1
        return conflicts

    results = race(commit_with_retries)
    assert all(isinstance(r, int) for r in results), results
    stored = StepExecution.objects.get(pk=step.pk)
    total = THREADS * per_thread
    assert (stored.read_count, stored.commit_count, stored.version) == (
        total,
        total,
        total + 1,
    )


def test_attempts_and_flow_steps_lock_the_instance_row() -> None:
    """The statements that count attempts and starts run under FOR UPDATE."""
    from django.test.utils import CaptureQueriesContext

    repo = JobRepository()
    connection = connections[repo.alias]
    with CaptureQueriesContext(connection) as launch:
        execution = repo.launch("locks")
    with CaptureQueriesContext(connection) as flow_step:
        repo.create_flow_step(execution.pk, "load", "load")
    for captured in (launch, flow_step):
        assert any(
            'FROM "ob_job_instance"' in query["sql"] and "FOR UPDATE" in query["sql"]
            for query in captured.captured_queries
        )
