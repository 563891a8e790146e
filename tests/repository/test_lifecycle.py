"""The lifecycle rules: statuses, transitions and recorded failures."""

from __future__ import annotations

import pytest

from batchboard import vocabulary
from batchboard.repository import lifecycle
from batchboard.repository.errors import InvalidArgument


def test_the_lifecycle_speaks_of_the_vocabularys_statuses() -> None:
    assert set(lifecycle.TRANSITIONS) == set(vocabulary.STATUSES)
    for targets in lifecycle.TRANSITIONS.values():
        assert targets <= set(vocabulary.STATUSES)
    assert set(vocabulary.ACTIVE) == lifecycle.ACTIVE
    assert set(vocabulary.UNRESOLVED) == lifecycle.UNRESOLVED
    assert set(vocabulary.FINISHED) == lifecycle.FINISHED


def test_a_recorded_failure_needs_both_of_its_columns() -> None:
    assert lifecycle.Failure.recorded(None, None) is None
    assert lifecycle.Failure.recorded("TIMEOUT", None) is None
    assert lifecycle.Failure.recorded("timeout", 4) == lifecycle.Failure("TIMEOUT", 4)


@pytest.mark.parametrize("failure_id", [0, vocabulary.MAX_BIGINT + 1, True, "7"])
def test_a_failure_id_is_a_bigint_identity(failure_id: object) -> None:
    with pytest.raises(InvalidArgument):
        lifecycle.Failure("TIMEOUT", failure_id)  # type: ignore[arg-type]
    assert lifecycle.Failure("TIMEOUT", vocabulary.MAX_BIGINT).failure_id > 0
