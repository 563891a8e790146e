"""
Pages run from statements compiled once return what the ORM returns.

Rows are compared with their values' types: on SQLite the driver hands back
text for timestamps and integers for booleans, which the ORM's converters
turn into aware datetimes and bools, and ``1 == True`` would hide a missed
conversion.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from django.utils import timezone

from batchboard.explorer import overview, pagination, queries, relations
from batchboard.models import JobExecution, StepPartition
from batchboard.vocabulary import UNRESOLVED
from tests.explorer.conftest import History
from tests.explorer.test_windows import _window


class _NothingKept(dict[Any, Any]):
    """A statement cache that keeps nothing, so every page goes through the ORM."""

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, None)


def _typed(value: Any) -> Any:
    """Return ``value`` with the type of every value it holds beside it."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_typed(item) for item in value]
    return (type(value), value)


def _aware(value: Any) -> bool:
    """Return whether every datetime ``value`` holds is aware."""
    if isinstance(value, dict):
        return all(_aware(item) for item in value.values())
    if isinstance(value, list | tuple):
        return all(_aware(item) for item in value)
    return not isinstance(value, datetime) or timezone.is_aware(value)


def _pages(fetch: Callable[[str | None], queries.Page]) -> list[list[dict[str, Any]]]:
    pages, token = [], None
    for _ in range(4):
        page = fetch(token)
        pages.append(page.rows)
        token = page.next_cursor
        if token is None:
            break
    return pages


PAGES: dict[str, Callable[[History, str | None], queries.Page]] = {
    "all": lambda h, token: queries.recent_executions("", "", 2, token),
    "status": lambda h, token: queries.recent_executions("FAILED", "", 1, token),
    "job": lambda h, token: queries.recent_executions("", "nightly-import", 2, token),
    "statuses": lambda h, token: queries.recent_executions(
        ("FAILED", "COMPLETED"), "", 1, token
    ),
    "statuses of a job": lambda h, token: queries.recent_executions(
        ("FAILED", "COMPLETED"), "nightly-import", 1, token
    ),
    "instances": lambda h, token: queries.instances("nightly-import", 1, token),
    "steps": lambda h, token: queries.steps(h.restart.pk, 1, token),
    "flow": lambda h, token: queries.flow_decisions(h.failed.pk, 1, token),
    "recovery": lambda h, token: queries.recovery_decisions(h.failed.pk, 1, token),
    "requests": lambda h, token: queries.operator_requests(h.failed.pk, 1, token),
    "unresolved": lambda h, token: queries.unresolved(60, 1, token),
    "unresolved times": lambda h, token: queries.unresolved(
        60, 1, token, shape=queries.TIMES
    ),
    "status times": lambda h, token: queries.recent_executions(
        "FAILED", "", 1, token, shape=queries.TIMES
    ),
    "job times": lambda h, token: queries.recent_executions(
        "", "nightly-import", 2, token, shape=queries.TIMES
    ),
    "job names": lambda h, token: queries.job_names(1, token),
    "attempts": lambda h, token: queries.instance_executions(h.instance.pk, 1, token),
    "partitions": lambda h, token: queries.partitions(h.partitioned.pk, 1, token),
    # A download's reads: the same lists, each row as the file writes it.
    "export": lambda h, token: queries.recent_executions(
        "", "", 2, token, shape=queries.EXPORT
    ),
    "export of a job": lambda h, token: queries.recent_executions(
        ("FAILED", "COMPLETED"), "nightly-import", 1, token, shape=queries.EXPORT
    ),
    "export of a window": lambda h, token: queries.windowed_executions(
        (), "", _window(since="2000-01-01T00:00Z"), 1, token, shape=queries.EXPORT
    ),
}


