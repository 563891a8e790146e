"""The simulator keeps jobs moving, honours stop requests and exits cleanly."""

from __future__ import annotations

import os
import signal
import threading
from io import StringIO

import pytest
from django.core.management import call_command

from batchboard.demo.audit import Operator
from batchboard.demo.runs import RunPlan
from batchboard.demo.simulate import Simulator
from batchboard.demo.verify import check_history
from batchboard.models import JobExecution, StepExecution
from batchboard.repository import JobRepository, SystemClock

pytestmark = pytest.mark.django_db(transaction=True)


def _simulator(lines: list[str]) -> Simulator:
    return Simulator(
        JobRepository(clock=SystemClock()), seed=4, concurrency=3, say=lines.append
    )


def test_runs_advance_chunk_by_chunk_and_finish() -> None:
    lines: list[str] = []
    simulator = _simulator(lines)
    live = simulator.launch("nightly-ledger-import", RunPlan())
    commits = []
    for _ in range(40):
        simulator.tick()
        step = StepExecution.objects.filter(
            job_execution_id=live.run.execution_id
        ).first()
        if step is not None:
            commits.append(step.commit_count)
        if live.run.done:
            break
    assert live.run.status == "COMPLETED"
    assert commits == sorted(commits) and len(set(commits)) > 2
    assert any(line.startswith("launched nightly-ledger-import") for line in lines)
    assert any(line.endswith("COMPLETED") for line in lines)
    assert check_history() == []


def test_a_stop_request_ends_the_run_stopped() -> None:
    lines: list[str] = []
    simulator = _simulator(lines)
    simulator.launches = 2  # past the session's vanishing launch
    live = simulator.launch("customer-email-digest", RunPlan())
    simulator.tick()
    simulator.tick()
    execution = JobExecution.objects.get(pk=live.run.execution_id)
    assert execution.status == "STARTED"
    outcome = Operator(simulator.repository, actor="ops@example.org", prefix="t").stop(
        execution.pk, execution.version
    )
    assert outcome.recorded_outcome == "APPLIED"
    for _ in range(20):
        if live.run.done:
            break
        simulator.tick()
    execution.refresh_from_db()
    assert execution.status == "STOPPED"
    assert execution.stop_requested_by == "ops@example.org"
    assert check_history() == []


def test_one_process_vanishes_and_failures_are_restarted() -> None:
    lines: list[str] = []
    simulator = _simulator(lines)
    simulator.launch("fx-rates-refresh", RunPlan())
    vanishing = simulator.launch("fx-rates-refresh")
    failing = simulator.launch("fx-rates-refresh", RunPlan("FAILED", 0, 0.5, "TIMEOUT"))
    for _ in range(10):
        simulator.tick()
    assert vanishing in simulator.vanished
    assert JobExecution.objects.get(pk=vanishing.run.execution_id).status == "STARTED"
    assert failing.run.status == "FAILED"
    simulator.clock = lambda: 1e12  # the restart pause is over
    simulator.tick()
    restarted = JobExecution.objects.filter(
        restart_of_execution_id=failing.run.execution_id
    )
    assert restarted.exists()
    assert check_history() == []


def test_the_command_runs_for_max_seconds_then_exits() -> None:
    out = StringIO()
    call_command(
        "batchboard_simulate",
        "--max-seconds",
        "1.5",
        "--tick",
        "0.1",
        "--seed",
        "2",
        stdout=out,
    )
    text = out.getvalue()
    assert "launched" in text and "Stopped after" in text
    assert JobExecution.objects.exists()
    assert check_history() == []


def test_the_command_exits_cleanly_on_sigterm() -> None:
    out = StringIO()
    timer = threading.Timer(0.8, lambda: os.kill(os.getpid(), signal.SIGTERM))
    timer.start()
    try:
        call_command("batchboard_simulate", "--tick", "0.1", "--seed", "3", stdout=out)
    finally:
        timer.cancel()
    assert "Stopped after" in out.getvalue()
