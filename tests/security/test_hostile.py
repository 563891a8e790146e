"""
Regression tests of issue 17's hostile inputs: each answered 500 (or wrote a
traceback to the log) before, and each now gets a 4xx and at most one line.
"""

from __future__ import annotations

import io
import logging

import pytest
from django.conf import settings
from django.contrib.admin import helpers
from django.contrib.auth.models import User
from django.test import Client, override_settings
from django.urls import reverse

from tests.actions.conftest import admin_user
from tests.security.conftest import History, history, site_log

__all__ = ["admin_user", "history", "site_log"]

pytestmark = pytest.mark.django_db

PURGE = "batchboard:purge_plan"
HTMX = {"HTTP_HX_REQUEST": "true"}


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


# -- the purge page ----------------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        {"after": "²:1"},
        {"after": "1:²"},
        {"after": "9" * 5000},
        {"after": f"1:{'9' * 5000}"},
        {"after": "1:2:3"},
        {"after": "+1:-2"},
    ],
)
@pytest.mark.parametrize("htmx", [False, True])
def test_a_bad_candidate_position_is_a_400(
    admin_user: User, history: History, params: dict[str, str], htmx: bool
) -> None:
    query = {"job_name": history.instance.job_name, "statuses": "FAILED", **params}
    response = _client(admin_user).get(reverse(PURGE), query, **(HTMX if htmx else {}))
    assert response.status_code == 400
    assert "as in 12:345" in response.content.decode()


@pytest.mark.parametrize(
    "params",
    [
        {"age_days": "²"},
        {"age_hours": "²"},
        {"age_days": "٣"},
        {"age_hours": "+3"},
        {"age_days": "9" * 5000},
        {"min_age_seconds": "²"},
        {"min_age_seconds": "٣"},
        {"min_age_seconds": "9" * 5000},
        {"batch": "²"},
        {"batch": "+3"},
    ],
)
@pytest.mark.parametrize("with_job", [False, True])
def test_unicode_digits_in_the_purge_criteria_are_refused(
    admin_user: User, history: History, params: dict[str, str], with_job: bool
) -> None:
    """The page answers; with a job the criteria are refused, not planned."""
    query = {**params}
    if with_job:
        query["job_name"] = history.instance.job_name
    response = _client(admin_user).get(reverse(PURGE), query)
    assert response.status_code == 200
    if with_job:
        assert "must be whole numbers" in response.content.decode()


def test_a_repeated_minimum_age_is_read_once(
    admin_user: User, history: History
) -> None:
    client = _client(admin_user)
    for query in (
        "min_age_seconds=7200&min_age_seconds=%C2%B2",
        "min_age_seconds=%C2%B2&min_age_seconds=7200",
        f"min_age_seconds=7200&min_age_seconds=3600&job_name={history.instance.job_name}",
    ):
        response = client.get(f"{reverse(PURGE)}?{query}")
        assert response.status_code == 200, query


def test_applying_a_purge_with_unicode_days_is_refused(admin_user: User) -> None:
    response = _client(admin_user).post(
        reverse("batchboard:purge_apply"),
        {
            "job_name": "nightly_export",
            "age_days": "²",
            "operation_id": "op-1",
            "reason_code": "RETENTION_POLICY",
            "candidates": "",
            "plan_digest": "ab" * 32,
        },
    )
    assert response.status_code == 200
    assert "must be whole numbers" in response.content.decode()


# -- admin actions -----------------------------------------------------------------


