"""The invariant checker finds what the schema does not enforce, by id only."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from batchboard.demo.verify import check_history
from batchboard.models import JobExecution, JobInstance, StepExecution
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def restarted() -> tuple[JobExecution, JobExecution]:
    """A failed first attempt and its completed restart, each with a step."""
    instance = factories.instance()
    first = factories.execution(instance, "FAILED")
    assert first.ended_at is not None
    second = factories.execution(
        instance,
        "COMPLETED",
        restart_of=first,
        created_at=first.ended_at + timedelta(minutes=1),
    )
    factories.step(first, status="FAILED")
    factories.step(second)
    return first, second


def test_lawful_history_has_no_problem(
    restarted: tuple[JobExecution, JobExecution],
) -> None:
    assert check_history() == []


def _corrupt_key(first: JobExecution, second: JobExecution) -> None:
    JobInstance.objects.filter(pk=first.job_instance_id).update(instance_key=bytes(32))


def _skip_an_attempt(first: JobExecution, second: JobExecution) -> None:
    JobExecution.objects.filter(pk=second.pk).update(attempt=3)


def _break_the_restart_link(first: JobExecution, second: JobExecution) -> None:
    JobExecution.objects.filter(pk=second.pk).update(restart_of_execution=None)


def _restart_a_completed_attempt(first: JobExecution, second: JobExecution) -> None:
    JobExecution.objects.filter(pk=first.pk).update(
        status="COMPLETED",
        exit_code="COMPLETED",
        failure_category=None,
        failure_id=None,
    )


def _corrupt_a_checksum(first: JobExecution, second: JobExecution) -> None:
    StepExecution.objects.filter(job_execution=second).update(
        fault_state_checksum=bytes(32)
    )


@pytest.mark.parametrize(
    ("corrupt", "problem"),
    [
        (_corrupt_key, "instance {instance}: instance key does not recompute"),
        (_skip_an_attempt, "instance {instance}: attempts not 1..2"),
        (
            _break_the_restart_link,
            "execution {second}: restart_of is not the previous attempt",
        ),
        (
            _restart_a_completed_attempt,
            "execution {second}: restarts a COMPLETED attempt",
        ),
        (_corrupt_a_checksum, "step {step}: fault state checksum does not recompute"),
    ],
)
def test_each_broken_rule_is_reported_by_id(
    restarted: tuple[JobExecution, JobExecution],
    corrupt: Callable[[JobExecution, JobExecution], None],
    problem: str,
) -> None:
    first, second = restarted
    corrupt(first, second)
    step = StepExecution.objects.get(job_execution=second)
    expected = problem.format(
        instance=first.job_instance_id, second=second.pk, step=step.pk
    )
    assert expected in check_history()
