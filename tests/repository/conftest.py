"""Fixtures for the job repository's tests."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from batchboard.repository import JobParameter, JobRepository, ManualClock

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def repo(clock: ManualClock) -> JobRepository:
    return JobRepository(clock=clock)


def params(run_date: str = "2026-01-01") -> dict[str, JobParameter]:
    return {"run_date": JobParameter.string(run_date)}
