"""The simulator keeps jobs moving, honours stop requests and exits cleanly."""

from __future__ import annotations

import os
import random
import signal
import threading
from io import StringIO

import pytest
from django.core.management import call_command

from batchboard.demo import seed
from batchboard.demo.audit import Operator
from batchboard.demo.catalogue import job
from batchboard.demo.runs import InstanceMemory, JobRun, RunPlan
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


def _outsider(repository: JobRepository, serial: int, units: int) -> int:
    """Run a job outside the simulator for ``units`` units (a seeded run)."""
    spec = job("customer-email-digest")
    run = JobRun(
        repository,
        spec,
        spec.revisions[-1],
        spec.parameters(serial, repository.now()),
        plan=RunPlan(),
        memory=InstanceMemory(volume=500),
        rng=random.Random(serial),
    )
    for _ in range(units):
        run.advance()
    return run.execution_id


def test_a_stop_on_an_execution_it_did_not_start_completes() -> None:
    lines: list[str] = []
    simulator = _simulator(lines)
    simulator.next_launch = float("inf")
    repository = simulator.repository
    started = _outsider(repository, 1, 3)  # STARTED, owned by another process
    starting = _outsider(repository, 2, 1)  # STARTING, never claimed
    simulator.launches = 1  # the session's vanishing launch comes next
    vanishing = simulator.launch("fx-rates-refresh")
    for _ in range(10):
        simulator.tick()
    assert vanishing in simulator.vanished
    ids = [started, starting, vanishing.run.execution_id]
    operator = Operator(repository, actor="ops@example.org", prefix="w")
    for execution in JobExecution.objects.filter(pk__in=ids):
        assert execution.status in ("STARTING", "STARTED")
        outcome = operator.stop(execution.pk, execution.version)
        assert outcome.recorded_outcome == "APPLIED"
    simulator.tick()
    simulator.tick()
    assert (
        sorted(JobExecution.objects.filter(pk__in=ids).values_list("status", flat=True))
        == ["STOPPED"] * 3
    )
    assert not StepExecution.objects.filter(
        job_execution_id__in=ids, status__in=("STARTING", "STARTED", "STOPPING")
    ).exists()
    assert sum("STOPPED (stop requested)" in line for line in lines) == 3
    assert check_history() == []


def test_every_stop_in_a_seeded_demo_completes() -> None:
    seed.seed(instances=60, seed=5)
    active = ("STARTING", "STARTED", "STOPPING")
    # The seeder leaves runs in flight, some with a stop request.
    assert JobExecution.objects.filter(
        status__in=active, stop_requested_at__isnull=False
    ).exists()
    simulator = _simulator([])
    simulator.next_launch = float("inf")
    simulator.tick()
    simulator.tick()
    assert not JobExecution.objects.filter(
        status__in=active, stop_requested_at__isnull=False
    ).exists()
    # And a stop placed now on any run left, fresh or stale, completes too.
    operator = Operator(simulator.repository, actor="ops@example.org", prefix="s")
    running = list(JobExecution.objects.filter(status__in=("STARTING", "STARTED")))
    assert running
    for execution in running:
        operator.stop(execution.pk, execution.version)
    simulator.tick()
    simulator.tick()
    assert not JobExecution.objects.filter(status__in=active).exists()
    assert check_history() == []
