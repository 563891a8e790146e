"""Bad input gets a 400 or 404 page that says what was wrong, never a 500."""

from __future__ import annotations

import html
from urllib.parse import quote

import pytest
from django.db import DatabaseError
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from batchboard import cursors
from batchboard.explorer import queries
from batchboard.explorer.links import _escaped_dots, job_url
from tests import factories
from tests.explorer.conftest import History

HTMX = {"HTTP_HX_REQUEST": "true"}


def _cursor_for_other_query(history: History) -> str:
    return cursors.encode(cursors.job_names(), 50, cursors.Name("a"), 9)


@pytest.mark.parametrize(
    ("params", "title"),
    [
        ({"cursor": "not-hex"}, "This link cannot continue the list"),
        ({"cursor": "ab" * 40}, "This link cannot continue the list"),
        ({"size": "0"}, "Page size out of range"),
        ({"size": "501"}, "Page size out of range"),
        ({"size": "ten"}, "Page size out of range"),
        ({"status": "RUNNING"}, "Unknown filter value"),
    ],
)
def test_bad_list_input_gets_400(
    reader: Client, history: History, params: dict[str, str], title: str
) -> None:
    url = reverse("batchboard:executions")
    response = reader.get(url, {**params, "job": "nightly-import"})
    assert response.status_code == 400
    body = response.content.decode()
    assert title in body
    assert "Go to the first page" in body
    assert 'href="/executions/?job=nightly-import"' in body


def test_cursor_of_another_query_is_a_mismatch(
    reader: Client, history: History
) -> None:
    token = _cursor_for_other_query(history)
    response = reader.get(reverse("batchboard:executions"), {"cursor": token})
    assert response.status_code == 400
    assert "belongs to a different list" in response.content.decode()


def test_cursor_with_other_page_size_is_a_mismatch(
    reader: Client, history: History
) -> None:
    page = queries.recent_executions("", "", 1)
    assert page.next_cursor
    response = reader.get(
        reverse("batchboard:executions"), {"cursor": page.next_cursor, "size": "2"}
    )
    assert response.status_code == 400
    assert "different list, filter or page size" in response.content.decode()


def test_cursor_with_other_filter_is_a_mismatch(
    reader: Client, history: History
) -> None:
    page = queries.recent_executions("", "", 1)
    response = reader.get(
        reverse("batchboard:executions"),
        {"cursor": page.next_cursor, "size": "1", "status": "FAILED"},
    )
    assert response.status_code == 400


def test_tampered_cursor_is_invalid(reader: Client, history: History) -> None:
    page = queries.recent_executions("", "", 1)
    token = page.next_cursor
    assert token
    tampered = token[:-2] + format(int(token[-2:], 16) ^ 1, "02x")
    response = reader.get(
        reverse("batchboard:executions"), {"cursor": tampered, "size": "1"}
    )
    assert response.status_code == 400
    assert "damaged" in response.content.decode()


@pytest.mark.parametrize(
    "url",
    [
        "/instances/999999/",
        "/executions/999999/",
        "/steps/999999/",
        "/executions/999999/flow/",
        "/executions/999999/live/",
        "/executions/999999/row/",
        "/steps/999999/row/",
        "/partitions/999999/row/",
        "/executions/99999999999999999999999/",
        "/jobs/no-such-job/",
    ],
)
def test_unknown_ids_get_404(reader: Client, history: History, url: str) -> None:
    response = reader.get(url)
    assert response.status_code == 404
    assert "Not found" in response.content.decode()


@pytest.mark.parametrize("age", ["59", "0", "-5", "soon", str(31 * 86400)])
def test_unresolved_age_out_of_range_gets_400(
    reader: Client, db: None, age: str
) -> None:
    response = reader.get(reverse("batchboard:unresolved"), {"age": age})
    assert response.status_code == 400
    assert "age bound" in response.content.decode()


def test_unknown_jump_kind_gets_400(reader: Client, db: None) -> None:
    response = reader.get(reverse("batchboard:jump"), {"kind": "user", "id": "1"})
    assert response.status_code == 400


