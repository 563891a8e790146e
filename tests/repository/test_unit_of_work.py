from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import DatabaseError, IntegrityError, OperationalError, connections
from django.test import override_settings

from batchboard.db import map_database_error
from batchboard.models import JobExecution, StepExecution, StepPartition
from batchboard.repository import (
    ConcurrentModification,
    ConstraintViolation,
    ExecutionAlreadyActive,
    JobRepository,
    ManualClock,
    PartitionCountOverflow,
    PartitionEntry,
    RepositoryError,
    StatePayload,
    SystemClock,
    Unavailable,
    truncate_ms,
)
from tests.repository.helpers import drive_execution


def test_clocks_yield_aware_whole_milliseconds() -> None:
    now = SystemClock().now()
    assert now.tzinfo is not None and now.microsecond % 1000 == 0
    moment = datetime(2026, 1, 1, 0, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    assert truncate_ms(moment).microsecond == 123000
    with pytest.raises(ValueError):
        truncate_ms(datetime(2026, 1, 1))
    clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))
    assert clock.advance(milliseconds=1500) == datetime(
        2026, 1, 1, 0, 0, 1, 500000, tzinfo=UTC
    )
    with pytest.raises(ValueError):
        clock.advance(seconds=-1)


def test_naive_custom_clock_is_refused() -> None:
    class Naive:
        def now(self) -> datetime:
            return datetime(2026, 1, 1)

    with pytest.raises(ValueError):
        JobRepository(clock=Naive()).now()


def test_alias_follows_settings_unless_given() -> None:
    assert JobRepository().alias == "default"
    assert JobRepository(using="metadata").alias == "metadata"
    with override_settings(BATCHBOARD={"DATABASE": "elsewhere"}):
        assert JobRepository().alias == "elsewhere"
    with pytest.raises(ValueError):
        JobRepository(lock_timeout_ms=10, statement_timeout_ms=5)


def test_database_errors_are_repository_errors() -> None:
    """The unit of work's errors (tested in tests/test_db.py) are the repository's."""
    integrity = map_database_error(IntegrityError("Key (x)=(secret) already exists"))
    locked = map_database_error(OperationalError("database is locked"))
    other = map_database_error(DatabaseError("relation ob_x does not exist: secret"))
    assert isinstance(integrity, ConstraintViolation)
    assert isinstance(locked, ConcurrentModification)
    assert isinstance(other, Unavailable)
    assert all(isinstance(e, RepositoryError) for e in (integrity, locked, other))


@pytest.mark.django_db
def test_unit_maps_a_failing_statement_and_rolls_back() -> None:
    repo = JobRepository(clock=ManualClock())
    with pytest.raises(Unavailable), repo.unit():
        repo.launch("rolled-back")
        with connections[repo.alias].cursor() as cursor:
            cursor.execute("SELECT * FROM ob_no_such_table")
    assert not JobExecution.objects.filter(
        job_instance__job_name="rolled-back"
    ).exists()


@pytest.mark.django_db
def test_unique_violation_of_a_lock_skipping_writer_is_execution_already_active(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Had the instance lock been skipped, the unresolved index still decides."""
    repo = JobRepository(clock=ManualClock())
    first = repo.launch("racy")
    calls: list[int] = []
    real = repo.latest_execution

    def blind_once(instance_id: int):  # type: ignore[no-untyped-def]
        calls.append(instance_id)
        return None if len(calls) == 1 else real(instance_id)

    monkeypatch.setattr(repo, "latest_execution", blind_once)
    with pytest.raises(ExecutionAlreadyActive) as caught:
        repo.create_execution(first.job_instance_id)
    assert (caught.value.execution_id, caught.value.status) == (first.pk, "STARTING")
    assert JobExecution.objects.count() == 1


@pytest.mark.postgresql
@pytest.mark.django_db
def test_units_bound_their_statements_and_lock_waits() -> None:
    repo = JobRepository(lock_timeout_ms=1234, statement_timeout_ms=4321)
    with repo.unit(), connections[repo.alias].cursor() as cursor:
        cursor.execute("SHOW lock_timeout")
        assert cursor.fetchone()[0] == "1234ms"
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "4321ms"


@pytest.mark.django_db
def test_aggregated_counters_may_not_overflow() -> None:
    repo = JobRepository(clock=ManualClock())
    execution = drive_execution(repo, repo.launch("big"), "STARTED")
    parent = repo.transition_step(
        repo.create_step(execution.pk, "parent").pk, 0, "STARTED"
    )
    plan = repo.plan_partitions(
        parent.pk, [PartitionEntry(k, StatePayload("c", {})) for k in ("a", "b")]
    )
    huge = 2**62
    for index, partition in enumerate(plan):
        worker = repo.create_step(execution.pk, f"w{index}")
        worker = repo.transition_step(worker.pk, 0, "STARTED")
        repo.assign_partition(partition.pk, 0, worker.pk)
        worker = repo.transition_step(worker.pk, worker.version, "COMPLETED")
        StepExecution.objects.filter(pk=worker.pk).update(read_count=huge)
        repo.complete_partition(partition.pk, 1, worker.pk)
    assert StepPartition.objects.filter(read_count=huge).count() == 2
    with pytest.raises(PartitionCountOverflow):
        repo.aggregate_partitions(parent.pk, parent.version)
