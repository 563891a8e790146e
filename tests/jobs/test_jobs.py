from __future__ import annotations

import logging

import pytest

from batchboard.jobs import Job, JobFailure, StepContext, StopRequested
from batchboard.models import JobExecution, StepExecution
from batchboard.repository import (
    CompletedInstance,
    InvalidArgument,
    JobParameter,
    JobRepository,
    ManualClock,
)

pytestmark = pytest.mark.django_db
PARAMS = {"run_date": JobParameter.string("2026-03-01")}


@pytest.fixture
def repo() -> JobRepository:
    return JobRepository(clock=ManualClock())


class Boom(Exception):
    pass


def counting_job(
    repo: JobRepository, *, fail_at: int | None = None, total: int = 10
) -> Job:
    job = Job("counting", revision="r1", repository=repo)

    @job.step("count")
    def count(step: StepContext) -> None:
        position = step.checkpoint.get("next", 0)
        while position < total:
            if position == fail_at:
                raise Boom("secret-record-content")
            position += 2
            step.commit(read=2, written=2, checkpoint={"next": position})

    @job.step("report")
    def report(step: StepContext) -> None:
        step.commit(read=1, checkpoint={"done": True}, context={"summary": "ok"})

    return job


def test_a_run_is_recorded_like_a_runtime_run(repo: JobRepository) -> None:
    execution = counting_job(repo).run(PARAMS)
    assert (execution.status, execution.exit_code, execution.attempt) == (
        "COMPLETED",
        "COMPLETED",
        1,
    )
    assert execution.owner_token is not None
    steps = list(StepExecution.objects.filter(job_execution=execution).order_by("id"))
    assert [(s.step_name, s.status, s.exit_code) for s in steps] == [
        ("count", "COMPLETED", "COMPLETED"),
        ("report", "COMPLETED", "COMPLETED"),
    ]
    assert (steps[0].read_count, steps[0].commit_count) == (10, 5)
    assert steps[0].checkpoint_schema == "batchboard.jobs.checkpoint"
    assert steps[1].context_payload == {"summary": "ok"}
    definition = execution.definition
    assert (definition.definition_revision, definition.manifest_format) == ("r1", 2)
    assert [n["id"] for n in definition.manifest["nodes"]] == ["count", "report"]
    with pytest.raises(CompletedInstance):
        counting_job(repo).run(PARAMS)


def test_failure_is_categorised_and_restart_resumes(
    repo: JobRepository, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="batchboard.jobs")
    failed = counting_job(repo, fail_at=6).run(PARAMS)
    assert (failed.status, failed.failure_category) == ("FAILED", "USER_COMPONENT")
    step = StepExecution.objects.get(job_execution=failed)
    assert (step.status, step.failure_id, step.checkpoint_payload) == (
        "FAILED",
        failed.failure_id,
        {"next": 6},
    )
    assert "secret-record-content" not in caplog.text
    assert "Boom" in caplog.text and str(failed.failure_id) in caplog.text

    seen: list[int] = []
    job = counting_job(repo)
    original = job.steps[0].function

    def spy(step: StepContext) -> None:
        seen.append(step.checkpoint["next"])
        original(step)

    job.steps[0].function = spy
    resumed = job.run(PARAMS)
    assert (resumed.status, resumed.attempt, resumed.restart_of_execution_id) == (
        "COMPLETED",
        2,
        failed.pk,
    )
    assert seen == [6]
    step = StepExecution.objects.get(job_execution=resumed, step_name="count")
    assert (step.read_count, step.commit_count) == (10, 5)


def test_completed_steps_are_not_run_again(repo: JobRepository) -> None:
    calls: list[str] = []
    job = Job("two-steps", repository=repo)
    job.add_step("first", lambda step: calls.append("first"))

    def second(step: StepContext) -> None:
        calls.append("second")
        if len(calls) == 2:
            raise JobFailure("TRANSIENT_INFRASTRUCTURE", "network")

    job.add_step("second", second)
    failed = job.run()
    assert (failed.status, failed.failure_category) == (
        "FAILED",
        "TRANSIENT_INFRASTRUCTURE",
    )
    done = job.run()
    assert done.status == "COMPLETED" and calls == ["first", "second", "second"]
    assert list(done.steps.values_list("step_name", flat=True)) == ["second"]


