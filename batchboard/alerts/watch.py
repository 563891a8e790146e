"""
The watch loop: periodic jobs run one after another until told to stop.

Each :class:`Periodic` names a function and how often it runs; the loop
runs every job that is due, then sleeps until the next one is, waking early
when :meth:`Watch.stop` is called (SIGTERM or SIGINT in
``batchboard_watch``). A job's exception is reported and the loop goes on;
a job in progress always finishes, so a stop never cuts a delivery's
transaction in two.

The retention job runs the due standing retention policies every
``RETENTION_CYCLE_SECONDS`` (:mod:`batchboard.alerts.retention`). Adding
another periodic job takes one more :class:`Periodic` in :func:`default_jobs`: a name, the
seconds between runs and a function of no arguments that returns a line
to report (or ``""``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from django.db import close_old_connections

from batchboard import conf
from batchboard.alerts import delivery, detector, retention


@dataclass
class Periodic:
    """One job of the loop: its name, its period and what it does."""

    name: str
    every: float
    run: Callable[[], str]
    due: float = 0.0


def _detect() -> str:
    report = detector.cycle()
    if report.skipped:
        return "detector: another process holds the cycle"
    return f"detector: read {report.read}, recorded {report.recorded}"


def _deliver() -> str:
    sent = delivery.deliver_due()
    return f"delivered {sent}" if sent else ""


def _retain() -> str:
    runs = retention.cycle()
    if not runs:
        return ""
    batches = sum(run.applied_batches for run in runs)
    return f"retention: {len(runs)} runs, {batches} batches applied"


def default_jobs(every: float | None = None) -> list[Periodic]:
    """
    Return the detector and the deliveries, each every ``every`` seconds,
    and the retention policies every ``RETENTION_CYCLE_SECONDS``.
    """
    config = conf.get_config()
    seconds = float(every or config["ALERTS_CYCLE_SECONDS"])
    return [
        Periodic("detect", seconds, _detect),
        Periodic("deliver", min(seconds, 5.0), _deliver),
        Periodic("retention", float(config["RETENTION_CYCLE_SECONDS"]), _retain),
    ]


@dataclass
class Watch:
    """Run ``jobs`` until :meth:`stop` (or ``cycles`` rounds, if given)."""

    jobs: Sequence[Periodic]
    say: Callable[[str], None] = print
    stopping: threading.Event = field(default_factory=threading.Event)

    def stop(self) -> None:
        self.stopping.set()

    def run(self, cycles: int | None = None) -> None:
        rounds = 0
        while not self.stopping.is_set():
            now = time.monotonic()
            for job in self.jobs:
                if self.stopping.is_set():
                    break
                if job.due > now:
                    continue
                close_old_connections()
                try:
                    line = job.run()
                except Exception as error:  # report and carry on
                    line = f"{job.name} failed: {type(error).__name__}"
                if line:
                    self.say(line)
                job.due = time.monotonic() + job.every
            rounds += 1
            if cycles is not None and rounds >= cycles:
                break
            wait = min(job.due for job in self.jobs) - time.monotonic()
            self.stopping.wait(max(wait, 0.05))