def test_database_failure_gets_503_without_details(
    reader: Client,
    history: History,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise DatabaseError("connection refused: password=hunter2 row=secret")

    monkeypatch.setattr(queries, "recent_executions", fail)
    response = reader.get(reverse("batchboard:executions"))
    assert response.status_code == 503
    body = response.content.decode()
    assert "Batch metadata unavailable" in body
    assert "hunter2" not in body and "hunter2" not in caplog.text
    assert "DatabaseError" in caplog.text


HOSTILE_NAMES = [
    "a/b",
    "with space",
    "100%",
    "%2F",
    "quote\"and'apos",
    "<b>bold</b>&amp;",
    "서울/東京 ✓",
    "..",
    ".",
    "?query#frag",
    "back\\slash",
    "a/../b",
    "./x/.",
    "%2E",
    "%25%2E%2E",
    "a%41",
    "x" * 128,
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_job_names_have_working_escaped_urls(
    reader: Client, db: None, name: str
) -> None:
    factories.definition(name)
    instance = factories.instance(name)
    execution = factories.execution(instance, "FAILED")
    url = html.unescape(job_url(name))
    # One path segment, never double-encoded.
    assert "/" not in url[len("/jobs/") : -1]
    if name != "x" * 128 and not _escaped_dots(name) and name not in (".", ".."):
        assert "%25" not in url or "%" in name
        assert url == "/jobs/" + quote(name, safe="!$&'()*+,;=~:@") + "/"
    response = reader.get(url)
    assert response.status_code == 200
    body = response.content.decode()
    assert f"#{instance.pk}" in body
    assert "<b>bold" not in body
    overview = reader.get(reverse("batchboard:index")).content.decode()
    assert f'href="{escape(url)}"' in overview
    page = reader.get(reverse("batchboard:execution", args=[execution.pk]))
    assert page.status_code == 200
    filtered = reader.get(reverse("batchboard:executions"), {"job": name})
    assert f"#{execution.pk}" in filtered.content.decode()


@pytest.mark.parametrize("path", ["/jobs/team%2Fnightly/", "/jobs/team/nightly/"])
def test_natural_slash_address_opens_the_job(
    reader: Client, db: None, path: str
) -> None:
    factories.execution(factories.instance("team/nightly"), "COMPLETED")
    response = reader.get(path)
    assert response.status_code == 200
    body = response.content.decode()
    assert 'href="/jobs/team%2Fnightly/"' in reader.get("/").content.decode()
    assert "%252F" not in body
    assert "team/nightly" in body


def test_reverse_keeps_slashes_and_resolves(reader: Client, db: None) -> None:
    factories.execution(factories.instance("a/b"), "COMPLETED")
    url = reverse("batchboard:job", args=["a/b"])
    assert url == "/jobs/a/b/"
    assert reader.get(url).status_code == 200


def test_job_name_longer_than_128_bytes_is_not_found(reader: Client, db: None) -> None:
    response = reader.get("/jobs/" + "é" * 65 + "/")
    assert response.status_code == 404


def test_job_filter_longer_than_128_bytes_gets_400(reader: Client, db: None) -> None:
    response = reader.get(reverse("batchboard:executions"), {"job": "x" * 129})
    assert response.status_code == 400


def test_htmx_error_is_not_a_fragment_swap(reader: Client, history: History) -> None:
    """htmx does not swap 4xx responses, so a bad cursor never lands in a table."""
    response = reader.get(reverse("batchboard:executions"), {"cursor": "zz"}, **HTMX)
    assert response.status_code == 400


def test_unreachable_session_database_gets_503(
    reader: Client, history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even the sign-in check failing on the database gives the 503 page."""
    from django.contrib.auth.models import User
    from django.db import OperationalError

    def refuse(self: User, *args: object, **kwargs: object) -> bool:
        raise OperationalError("could not connect to server")

    monkeypatch.setattr(User, "has_perms", refuse)
    response = reader.get(reverse("batchboard:index"))
    assert response.status_code == 503
    assert "could not connect" not in response.content.decode()
