"""The admin's changelists: bounded page numbers, then keyset pages."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.db import connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from batchboard import conf
from batchboard.admin import changelist
from batchboard.admin.changelist import FIRST_PAGES, LookaheadPaginator
from batchboard.models import JobDefinition, JobExecution
from tests.admin.conftest import count_statements
from tests.factories import actions as factories
from tests.site.history import T0, create_history


@pytest.mark.django_db
def test_first_pages_count_a_bounded_window() -> None:
    """The count fetches at most one window of keys and pages resolve in it."""
    history = create_history()
    base = JobExecution.objects.order_by("-id")
    exact = LookaheadPaginator(base, per_page=1)
    assert (exact.count, exact.num_pages, exact.truncated) == (2, 2, False)
    assert list(exact.page(2).object_list) == [history.failed]
    empty = LookaheadPaginator(JobExecution.objects.none(), per_page=3)
    assert (empty.count, empty.truncated) == (0, False)


@pytest.mark.django_db
def test_numbered_pages_stop_at_the_window() -> None:
    """Past the window the count stops at it; later rows need the keyset link."""
    for number in range(FIRST_PAGES + 5):
        JobDefinition.objects.create(
            job_name="many",
            definition_revision=f"r{number}",
            manifest_format=1,
            manifest_digest=number.to_bytes(32, "big"),
            manifest={},
            registered_at=T0,
        )
    paginator = LookaheadPaginator(JobDefinition.objects.order_by("-id"), per_page=1)
    with CaptureQueriesContext(connections[conf.database_alias()]) as captured:
        assert paginator.count == FIRST_PAGES
        assert paginator.truncated is True
    assert len(captured.captured_queries) == 1
    assert f"LIMIT {FIRST_PAGES + 1}" in captured.captured_queries[0]["sql"]
    assert count_statements(captured.captured_queries) == []
    assert paginator.num_pages == FIRST_PAGES


def _walk(client: Client, url: str, query: dict[str, str]) -> list[list[int]]:
    """Follow the next links from the first page; return the ids of each page."""
    pages: list[list[int]] = []
    response = client.get(url, query)
    while True:
        assert response.status_code == 200
        pages.append([row.pk for row in response.context["cl"].result_list])
        next_url = response.context["cl"].next_url
        if next_url is None:
            return pages
        assert len(pages) < 50, "the walk does not end"
        response = client.get(url + next_url)


@pytest.fixture
def deep(db: None, monkeypatch: pytest.MonkeyPatch) -> list[JobExecution]:
    """
    Return 15 executions, every third FAILED, listed four to a page with
    numbered pages for the first two only.
    """
    monkeypatch.setattr(admin.site.get_model_admin(JobExecution), "list_per_page", 4)
    monkeypatch.setattr(changelist, "FIRST_PAGES", 2)
    definition = factories.definition()
    return [
        factories.execution(
            "FAILED" if number % 3 == 0 else "COMPLETED", job_definition=definition
        )
        for number in range(15)
    ]


EXECUTIONS = "admin:batchboard_jobexecution_changelist"


def test_keyset_walk_returns_every_row_once(
    deep: list[JobExecution], viewer: Client
) -> None:
    """Next links lead through the whole list, newest first, each row once."""
    pages = _walk(viewer, reverse(EXECUTIONS), {})
    ids = [pk for page in pages for pk in page]
    assert ids == sorted((e.pk for e in deep), reverse=True)
    assert [len(page) for page in pages] == [4, 4, 4, 3]


def test_keyset_walk_keeps_the_status_filter(
    deep: list[JobExecution], viewer: Client
) -> None:
    """Filtered, the walk yields exactly the matching rows, each once."""
    pages = _walk(viewer, reverse(EXECUTIONS), {"status__exact": "FAILED"})
    ids = [pk for page in pages for pk in page]
    failed = sorted((e.pk for e in deep if e.status == "FAILED"), reverse=True)
    assert ids == failed
    assert len(pages) == 2


def test_a_keyset_page_is_one_query_without_offset_or_count(
    deep: list[JobExecution], viewer: Client
) -> None:
    """A page reached by its keyset link skips nothing and counts nothing."""
    after = sorted(e.pk for e in deep)[-3]
    url = reverse(EXECUTIONS)
    with CaptureQueriesContext(connections[conf.database_alias()]) as captured:
        response = viewer.get(url, {"after": str(after), "status__exact": "COMPLETED"})
    assert response.status_code == 200
    metadata = [
        q["sql"] for q in captured.captured_queries if "ob_job_execution" in q["sql"]
    ]
    assert len(metadata) == 1
    sql = metadata[0]
    assert "OFFSET" not in sql.upper()
    assert "LIMIT 5" in sql
    assert "DISTINCT" not in sql.upper()
    assert count_statements(captured.captured_queries) == []
    rows = [row.pk for row in response.context["cl"].result_list]
    expected = sorted(
        (e.pk for e in deep if e.pk < after and e.status == "COMPLETED"), reverse=True
    )
    assert rows == expected[:4]
    body = response.content.decode()
    assert f"Job executions older than #{after}." in body
    # Filter links start again from the newest rows; only "next" carries a key.
    assert body.count("after=") == 1
    assert f"after={rows[-1]}" in response.context["cl"].next_url
    assert "status__exact=COMPLETED" in response.context["cl"].next_url


def test_numbered_pages_end_where_the_keyset_takes_over(
    deep: list[JobExecution], viewer: Client
) -> None:
    """Page numbers cover the first pages; past them a page number is refused."""
    url = reverse(EXECUTIONS)
    second = viewer.get(url, {"p": "2"})
    assert second.status_code == 200
    newest = sorted((e.pk for e in deep), reverse=True)
    assert [row.pk for row in second.context["cl"].result_list] == newest[4:8]
    assert second.context["cl"].next_url == f"?after={newest[7]}"
    assert "8 newest job executions in numbered pages" in second.content.decode()
    beyond = viewer.get(url, {"p": "3"})
    assert beyond.status_code == 302
    assert "e=1" in beyond["Location"]


@pytest.mark.parametrize(
    "query",
    [
        {"after": "abc"},
        {"after": "0"},
        {"after": "-5"},
        {"after": "007"},
        {"after": "1.5"},
        {"after": " 12"},
        {"after": "\u0661\u0662"},
        {"after": "9223372036854775808"},
        {"after": "99999999999999999999999"},
        {"after": ["12", "13"]},
        {"after": "12", "p": "2"},
        {"after": "12", "all": ""},
    ],
    ids=lambda q: repr(q),
)
def test_a_tampered_keyset_is_a_clear_400(
    query: dict[str, str], deep: list[JobExecution], viewer: Client
) -> None:
    """A key that is not one plain row id is explained, not a 500 or a redirect."""
    url = reverse(EXECUTIONS)
    with CaptureQueriesContext(connections[conf.database_alias()]) as captured:
        response = viewer.get(url, query)
    assert response.status_code == 400
    body = response.content.decode()
    assert "parameter must appear once, as the id of the last row" in body
    assert f'href="{url}"' in body
    assert not [q for q in captured.captured_queries if "ob_job_" in q["sql"]]


def test_the_largest_key_is_accepted(deep: list[JobExecution], viewer: Client) -> None:
    """The bigint maximum is a valid key: it lists from the newest row."""
    response = viewer.get(reverse(EXECUTIONS), {"after": str(2**63 - 1)})
    assert response.status_code == 200
    assert len(response.context["cl"].result_list) == 4


def test_a_keyset_page_past_the_end_is_empty(
    deep: list[JobExecution], viewer: Client
) -> None:
    """A key below every row lists nothing and offers no next page."""
    response = viewer.get(reverse(EXECUTIONS), {"after": "1"})
    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == []
    assert response.context["cl"].next_url is None
