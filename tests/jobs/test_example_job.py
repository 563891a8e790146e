from __future__ import annotations

import threading
import time
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connections

from batchboard.demo import gate
from batchboard.demo.management.commands import batchboard_example_job as example
from batchboard.models import JobExecution, StepExecution
from batchboard.repository import JobRepository

DATE = "2026-03-01"


@pytest.fixture(autouse=True)
def _demo_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The example job records history: it runs in the demo only."""
    monkeypatch.setenv(gate.VARIABLE, "1")


def run(*args: str) -> str:
    out = StringIO()
    call_command("batchboard_example_job", "--run-date", DATE, *args, stdout=out)
    return out.getvalue()


def import_step(execution: JobExecution) -> StepExecution:
    return StepExecution.objects.get(job_execution=execution, step_name="import")


@pytest.mark.django_db
def test_run_fail_restart_complete() -> None:
    output = run("--records", "1000", "--chunk-size", "100", "--fail-at", "450")
    assert "ended FAILED" in output and "USER_COMPONENT" in output
    failed = JobExecution.objects.get()
    step = import_step(failed)
    assert (step.status, step.write_count, step.checkpoint_payload["next"]) == (
        "FAILED",
        450,
        450,
    )

    output = run("--records", "1000", "--chunk-size", "100")
    assert "attempt 2" in output and "ended COMPLETED" in output
    resumed = JobExecution.objects.get(attempt=2)
    assert resumed.restart_of_execution_id == failed.pk
    step = import_step(resumed)
    expected_total = sum(example.record_value(n) for n in range(1000))
    assert (step.write_count, step.checkpoint_payload) == (
        1000,
        {"next": 1000, "total": expected_total},
    )
    # Attempt 1 committed four full chunks and the 400..450 remainder; the
    # restart resumed at 450 and committed six chunks up to 1000.
    assert step.commit_count == 5 + 6
    assert (
        StepExecution.objects.get(job_execution=resumed, step_name="report").status
        == "COMPLETED"
    )

    with pytest.raises(CommandError, match="already completed"):
        run("--records", "1000")


@pytest.mark.django_db
def test_stop_request_mid_run(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[int] = []

    def operator_stops_during_third_chunk(step: Any, seconds: float) -> None:
        waits.append(1)
        if len(waits) == 3:
            execution = JobExecution.objects.get(pk=step.row.job_execution_id)
            JobRepository().request_stop(execution.pk, execution.version, actor="ops")

    monkeypatch.setattr(
        example, "_sleep_watching_stop", operator_stops_during_third_chunk
    )
    output = run("--records", "1000", "--delay", "0.01")
    assert "ended STOPPED" in output
    step = import_step(JobExecution.objects.get())
    assert (step.status, step.commit_count, step.checkpoint_payload["next"]) == (
        "STOPPED",
        3,
        300,
    )
    assert "ended COMPLETED" in run("--records", "1000")


@pytest.mark.django_db
def test_run_an_execution_created_elsewhere() -> None:
    repo = JobRepository()
    job = example.build_job(records=10, chunk_size=5, fail_at=None, delay=0)
    created = repo.launch(example.JOB_NAME, {}, job.definition())
    out = StringIO()
    call_command(
        "batchboard_example_job",
        "--execution",
        str(created.pk),
        "--records",
        "10",
        "--chunk-size",
        "5",
        stdout=out,
    )
    assert f"execution {created.pk} (attempt 1) ended COMPLETED" in out.getvalue()
    other = repo.launch("another-job")
    with pytest.raises(CommandError, match="belongs to job"):
        call_command("batchboard_example_job", "--execution", str(other.pk))
    with pytest.raises(CommandError, match="does not exist"):
        call_command("batchboard_example_job", "--execution", "987654")


@pytest.mark.django_db
def test_bad_options() -> None:
    with pytest.raises(CommandError, match="--records must be at least 1"):
        run("--records", "0")
    with pytest.raises(CommandError, match="--chunk-size must be at least 1"):
        run("--chunk-size", "0")
    with pytest.raises(CommandError, match="--delay must be at least 0"):
        run("--delay", "-1")
    assert not JobExecution.objects.exists()


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_stop_a_slow_run_from_another_connection() -> None:
    """A real slow run in a thread stops after an operator's stop request."""
    result: dict[str, Any] = {}

    def worker() -> None:
        try:
            result["output"] = run(
                "--records", "50", "--chunk-size", "5", "--delay", "0.15"
            )
        except Exception as error:  # reported by the assertion below
            result["error"] = error
        finally:
            connections.close_all()

    thread = threading.Thread(target=worker)
    thread.start()
    deadline = time.monotonic() + 10
    execution = None
    while time.monotonic() < deadline:
        step = StepExecution.objects.filter(
            step_name="import", commit_count__gte=1
        ).first()
        if step is not None:
            execution = JobExecution.objects.get(pk=step.job_execution_id)
            break
        time.sleep(0.05)
    assert execution is not None, "the job never committed"
    JobRepository().request_stop(
        execution.pk, execution.version, actor="ops@example.org"
    )
    thread.join(timeout=15)
    assert not thread.is_alive()
    assert "error" not in result, result
    assert "ended STOPPED" in result["output"]
    stopped = JobExecution.objects.get(pk=execution.pk)
    step = import_step(stopped)
    assert stopped.status == "STOPPED" and step.status == "STOPPED"
    assert 0 < step.checkpoint_payload["next"] < 50