@pytest.mark.parametrize(
    "selected",
    [["x"], [""], ["²"], ["\x00"], [str(2**63)], ["1", "x"], ["0"], ["-1"]],
)
@pytest.mark.parametrize("confirmed", [False, True])
def test_admin_actions_refuse_selections_that_are_not_row_ids(
    admin_user: User,
    history: History,
    selected: list[str],
    confirmed: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    data: dict[str, object] = {
        "action": "stop_executions",
        helpers.ACTION_CHECKBOX_NAME: selected,
    }
    if confirmed:
        data.update(post="yes", operation_id="op", reason_code="")
    else:
        data["index"] = "0"
    with caplog.at_level(logging.INFO):
        response = _client(admin_user).post(
            reverse("admin:batchboard_jobexecution_changelist"), data
        )
    assert response.status_code == 400
    assert "each is a row id" in response.content.decode()
    _assert_one_line(caplog, "selection on batchboard.JobExecution")
    # Nothing was asked of the service.
    assert history.restart.operator_requests.count() == 0


def test_a_valid_selection_still_reaches_the_action(
    admin_user: User, history: History
) -> None:
    response = _client(admin_user).post(
        reverse("admin:batchboard_jobexecution_changelist"),
        {
            "action": "stop_executions",
            helpers.ACTION_CHECKBOX_NAME: [history.restart.pk],
        },
    )
    assert response.status_code == 200
    assert "Confirm stop" in response.content.decode()


# -- a broken HX-Current-URL -------------------------------------------------------


@pytest.mark.parametrize("url", ["http://[", "http://[::1", "http://]x", "\x00"])
@pytest.mark.parametrize("signed_in", [False, True])
def test_a_broken_current_url_falls_back_to_the_path(
    admin_user: User, history: History, url: str, signed_in: bool
) -> None:
    client = _client(admin_user) if signed_in else Client()
    page = reverse("batchboard:execution", args=[history.restart.pk])
    response = client.get(page, HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL=url)
    assert response.status_code < 500
    if not signed_in:
        assert response.status_code == 200
        login = response["HX-Redirect"]
        assert login.startswith(settings.LOGIN_URL)
        assert login == f"{settings.LOGIN_URL}?next={page}"


@pytest.mark.parametrize("htmx", [False, True])
def test_a_huge_address_signs_in_back_to_its_page(history: History, htmx: bool) -> None:
    """A redirect to sign in never carries more than a page's address."""
    page = reverse("batchboard:executions")
    headers = {"HTTP_HX_REQUEST": "true", "HTTP_HX_CURRENT_URL": "x" * 20_000}
    response = Client().get(page, {"job": "x" * 20_000}, **(headers if htmx else {}))
    location = response["HX-Redirect"] if htmx else response["Location"]
    assert location == f"{settings.LOGIN_URL}?next={page}"


# -- one line in the log -----------------------------------------------------------


def _assert_one_line(caplog: pytest.LogCaptureFixture, words: str) -> None:
    """
    Assert that batchboard logged the refusal in one line, without traceback.

    Django's own ``django.request`` line of every 4xx answer (the path, at
    WARNING) is the site's to keep or drop; the standalone site drops it
    (see the ``site_log`` tests, which count every line).
    """
    refusals = [
        r
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name != "django.request"
    ]
    assert len(refusals) == 1, [r.getMessage() for r in refusals]
    (record,) = refusals
    assert record.exc_info is None and record.exc_text is None
    message = record.getMessage()
    assert "\n" not in message and words in message


@pytest.mark.parametrize(
    "params",
    [
        {"identifying_parameters__region__value__startswith": "secret-x"},
        {"status__regex": "(.|.)*Z"},
        {"status__exact": "FAILED\x00"},
        {"_to_field": "parameters"},
    ],
)
def test_a_refused_admin_lookup_logs_one_line_without_its_value(
    admin_user: User,
    history: History,
    params: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        response = _client(admin_user).get(
            reverse("admin:batchboard_jobexecution_changelist"), params
        )
    assert response.status_code == 400
    _assert_one_line(caplog, "batchboard.JobExecution")
    text = caplog.text
    for key, value in params.items():
        assert key not in text and value not in text
    assert "Traceback" not in text


@override_settings(ALLOWED_HOSTS=["batch.example.org"])
def test_a_wrong_host_logs_one_line_on_the_site(site_log: io.StringIO) -> None:
    response = Client().get("/", HTTP_HOST="evil.example")
    assert response.status_code == 400
    lines = site_log.getvalue().splitlines()
    assert len(lines) == 1, lines
    assert "DisallowedHost" in lines[0]
    assert "evil.example" not in lines[0] and "Traceback" not in lines[0]


def test_a_refused_admin_lookup_logs_one_line_on_the_site(
    admin_user: User, history: History, site_log: io.StringIO
) -> None:
    response = _client(admin_user).get(
        reverse("admin:batchboard_jobexecution_changelist"),
        {"parameters__region__value": "secret-x"},
    )
    assert response.status_code == 400
    lines = site_log.getvalue().splitlines()
    assert len(lines) == 1, lines
    assert "secret-x" not in lines[0] and "parameters__" not in lines[0]
