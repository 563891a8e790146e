"""
The p95 a run is measured against, over generated histories, against an oracle.

Each seed builds jobs of COMPLETED runs and others, restarts of older
instances made after newer ones (so a job's latest runs are not its
highest ids), and unresolved runs. The oracle reads every execution and
takes, per job, the latest runs by instance then attempt, the COMPLETED
ones among them, and their nearest-rank p95 in integers: nothing of the
product's statements or its percentile. The overdue page's late and slow
rows, and the detector's p95 for every window a rule may name, must be
the oracle's.

Every completed run lasts a whole multiple of ten seconds, all different,
and every running one five seconds off such a multiple, so that no
comparison is a tie and the seconds between the page's clock and the
oracle's change none.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db.models import F
from django.test import Client
from django.utils import timezone

from batchboard.alerts import detector, views
from batchboard.models import JobExecution, JobInstance
from tests import factories

pytestmark = pytest.mark.django_db

SEEDS = range(6)
JOBS = ("etl", "ledger", "rare")
FINISHED = ("COMPLETED",) * 6 + ("FAILED", "FAILED", "STOPPED", "ABANDONED")
UNRESOLVED = ("STARTING", "STARTED", "STOPPING", "UNKNOWN")


def _history(seed: int) -> None:
    """Write a generated history of :data:`JOBS` (see the module's docstring)."""
    chance = random.Random(seed)
    # Restarts run longer than first attempts, so that recent finishes are
    # slow now and then; running executions have run for any time.
    tens = iter(chance.sample(range(6, 600), 100))
    longer = iter(chance.sample(range(600, 900), 20))
    start = timezone.now() - timedelta(days=3)
    runs = {"etl": 30, "ledger": 12, "rare": chance.choice([0, 2, 3])}
    # (instance, last execution) of every instance, oldest first.
    instances: list[tuple[JobInstance, JobExecution]] = []
    for job, count in runs.items():
        for _ in range(count):
            start += timedelta(minutes=chance.randint(1, 60))
            made = factories.instance(job, created_at=start)
            instances.append((made, _finished(chance, made, start, next(tens))))
    # Restarts, written after every first attempt: newer ids, older instances.
    for _ in range(chance.randint(4, 12)):
        index = chance.randrange(len(instances))
        made, last = instances[index]
        start += timedelta(minutes=chance.randint(1, 60))
        instances[index] = (made, _finished(chance, made, start, next(longer), last))
    # Some instances' last attempts are still unresolved.
    now = timezone.now()
    for made, last in chance.sample(instances, min(len(instances), 14)):
        status = chance.choice(UNRESOLVED)
        running_for = timedelta(seconds=10 * chance.randint(6, 1200) + 5)
        factories.execution(
            made,
            status,
            created_at=factories.truncate_ms(now - running_for - timedelta(seconds=1)),
            restart_of=last,
            stop_requested_by="user:operator" if status == "STOPPING" else None,
        )


def _finished(
    chance: random.Random,
    made: JobInstance,
    at: datetime,
    tens: int,
    restart_of: JobExecution | None = None,
) -> JobExecution:
    return factories.execution(
        made,
        chance.choice(FINISHED),
        created_at=factories.truncate_ms(at),
        duration=timedelta(seconds=10 * tens),
        restart_of=restart_of,
    )


def _executions() -> list[dict[str, Any]]:
    return list(
        JobExecution.objects.values(
            "id",
            "status",
            "attempt",
            "job_instance_id",
            "started_at",
            "ended_at",
            job_name=F("job_instance__job_name"),
        )
    )


def _latest(runs: list[dict[str, Any]], job: str, window: int) -> list[dict[str, Any]]:
    mine = [run for run in runs if run["job_name"] == job]
    mine.sort(key=lambda run: (run["job_instance_id"], run["attempt"]), reverse=True)
    return mine[:window]


def _oracle_p95(
    runs: list[dict[str, Any]], job: str, window: int, exclude: int | None = None
) -> float | None:
    durations = sorted(
        (run["ended_at"] - run["started_at"]).total_seconds()
        for run in _latest(runs, job, window)
        if run["status"] == "COMPLETED"
        and run["started_at"] is not None
        and run["id"] != exclude
    )
    if len(durations) < 3:
        return None
    # The nearest rank, ceil(0.95 n), in integers.
    return durations[-(-19 * len(durations) // 20) - 1]


def _oracle_rows(
    runs: list[dict[str, Any]], now: datetime
) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """Return the page's (id, p95) of late runs and of slow finishes."""
    window = detector.DEFAULT_WINDOW
    unresolved = sorted(
        (run for run in runs if run["status"] in UNRESOLVED), key=lambda run: run["id"]
    )[: views.OVERDUE_ROWS]
    late = []
    for run in unresolved:
        if run["status"] not in ("STARTED", "STOPPING"):
            continue
        typical = _oracle_p95(runs, run["job_name"], window)
        if typical is not None and (now - run["started_at"]).total_seconds() > typical:
            late.append((run["id"], typical))
    completed = sorted(
        (run for run in runs if run["status"] == "COMPLETED"),
        key=lambda run: run["id"],
        reverse=True,
    )[: views.FINISHED_ROWS]
    slow = []
    for run in completed:
        typical = _oracle_p95(runs, run["job_name"], window, run["id"])
        took = (run["ended_at"] - run["started_at"]).total_seconds()
        if typical is not None and took > typical:
            slow.append((run["id"], typical))
    return late, slow


@pytest.mark.parametrize("seed", SEEDS)
def test_the_overdue_page_shows_the_oracles_late_and_slow_runs(
    owner: User, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pages shorter than the history, so that what they leave out counts.
    monkeypatch.setattr(views, "OVERDUE_ROWS", 6)
    monkeypatch.setattr(views, "FINISHED_ROWS", 9)
    _history(seed)
    client = Client()
    client.force_login(owner)
    response = client.get("/alerts/overdue/")
    late, slow = _oracle_rows(_executions(), timezone.now())

    shown = [
        [(row["id"], row["p95"]) for row in response.context[region]]
        for region in ("late", "slow")
    ]
    # Exactly: the spans are whole milliseconds on both backends.
    assert shown == [late, slow]


@pytest.mark.parametrize("seed", SEEDS)
def test_the_detector_s_p95_is_the_oracles_for_every_window(
    db: None, seed: int
) -> None:
    _history(seed)
    runs = _executions()
    length = 2 * detector.DEFAULT_WINDOW
    read = detector.job_history([*JOBS, "no-such-job"], length)
    assert read["no-such-job"] == []
    for job in JOBS:
        ids = [run["id"] for run in _latest(runs, job, length)]
        for window in range(1, length + 1):
            for exclude in (None, *ids, max(ids or [0]) + 1):
                expected = _oracle_p95(runs, job, window, exclude)
                found = detector.p95(read[job], window, exclude)
                assert found == expected, (
                    job,
                    window,
                    exclude,
                )
