"""
Detection and delivery with the simulator writing, on PostgreSQL.

Watch processes are real ``batchboard_watch`` subprocesses on the suite's
database; the webhook receiver is a real HTTP server on the loopback.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.contrib.auth.models import User
from django.db import connection

from batchboard.alerts import delivery, detector
from batchboard.alerts.models import Alert, Delivery, DeliveryAttempt, Watermark
from batchboard.demo.runs import RunPlan
from batchboard.demo.simulate import Simulator
from batchboard.models import JobExecution
from batchboard.repository import JobRepository, SystemClock
from tests.alerts.conftest import Receiver, rule, webhook
from tests.conftest import held_lock

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgresql]

CHECKOUT = Path(__file__).resolve().parents[2]


def _simulator() -> Simulator:
    simulator = Simulator(
        JobRepository(clock=SystemClock()),
        seed=7,
        concurrency=2,
        failure_rate=0.0,
        say=lambda _: None,
    )
    simulator.launches = 2  # past the session's vanishing launch
    # Only the test's own launches (and the restarts of its failures).
    simulator.next_launch = float("inf")
    return simulator


def _fail(simulator: Simulator, job: str = "customer-email-digest") -> int:
    """Run one attempt of ``job`` to FAILED; return its execution id."""
    live = simulator.launch(job, RunPlan("FAILED", at_step=0, fraction=0.2))
    for _ in range(200):
        if live.run.done:
            break
        simulator.tick()
    assert live.run.status == "FAILED"
    assert live.run.execution_id is not None
    return int(live.run.execution_id)


def _until(condition: Callable[[], bool], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.fixture
def watchers() -> Iterator[Callable[[], subprocess.Popen[str]]]:
    """Start ``batchboard_watch`` processes on the suite's database."""
    parts = urlsplit(os.environ["DATABASE_URL"])
    url = urlunsplit(
        (parts.scheme, parts.netloc, f"/{connection.settings_dict['NAME']}", "", "")
    )
    started: list[subprocess.Popen[str]] = []

    def start() -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-m", "django", "batchboard_watch", "--every", "0.2"],
            cwd=CHECKOUT,
            env={
                **os.environ,
                "DJANGO_SETTINGS_MODULE": "tests.settings",
                "DATABASE_URL": url,
            },
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=10)


def test_a_failed_execution_is_delivered_within_two_cycles(
    owner: User, receiver: Receiver
) -> None:
    first = webhook(owner, receiver.url, "first")
    second = webhook(owner, receiver.url, "second")
    rule(owner, "FAILED", first, second, job_name="customer-email-digest")
    rule(owner, "FAILED", second, job_name="search-reindex", name="not this job")
    detector.cycle()
    simulator = _simulator()
    failed = _fail(simulator)
    cycles = 0
    while not Alert.objects.filter(execution_id=failed).exists():
        cycles += 1
        assert cycles <= 2
        detector.cycle()
        simulator.tick()
    assert delivery.deliver_due() == 2
    deliveries = Delivery.objects.filter(alert__execution_id=failed)
    assert sorted(deliveries.values_list("channel__name", "state")) == [
        ("first", "SENT"),
        ("second", "SENT"),
    ]
    assert {item.body["execution_id"] for item in receiver.received} == {failed}


def test_three_detector_processes_deliver_exactly_once(
    owner: User, receiver: Receiver, watchers: Callable[[], subprocess.Popen[str]]
) -> None:
    rule(owner, "FAILED", webhook(owner, receiver.url))
    detector.cycle()
    processes = [watchers() for _ in range(3)]
    simulator = _simulator()
    failed = [_fail(simulator), _fail(simulator, "search-reindex")]
    _until(
        lambda: (
            Delivery.objects.filter(
                alert__execution_id__in=failed, state="SENT"
            ).count()
            == 2
        )
    )
    time.sleep(2)  # every process has had several more cycles
    assert all(process.poll() is None for process in processes)
    keys = [item.key for item in receiver.received]
    assert len(keys) == 2 and len(set(keys)) == 2
    assert Alert.objects.filter(execution_id__in=failed).count() == 2
    assert DeliveryAttempt.objects.count() == 2
    for process in processes:
        process.send_signal(signal.SIGTERM)
    for process in processes:
        output, _ = process.communicate(timeout=20)
        assert process.returncode == 0
        assert output.rstrip().endswith("stopped")


def test_a_detector_killed_mid_delivery_delivers_after_restart(
    owner: User, receiver: Receiver, watchers: Callable[[], subprocess.Popen[str]]
) -> None:
    rule(owner, "FAILED", webhook(owner, receiver.url))
    detector.cycle()
    receiver.hang.set()
    first = watchers()
    failed = _fail(_simulator())
    assert receiver.arrived.wait(30)
    first.kill()
    first.wait(10)
    receiver.release.set()
    assert Delivery.objects.get().state == "PENDING"
    watchers()
    _until(lambda: Delivery.objects.get().state == "SENT")
    keys = [item.key for item in receiver.received]
    assert len(keys) == 2 and keys[0] == keys[1]
    assert {item.body["execution_id"] for item in receiver.received} == {failed}
    sent = Delivery.objects.get()
    assert sent.attempts == 1 and sent.idempotency_key == keys[0]


def test_freshness_fires_when_a_job_misses_its_window_only(owner: User) -> None:
    simulator = _simulator()
    live = simulator.launch("fx-rates-refresh", RunPlan())
    for _ in range(200):
        if live.run.done:
            break
        simulator.tick()
    assert live.run.status == "COMPLETED"
    rule(owner, "FRESHNESS", job_name="fx-rates-refresh", hours=1)
    for _ in range(3):
        assert detector.cycle().recorded == 0
        simulator.tick()
    completed = JobExecution.objects.get(pk=live.run.execution_id)
    assert completed.ended_at is not None
    later = completed.ended_at + timedelta(hours=1, minutes=1)
    assert detector.cycle(now=later).recorded == 1
    assert detector.cycle(now=later + timedelta(minutes=5)).recorded == 0
    alert = Alert.objects.get()
    assert (alert.kind, alert.job_name, alert.execution_id) == (
        "FRESHNESS",
        "fx-rates-refresh",
        completed.pk,
    )


def test_a_detector_skips_its_cycle_while_another_holds_it(owner: User) -> None:
    rule(owner, "FAILED")
    assert detector.cycle().skipped is False
    cycle_row = Watermark.objects.get(stream=detector.CYCLE)
    with held_lock(
        "SELECT id FROM batchboard_alert_watermark WHERE id = %s FOR UPDATE",
        cycle_row.pk,
    ):
        assert detector.cycle().skipped is True
    assert detector.cycle().skipped is False
