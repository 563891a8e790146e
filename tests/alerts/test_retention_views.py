"""The retention policy pages: Destructive only, bad input saves nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.checks import Error
from django.test import Client, override_settings

from batchboard import checks
from batchboard.alerts.models import RetentionPolicy, RetentionRun
from tests import factories as rows
from tests.factories import actions as factories

pytestmark = pytest.mark.django_db

LIST = "/retention/policies/"


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def admin(db: None) -> Client:
    factories.definition("payroll-run")
    return _client(factories.administrator())


def _fields(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "policy-name": "keep-90-days",
        "policy-job_name": "payroll-run",
        "policy-statuses": ["COMPLETED", "FAILED"],
        "policy-keep_days": "90",
        "policy-batch": "500",
        "policy-period_hours": "24",
        "policy-enabled": "on",
    }
    data.update({f"policy-{key}": value for key, value in changes.items()})
    return {key: value for key, value in data.items() if value is not None}


@pytest.mark.parametrize("who", ["viewer", "operator"])
def test_read_and_lifecycle_users_are_refused(who: str) -> None:
    user = getattr(factories, who)()
    policy = rows.retention_policy(user)
    client = _client(user)
    for path in (LIST, f"{LIST}{policy.pk}/"):
        assert client.get(path).status_code == 403
    assert client.post(LIST, {"form": "policy", **_fields()}).status_code == 403
    response = client.post(f"{LIST}{policy.pk}/", {"form": "delete"})
    assert response.status_code == 403
    assert RetentionPolicy.objects.count() == 1


def test_a_destructive_user_creates_a_notifying_policy(admin: Client) -> None:
    response = admin.post(LIST, _fields())
    policy = RetentionPolicy.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"{LIST}{policy.pk}/"
    assert (policy.job_name, policy.statuses, policy.min_age_seconds) == (
        "payroll-run",
        "FAILED,COMPLETED",
        90 * 24 * 3600,
    )
    assert (policy.applies, policy.batch, policy.period_hours) == (False, 500, 24)
    assert policy.owner.get_username() == "administrator"
    page = admin.get(LIST).content.decode()
    assert "keep-90-days" in page and "plans and notifies" in page


def test_a_blank_job_means_all_jobs(admin: Client) -> None:
    assert admin.post(LIST, _fields(job_name="")).status_code == 302
    assert RetentionPolicy.objects.get().job_name == ""
    assert "all jobs" in admin.get(LIST).content.decode()


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"job_name": "no-such-job"}, "No job named no-such-job is registered."),
        ({"keep_days": "0"}, "The minimum age is one hour"),
        ({"keep_days": "-5"}, "The minimum age is one hour"),
        ({"keep_days": "many"}, "Enter a whole number."),
        ({"statuses": None}, "Pick at least one finished status."),
        ({"statuses": ["STARTED"]}, "Only finished statuses can be purged."),
        ({"period_hours": "0"}, "The period is 1 to 8784 hours."),
        ({"period_hours": "9000"}, "The period is 1 to 8784 hours."),
        ({"batch": "1001"}, "The batch is 1 to 1000 executions."),
        ({"name": "keep 90 days"}, "Use 1 to 100 letters, digits"),
        ({"name": "x" * 101}, "at most 100 characters"),
        ({"channels": ["9" * 30]}, "Pick channels from the list."),
        ({"channels": ["²"]}, "Pick channels from the list."),
        ({"channels": ["12345"]}, "Select a valid choice."),
    ],
)
def test_bad_input_is_refused_and_nothing_saved(
    admin: Client, changes: dict[str, Any], error: str
) -> None:
    response = admin.post(LIST, _fields(**changes))
    assert response.status_code == 400
    assert error in response.content.decode()
    assert not RetentionPolicy.objects.exists()


def test_a_policy_is_edited_and_bad_edits_save_nothing(admin: Client) -> None:
    admin.post(LIST, _fields())
    policy = RetentionPolicy.objects.get()
    page = f"{LIST}{policy.pk}/"
    bad = admin.post(page, {"form": "edit", **_fields(keep_days="0")})
    assert bad.status_code == 400
    policy.refresh_from_db()
    assert policy.min_age_seconds == 90 * 24 * 3600
    good = admin.post(page, {"form": "edit", **_fields(keep_days="30", applies="on")})
    assert good.status_code == 302
    policy.refresh_from_db()
    assert (policy.min_age_seconds, policy.applies) == (30 * 24 * 3600, True)
    shown = admin.get(page).content.decode()
    assert 'value="30"' in shown
    assert "under retention-policy:keep-90-days." in shown


def test_run_now_records_a_run_and_delete_removes_the_policy(admin: Client) -> None:
    admin.post(LIST, _fields())
    policy = RetentionPolicy.objects.get()
    page = f"{LIST}{policy.pk}/"
    assert admin.post(page, {"form": "run"}).status_code == 302
    run = RetentionRun.objects.get()
    assert (run.job_name, run.outcome) == ("payroll-run", "NOTHING")
    shown = admin.get(page).content.decode()
    assert run.plan_digest in shown and "NOTHING" in shown
    assert admin.post(page, {"form": "nonsense"}).status_code == 400
    assert admin.post(page, {"form": "delete"}).status_code == 302
    assert not RetentionPolicy.objects.exists()
    assert admin.get(page).status_code == 404


def test_an_unknown_policy_is_a_404(admin: Client) -> None:
    assert admin.get(f"{LIST}999/").status_code == 404


@pytest.mark.parametrize(
    ("key", "value", "check_id"),
    [
        ("RETENTION_CYCLE_SECONDS", 59, "batchboard.E080"),
        ("RETENTION_CYCLE_SECONDS", "3600", "batchboard.E080"),
        ("RETENTION_MAX_BATCHES", 0, "batchboard.E081"),
        ("RETENTION_MAX_BATCHES", True, "batchboard.E081"),
        ("RETENTION_MAX_BATCHES", 101, "batchboard.E081"),
    ],
)
def test_bad_retention_settings_are_reported(
    key: str, value: Any, check_id: str
) -> None:
    with override_settings(BATCHBOARD={key: value}):
        found = [
            error for error in checks._retention_errors() if isinstance(error, Error)
        ]
    assert [error.id for error in found] == [check_id]


def test_the_default_retention_settings_pass_their_checks() -> None:
    assert checks._retention_errors() == []
