"""
The standalone site in production: security headers, health probes,
request logs, refused control characters and hidden secrets.

These run in process with the site's own middleware list; the live server
(gunicorn, WhiteNoise, ``check --deploy``) is tested in test_serving.py.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from unittest import mock

import pytest
from django.db import OperationalError, connections
from django.test import Client, RequestFactory, override_settings
from django.test.utils import CaptureQueriesContext

from batchboard import conf, schema
from batchboard.site import health
from batchboard.site.security import (
    CONTENT_SECURITY_POLICY,
    SiteExceptionReporterFilter,
    builtin_csp,
    csp_header,
)
from tests.explorer.conftest import make_user
from tests.site.production import site_middleware, site_settings

pytestmark = pytest.mark.django_db


@pytest.fixture
def site() -> Iterator[None]:
    with override_settings(
        MIDDLEWARE=site_middleware(),
        SECURE_REFERRER_POLICY="same-origin",
        SECURE_CSP=CONTENT_SECURITY_POLICY,
    ):
        yield


@pytest.fixture
def reader(site: None) -> Client:
    client = Client()
    client.force_login(make_user("reader"))
    return client


EXPECTED_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)


def test_the_policy_text() -> None:
    assert csp_header() == EXPECTED_CSP


@pytest.mark.parametrize(
    "url", ["/", "/executions/", "/login/", "/admin/login/", "/no-such-page/"]
)
def test_every_page_carries_the_security_headers(reader: Client, url: str) -> None:
    response = reader.get(url)
    assert response.status_code in (200, 302, 404)
    assert response["Content-Security-Policy"] == EXPECTED_CSP
    assert response["Referrer-Policy"] == "same-origin"
    assert "camera=()" in response["Permissions-Policy"]
    assert response["X-Frame-Options"] == "DENY"


def test_one_policy_whichever_django() -> None:
    settings = site_settings()
    names = settings["MIDDLEWARE"]
    assert settings["SECURE_CSP"] is CONTENT_SECURITY_POLICY
    assert ("django.middleware.csp.ContentSecurityPolicyMiddleware" in names) is (
        builtin_csp()
    )
    assert "batchboard.site.middleware.SecurityHeadersMiddleware" in names


# -- health ----------------------------------------------------------------------


def test_liveness_touches_no_database(site: None) -> None:
    with CaptureQueriesContext(connections[conf.database_alias()]) as captured:
        response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.content == b"ok\n"
    assert captured.captured_queries == []
    assert "no-cache" in response["Cache-Control"]


def test_readiness_checks_the_schema_version(site: None) -> None:
    response = Client().get("/readyz")
    assert response.status_code == 200
    assert response.content == b"ready\n"
    assert Client().head("/readyz").status_code == 200


def test_readiness_refuses_another_schema_version(site: None) -> None:
    connection = connections[conf.database_alias()]
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {schema.VERSION_TABLE} SET version = 3")
    response = Client().get("/readyz")
    assert response.status_code == 503
    assert response.content == b"unavailable\n"


def test_readiness_says_nothing_of_a_database_error(site: None) -> None:
    failure = OperationalError('connection to "db.internal" failed: password')
    with mock.patch.object(health, "_schema_version", side_effect=failure):
        response = Client().get("/readyz")
    assert response.status_code == 503
    assert response.content == b"unavailable\n"


# -- request logs ----------------------------------------------------------------


def test_one_log_line_per_request_without_the_query_string(
    reader: Client, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="batchboard.request"):
        reader.get("/executions/", {"job": "payroll-secret", "status": "FAILED"})
    lines = [r for r in caplog.records if r.name == "batchboard.request"]
    assert len(lines) == 1
    entry = json.loads(lines[0].getMessage())
    assert entry["method"] == "GET"
    assert entry["path"] == "/executions/"
    assert entry["status"] == 200
    assert isinstance(entry["ms"], float)
    assert isinstance(entry["user"], int)
    assert "payroll-secret" not in lines[0].getMessage()


def test_a_static_or_probe_request_logs_no_user(
    site: None, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="batchboard.request"):
        Client().get("/healthz")
    (line,) = [r for r in caplog.records if r.name == "batchboard.request"]
    assert json.loads(line.getMessage())["user"] is None


# -- control characters, site-wide ---------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "/admin/batchboard/jobexecution/?status__exact=A%00",
        "/admin/batchboard/jobexecution/%00/change/",
        "/login/?next=/%0A",
        "/healthz?x=%1b",
    ],
)
def test_control_characters_anywhere_are_a_400(reader: Client, url: str) -> None:
    response = reader.get(url)
    assert response.status_code == 400


# -- the exception reporter filter ---------------------------------------------


def test_the_reporter_hides_urls_passwords_and_secrets() -> None:
    hidden = SiteExceptionReporterFilter()
    request = RequestFactory().get("/")
    request.META.update(
        {
            "BATCHBOARD_DATABASE_URL": "postgresql://u:hunter2@db/x",
            "DATABASE_URL": "postgresql://u:hunter2@db/x",
            "SMTP_PASSWORD": "hunter2",
            "APP_SECRET_THING": "hunter2",
            "PATH": "/usr/bin",
        }
    )
    meta = hidden.get_safe_request_meta(request)
    for name in ("BATCHBOARD_DATABASE_URL", "DATABASE_URL", "SMTP_PASSWORD"):
        assert "hunter2" not in str(meta[name])
    assert "hunter2" not in str(meta["APP_SECRET_THING"])
    assert meta["PATH"] == "/usr/bin"
    assert hidden.cleanse_setting("SENTRY_URL", "https://k@s/1") != "https://k@s/1"


def test_the_site_uses_the_reporter() -> None:
    settings = site_settings()
    assert settings["DEFAULT_EXCEPTION_REPORTER_FILTER"] == (
        "batchboard.site.security.SiteExceptionReporterFilter"
    )


def test_the_debug_page_hides_the_database_url(db: None) -> None:
    """DJANGO_DEBUG=1 shows a traceback page; the URL's password stays hidden."""
    from django.views import debug

    request = RequestFactory().get("/")
    request.META["BATCHBOARD_DATABASE_URL"] = "postgresql://u:hunter2@db/x"
    with override_settings(
        DEBUG=True,
        DEFAULT_EXCEPTION_REPORTER_FILTER=(
            "batchboard.site.security.SiteExceptionReporterFilter"
        ),
    ):
        try:
            raise ValueError("boom")
        except ValueError as error:
            response = debug.technical_500_response(
                request, type(error), error, error.__traceback__
            )
    body = response.content.decode()
    assert "BATCHBOARD_DATABASE_URL" in body
    assert "hunter2" not in body