def test_stop_request_is_honoured_at_the_next_commit(repo: JobRepository) -> None:
    job = Job("stoppable", repository=repo)
    commits: list[int] = []

    @job.step("work")
    def work(step: StepContext) -> None:
        for n in range(step.checkpoint.get("next", 0) + 1, 10):
            step.commit(read=1, checkpoint={"next": n})
            commits.append(n)
            if n == 3:
                execution = JobExecution.objects.get(pk=step.row.job_execution_id)
                repo.request_stop(
                    execution.pk, execution.version, actor="ops@example.org"
                )

    stopped = job.run()
    assert (stopped.status, stopped.exit_code) == ("STOPPED", "STOPPED")
    assert stopped.stop_requested_by == "ops@example.org"
    assert commits == [1, 2, 3]
    step = StepExecution.objects.get(job_execution=stopped)
    assert (step.status, step.checkpoint_payload) == ("STOPPED", {"next": 4})
    resumed = job.run()
    assert resumed.status == "COMPLETED"
    assert StepExecution.objects.get(job_execution=resumed).checkpoint_payload == {
        "next": 9
    }


def test_check_stop_between_commits(repo: JobRepository) -> None:
    job = Job("polling", repository=repo, stop_poll_seconds=0)

    @job.step("work")
    def work(step: StepContext) -> None:
        execution = JobExecution.objects.get(pk=step.row.job_execution_id)
        repo.request_stop(execution.pk, execution.version, actor="ops")
        step.check_stop()
        raise AssertionError("check_stop should have raised")

    assert job.run().status == "STOPPED"


def test_stop_before_the_first_step(repo: JobRepository) -> None:
    job = Job("early", repository=repo)
    job.add_step("never", lambda step: pytest.fail("the step ran"))
    execution = repo.launch("early", {}, job.definition())
    repo.request_stop(execution.pk, 0, actor="ops")
    stopped = job.run_execution(execution.pk)
    assert stopped.status == "STOPPED" and stopped.started_at is None


def test_chunk_block_is_atomic_with_the_commit(repo: JobRepository) -> None:
    job = Job("atomic", repository=repo)

    @job.step("work")
    def work(step: StepContext) -> None:
        with step.chunk() as chunk:
            chunk.add(read=5, written=4, filtered=1)
            chunk.checkpoint = {"n": 5}
        with step.chunk() as chunk:
            chunk.add(read=5)
            chunk.checkpoint = {"n": 10}
            raise Boom()

    failed = job.run()
    step = StepExecution.objects.get(job_execution=failed)
    assert (
        step.read_count,
        step.write_count,
        step.filter_count,
        step.checkpoint_payload,
    ) == (5, 4, 1, {"n": 5})


def test_reraise_and_configuration_errors(repo: JobRepository) -> None:
    job = counting_job(repo, fail_at=0)
    with pytest.raises(Boom):
        job.run(PARAMS, reraise=True)
    assert JobExecution.objects.get().status == "FAILED"
    with pytest.raises(ValueError):
        Job("empty", repository=repo).run()
    with pytest.raises(ValueError):
        job.add_step("count", lambda step: None)
    with pytest.raises(InvalidArgument):
        JobFailure("NOT_A_CATEGORY")
    assert issubclass(StopRequested, Exception)


def test_a_recovered_execution_is_left_to_its_recovery(repo: JobRepository) -> None:
    job = Job("recovered", repository=repo)

    @job.step("work")
    def work(step: StepContext) -> None:
        step.commit(read=1, checkpoint={"n": 1})
        execution = JobExecution.objects.get(pk=step.row.job_execution_id)
        # A recovery marks the execution UNKNOWN while the process still runs.
        repo.transition_execution(execution.pk, execution.version, "UNKNOWN")
        step.commit(read=1, checkpoint={"n": 2})
        raise AssertionError("the runner should have noticed")

    execution = job.run()
    assert execution.status == "UNKNOWN"
    step = StepExecution.objects.get(job_execution=execution)
    assert (step.status, step.failure_category, step.read_count) == (
        "FAILED",
        "CANCELLED",
        2,
    )