@pytest.mark.parametrize("name", list(PAGES))
def test_compiled_statements_match_the_orm(
    history: History, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    def fetch(token: str | None) -> queries.Page:
        return PAGES[name](history, token)

    monkeypatch.setattr(pagination, "STATEMENTS", {})
    compiled = _pages(fetch)
    again = _pages(fetch)
    assert all(pagination.STATEMENTS.values()), "a shape went through the ORM"
    monkeypatch.setattr(pagination, "STATEMENTS", _NothingKept())
    through_orm = _pages(fetch)
    assert _typed(compiled) == _typed(again) == _typed(through_orm)
    assert compiled[0]
    assert _aware(compiled)


@pytest.mark.parametrize(
    "listing",
    [
        lambda token, **only: queries.unresolved(60, 1, token, **only),
        lambda token, **only: queries.recent_executions("", "", 2, token, **only),
        lambda token, **only: queries.recent_executions(
            "", "nightly-import", 2, token, **only
        ),
    ],
    ids=["unresolved", "all", "job"],
)
def test_a_times_only_page_is_the_full_page_s_times(
    history: History, listing: Callable[..., queries.Page]
) -> None:
    """The same rows and cursors, each row with the run's times only."""
    token: str | None = None
    for _ in range(4):
        full, times = listing(token), listing(token, shape=queries.TIMES)
        # A first page also reads its identity ceiling.
        names = [*queries.RUN_TIME_FIELDS, *([pagination.CEILING] * full.first)]
        assert times.rows or not full.first
        assert times.rows == [{name: row[name] for name in names} for row in full.rows]
        assert times.next_cursor == full.next_cursor
        token = full.next_cursor
        if token is None:
            break


@pytest.mark.parametrize("name", ["execution", "instance", "step", "partition"])
def test_one_record_matches_the_orm(
    history: History, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    partition_id = StepPartition.objects.filter(
        step_execution=history.partitioned
    ).values_list("id", flat=True)[0]
    read, pk = {
        "execution": (queries.execution, history.failed.pk),
        "instance": (queries.instance, history.instance.pk),
        "step": (queries.step, history.step.pk),
        "partition": (queries.partition, partition_id),
    }[name]

    def without_clock(row: Any) -> Any:
        # An execution's row carries the database's clock, which moves on.
        assert row is not None
        return {key: value for key, value in row.items() if key != "read_at"}

    monkeypatch.setattr(pagination, "STATEMENTS", {})
    compiled = [without_clock(read(pk)) for _ in range(2)]
    assert all(pagination.STATEMENTS.values()), "a shape went through the ORM"
    monkeypatch.setattr(pagination, "STATEMENTS", _NothingKept())
    assert _typed(compiled) == _typed([without_clock(read(pk))] * 2)
    assert compiled[0] is not None
    assert _aware(compiled)
    assert read(pk + 10_000) is None


def test_each_page_shape_is_compiled_once(
    history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pagination, "STATEMENTS", {})
    first = queries.recent_executions("", "", 1)
    queries.recent_executions("", "", 1, first.next_cursor)
    queries.recent_executions("", "", 1, first.next_cursor)
    shapes = pagination.STATEMENTS
    assert len(shapes) == 2
    assert all(statement is not None for statement in shapes.values())


def test_overview_reads_match_the_orm(
    history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = ["nightly-import", "billing.export", "nothing-here"]
    monkeypatch.setattr(pagination, "STATEMENTS", {})
    compiled = [
        (overview.running_counts(names), queries.recent_failures()) for _ in range(2)
    ]
    assert all(pagination.STATEMENTS.values()), "a shape went through the ORM"
    monkeypatch.setattr(pagination, "STATEMENTS", _NothingKept())
    through_orm = (overview.running_counts(names), queries.recent_failures())
    assert _typed(compiled) == _typed([through_orm] * 2)
    assert compiled[0][0] and compiled[0][1]
    assert _aware(compiled)


def test_parameter_values_match_the_orm(
    history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [history.instance.pk, history.instance.pk + 10_000]
    monkeypatch.setattr(pagination, "STATEMENTS", {})
    compiled = [queries.parameter_values_of(ids) for _ in range(2)]
    assert all(pagination.STATEMENTS.values()), "a shape went through the ORM"
    monkeypatch.setattr(pagination, "STATEMENTS", _NothingKept())
    through_orm = queries.parameter_values_of(ids)
    assert compiled == [through_orm] * 2
    assert list(through_orm) == [history.instance.pk]
    assert through_orm[history.instance.pk] == queries.parameter_values(
        history.instance.pk
    )


def test_attempts_around_match_the_orm(
    history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attempts either side of a live execution, compiled once."""
    instance = history.failed.job_instance_id
    monkeypatch.setattr(pagination, "STATEMENTS", {})
    compiled = [
        relations.attempts_around(instance, attempt) for attempt in (1, 2, 1, 2, 3)
    ]
    assert len(pagination.STATEMENTS) == 1
    monkeypatch.setattr(pagination, "STATEMENTS", _NothingKept())
    through_orm = [
        relations.attempts_around(instance, attempt) for attempt in (1, 2, 1, 2, 3)
    ]
    assert compiled == through_orm
    before, after = compiled[0]
    assert before is None and after is not None
    assert after["id"] == history.restart.pk
    assert compiled[1][0] is not None and compiled[1][0]["id"] == history.failed.pk


def test_running_counts_count_each_job_s_unresolved_executions(
    history: History,
) -> None:
    """One per unresolved execution, under its instance's job; none elsewhere."""
    names = ["nightly-import", "billing.export", "nothing-here"]
    expected = {
        name: JobExecution.objects.filter(
            job_instance__job_name=name, status__in=UNRESOLVED
        ).count()
        for name in names
    }
    assert overview.running_counts(names) == {
        name: count for name, count in expected.items() if count
    }
    assert sum(expected.values()) > 0
    assert overview.running_counts([]) == {}
