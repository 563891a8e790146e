"""
The executions list's filters: several statuses, any case, shortcuts, the
job names suggested as a filter is typed, and the navigation's current page.
"""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from batchboard import vocabulary
from batchboard.explorer import queries
from batchboard.models import JobExecution
from tests import factories

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def runs(db: None) -> dict[str, int]:
    """One execution of each status across two jobs, with ids by status."""
    factories.definition("invoice-daily")
    factories.definition("invoice-monthly")
    factories.definition("payroll")
    ids = {}
    for index, status in enumerate(vocabulary.STATUSES):
        name = "invoice-daily" if index % 2 else "payroll"
        ids[status] = factories.execution(factories.instance(name), status).pk
    return ids


def _listed(response: object) -> set[int]:
    text = response.content.decode()  # type: ignore[attr-defined]
    return {int(pk) for pk in re.findall(r'href="/executions/(\d+)/"', text)}


def test_several_statuses_list_any_of_them(
    reader: Client, runs: dict[str, int]
) -> None:
    url = reverse("batchboard:executions")
    response = reader.get(url, {"status": ["failed", "Stopped"]})
    assert response.status_code == 200
    assert _listed(response) == {runs["FAILED"], runs["STOPPED"]}
    text = response.content.decode()
    assert 'value="FAILED" checked' in text and 'value="STOPPED" checked' in text
    assert 'value="COMPLETED" checked' not in text


@pytest.mark.parametrize("status", ["failed", "Failed", "FAILED"])
def test_a_status_is_accepted_in_any_case(
    reader: Client, runs: dict[str, int], status: str
) -> None:
    response = reader.get(reverse("batchboard:executions"), {"status": status})
    assert response.status_code == 200
    assert _listed(response) == {runs["FAILED"]}


@pytest.mark.parametrize("name", list(vocabulary.STATUS_SETS))
def test_the_shortcuts_list_their_set(
    reader: Client, runs: dict[str, int], name: str
) -> None:
    url = reverse("batchboard:executions")
    response = reader.get(url, {"status": name, "job": "invoice-daily"})
    assert response.status_code == 200
    expected = {
        pk
        for index, (status, pk) in enumerate(runs.items())
        if status in vocabulary.STATUS_SETS[name] and index % 2
    }
    assert _listed(response) == expected
    text = response.content.decode()
    # Both shortcuts keep the job filter; the one in use is marked.
    for other in vocabulary.STATUS_SETS:
        link = f"{url}?status={other}&amp;job=invoice-daily"
        assert link in text
    assert f'?status={name}&amp;job=invoice-daily" aria-current="true"' in text


def test_a_long_walk_over_several_statuses_is_exact(
    reader: Client, runs: dict[str, int]
) -> None:
    """Page by page, each row of the chosen statuses exactly once, newest first."""
    url = reverse("batchboard:executions")
    seen: list[int] = []
    query = {"status": "finished", "size": "1"}
    for _ in range(10):
        response = reader.get(url, query, **HTMX)
        text = response.content.decode()
        seen += sorted(_listed(response), reverse=True)
        found = re.search(r"cursor=([0-9a-f]+)", text)
        if not found:
            break
        query = {**query, "cursor": found.group(1)}
    finished = [runs[status] for status in vocabulary.FINISHED]
    assert seen == sorted(finished, reverse=True)


def test_an_unknown_status_is_a_400_that_names_the_shortcuts(reader: Client) -> None:
    response = reader.get(reverse("batchboard:executions"), {"status": "RUNNING"})
    assert response.status_code == 400
    assert "active, finished" in response.content.decode()


def test_the_navigation_marks_the_page_shown(
    reader: Client, runs: dict[str, int]
) -> None:
    def marked(url: str) -> list[str]:
        text = reader.get(url).content.decode()
        nav = text.split('class="bb-nav"', 1)[1].split("</nav>", 1)[0]
        return re.findall(r'aria-current="page">([^<]+)</a>', nav)

    executions = reverse("batchboard:executions")
    assert marked(f"{executions}?status=FAILED") == ["Failures"]
    assert marked(f"{executions}?status=failed") == ["Failures"]
    assert marked(executions) == ["Executions"]
    assert marked(f"{executions}?status=FAILED&status=STOPPED") == ["Executions"]
    assert marked(reverse("batchboard:unresolved")) == ["Unresolved"]


def test_running_counts_open_the_job_s_active_executions(
    reader: Client, runs: dict[str, int]
) -> None:
    text = reader.get(reverse("batchboard:index")).content.decode()
    url = reverse("batchboard:executions")
    link = f'href="{url}?job=invoice-daily&amp;status=active"'
    assert link in text
    response = reader.get(html.unescape(link[6:-1]))
    expected = {
        pk
        for index, (status, pk) in enumerate(runs.items())
        if status in vocabulary.UNRESOLVED and index % 2
    }
    assert expected and _listed(response) == expected


