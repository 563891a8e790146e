"""
The lifecycle rules shared by job and step executions (spec 2.1).

Pure functions over statuses and timestamps: the repository runs them on
the row it read before issuing its compare-and-swap update.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from batchboard import vocabulary
from batchboard.repository.errors import (
    FailedTransitionMissingFailure,
    IllegalTransition,
    InvalidArgument,
    InvalidTransitionTime,
    RestartRequiresNewAttempt,
)

STARTING = "STARTING"
STARTED = "STARTED"
STOPPING = "STOPPING"
STOPPED = "STOPPED"
FAILED = "FAILED"
COMPLETED = "COMPLETED"
ABANDONED = "ABANDONED"
UNKNOWN = "UNKNOWN"

ACTIVE = frozenset(vocabulary.ACTIVE)
UNRESOLVED = frozenset(vocabulary.UNRESOLVED)
FINISHED = frozenset(vocabulary.FINISHED)

#: The legal in-place transitions; anything else is illegal.
TRANSITIONS: dict[str, frozenset[str]] = {
    STARTING: frozenset({STARTED, STOPPING, FAILED, UNKNOWN}),
    STARTED: frozenset({STOPPING, STOPPED, FAILED, COMPLETED, UNKNOWN}),
    STOPPING: frozenset({STOPPED, FAILED, UNKNOWN}),
    STOPPED: frozenset({ABANDONED}),
    FAILED: frozenset({ABANDONED}),
    UNKNOWN: frozenset({FAILED, ABANDONED}),
    COMPLETED: frozenset(),
    ABANDONED: frozenset(),
}


@dataclass(frozen=True)
class Failure:
    """
    A redacted failure summary: a category of the closed set and an opaque id.

    The id points into the runtime's own error store; the message itself is
    never recorded in the metadata (spec 9.2). Lowercase category names, as
    Rust spells them, are accepted and stored uppercase.
    """

    category: str
    failure_id: int

    def __post_init__(self) -> None:
        category = str(self.category).upper()
        if category not in vocabulary.FAILURE_CATEGORIES:
            raise InvalidArgument(f"unknown failure category {self.category!r}")
        if isinstance(self.failure_id, bool) or not isinstance(self.failure_id, int):
            raise InvalidArgument("a failure id is an integer")
        if not 1 <= self.failure_id <= vocabulary.MAX_BIGINT:
            raise InvalidArgument("a failure id is between 1 and 2^63-1")
        object.__setattr__(self, "category", category)

    @classmethod
    def recorded(cls, category: str | None, failure_id: int | None) -> Failure | None:
        """Return the failure a row records, or None when it records none."""
        if category is None or failure_id is None:
            return None
        return cls(category, failure_id)


def validate_transition(
    from_status: str, to_status: str, failure: Failure | None
) -> None:
    """Raise the contract's error if ``from_status -> to_status`` is not allowed."""
    if to_status not in TRANSITIONS:
        raise InvalidArgument(f"unknown status {to_status!r}")
    if from_status in (STOPPED, FAILED) and to_status == STARTING:
        raise RestartRequiresNewAttempt(from_status)
    if to_status not in TRANSITIONS.get(from_status, frozenset()):
        raise IllegalTransition(from_status, to_status)
    if to_status == FAILED and failure is None:
        raise FailedTransitionMissingFailure()


def transition_timestamps(
    *,
    created_at: datetime,
    started_at: datetime | None,
    ended_at: datetime | None,
    to_status: str,
    at: datetime,
) -> tuple[datetime | None, datetime | None]:
    """
    Return ``(started_at, ended_at)`` after a transition at ``at``.

    ``at`` may not precede the start (or creation) nor an existing end. A
    finished target keeps an existing end, so FAILED -> ABANDONED reports
    when the work ended, not when it was written off.
    """
    if at < (started_at or created_at) or (ended_at is not None and at < ended_at):
        raise InvalidTransitionTime()
    new_started = at if to_status == STARTED else started_at
    new_ended = (ended_at or at) if to_status in FINISHED else None
    return new_started, new_ended
