"""
Keyset traversal: every row present at the start exactly once, nothing newer.

Each list is walked page by page at a small page size while new rows are
inserted between pages; the union of the pages must equal the rows that
existed when the first page was read, with no repeats.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from batchboard import vocabulary
from batchboard.explorer import overview, queries
from batchboard.models import JobExecution, JobInstance, StepExecution
from tests import factories

Fetch = Callable[[int, str | None], queries.Page]


def walk(
    fetch: Fetch, size: int, key: str, insert: Callable[[], None] | None = None
) -> list[Any]:
    seen: list[Any] = []
    token = None
    for _ in range(1000):
        page = fetch(size, token)
        assert len(page.rows) <= size
        seen.extend(row[key] for row in page.rows)
        if insert is not None:
            insert()
        if page.next_cursor is None:
            return seen
        token = page.next_cursor
    raise AssertionError("traversal did not end")


def assert_exactly_once(seen: list[Any], expected: list[Any]) -> None:
    assert len(seen) == len(set(seen)), "a row was returned twice"
    assert seen == expected


@pytest.fixture
def many(db: None) -> dict[str, Any]:
    now = factories.now()
    names = [f"job-{index:02d}" for index in range(7)]
    for name in names:
        factories.definition(name)
    instance = factories.instance("job-00", created_at=now - timedelta(days=1))
    executions = []
    for attempt in range(1, 8):
        status = "FAILED" if attempt < 7 else "STARTED"
        executions.append(
            factories.execution(
                instance,
                status,
                attempt=attempt,
                created_at=now - timedelta(hours=10 - attempt),
                updated_at=now - timedelta(hours=10 - attempt)
                if status == "STARTED"
                else None,
            )
        )
    for index in range(9):
        other = factories.instance("job-01", created_at=now - timedelta(hours=5))
        executions.append(
            factories.execution(
                other,
                "STARTED" if index % 3 == 0 else "COMPLETED",
                created_at=now - timedelta(hours=5),
                updated_at=now - timedelta(hours=5),
            )
        )
    parent = executions[-1]
    steps = [
        factories.step(parent, f"step-{index}", "COMPLETED") for index in range(11)
    ]
    partitioned = steps[0]
    for ordinal in range(1, 10):
        factories.partition(partitioned, f"p-{ordinal:02d}", ordinal)
    for sequence in range(1, 9):
        factories.flow_decision(parent, sequence, f"node-{sequence}")
    for _ in range(5):
        factories.operator_request(parent)
    return {
        "names": names,
        "instance": instance,
        "executions": executions,
        "parent": parent,
        "steps": steps,
        "partitioned": partitioned,
    }


@pytest.mark.parametrize("size", [1, 2, 3, 50])
def test_job_names(many: dict[str, Any], size: int) -> None:
    counter = iter(range(100))

    def insert() -> None:
        factories.definition(f"job-{next(counter):02d}-late")

    seen = walk(lambda s, t: queries.job_names(s, t), size, "job_name", insert)
    assert_exactly_once(seen, many["names"])


@pytest.mark.parametrize("size", [1, 4, 50])
def test_instances(many: dict[str, Any], size: int) -> None:
    expected = sorted(
        (row.pk for row in JobInstance.objects.filter(job_name="job-01")),
        reverse=True,
    )
    seen = walk(
        lambda s, t: queries.instances("job-01", s, t),
        size,
        "id",
        lambda: factories.instance("job-01"),
    )
    assert_exactly_once(seen, expected)


@pytest.mark.parametrize("size", [1, 2, 50])
def test_instance_executions(many: dict[str, Any], size: int) -> None:
    instance = many["instance"]
    expected = [
        row.pk
        for row in JobExecution.objects.filter(job_instance=instance).order_by(
            "-attempt"
        )
    ]

    def insert() -> None:
        latest = JobExecution.objects.filter(job_instance=instance).order_by(
            "-attempt"
        )[0]
        if latest.status == "STARTED":
            factories.advance(latest, "FAILED")
        factories.execution(instance, "FAILED")

    seen = walk(
        lambda s, t: queries.instance_executions(instance.pk, s, t), size, "id", insert
    )
    assert_exactly_once(seen, expected)


@pytest.mark.parametrize(
    ("status", "job"),
    [
        ("", ""),
        ("FAILED", ""),
        ("", "job-01"),
        ("STARTED", "job-01"),
        # Several statuses: one walk per status, merged by id.
        (("FAILED", "COMPLETED"), ""),
        (vocabulary.UNRESOLVED, ""),
        (("STARTED", "FAILED"), "job-01"),
    ],
)
@pytest.mark.parametrize("size", [1, 3])
def test_recent_executions(
    many: dict[str, Any], status: str | tuple[str, ...], job: str, size: int
) -> None:
    queryset = JobExecution.objects.all()
    if isinstance(status, tuple):
        queryset = queryset.filter(status__in=status)
    elif status:
        queryset = queryset.filter(status=status)
    if job:
        queryset = queryset.filter(job_instance__job_name=job)
    # A job filter orders by instance, then attempt (the indexes' order).
    order = ("-job_instance_id", "-attempt") if job else ("-id",)
    expected = list(queryset.order_by(*order).values_list("id", flat=True))
    late = factories.instance("job-01")

    def insert() -> None:
        factories.execution(
            late,
            "FAILED",
            attempt=JobExecution.objects.filter(job_instance=late).count() + 1,
        )

    seen = walk(
        lambda s, t: queries.recent_executions(status, job, s, t), size, "id", insert
    )
    assert_exactly_once(seen, expected)


@pytest.mark.parametrize("size", [1, 2, 50])
def test_unresolved(many: dict[str, Any], size: int) -> None:
    expected = list(
        JobExecution.objects.filter(
            status__in=("STARTING", "STARTED", "STOPPING", "UNKNOWN")
        )
        .order_by("id")
        .values_list("id", flat=True)
    )
    assert expected
    old = factories.now() - timedelta(hours=2)

    def insert() -> None:
        fresh = factories.instance("job-02")
        factories.execution(fresh, "STARTED", created_at=old, updated_at=old)

    seen = walk(lambda s, t: queries.unresolved(900, s, t), size, "id", insert)
    assert_exactly_once(seen, expected)


@pytest.mark.parametrize("size", [1, 2, 3, 50])
def test_unresolved_of_every_status_interleaved(db: None, size: int) -> None:
    """
    Each unresolved status's rows, stale or fresh, interleaved by id.

    A status holds more stale rows than a small page, so a page is cut from
    several statuses' rows; fresh rows (inside the age) are left out.
    """
    factories.definition("job-00")
    stale = factories.now() - timedelta(hours=2)
    fresh = factories.now() - timedelta(minutes=1)
    statuses = ["STARTING", "STARTED", "STOPPING", "UNKNOWN", "COMPLETED"]
    for index in range(30):
        status = statuses[index % len(statuses) if index % 7 else 1]
        updated = fresh if index % 4 == 3 else stale
        factories.execution(
            factories.instance("job-00", created_at=stale - timedelta(hours=1)),
            status,
            created_at=stale - timedelta(hours=1),
            updated_at=updated,
        )
    expected = list(
        JobExecution.objects.filter(
            status__in=("STARTING", "STARTED", "STOPPING", "UNKNOWN"),
            updated_at__lt=factories.now() - timedelta(seconds=900),
        )
        .order_by("id")
        .values_list("id", flat=True)
    )
    assert len(expected) > 10
    assert (
        len({row.status for row in JobExecution.objects.filter(id__in=expected)}) == 4
    )

    seen = walk(lambda s, t: queries.unresolved(900, s, t), size, "id")
    assert_exactly_once(seen, expected)


@pytest.mark.parametrize("size", [1, 4, 50])
def test_steps_partitions_flow_and_requests(many: dict[str, Any], size: int) -> None:
    parent = many["parent"]
    partitioned = many["partitioned"]
    counter = iter(range(100, 1000))

    seen = walk(
        lambda s, t: queries.steps(parent.pk, s, t),
        size,
        "id",
        lambda: factories.step(parent, f"late-{next(counter)}"),
    )
    assert_exactly_once(seen, [step.pk for step in many["steps"]])

    expected = list(partitioned.partitions.order_by("id").values_list("id", flat=True))
    seen = walk(
        lambda s, t: queries.partitions(partitioned.pk, s, t),
        size,
        "id",
        lambda: factories.partition(
            partitioned, f"late-{next(counter)}", next(counter)
        ),
    )
    assert_exactly_once(seen, expected)

    expected = list(
        parent.flow_decisions.order_by("sequence").values_list("id", flat=True)
    )
    seen = walk(
        lambda s, t: queries.flow_decisions(parent.pk, s, t),
        size,
        "id",
        lambda: factories.flow_decision(parent, next(counter), f"late-{next(counter)}"),
    )
    assert_exactly_once(seen, expected)

    expected = list(
        parent.operator_requests.order_by("id").values_list("id", flat=True)
    )
    seen = walk(
        lambda s, t: queries.operator_requests(parent.pk, s, t),
        size,
        "id",
        lambda: factories.operator_request(parent),
    )
    assert_exactly_once(seen, expected)


def test_recovery_decisions(many: dict[str, Any]) -> None:
    parent = many["executions"][0]
    decisions = []
    for version in range(4):
        parent.version = version
        decisions.append(factories.recovery_decision(parent).pk)
    counter = iter(range(10, 100))

    def insert() -> None:
        parent.version = next(counter)
        factories.recovery_decision(parent)

    seen = walk(
        lambda s, t: queries.recovery_decisions(parent.pk, s, t), 1, "id", insert
    )
    assert_exactly_once(seen, decisions)


def test_full_final_page_leads_to_an_empty_page(many: dict[str, Any]) -> None:
    """A last page that is exactly full still issues a cursor (spec 3.2)."""
    parent = many["parent"]
    page = queries.steps(parent.pk, 11)
    assert len(page.rows) == 11 and page.next_cursor
    after = queries.steps(parent.pk, 11, page.next_cursor)
    assert after.rows == [] and after.next_cursor is None


def test_response_bound_truncates_and_continues(db: None) -> None:
    """Rows beyond the 256 KiB estimate move to the next page, none are lost."""
    from batchboard.digests import JobParameter

    # About 147 KB of estimated size per row: one row fits a page, two do not.
    parameters = {
        f"{'p' * 117}{index:03d}": JobParameter.u64(index) for index in range(1000)
    }
    ids = []
    for run in range(3):
        row = factories.instance("wide", {**parameters, "run": JobParameter.u64(run)})
        ids.append(row.pk)
    first = queries.instances("wide", 3)
    assert first.truncated and len(first.rows) == 1 and first.next_cursor
    assert first.rows[0]["parameters"][0] == ("p" * 117 + "000", "U64")
    seen = walk(lambda s, t: queries.instances("wide", s, t), 3, "id")
    assert_exactly_once(seen, sorted(ids, reverse=True))


def test_steps_of_another_execution_never_leak(many: dict[str, Any]) -> None:
    other = many["executions"][0]
    assert queries.steps(other.pk, 50).rows == []
    assert StepExecution.objects.filter(job_execution=many["parent"]).count() == 11


def test_a_row_over_the_response_bound_is_still_listed(db: None) -> None:
    """A single instance beyond 256 KiB of estimate is shown, then paged past."""
    from batchboard.digests import JobParameter

    huge = {f"{'q' * 120}{index:04d}": JobParameter.u64(index) for index in range(1900)}
    small = factories.instance("huge")
    big = factories.instance("huge", huge)
    first = queries.instances("huge", 5)
    assert [row["id"] for row in first.rows] == [big.pk]
    assert first.truncated and first.next_cursor
    second = queries.instances("huge", 5, first.next_cursor)
    assert [row["id"] for row in second.rows] == [small.pk]


def test_job_strips_list_latest_executions_newest_first(db: None) -> None:
    factories.definition("strip-job")
    older = factories.instance("strip-job")
    first = factories.execution(older, "FAILED")
    retry = factories.execution(older, "COMPLETED", restart_of=first)
    newer = factories.instance("strip-job")
    latest = factories.execution(newer, "STARTED")
    strips = overview.job_strips(["strip-job", "no-such-job"], length=2)
    assert [run["id"] for run in strips["strip-job"]] == [latest.pk, retry.pk]
    # Only the newest run's creation time is read (the overview shows it).
    newest, earlier = strips["strip-job"]
    assert newest["created_at"] == latest.created_at
    assert earlier["created_at"] is None
    full = overview.latest_runs(["strip-job"], 3, overview.RUN_COLUMNS)["strip-job"]
    assert [run["id"] for run in full] == [latest.pk, retry.pk, first.pk]
    assert full[2]["created_at"] == first.created_at and "ended_at" in full[2]
    assert strips["no-such-job"] == []
    assert overview.running_counts(["strip-job"]) == {"strip-job": 1}


def test_a_runs_seconds_are_its_exact_span_on_every_backend(db: None) -> None:
    """Whole-millisecond timestamps give the span exactly, never a hair short."""
    instance = factories.instance("span-job")
    base = factories.ago(days=2)
    spans = [timedelta(minutes=3), timedelta(seconds=59, milliseconds=999)]
    made = {}
    for index in range(40):
        length = spans[index % 2]
        run = factories.execution(
            instance,
            "COMPLETED",
            created_at=base + timedelta(milliseconds=index * 7919),
            duration=length,
        )
        made[run.pk] = length.total_seconds()
    runs = overview.latest_runs(["span-job"], 40, ("id", "seconds"))["span-job"]
    assert {int(run["id"]): run["seconds"] for run in runs} == made
