"""
A statement cancelled by ``statement_timeout`` (SQLSTATE 57014,
query_canceled) gets the 503 page, not a 500: in the explorer through
``batchboard.web.guarded``, in the admin through the site's middleware.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from django.db import OperationalError, connections, transaction
from django.test import Client, override_settings

from batchboard import conf
from batchboard.explorer import queries
from tests.explorer.conftest import make_user
from tests.site.production import site_middleware

pytestmark = pytest.mark.django_db


class QueryCanceled(OperationalError):
    """What Django raises for psycopg's QueryCanceled: an OperationalError."""

    sqlstate = "57014"


def _cancelled(*args: Any, **kwargs: Any) -> Any:
    raise QueryCanceled("canceling statement due to statement timeout")


@pytest.fixture
def reader() -> Client:
    client = Client()
    client.force_login(make_user("reader"))
    return client


def test_a_cancelled_explorer_read_is_the_503_page(reader: Client) -> None:
    with mock.patch.object(queries, "job_names", _cancelled):
        response = reader.get("/")
    assert response.status_code == 503
    body = response.content.decode()
    assert "The metadata database did not answer" in body
    assert "statement timeout" not in body


def test_a_cancelled_admin_read_is_the_503_page() -> None:
    from django.contrib.auth.models import Permission, User

    staff = User.objects.create_user("staff", password="pw", is_staff=True)
    staff.user_permissions.set(
        Permission.objects.filter(content_type__app_label="batchboard")
    )
    client = Client()
    client.force_login(staff)
    from batchboard.admin.changelist import KeysetChangeList

    with (
        override_settings(MIDDLEWARE=site_middleware()),
        mock.patch.object(KeysetChangeList, "get_results", _cancelled),
    ):
        response = client.get("/admin/batchboard/jobexecution/")
    assert response.status_code == 503
    assert "statement timeout" not in response.content.decode()


@pytest.mark.postgresql
def test_a_real_statement_timeout_is_the_503_page(reader: Client) -> None:
    """On PostgreSQL: a statement over ``statement_timeout`` is cancelled."""
    real = queries.job_names

    def slow(*args: Any, **kwargs: Any) -> Any:
        connection = connections[conf.database_alias()]
        with (
            transaction.atomic(using=conf.database_alias()),
            connection.cursor() as cursor,
        ):
            cursor.execute("SET LOCAL statement_timeout = '50ms'")
            cursor.execute("SELECT pg_sleep(2)")
        return real(*args, **kwargs)

    with mock.patch.object(queries, "job_names", slow):
        response = reader.get("/")
    assert response.status_code == 503
    assert "The metadata database did not answer" in response.content.decode()
