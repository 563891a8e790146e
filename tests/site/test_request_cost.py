"""What a live poll costs through the whole stack, signed in as the site signs in."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests import factories

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture(autouse=True)
def _site_backend() -> Iterator[None]:
    with override_settings(
        AUTHENTICATION_BACKENDS=["batchboard.site.auth.SiteBackend"]
    ):
        yield


def _poll(client: Client, url: str) -> tuple[list[str], Any]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, **HTMX)
    assert response.status_code == 200
    # Inside the test's transaction the page's BEGIN and ROLLBACK are
    # savepoints, which a served request does not send.
    savepoints = ("SAVEPOINT", "ROLLBACK TO SAVEPOINT", "RELEASE SAVEPOINT")
    return [
        query["sql"] for query in captured if not query["sql"].startswith(savepoints)
    ], response


def test_a_live_poll_reads_a_fixed_set_of_statements_and_writes_nothing() -> None:
    """
    The session, the user with their permissions, then the page: the
    execution (with the database's clock), the attempts around it, its
    steps and its three recorded lists. On PostgreSQL the page's bounded
    transaction adds its statement timeout.
    """
    factories.definition("batch")
    running = factories.execution(factories.instance("batch"), "STARTED")
    factories.step(running, "load", "STARTED")
    user = User.objects.create_user("reader", password="pw")
    viewers = Group.objects.create(name="viewers")
    viewers.permissions.set(
        Permission.objects.filter(
            content_type__app_label="batchboard",
            codename__in=factories.VIEW,
        )
    )
    user.groups.set([viewers])
    client = Client()
    client.force_login(user)
    url = reverse("batchboard:execution_live", args=[running.pk])
    client.get(url, **HTMX)
    statements, response = _poll(client, url)
    expected = 8 + (connection.vendor == "postgresql")
    assert len(statements) == expected, "\n".join(s[:90] for s in statements)
    assert not [
        sql
        for sql in statements
        if sql.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    ]
    # The session is neither saved nor sent again.
    assert "Set-Cookie" not in response.headers
    again, _ = _poll(client, url)
    assert len(again) == expected
