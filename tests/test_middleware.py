"""
How a view reads is declared by its guard, not by the module it sits in.

The tests route to views of their own (this module is their URLconf) and
run the whole middleware stack of tests/settings.py with a recording
middleware after :class:`ReadYourWritesMiddleware`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connections
from django.http import HttpRequest, HttpResponse
from django.test import Client, override_settings
from django.urls import path

from batchboard import conf, replicas, web
from batchboard.vocabulary import STOP

pytestmark = pytest.mark.django_db

#: What the recording middleware saw: (hook, whether a reading was open).
SEEN: list[tuple[str, bool]] = []


class Recording:
    """A middleware listed after ReadYourWritesMiddleware: records its hooks."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, *args: Any) -> None:
        SEEN.append(("process_view", replicas.current() is not None))

    def process_exception(
        self, request: HttpRequest, exception: Exception
    ) -> HttpResponse | None:
        SEEN.append(("process_exception", replicas.current() is not None))
        if request.GET.get("handle"):
            return HttpResponse("handled", status=418)
        return None


def _page(request: HttpRequest) -> HttpResponse:
    choice = replicas.current()
    if request.GET.get("fail"):
        raise RuntimeError("the view failed")
    return HttpResponse("reading" if choice is not None else "not reading")


def _in(module: str) -> Callable[..., HttpResponse]:
    """Return a fresh copy of the page view, as if defined in ``module``."""

    def page(request: HttpRequest) -> HttpResponse:
        return _page(request)

    page.__module__ = module
    return page


urlpatterns = [
    # A reader's page, wherever it sits: a replica may serve it.
    path("console-reader/", web.reader()(_in("batchboard.console.views"))),
    path("elsewhere-reader/", web.reader()(_in("somewhere.else"))),
    # An action's dialog, even in the explorer's module: the primary.
    path("explorer-action/", web.action_view(STOP)(_in("batchboard.explorer.views"))),
    # No guard, no reading, whatever the module says.
    path("unguarded/", _in("batchboard.explorer.views")),
]


@pytest.fixture
def client() -> Iterator[Client]:
    SEEN.clear()
    user = User.objects.create_superuser("admin", password="pw")
    signed_in = Client()
    signed_in.force_login(user)
    middleware = [*settings.MIDDLEWARE, "tests.test_middleware.Recording"]
    with override_settings(ROOT_URLCONF=__name__, MIDDLEWARE=middleware):
        yield signed_in


@pytest.mark.parametrize(
    ("url", "replica"),
    [
        ("/console-reader/", True),
        ("/elsewhere-reader/", True),
        ("/explorer-action/", False),
    ],
)
def test_the_guard_decides_how_a_view_reads(
    client: Client, url: str, replica: bool
) -> None:
    assert web.reads(web.reader()(_in("x"))) == "replica"
    with mock.patch.object(replicas, "reading", wraps=replicas.reading) as reading:
        response = client.get(url)
    assert response.content == b"reading"
    assert [call.kwargs["replica"] for call in reading.call_args_list] == [replica]


def test_an_unguarded_view_reads_outside_any_reading(client: Client) -> None:
    with mock.patch.object(replicas, "reading", wraps=replicas.reading) as reading:
        response = client.get("/unguarded/")
    assert response.content == b"not reading" and not reading.called


def test_a_post_runs_outside_the_read_transaction(client: Client) -> None:
    with mock.patch.object(replicas, "reading", wraps=replicas.reading) as reading:
        client.post("/explorer-action/")
    assert not reading.called


def test_later_middleware_see_the_view_and_its_exception(client: Client) -> None:
    """The view runs inside the reading; the later hooks run, inside it too."""
    alias = conf.database_alias()
    depth = connections[alias].in_atomic_block
    response = client.get("/console-reader/?fail=1&handle=1")
    assert response.status_code == 418
    assert SEEN == [("process_view", True), ("process_exception", True)]
    assert replicas.current() is None
    assert connections[alias].in_atomic_block == depth


def test_the_reading_ends_when_nothing_handles_the_exception(client: Client) -> None:
    alias = conf.database_alias()
    depth = connections[alias].in_atomic_block
    with pytest.raises(RuntimeError, match="the view failed"):
        client.get("/elsewhere-reader/?fail=1")
    assert SEEN == [("process_view", True), ("process_exception", True)]
    assert replicas.current() is None
    assert connections[alias].in_atomic_block == depth
    # The next request reads afresh.
    assert client.get("/elsewhere-reader/").content == b"reading"
