"""Drive executions and steps into a given status through legal transitions."""

from __future__ import annotations

from typing import Any

from batchboard.repository import Failure, JobRepository

FAILURE = Failure("TRANSIENT_INFRASTRUCTURE", 7)

PATHS: dict[str, list[str]] = {
    "STARTING": [],
    "STARTED": ["STARTED"],
    "STOPPING": ["STOPPING"],
    "STOPPED": ["STARTED", "STOPPED"],
    "FAILED": ["FAILED"],
    "COMPLETED": ["STARTED", "COMPLETED"],
    "ABANDONED": ["FAILED", "ABANDONED"],
    "UNKNOWN": ["UNKNOWN"],
}


def drive_execution(repo: JobRepository, execution: Any, status: str) -> Any:
    for target in PATHS[status]:
        repo.clock.advance(milliseconds=10)  # type: ignore[attr-defined]
        execution = repo.transition_execution(
            execution.pk,
            execution.version,
            target,
            failure=FAILURE if target == "FAILED" else None,
        )
    return execution


def drive_step(repo: JobRepository, step: Any, status: str) -> Any:
    for target in PATHS[status]:
        repo.clock.advance(milliseconds=10)  # type: ignore[attr-defined]
        step = repo.transition_step(
            step.pk,
            step.version,
            target,
            failure=FAILURE if target == "FAILED" else None,
        )
    return step