def test_job_names_are_suggested_by_prefix_from_the_definitions(
    reader: Client, runs: dict[str, int]
) -> None:
    url = reverse("batchboard:job_names")
    with CaptureQueriesContext(connection) as captured:
        response = reader.get(url, {"job": "invoice"}, **HTMX)
    assert response.status_code == 200
    text = response.content.decode()
    assert text.count("<option") == 2
    assert '<option value="invoice-daily">' in text
    assert '<option value="invoice-monthly">' in text
    assert "payroll" not in text
    (read,) = [q["sql"] for q in captured if "ob_job" in q["sql"]]
    assert "ob_job_definition" in read
    assert "ob_job_execution" not in read and "ob_job_instance" not in read
    assert "LIMIT 20" in read
    # By prefix only, case included.
    assert "<option" not in reader.get(url, {"job": "daily"}, **HTMX).content.decode()
    assert "<option" not in reader.get(url, {"job": "Invoice"}, **HTMX).content.decode()
    assert reader.get(url, {"job": "invoice"}).status_code == 302


def test_suggestions_stop_at_their_bound(db: None) -> None:
    for index in range(vocabulary.SUGGESTED_NAMES + 5):
        factories.definition(f"batch-{index:02d}")
    factories.definition("batcher")
    names = queries.job_names_starting("batch-")
    assert names == [f"batch-{index:02d}" for index in range(20)]
    assert queries.job_names_starting("batch-24") == ["batch-24"]
    assert queries.job_names_starting("zzz") == []


def test_the_job_filter_offers_the_suggestions(reader: Client) -> None:
    text = reader.get(reverse("batchboard:executions")).content.decode()
    assert 'list="bb-job-names"' in text
    assert f'hx-get="{reverse("batchboard:job_names")}"' in text


def test_the_start_of_a_name_lists_the_names_it_begins(
    reader: Client, runs: dict[str, int]
) -> None:
    """The job filter is exact; an empty list says which names start with it."""
    url = reverse("batchboard:executions")
    text = reader.get(url, {"job": "invoice", "status": "failed"}).content.decode()
    assert "No job is named “invoice”; the job filter matches whole names." in text
    assert f'<a href="{url}?status=FAILED&amp;job=invoice-daily">invoice-daily</a>' in (
        text
    )
    assert f'href="{url}?status=FAILED&amp;job=invoice-monthly"' in text
    # A job that exists shows its rows and no such notice.
    assert "No job is named" not in reader.get(url, {"job": "payroll"}).content.decode()


@pytest.mark.parametrize("size", [1, 3, 7])
def test_several_statuses_page_exactly_as_one_in_list_would(size: int) -> None:
    """
    The merged walks give, page by page, what ``status IN (…)`` by id gives.

    A generated history interleaves the statuses unevenly (runs of one
    status, rare ones, none of some), so a page often takes all its rows
    from one walk and sometimes from several.
    """
    factories.definition("merged")
    statuses = ["COMPLETED"] * 5 + ["FAILED", "STOPPED", "UNKNOWN", "STARTED"]
    for index in range(40):
        status = statuses[(index * 7 + index // 5) % len(statuses)]
        factories.execution(factories.instance("merged"), status)
    for chosen in (vocabulary.FINISHED, vocabulary.UNRESOLVED, ("FAILED", "UNKNOWN")):
        expected = list(
            JobExecution.objects.filter(status__in=chosen)
            .order_by("-id")
            .values_list("id", flat=True)
        )
        seen: list[int] = []
        token = None
        while True:
            page = queries.recent_executions(chosen, "", size, token)
            seen += [int(row["id"]) for row in page.rows]
            token = page.next_cursor
            if not token:
                break
        assert seen == expected, chosen


@pytest.mark.parametrize("size", [1, 4])
def test_unresolved_pages_exactly_as_one_read_by_id_would(size: int) -> None:
    """The unresolved list, page by page, is every unresolved row by id once."""
    factories.definition("unresolved-walk")
    statuses = [*vocabulary.UNRESOLVED, "COMPLETED", "FAILED"]
    for index in range(30):
        status = statuses[(index * 5 + index // 4) % len(statuses)]
        factories.execution(
            factories.instance("unresolved-walk"),
            status,
            created_at=timezone.now() - timedelta(hours=2),
        )
    expected = list(
        JobExecution.objects.filter(status__in=vocabulary.UNRESOLVED)
        .order_by("id")
        .values_list("id", flat=True)
    )
    seen: list[int] = []
    token = None
    while True:
        page = queries.unresolved(0, size, token)
        seen += [int(row["id"]) for row in page.rows]
        token = page.next_cursor
        if not token:
            break
    assert seen == expected
