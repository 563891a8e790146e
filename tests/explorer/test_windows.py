"""Time windows: executions updated between two times, instances created between."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import connection
from django.http import QueryDict
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from batchboard import cursors
from batchboard.explorer import inputs, queries
from batchboard.models import JobExecution, JobInstance
from batchboard.web import BadInput
from tests import factories

NIGHT = datetime(2026, 3, 1, 2, 0, tzinfo=UTC)


def _form(form_class: Any = inputs.ExecutionsForm, **data: str) -> Any:
    query = QueryDict(mutable=True)
    query.update(data)
    form = form_class(query)
    if not form.is_valid():
        raise form.bad_input()
    return form


def _window(**data: str) -> cursors.TimeWindow:
    window = _form(**data).window
    assert window is not None
    return window


# -- the form -----------------------------------------------------------------------


def test_absolute_bounds_read_as_utc_in_any_spelling() -> None:
    spellings = (
        "2026-03-01T02:00",  # the datetime-local picker's value
        "2026-03-01T02:00:00",
        "2026-03-01T02:00:00Z",
        "2026-03-01 02:00:00+00:00",
        "2026-03-01T03:00:00+01:00",
    )
    for spelled in spellings:
        window = _window(since=spelled, until="2026-03-01T03:00Z")
        assert window.since == "2026-03-01T02:00:00Z"
        assert cursors.moment(window.lower) == NIGHT
        assert cursors.moment(window.upper) == NIGHT + timedelta(hours=1)


def test_relative_bounds_count_back_from_one_reading_of_the_clock() -> None:
    before = timezone.now()
    window = _window(since="2H")
    after = timezone.now()
    assert window.since == "2h" and window.until == ""
    upper = cursors.moment(window.upper)
    assert before <= upper <= after
    assert cursors.moment(window.lower) == upper - timedelta(hours=2)
    assert _window(since="30m", until="10m").lower < _window(until="10m").upper


def test_no_bound_is_no_window() -> None:
    assert _form(status="FAILED").window is None


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"since": "yesterday"}, "since"),
        ({"until": "2026-13-01T00:00"}, "until"),
        ({"since": "7w"}, "since"),
        ({"since": "x" * 41}, "since"),
        ({"since": "1960-01-01T00:00Z"}, "since"),
        ({"since": "999999d"}, "since"),
        ({"until": "9999-12-31T23:00-05:00"}, "until"),
        ({"since": "2026-03-01T02:00\x00"}, "since"),
        ({"since": "2026-03-01T03:00Z", "until": "2026-03-01T02:00Z"}, "until"),
        ({"since": "1h", "until": "2h"}, "until"),
    ],
)
def test_bad_bounds_name_their_field(data: dict[str, str], field: str) -> None:
    with pytest.raises(BadInput) as raised:
        _form(**data)
    assert raised.value.param == field


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query",
    [
        "since=tomorrow",
        "until=2026-02-30T00:00",
        "since=2026-03-01T03:00Z&until=2026-03-01T02:00Z",
    ],
)
def test_a_bad_window_is_a_400_page(reader: Client, query: str) -> None:
    response = reader.get(f"{reverse('batchboard:executions')}?{query}")
    assert response.status_code == 400
    assert b"window" in response.content


# -- the executions list ------------------------------------------------------------


def _runs(count: int, start: datetime, *, job: str = "nightly", step: int = 1) -> list:
    factories.definition(job)
    runs = []
    for number in range(count):
        instance = factories.instance(job, created_at=start)
        status = ("COMPLETED", "FAILED", "STOPPED")[number % 3]
        runs.append(
            factories.execution(
                instance,
                status,
                created_at=start - timedelta(minutes=5),
                updated_at=start + timedelta(minutes=number * step),
            )
        )
    return runs


def _all_pages(
    statuses: tuple[str, ...], job: str, window: cursors.TimeWindow, size: int
) -> list[int]:
    seen: list[int] = []
    token = None
    while True:
        page = queries.windowed_executions(statuses, job, window, size, token)
        seen += [row["id"] for row in page.rows]
        if page.next_cursor is None:
            return seen
        token = page.next_cursor


@pytest.mark.django_db
def test_the_window_lists_by_last_update_then_id() -> None:
    runs = _runs(12, NIGHT - timedelta(minutes=3))
    # Two rows with the same update time: the newer id comes first.
    JobExecution.objects.filter(pk=runs[5].pk).update(updated_at=runs[6].updated_at)
    window = _window(since="2026-03-01T02:00Z", until="2026-03-01T02:06Z")
    ids = _all_pages((), "", window, 2)
    # Updated at 02:00 ... 02:05; 02:06 is past the end (exclusive).
    inside = [run for run in runs if NIGHT <= run.updated_at < NIGHT.replace(minute=6)]
    inside[2] = runs[5]
    expected = sorted(
        JobExecution.objects.filter(pk__in=[run.pk for run in runs]).filter(
            updated_at__gte=NIGHT, updated_at__lt=NIGHT + timedelta(minutes=6)
        ),
        key=lambda run: (run.updated_at, run.pk),
        reverse=True,
    )
    assert ids == [run.pk for run in expected]
    assert len(ids) == 6


@pytest.mark.django_db
@pytest.mark.parametrize("statuses", [(), ("FAILED",), ("COMPLETED", "FAILED")])
@pytest.mark.parametrize("job", ["", "nightly"])
def test_statuses_and_job_narrow_the_window(
    statuses: tuple[str, ...], job: str
) -> None:
    _runs(9, NIGHT)
    _runs(9, NIGHT, job="weekly")
    window = _window(since="2026-03-01T02:00Z", until="2026-03-01T02:07Z")
    ids = _all_pages(statuses, job, window, 2)
    rows = JobExecution.objects.filter(
        updated_at__gte=NIGHT, updated_at__lt=NIGHT + timedelta(minutes=7)
    )
    if statuses:
        rows = rows.filter(status__in=statuses)
    if job:
        rows = rows.filter(job_instance__job_name=job)
    expected = sorted(rows, key=lambda run: (run.updated_at, run.pk), reverse=True)
    assert ids == [run.pk for run in expected] and ids


@pytest.mark.django_db
def test_paging_stays_exact_while_rows_are_created_and_updated() -> None:
    runs = _runs(10, timezone.now() - timedelta(minutes=30), step=1)
    window = _window(since="1h")
    first = queries.windowed_executions((), "", window, 4)
    # Rows created and updated after the first page: none is shown, none
    # shown twice, and the later pages keep the window the first resolved.
    instance = factories.instance("nightly")
    factories.execution(instance, "STARTING")
    factories.advance(runs[0], "ABANDONED")
    later = _window(since="1h")
    assert later.lower > window.lower
    seen = [row["id"] for row in first.rows]
    token = first.next_cursor
    while token:
        page = queries.windowed_executions((), "", later, 4, token)
        seen += [row["id"] for row in page.rows]
        token = page.next_cursor
    assert len(seen) == len(set(seen))
    assert seen == [run.pk for run in reversed(runs[1:])]


@pytest.mark.django_db
def test_a_cursor_belongs_to_its_window_and_filters() -> None:
    _runs(6, NIGHT)
    window = _window(since="2026-03-01T02:00Z", until="2026-03-01T03:00Z")
    token = queries.windowed_executions((), "", window, 2).next_cursor
    assert token
    for other in (
        _window(since="2026-03-01T02:01Z", until="2026-03-01T03:00Z"),
        _window(since="2h"),
    ):
        with pytest.raises(cursors.CursorQueryMismatch):
            queries.windowed_executions((), "", other, 2, token)
    with pytest.raises(cursors.CursorQueryMismatch):
        queries.windowed_executions(("FAILED",), "", window, 2, token)
    # A key carrying other bounds than the absolute ones given.
    key, ceiling = cursors.decode(token, cursors.windowed_executions((), "", window), 2)
    assert isinstance(key, cursors.Windowed)
    moved = cursors.Windowed(key.at, key.id, key.lower + 1, key.upper)
    forged = cursors.encode(
        cursors.windowed_executions((), "", window), 2, moved, ceiling
    )
    with pytest.raises(cursors.CursorQueryMismatch):
        queries.windowed_executions((), "", window, 2, forged)
    # A position past the window's end.
    beyond = cursors.Windowed(key.upper, key.id, key.lower, key.upper)
    forged = cursors.encode(
        cursors.windowed_executions((), "", window), 2, beyond, ceiling
    )
    with pytest.raises(cursors.CursorInvalid):
        queries.windowed_executions((), "", window, 2, forged)
    # An identity key is not a window's.
    wrong = cursors.encode(
        cursors.windowed_executions((), "", window), 2, cursors.Identity(5), ceiling
    )
    with pytest.raises(cursors.CursorInvalid):
        queries.windowed_executions((), "", window, 2, wrong)


def test_a_windowed_key_round_trips() -> None:
    spec = cursors.windowed_executions(("FAILED",), "nightly", _window(since="2h"))
    key = cursors.Windowed(1_772_330_400_000_001, 7, 5, 1_772_330_400_000_002)
    assert cursors.decode(cursors.encode(spec, 50, key, 9), spec, 50) == (key, 9)
    upside_down = cursors.Windowed(3, 7, 5, 4)
    with pytest.raises(cursors.CursorInvalid):
        cursors.windowed_bounds(upside_down)


@pytest.mark.django_db
def test_the_page_pages_a_relative_window_and_says_its_order(reader: Client) -> None:
    runs = _runs(5, timezone.now() - timedelta(minutes=20))
    url = reverse("batchboard:executions")
    response = reader.get(f"{url}?since=1h&size=2")
    assert response.status_code == 200
    text = response.content.decode()
    assert "ordered by last update" in text.lower()
    assert 'type="datetime-local"' in text
    next_url = response.context["next_url"]
    query = parse_qs(urlsplit(next_url).query)
    assert query["since"] == ["1h"]
    shown = [row["id"] for row in response.context["page"].rows]
    while next_url:
        response = reader.get(next_url)
        assert response.status_code == 200
        shown += [row["id"] for row in response.context["page"].rows]
        next_url = response.context["next_url"]
    assert shown == [run.pk for run in reversed(runs)]


@pytest.mark.django_db
def test_a_tampered_window_cursor_is_a_400_page(reader: Client) -> None:
    _runs(4, NIGHT)
    url = reverse("batchboard:executions")
    base = f"{url}?since=2026-03-01T01:00Z&until=2026-03-01T03:00Z&size=2"
    next_url = reader.get(base).context["next_url"]
    assert next_url
    moved = next_url.replace("since=2026-03-01T01%3A00Z", "since=2026-03-01T01%3A30Z")
    assert moved != next_url
    assert reader.get(moved).status_code == 400
    token = parse_qs(urlsplit(next_url).query)["cursor"][0]
    damaged = token[:-2] + ("00" if token[-2:] != "00" else "11")
    assert reader.get(f"{base}&cursor={damaged}").status_code == 400


@pytest.mark.django_db
@pytest.mark.parametrize("query", ["", "&status=FAILED", "&job=nightly"])
def test_a_windowed_page_reads_a_constant_number_of_statements(
    reader: Client, query: str
) -> None:
    url = f"{reverse('batchboard:executions')}?since=2026-03-01T00:00Z{query}&size=5"
    counts = []
    for runs in (20, 40):
        JobExecution.objects.all().delete()
        JobInstance.objects.all().delete()
        _runs(runs, NIGHT)
        reader.get(url)
        with CaptureQueriesContext(connection) as captured:
            first = reader.get(url)
        with CaptureQueriesContext(connection) as deeper:
            reader.get(first.context["next_url"])
        counts.append((len(captured), len(deeper)))
    assert counts[0] == counts[1]


# -- a job's instances created between -------------------------------------------


def _instances(count: int, start: datetime, job: str = "nightly") -> list[JobInstance]:
    factories.definition(job)
    return [
        factories.instance(job, created_at=start + timedelta(minutes=number))
        for number in range(count)
    ]


def _instance_pages(job: str, window: cursors.TimeWindow, size: int) -> list[int]:
    seen: list[int] = []
    token = None
    while True:
        page = queries.windowed_instances(job, window, size, token)
        seen += [row["id"] for row in page.rows]
        if page.next_cursor is None:
            return seen
        token = page.next_cursor


@pytest.mark.django_db
def test_instances_created_in_the_window_newest_first() -> None:
    made = _instances(10, NIGHT - timedelta(minutes=2))
    _instances(5, NIGHT, job="weekly")
    window = _window(since="2026-03-01T02:00Z", until="2026-03-01T02:05Z")
    # Created 02:00 to 02:04 (02:05 is the exclusive end).
    assert _instance_pages("nightly", window, 2) == [run.pk for run in made[2:7]][::-1]


@pytest.mark.django_db
def test_an_instance_page_examines_a_bounded_range(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(queries, "WINDOW_SCAN", 3)
    made = _instances(10, NIGHT)
    window = _window(since="2026-03-01T02:01Z", until="2026-03-01T02:03Z")
    first = queries.windowed_instances("nightly", window, 5)
    # The newest three examined hold none of the window: an empty page
    # that continues below them.
    assert first.rows == [] and first.next_cursor
    assert _instance_pages("nightly", window, 5) == [made[2].pk, made[1].pk]


@pytest.mark.django_db
def test_instances_created_after_the_first_page_stay_out() -> None:
    made = _instances(6, timezone.now() - timedelta(minutes=30))
    window = _window(since="1h")
    first = queries.windowed_instances("nightly", window, 2)
    factories.instance("nightly")
    seen = [row["id"] for row in first.rows]
    token = first.next_cursor
    while token:
        page = queries.windowed_instances("nightly", _window(since="1h"), 2, token)
        seen += [row["id"] for row in page.rows]
        token = page.next_cursor
    assert seen == [run.pk for run in reversed(made)]


@pytest.mark.django_db
def test_the_job_page_takes_a_created_window(reader: Client) -> None:
    made = _instances(4, NIGHT)
    url = reverse("batchboard:job", args=["nightly"])
    response = reader.get(f"{url}?since=2026-03-01T02:01&until=2026-03-01T02:03&size=1")
    assert response.status_code == 200
    assert 'type="datetime-local"' in response.content.decode()
    shown = [row["id"] for row in response.context["page"].rows]
    next_url = response.context["next_url"]
    while next_url:
        response = reader.get(next_url)
        shown += [row["id"] for row in response.context["page"].rows]
        next_url = response.context["next_url"]
    assert shown == [made[2].pk, made[1].pk]
    assert reader.get(f"{url}?until=soon").status_code == 400
    other = f"{url}?since=2026-03-01T02:00&size=1&cursor="
    token = queries.windowed_instances(
        "nightly", _window(since="2026-03-01T02:01Z"), 1
    ).next_cursor
    assert token and reader.get(other + token).status_code == 400


@pytest.mark.django_db
def test_the_job_page_reads_a_constant_number_of_statements(reader: Client) -> None:
    url = (
        f"{reverse('batchboard:job', args=['nightly'])}?since=2026-03-01T00:00Z&size=3"
    )
    counts = []
    for count in (8, 30):
        JobInstance.objects.all().delete()
        _instances(count, NIGHT)
        reader.get(url)
        with CaptureQueriesContext(connection) as captured:
            first = reader.get(url)
        with CaptureQueriesContext(connection) as deeper:
            reader.get(first.context["next_url"])
        counts.append((len(captured), len(deeper)))
    assert counts[0] == counts[1]


@pytest.mark.django_db
def test_a_windowed_list_offers_no_bulk_plan(admin_user: Any) -> None:
    client = Client()
    client.force_login(admin_user)
    _runs(3, NIGHT)
    url = reverse("batchboard:executions")
    plan = reverse("batchboard:bulk_plan", args=["executions", "ABANDON"])
    assert plan in client.get(f"{url}?status=FAILED").content.decode()
    assert plan not in client.get(f"{url}?status=FAILED&since=2h").content.decode()
    assert client.get(f"{plan}?status=FAILED&since=2h").status_code == 400


#: How a job's window is read: down the statuses' ranges joined to the
#: instances; from the job's instances (SQLite, a rare job); down the
#: ranges probing each row's instance (PostgreSQL, a busy job). Each forced
#: by the bounds that choose it: (RARE_JOB_INSTANCES, BUSY_JOB_SAMPLE, BUSY_JOB_SPAN).
_JOB_SHAPES = {
    "walks": (0, 10**9, 1),
    "rare-job": (1000, 10**9, 1),
    "busy-job": (0, 1, 10**9),
}


@pytest.mark.django_db
@pytest.mark.parametrize("shape", list(_JOB_SHAPES))
@pytest.mark.parametrize("seed", range(6))
def test_generated_windows_page_exactly_as_a_naive_sort(
    seed: int, shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """
    Every status and job choice, pages of every size, many ties on the time.

    The walks keep only a page's ids before projecting (PostgreSQL): on
    generated histories, paging gives exactly the rows of a naive read,
    sorted by last update then id, each once. A job's window is read down
    the statuses' ranges, joined to the instances; on SQLite, for a job
    with few instances, from its instances; on PostgreSQL, for a busy job,
    down the ranges with each row's instance probed: every shape gives the
    naive read's pages.
    """
    rare_below, sample, span = _JOB_SHAPES[shape]
    monkeypatch.setattr(queries, "RARE_JOB_INSTANCES", rare_below)
    monkeypatch.setattr(queries, "BUSY_JOB_SAMPLE", sample)
    monkeypatch.setattr(queries, "BUSY_JOB_SPAN", span)
    chance = random.Random(seed)
    for job in ("nightly", "weekly"):
        factories.definition(job)
    statuses = ("COMPLETED", "FAILED", "STOPPED", "ABANDONED", "STARTED")
    made = []
    for _ in range(40):
        job = chance.choice(("nightly", "weekly"))
        status = chance.choice(statuses)
        created = NIGHT - timedelta(minutes=30)
        execution = factories.execution(
            factories.instance(job, created_at=created),
            status,
            created_at=created,
            duration=timedelta(minutes=1),
        )
        # Few distinct times, so many rows tie on the time and order by id.
        moment = NIGHT + timedelta(minutes=chance.randrange(8))
        JobExecution.objects.filter(pk=execution.pk).update(updated_at=moment)
        made.append(execution.pk)
    window = _window(since="2026-03-01T02:01Z", until="2026-03-01T02:07Z")
    for chosen in [(), ("FAILED",), ("COMPLETED", "STARTED", "STOPPED")]:
        for job in ("", "weekly"):
            size = chance.randrange(1, 7)
            rows = JobExecution.objects.filter(
                pk__in=made,
                updated_at__gte=NIGHT + timedelta(minutes=1),
                updated_at__lt=NIGHT + timedelta(minutes=7),
            )
            if chosen:
                rows = rows.filter(status__in=chosen)
            if job:
                rows = rows.filter(job_instance__job_name=job)
            expected = [
                run.pk
                for run in sorted(
                    rows, key=lambda run: (run.updated_at, run.pk), reverse=True
                )
            ]
            assert _all_pages(chosen, job, window, size) == expected, (chosen, job)


@pytest.mark.django_db
def test_a_job_is_busy_when_its_newest_instances_lie_close(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Busy: its newest SAMPLE instances among the last SPAN * SAMPLE of all."""
    monkeypatch.setattr(queries, "BUSY_JOB_SAMPLE", 3)
    monkeypatch.setattr(queries, "BUSY_JOB_SPAN", 2)
    for _ in range(3):  # one in every four, then none of late
        factories.instance("once-busy")
        for _ in range(3):
            factories.instance("other")
    factories.instance("few")
    factories.instance("few")
    for _ in range(3):  # one instance in every two, the newest
        factories.instance("busy")
        factories.instance("other")
    assert queries._looks_busy("busy")
    assert not queries._looks_busy("once-busy")
    assert not queries._looks_busy("few")
    assert not queries._looks_busy("unknown")
    factories.instance("other")  # six instances since the busy job's third newest
    assert not queries._looks_busy("busy")


