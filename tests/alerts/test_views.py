"""The alerts' pages: bad input saves nothing, secrets never come back."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client

from batchboard.alerts import detector
from batchboard.alerts.models import Channel, InboxItem, Rule
from tests import factories
from tests.alerts.conftest import rule, webhook

pytestmark = pytest.mark.django_db

SECRET_URL = "https://hooks.example.org/services/T000/B000/XXXXsecretXXXX"


@pytest.fixture
def client_of(owner: User) -> Client:
    client = Client()
    client.force_login(owner)
    return client


def _post_rule(client: Client, **fields: str) -> int:
    data = {"form": "rule", "rule-name": "r", "rule-kind": "FAILED", **fields}
    return client.post("/alerts/", data).status_code


def test_a_rule_is_created_for_a_known_job(client_of: Client) -> None:
    factories.definition("payroll-run")
    assert _post_rule(client_of, **{"rule-job_name": "payroll-run"}) == 302
    assert Rule.objects.get().job_name == "payroll-run"


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"rule-job_name": "no-such-job"}, "No job named no-such-job is registered."),
        (
            {"rule-kind": "OVERDUE", "rule-factor": "0"},
            "k must be greater than 0.",
        ),
        (
            {"rule-kind": "OVERDUE", "rule-factor": "-1.5"},
            "k must be greater than 0.",
        ),
        ({"rule-kind": "STALE"}, "This kind of rule needs this value."),
        ({"rule-failure_categories": "NOPE"}, "Unknown failure categories: NOPE."),
        ({"rule-channels": ["9" * 30]}, "Pick channels from the list."),
    ],
)
def test_a_bad_rule_is_refused_and_nothing_saved(
    client_of: Client, fields: dict[str, str], error: str
) -> None:
    data = {"form": "rule", "rule-name": "r", "rule-kind": "FAILED", **fields}
    response = client_of.post("/alerts/", data)
    assert response.status_code == 400
    assert error in response.content.decode()
    assert not Rule.objects.exists()


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        (
            {"channel-kind": "WEBHOOK", "channel-target": "ftp://example.org/x"},
            "A webhook needs an http or https URL.",
        ),
        (
            {"channel-kind": "APPRISE", "channel-target": "notaservice://x/y"},
            "Apprise does not recognise this URL.",
        ),
        (
            {"channel-kind": "EMAIL", "channel-target": "not-an-address"},
            "Give valid email addresses.",
        ),
    ],
)
def test_a_bad_channel_is_refused_and_nothing_saved(
    client_of: Client, fields: dict[str, str], error: str
) -> None:
    data = {"form": "channel", "channel-name": "c", "channel-secret": "s", **fields}
    response = client_of.post("/alerts/", data)
    assert response.status_code == 400
    assert error in response.content.decode()
    assert "notaservice://x/y" not in response.content.decode()
    assert not Channel.objects.exists()


def test_a_channels_url_and_secret_are_never_shown_again(client_of: Client) -> None:
    data = {
        "form": "channel",
        "channel-name": "ops",
        "channel-kind": "WEBHOOK",
        "channel-target": SECRET_URL,
        "channel-secret": "sign-me-please",
        "channel-enabled": "on",
    }
    assert client_of.post("/alerts/", data).status_code == 302
    channel = Channel.objects.get()
    assert channel.shown_target == "https://hooks.example.org/…"
    for page in ("/alerts/", f"/alerts/channels/{channel.pk}/"):
        text = client_of.get(page).content.decode()
        assert "hooks.example.org" in text
        assert "XXXXsecretXXXX" not in text and "sign-me-please" not in text


def test_managing_rules_needs_the_permission(db: None) -> None:
    client = Client()
    client.force_login(factories.viewer())
    assert client.get("/alerts/").status_code == 403
    response = client.post("/alerts/", {"form": "rule", "rule-name": "r"})
    assert response.status_code == 403
    assert "manage_alerts" in response.content.decode()
    assert not Rule.objects.exists()


def test_a_rule_switches_off_and_on(client_of: Client, owner: User) -> None:
    made = rule(owner)
    client_of.post("/alerts/", {"form": "toggle", "rule": str(made.pk)})
    made.refresh_from_db()
    assert made.enabled is False


def test_the_inbox_shows_an_alert_and_the_header_counts_it(
    client_of: Client, owner: User
) -> None:
    rule(owner, "FAILED", webhook(owner, "http://127.0.0.1:9/x"))
    detector.cycle()
    failed = factories.execution(factories.instance("payroll-run"), "FAILED")
    detector.cycle()
    assert client_of.get("/inbox/count/").content.decode().count(">1<") == 1
    page = client_of.get("/inbox/").content.decode()
    assert f'href="/executions/{failed.pk}/"' in page and "payroll-run" in page
    assert 'data-bb-inbox-count="/inbox/count/"' in page
    client_of.post("/inbox/", {"item": str(InboxItem.objects.get().pk)})
    assert InboxItem.objects.get().read_at is not None
    assert "bb-badge" not in client_of.get("/inbox/count/").content.decode()


def test_the_inbox_shows_only_the_users_own_alerts(owner: User) -> None:
    rule(owner, "FAILED")
    detector.cycle()
    factories.execution(factories.instance("payroll-run"), "FAILED")
    detector.cycle()
    other = Client()
    other.force_login(factories.viewer())
    assert "payroll-run" not in other.get("/inbox/").content.decode()


def test_the_overdue_page_lists_late_runs_and_slow_finishes(
    client_of: Client,
) -> None:
    for _ in range(5):
        factories.execution(
            factories.instance("etl"), "COMPLETED", duration=timedelta(minutes=3)
        )
    late = factories.execution(
        factories.instance("etl"), "STARTED", created_at=factories.ago(minutes=30)
    )
    slow = factories.execution(
        factories.instance("etl"), "COMPLETED", duration=timedelta(minutes=20)
    )
    page = client_of.get("/alerts/overdue/").content.decode()
    assert f"#{late.pk}<" in page and f"#{slow.pk}<" in page
    assert page.count('href="/jobs/etl/"') == 2
    # Spans in the units of every other page, never a count of seconds.
    assert "<td>20 min 00 s</td><td>3 min 00 s</td>" in page
    assert "<td>STARTED</td><td>29 min" in page


def test_the_overdue_page_reads_the_same_statements_whatever_the_history(
    client_of: Client,
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _ in range(5):
        factories.execution(
            factories.instance("etl"), "COMPLETED", duration=timedelta(minutes=3)
        )
    factories.execution(
        factories.instance("etl"), "STARTED", created_at=factories.ago(minutes=30)
    )

    def statements() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client_of.get("/alerts/overdue/").status_code == 200
        return len(captured.captured_queries)

    few = statements()
    for _ in range(60):
        factories.execution(factories.instance("etl"), "COMPLETED")
    assert statements() == few


def test_the_inbox_links_the_rules_only_for_their_managers(
    client_of: Client,
) -> None:
    assert 'href="/alerts/"' in client_of.get("/inbox/").content.decode()
    viewer = Client()
    viewer.force_login(factories.viewer())
    assert 'href="/alerts/"' not in viewer.get("/inbox/").content.decode()
