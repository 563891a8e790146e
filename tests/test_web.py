"""The one guard of every view: sign-in, permissions and the error pages."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.db import OperationalError
from django.http import Http404, HttpRequest, HttpResponse
from django.test import RequestFactory
from django_htmx.middleware import HtmxDetails

from batchboard import cursors, web

pytestmark = pytest.mark.django_db

FACTORY = RequestFactory()


def _request(
    path: str = "/executions/?job=x&size=ten&cursor=ab",
    *,
    user: Any = None,
    htmx: bool = False,
    method: str = "get",
) -> HttpRequest:
    headers = {"HX-Request": "true"} if htmx else {}
    request = getattr(FACTORY, method)(path, headers=headers)
    request.user = user if user is not None else User(is_superuser=True, is_active=True)
    request.htmx = HtmxDetails(request)
    return request


def _raising(error: Exception) -> web.View:
    def view(request: HttpRequest) -> HttpResponse:
        raise error

    return view


def test_anonymous_visitors_are_sent_to_sign_in() -> None:
    view = web.reader("batchboard.view_jobexecution")(lambda request: HttpResponse())
    response = view(_request(user=AnonymousUser()))
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


def test_a_reader_without_the_view_permissions_gets_403() -> None:
    view = web.reader("batchboard.view_jobexecution")(lambda request: HttpResponse())
    response = view(_request(user=User.objects.create_user("nobody")))
    assert response.status_code == 403
    body = response.content.decode()
    assert "Permission needed" in body and "view permissions" in body
    assert "HX-Request" in response["Vary"]


def test_reader_pages_answer_get_only() -> None:
    view = web.reader()(lambda request: HttpResponse("ok"))
    assert view(_request(method="post")).status_code == 405


def test_an_action_without_its_class_gets_403_naming_the_class() -> None:
    view = web.action_view("ABANDON")(lambda request: HttpResponse())
    response = view(_request(user=User.objects.create_user("viewer")))
    assert response.status_code == 403
    assert "ABANDON needs the DESTRUCTIVE authorization class" in (
        response.content.decode()
    )


def test_permission_refused_inside_an_action_gets_the_same_page() -> None:
    response = web.action_view("STOP")(_raising(PermissionDenied()))(_request())
    assert response.status_code == 403
    assert "Not allowed" in response.content.decode()


def test_bad_input_links_to_the_list_without_the_parameter() -> None:
    error = web.BadInput("Page size out of range", "Use 1 to 500.", "size")
    response = web.reader()(_raising(error))(_request())
    assert response.status_code == 400
    body = response.content.decode()
    assert "Page size out of range" in body and "Use 1 to 500." in body
    assert 'href="/executions/?job=x"' in body
    assert "Go to the first page" in body


def test_a_cursor_of_another_list_says_so() -> None:
    response = web.reader()(_raising(cursors.CursorQueryMismatch()))(_request())
    assert response.status_code == 400
    assert "belongs to a different list" in response.content.decode()


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (web.NotFound("execution 9"), "There is no execution 9."),
        (Http404("execution 9 is a developer's note"), "There is no such record."),
    ],
)
def test_nothing_by_that_id_gets_404(error: Exception, says: str) -> None:
    response = web.reader()(_raising(error))(_request())
    assert response.status_code == 404
    body = response.content.decode()
    assert says in body and "developer" not in body
    assert "Back to the overview" in body


def test_errors_are_whole_pages_and_fragments_for_htmx() -> None:
    view = web.reader()(_raising(web.NotFound("step 3")))
    page = view(_request()).content.decode()
    fragment = view(_request(htmx=True)).content.decode()
    assert page.startswith("<!doctype html>") and "<h1" in page
    assert "<html" not in fragment and "<h2" in fragment
    assert 'class="bb-error bb-dialog"' in fragment
    assert "There is no step 3." in page and "There is no step 3." in fragment


def test_a_failing_database_gets_503_and_logs_its_class_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="batchboard.web")
    failure = OperationalError("password=hunter2 row=secret")
    response = web.reader()(_raising(failure))(_request())
    assert response.status_code == 503
    body = response.content.decode()
    assert "Batch metadata unavailable" in body and "Try again" in body
    assert "hunter2" not in body and "hunter2" not in caplog.text
    assert "OperationalError" in caplog.text


def test_a_failed_action_is_not_offered_again_as_a_link() -> None:
    failure = OperationalError("down")
    response = web.action_view("STOP")(_raising(failure))(_request(method="post"))
    assert response.status_code == 503
    body = response.content.decode()
    assert "Nothing is known to have changed" in body
    assert "Try again</a>" not in body
