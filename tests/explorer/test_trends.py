"""The job page's duration trend and steps grid: layout, page and statements."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime, timedelta
from urllib.parse import unquote

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import resolve, reverse
from django.utils.html import escape

from batchboard.explorer import trends
from batchboard.explorer.links import job_url
from batchboard.explorer.presenters import Clock
from batchboard.vocabulary import GRID_RUNS, PARTITION_WORKER_PREFIX
from tests import factories

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _run(pk: int, status: str, seconds: float | None) -> dict[str, object]:
    started = None if seconds is None else NOW - timedelta(hours=1)
    ended = None if started is None else started + timedelta(seconds=seconds)
    return {
        "id": pk,
        "status": status,
        "attempt": 1,
        "job_instance_id": pk,
        "created_at": NOW - timedelta(hours=2),
        "started_at": started,
        "ended_at": ended,
    }


def test_percentile_is_nearest_rank() -> None:
    values = [float(n) for n in range(1, 101)]
    assert trends.percentile(values, 0.5) == 50
    assert trends.percentile(values, 0.95) == 95
    assert trends.percentile([7.0], 0.95) == 7


def test_trend_draws_oldest_left_scaled_to_the_longest() -> None:
    runs = [_run(3, "FAILED", 100), _run(2, "COMPLETED", 50), _run(1, "STARTING", None)]
    drawn = trends.trend(runs, Clock(NOW))
    assert [bar.run["id"] for bar in drawn.bars] == [1, 2, 3]
    assert [bar.tone for bar in drawn.bars] == ["active", "good", "bad"]
    unstarted, half, full = drawn.bars
    assert unstarted.height == 0
    assert half.height == trends.HEIGHT / 2
    assert full.height == trends.HEIGHT and full.y == 0
    assert drawn.unstarted == 1
    # Nearest rank over the two started runs: median 50 s, p95 100 s.
    assert drawn.median == "50 s" and drawn.p95 == "1 min 40 s"
    assert drawn.median_y == trends.HEIGHT / 2 and drawn.p95_y == 0
    assert all(bar.x + bar.width <= trends.WIDTH for bar in drawn.bars)


def test_trend_of_no_runs_is_empty() -> None:
    assert trends.trend([], Clock(NOW)).bars == []


def test_grid_places_each_step_under_its_run() -> None:
    runs = [_run(20, "FAILED", 5), _run(10, "COMPLETED", 5)]
    steps = [
        {"id": 1, "job_execution_id": 10, "step_name": "load", "status": "COMPLETED"},
        {"id": 2, "job_execution_id": 10, "step_name": "report", "status": "COMPLETED"},
        {"id": 3, "job_execution_id": 20, "step_name": "load", "status": "FAILED"},
    ]
    drawn = trends.grid(runs, steps)
    assert [run["id"] for run in drawn.runs] == [10, 20]
    load, report = drawn.rows
    assert load.name == "load" and report.name == "report"
    assert [cell and cell["status"] for cell in load.cells] == ["COMPLETED", "FAILED"]
    assert report.cells[1] is None
    assert load.cells[1] is not None
    assert load.cells[1]["url"] == reverse("batchboard:step", args=[3])


def _history(job: str, runs: int, steps_each: int) -> list[int]:
    """``runs`` instances of ``job``, each with one execution of ``steps_each`` steps."""
    ids = []
    for index in range(runs):
        status = "FAILED" if index % 3 == 0 else "COMPLETED"
        execution = factories.execution(
            factories.instance(job), status, duration=timedelta(seconds=10 + index)
        )
        for number in range(steps_each):
            factories.step(execution, f"step-{number}", "COMPLETED")
        factories.step(execution, f"{PARTITION_WORKER_PREFIX}{'ab' * 32}", "COMPLETED")
        ids.append(execution.pk)
    return ids


HTMX = {"HTTP_HX_REQUEST": "true"}


def test_job_page_draws_trend_and_grid(reader: Client, db: None) -> None:
    ids = _history("nightly", 30, 2)
    page = reader.get(reverse("batchboard:job", args=["nightly"])).content.decode()
    # The page asks for its history as soon as it is shown.
    history_url = reverse("batchboard:job_history", args=["nightly"])
    assert f'hx-get="{history_url}" hx-trigger="load"' in page
    assert "Reading the latest runs" in page and "bb-trend-bar" not in page
    body = reader.get(history_url, **HTMX).content.decode()
    assert 'id="bb-history"' in body and "aria-busy" not in body
    assert body.count('class="bb-trend-bar ') == 30
    assert 'class="bb-trend-bar bb-trend-bar--bad"' in body
    assert "bb-trend-line--median" in body and "bb-trend-line--p95" in body
    assert "style=" not in body
    grid = body[body.index('class="bb-grid"') :]
    # 25 newest runs, two step rows; partition workers are not rows.
    assert grid.count('class="bb-grid-run ') == GRID_RUNS
    assert len(re.findall(r'<th scope="row" class="bb-grid-name">', grid)) == 2
    assert PARTITION_WORKER_PREFIX not in body
    newest = ids[-1]
    assert f'href="{reverse("batchboard:execution", args=[newest])}"' in grid
    assert 'href="/steps/' in grid


@pytest.mark.parametrize("fragment", [False, True])
def test_job_page_statements_do_not_grow_with_history(
    reader: Client, db: None, fragment: bool
) -> None:
    """The page and its history fragment each read a fixed number of statements."""
    if fragment:
        url, headers = reverse("batchboard:job_history", args=["nightly"]), HTMX
    else:
        url, headers = reverse("batchboard:job", args=["nightly"]), {}
    _history("nightly", 3, 1)
    reader.get(url, **headers)
    with CaptureQueriesContext(connection) as small:
        reader.get(url, **headers)
    _history("nightly", 40, 4)
    with CaptureQueriesContext(connection) as large:
        reader.get(url + "?size=500", **headers)
    assert len(small) == len(large)
    for query in large.captured_queries:
        assert "OFFSET" not in query["sql"].upper()
        assert "COUNT(" not in query["sql"].upper()


def test_job_history_answers_a_plain_request_with_the_page_and_knows_no_stranger(
    reader: Client, db: None
) -> None:
    _history("a/b", 2, 1)
    history_url = reverse("batchboard:job_history", args=["a/b"])
    response = reader.get(history_url)
    assert response.status_code == 302
    assert response["Location"] == "/jobs/a%2Fb/"
    assert reader.get(history_url, **HTMX).status_code == 200
    missing = reverse("batchboard:job_history", args=["no-such-job"])
    assert reader.get(missing, **HTMX).status_code == 404
    # A job defined but never run has an honest empty history.
    factories.definition("idle")
    body = reader.get(
        reverse("batchboard:job_history", args=["idle"]), **HTMX
    ).content.decode()
    assert "No executions yet" in body


@pytest.mark.parametrize("job_name", ["R&D <nightly> run", "café/ünïcode & co", ".."])
def test_job_history_redirects_to_a_url_not_html(
    reader: Client, db: None, job_name: str
) -> None:
    """``Location`` carries the percent-encoded URL, never HTML-escaped text."""
    _history(job_name, 1, 1)
    response = reader.get(reverse("batchboard:job_history", args=[job_name]))
    assert response.status_code == 302
    location = response["Location"]
    assert "&amp;" not in location and "&#" not in location and "&lt;" not in location
    assert location.isascii() and " " not in location and "<" not in location
    # The same encoding as every link to the job: one segment, read back exactly.
    assert location == html.unescape(job_url(job_name))
    segment = location.removeprefix("/jobs/").removesuffix("/")
    assert "/" not in segment
    assert resolve(unquote(location)).kwargs["job_name"] == job_name
    page = reader.get(location)
    assert page.status_code == 200
    assert escape(job_name) in page.content.decode()


@pytest.mark.parametrize("values", [False, True])
def test_values_cost_one_statement_whatever_the_page(
    reader: Client, value_reader: Client, db: None, values: bool
) -> None:
    client = value_reader if values else reader
    url = reverse("batchboard:job", args=["nightly"])
    _history("nightly", 2, 1)
    client.get(url)
    with CaptureQueriesContext(connection) as small:
        client.get(url)
    _history("nightly", 20, 1)
    with CaptureQueriesContext(connection) as large:
        client.get(url)
    assert len(small) == len(large)


def test_grid_orders_step_names_by_first_appearance_whatever_the_read_order() -> None:
    """grid_steps reads newest run first; names still follow the lowest step id."""
    runs = [_run(20, "FAILED", 5), _run(10, "COMPLETED", 5)]
    steps = [
        {"id": 4, "job_execution_id": 20, "step_name": "report", "status": "FAILED"},
        {"id": 3, "job_execution_id": 20, "step_name": "load", "status": "COMPLETED"},
        {"id": 2, "job_execution_id": 10, "step_name": "report", "status": "COMPLETED"},
        {"id": 1, "job_execution_id": 10, "step_name": "load", "status": "COMPLETED"},
    ]
    drawn = trends.grid(runs, steps)
    assert [row.name for row in drawn.rows] == ["load", "report"]
    assert [cell and cell["id"] for cell in drawn.rows[1].cells] == [2, 4]


def test_trend_and_grid_markup_carry_each_run_s_own_values() -> None:
    runs = [_run(20, "FAILED", 5), _run(10, "COMPLETED", 10)]
    drawn = trends.trend(runs, Clock(NOW))
    url = reverse("batchboard:execution", args=[20])
    assert f'<a href="{url}"><rect class="bb-trend-bar bb-trend-bar--bad"' in (
        drawn.markup
    )
    assert "<title>#20 FAILED · 5.0 s (attempt 1)</title>" in drawn.markup
    steps = [
        {"id": 3, "job_execution_id": 20, "step_name": "<load>", "status": "FAILED"},
    ]
    (row,) = trends.grid(runs, steps).rows
    assert 'title="&lt;load&gt; · FAILED (#20)"' in row.markup
    assert row.markup.count("<td>") == 2 and "bb-grid-cell--none" in row.markup
    assert "bbslot" not in drawn.markup + row.markup


def test_a_step_its_finished_run_left_unresolved_is_not_drawn_running() -> None:
    runs = [_run(20, "FAILED", 5), _run(10, "STARTED", 5)]
    steps = [
        {"id": 3, "job_execution_id": 20, "step_name": "load", "status": "STARTED"},
        {"id": 1, "job_execution_id": 10, "step_name": "load", "status": "STARTED"},
    ]
    (row,) = trends.grid(runs, steps).rows
    assert [cell and cell["tone"] for cell in row.cells] == ["active", "muted"]
    assert "bb-grid-cell--active" in row.markup and "bb-grid-cell--muted" in row.markup


def test_a_20x_outlier_is_clipped_and_the_axis_dates_the_runs() -> None:
    runs = [_run(pk, "COMPLETED", 60 + pk % 5) for pk in range(30, 0, -1)]
    runs[10] = _run(20, "FAILED", 1200)
    drawn = trends.trend(runs, Clock(NOW))
    (clipped,) = [bar for bar in drawn.bars if bar.clipped]
    assert clipped.run["id"] == 20 and clipped.height == trends.HEIGHT
    assert drawn.clipped == 1 and drawn.scale == "1 min 36 s"
    heights = sorted(bar.height for bar in drawn.bars)
    assert heights[len(heights) // 2] >= 0.25 * trends.HEIGHT
    assert "clipped at the top of the scale, 1 min 36 s" in drawn.markup
    assert "#20 FAILED · 20 min 00 s" in drawn.markup
    assert [tick.day for tick in drawn.ticks] == ["2026-03-01"] * 5
    assert [tick.run_id for tick in drawn.ticks] == [1, 8, 15, 23, 30]
