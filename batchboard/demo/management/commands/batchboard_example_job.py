"""
An example batch job recorded through batchboard's job API.

It "imports" synthetic records in chunks (nothing is written but the
metadata), then writes a one-chunk report. Run it, fail it on purpose,
stop it from the console, and run it again to see it resume from its
checkpoint::

    python manage.py batchboard_example_job --records 5000 --fail-at 2500
    python manage.py batchboard_example_job --records 5000          # resumes at 2500
    python manage.py batchboard_example_job --run-date 2026-03-02 --delay 1
"""

from __future__ import annotations

import hashlib
import time
from datetime import date
from typing import Any

from django.core.management.base import CommandError, CommandParser

from batchboard.demo.commands import DemoCommand, check_bounds
from batchboard.jobs import Job, StepContext
from batchboard.repository import JobParameter, RepositoryError

JOB_NAME = "batchboard-example-import"


class RecordRejected(Exception):
    """The synthetic source produced a record the import refuses."""


def record_value(number: int) -> int:
    """Return the synthetic value of record ``number`` (stable across runs)."""
    digest = hashlib.sha256(f"record-{number}".encode()).digest()
    return int.from_bytes(digest[:2], "big")


def build_job(
    *, records: int, chunk_size: int, fail_at: int | None, delay: float
) -> Job:
    """Return the example job: an ``import`` step and a ``report`` step."""
    job = Job(JOB_NAME, revision="example-1", stop_poll_seconds=0.2)

    @job.step("import")
    def import_records(step: StepContext) -> None:
        position = int(step.checkpoint.get("next", 0))
        total = int(step.checkpoint.get("total", 0))
        while position < records:
            end = min(position + chunk_size, records)
            if fail_at is not None and position <= fail_at < end:
                # Commit the good records before the bad one, as a reader
                # that fails mid-chunk would have left them.
                if fail_at > position:
                    good = sum(record_value(n) for n in range(position, fail_at))
                    step.commit(
                        read=fail_at - position,
                        written=fail_at - position,
                        checkpoint={"next": fail_at, "total": total + good},
                    )
                raise RecordRejected(f"record {fail_at} is malformed")
            total += sum(record_value(n) for n in range(position, end))
            if delay:
                _sleep_watching_stop(step, delay)
            step.commit(
                read=end - position,
                written=end - position,
                checkpoint={"next": end, "total": total},
            )
            position = end

    @job.step("report")
    def report(step: StepContext) -> None:
        step.commit(read=1, written=1, checkpoint={"reported": True})

    return job


def _sleep_watching_stop(step: StepContext, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(left, 0.1))
        step.check_stop()


class Command(DemoCommand):
    help = (
        "Run batchboard's example job: import N synthetic records in chunks, "
        "then report. Re-running a failed or stopped run resumes it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--run-date",
            default=date.today().isoformat(),
            help="Identifying parameter: one job instance per run date "
            "(default today).",
        )
        parser.add_argument(
            "--execution",
            type=int,
            default=None,
            metavar="ID",
            help="Run this STARTING execution (created by an operator's launch or "
            "restart) instead of launching by run date.",
        )
        parser.add_argument("--records", type=int, default=1000)
        parser.add_argument("--chunk-size", type=int, default=100)
        parser.add_argument(
            "--fail-at",
            type=int,
            default=None,
            metavar="RECORD",
            help="Fail when the import reaches this record number.",
        )
        parser.add_argument(
            "--delay",
            type=float,
            default=0.0,
            metavar="SECONDS",
            help="Pause this long before each chunk commit, so the run can be stopped.",
        )

    def run(self, **options: Any) -> None:
        check_bounds("records", options["records"], 1)
        check_bounds("chunk-size", options["chunk_size"], 1)
        check_bounds("delay", options["delay"], 0)
        job = build_job(
            records=options["records"],
            chunk_size=options["chunk_size"],
            fail_at=options["fail_at"],
            delay=options["delay"],
        )
        parameters = {"run_date": JobParameter.string(options["run_date"])}
        try:
            if options["execution"] is not None:
                execution = job.run_execution(options["execution"])
            else:
                execution = job.run(parameters)
        except (RepositoryError, ValueError) as error:
            raise CommandError(str(error)) from None
        steps = {step.step_name: step for step in execution.steps.order_by("id")}
        imported = steps.get("import")
        self.stdout.write(
            f"{JOB_NAME} execution {execution.pk} (attempt {execution.attempt}) "
            f"ended {execution.status}"
        )
        if imported is not None:
            self.stdout.write(
                f"  import: {imported.status}, {imported.write_count} records written "
                f"in {imported.commit_count} commits"
            )
        if execution.status == "FAILED":
            self.stdout.write(
                f"  failure: {execution.failure_category} (id {execution.failure_id}); "
                "run the command again to resume from the last checkpoint"
            )
        elif execution.status == "STOPPED":
            self.stdout.write("  stopped; run the command again to resume")
