"""
Random operation sequences never break the lifecycle or a check constraint.

Each example drives one fresh job through a random mix of launches,
transitions, step work, stop requests and claims. Expected refusals
(illegal transitions, stale versions, ...) are part of the game; a
constraint violation from the database, or any state change outside the
transition table, fails the test.
"""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchboard import schema
from batchboard.models import JobExecution, StepExecution
from batchboard.repository import (
    TRANSITIONS,
    ChunkCounts,
    ConcurrentModification,
    Failure,
    JobRepository,
    ManualClock,
    RepositoryError,
    StatePayload,
    Unavailable,
)

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db]

STATUSES = list(TRANSITIONS)
_names = itertools.count()

operations = st.one_of(
    st.tuples(st.just("launch")),
    st.tuples(
        st.just("exec"), st.sampled_from(STATUSES), st.booleans(), st.integers(-20, 50)
    ),
    st.tuples(st.just("step_create"), st.sampled_from(["a", "b"])),
    st.tuples(
        st.just("step"),
        st.integers(0, 3),
        st.sampled_from(STATUSES),
        st.booleans(),
        st.integers(-20, 50),
    ),
    st.tuples(st.just("chunk"), st.integers(0, 3), st.integers(0, 5)),
    st.tuples(st.just("stop")),
    st.tuples(st.just("claim")),
    st.tuples(st.just("observe")),
    st.tuples(st.just("enrich"), st.integers(0, 3)),
)

TOKEN = b"\x01" * 16


def apply(
    repo: JobRepository, clock: ManualClock, job: str, op: tuple[Any, ...]
) -> None:
    latest = (
        JobExecution.objects.filter(job_instance__job_name=job)
        .order_by("-attempt")
        .first()
    )
    steps = list(
        StepExecution.objects.filter(
            job_execution__job_instance__job_name=job
        ).order_by("id")
    )
    kind = op[0]
    clock.advance(milliseconds=7)
    if kind == "launch":
        repo.launch(job)
        return
    if latest is None:
        return
    if kind == "exec":
        _, target, failed, delta = op
        failure = Failure("TIMEOUT", 1) if failed else None
        repo.transition_execution(
            latest.pk,
            latest.version,
            target,
            failure=failure,
            at=clock.now() + timedelta(milliseconds=delta),
        )
    elif kind == "step_create":
        repo.create_step(latest.pk, op[1])
    elif kind == "stop":
        repo.request_stop(latest.pk, latest.version, actor="prop")
    elif kind == "claim":
        repo.claim_execution(latest.pk, latest.version, TOKEN)
    elif kind == "observe":
        repo.observe_control(latest.pk, TOKEN)
    elif steps:
        step = steps[op[1] % len(steps)]
        if kind == "step":
            _, _, target, failed, delta = op
            repo.transition_step(
                step.pk,
                step.version,
                target,
                failure=Failure("USER_COMPONENT", 2) if failed else None,
                at=clock.now() + timedelta(milliseconds=delta),
            )
        elif kind == "chunk":
            repo.commit_chunk(
                step.pk,
                step.version,
                job_execution_id=step.job_execution_id,
                counts=ChunkCounts(read=op[2], written=op[2]),
                checkpoint=StatePayload("prop.position", {"n": op[2]}),
            )
        else:
            repo.enrich_step_exit_status(step.pk, step.version, "ENRICHED")


def snapshot(job: str) -> dict[tuple[str, int], Any]:
    rows: dict[tuple[str, int], Any] = {}
    for row in JobExecution.objects.filter(job_instance__job_name=job):
        rows[("job", row.pk)] = row
    for row in StepExecution.objects.filter(job_execution__job_instance__job_name=job):
        rows[("step", row.pk)] = row
    return rows


def check_row(row: Any) -> None:
    assert row.status in schema.STATUSES
    assert (row.ended_at is None) == (row.status in schema.UNRESOLVED)
    assert (row.failure_category is None) == (row.failure_id is None)
    if row.status == "FAILED":
        assert row.failure_category is not None
    if row.started_at is not None:
        assert row.started_at >= row.created_at
    if row.ended_at is not None:
        assert row.ended_at >= (row.started_at or row.created_at)
    assert row.updated_at >= row.created_at


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(operations, min_size=1, max_size=25))
def test_random_operations_respect_the_lifecycle(ops: list[tuple[Any, ...]]) -> None:
    clock = ManualClock()
    repo = JobRepository(clock=clock)
    job = f"prop-{next(_names)}"
    before = snapshot(job)
    for op in ops:
        try:
            apply(repo, clock, job, op)
        except (ConcurrentModification, Unavailable):
            raise
        except RepositoryError:
            pass
        after = snapshot(job)
        for key, row in after.items():
            check_row(row)
            old = before.get(key)
            if old is None:
                assert row.status == "STARTING" and row.version == 0
                continue
            assert row.version >= old.version
            if row.status != old.status:
                assert row.status in TRANSITIONS[old.status], (old.status, row.status)
                assert row.version == old.version + 1
        unresolved = [
            r
            for k, r in after.items()
            if k[0] == "job" and r.status in schema.UNRESOLVED
        ]
        assert len(unresolved) <= 1
        before = after