@pytest.mark.django_db
def test_what_was_found_of_a_job_is_kept_a_while(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One look per job for BUSY_JOB_KEPT_SECONDS; never more jobs than kept."""
    monkeypatch.setattr(queries, "BUSY_JOB_SAMPLE", 1)
    factories.instance("busy")
    clock = [1000.0]
    monkeypatch.setattr(queries.time, "monotonic", lambda: clock[0])
    with CaptureQueriesContext(connection) as looked:
        assert queries._is_busy_job("busy")
        assert queries._is_busy_job("busy")
    assert len(looked) == 1
    JobInstance.objects.all().delete()
    clock[0] += queries.BUSY_JOB_KEPT_SECONDS - 1
    assert queries._is_busy_job("busy")  # still what was found
    clock[0] += 1
    with CaptureQueriesContext(connection) as again:
        assert not queries._is_busy_job("busy")
    assert len(again) == 1
    monkeypatch.setattr(queries, "BUSY_JOB_KEPT_JOBS", 3)
    for name in ("a", "b", "c", "d"):
        queries._is_busy_job(name)
    assert len(queries._BUSY_JOBS) <= 3


@pytest.mark.django_db
@pytest.mark.parametrize("chosen", [(), ("FAILED",), ("FAILED", "COMPLETED")])
def test_a_busy_job_s_window_probes_each_row_on_postgresql(
    chosen: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """
    Over several statuses a busy job's walks probe each row's instance
    (PostgreSQL); one status is one walk, joined, with no look at the job
    first. SQLite never looks: its shapes are the ranges and the instances.
    """
    monkeypatch.setattr(queries, "BUSY_JOB_SAMPLE", 1)
    _runs(4, NIGHT)
    job = JobInstance.objects.order_by("id").values_list("job_name", flat=True)[0]
    window = _window(since="2026-02-28T00:00Z", until="2026-03-02T00:00Z")
    with CaptureQueriesContext(connection) as captured:
        page = queries.windowed_executions(chosen, job, window, 50)
    statements = [query["sql"] for query in captured.captured_queries]
    probed = any("OFFSET 0" in sql for sql in statements)
    several = len(chosen) != 1
    assert probed == (several and connection.vendor == "postgresql"), statements
    expected = JobExecution.objects.filter(job_instance__job_name=job)
    if chosen:
        expected = expected.filter(status__in=chosen)
    assert sorted(row["id"] for row in page.rows) == sorted(
        expected.values_list("id", flat=True)
    )
    # The probed job is each row's, read or not; so in the download's rows.
    exported = queries.windowed_executions(
        chosen, job, window, 50, shape=queries.EXPORT
    )
    assert [row["id"] for row in exported.rows] == [row["id"] for row in page.rows]
    for row in [*page.rows, *exported.rows]:
        assert row["job_name"] == job
