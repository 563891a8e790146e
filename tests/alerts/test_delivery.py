"""Deliveries are signed, retried with backoff, logged and redacted."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from batchboard.alerts import channels, delivery, detector
from batchboard.alerts.models import Channel, Delivery, DeliveryAttempt
from tests import factories
from tests.alerts.conftest import (
    SECRET,
    MailServer,
    Receiver,
    email,
    rule,
    webhook,
)
from tests.site.production import site_settings

pytestmark = pytest.mark.django_db

FAST = {"ALERTS_RETRY_SECONDS": 0, "ALERTS_MAX_ATTEMPTS": 5}


def _failed_alert(owner: User, *chosen: Channel) -> None:
    rule(owner, "FAILED", *chosen)
    detector.cycle()
    factories.execution(factories.instance("payroll-run"), "FAILED")
    assert detector.cycle().recorded == 1


def test_a_webhook_receives_a_signed_message_without_payloads(
    owner: User, receiver: Receiver
) -> None:
    _failed_alert(owner, webhook(owner, receiver.url))
    assert delivery.deliver_due() == 1
    (got,) = receiver.received
    assert got.signature == channels.sign(SECRET, got.raw)
    sent = Delivery.objects.get()
    assert got.key == sent.idempotency_key
    assert set(got.body) == {
        "idempotency_key",
        "rule",
        "job_name",
        "execution_id",
        "instance_id",
        "version",
        "status",
        "failure_category",
        "seconds",
        "threshold_seconds",
        "detected_at",
        "link",
    }
    assert got.body["link"] == f"/executions/{got.body['execution_id']}/"
    assert (sent.state, sent.attempts) == ("SENT", 1)
    assert Channel.objects.get().last_success_at is not None
    # Nothing is due any more.
    assert delivery.deliver_due() == 0


@override_settings(BATCHBOARD=FAST)
def test_three_failures_then_success_deliver_once_after_four_attempts(
    owner: User, receiver: Receiver
) -> None:
    receiver.plan = [500, 503, 502]
    _failed_alert(owner, webhook(owner, receiver.url))
    for _ in range(4):
        delivery.deliver_due()
    sent = Delivery.objects.get()
    assert (sent.state, sent.attempts) == ("SENT", 4)
    assert list(
        DeliveryAttempt.objects.order_by("number").values_list("number", "ok")
    ) == [(1, False), (2, False), (3, False), (4, True)]
    assert len({item.key for item in receiver.received}) == 1
    assert len(receiver.received) == 4  # three refused, one accepted
    channel = Channel.objects.get()
    assert channel.last_failure_at is not None
    assert channel.last_success_at is not None


@override_settings(BATCHBOARD={"ALERTS_RETRY_SECONDS": 0, "ALERTS_MAX_ATTEMPTS": 2})
def test_a_delivery_gives_up_after_its_attempts_with_the_secret_redacted(
    owner: User,
) -> None:
    url = "http://user:pa55word@127.0.0.1:9/hooks/T0KEN-abc123?sig=zzz999"
    _failed_alert(owner, webhook(owner, url))
    delivery.deliver_due()
    delivery.deliver_due()
    failed = Delivery.objects.get()
    assert (failed.state, failed.attempts) == ("FAILED", 2)
    for text in [
        failed.last_error,
        *DeliveryAttempt.objects.values_list("error", flat=True),
    ]:
        assert text.startswith("webhook unreachable")
        for secret in ("pa55word", "T0KEN-abc123", "zzz999", SECRET):
            assert secret not in text
    assert delivery.deliver_due() == 0


@override_settings(BATCHBOARD=FAST)
def test_backoff_waits_before_the_next_attempt(owner: User, receiver: Receiver) -> None:
    receiver.plan = [500]
    _failed_alert(owner, webhook(owner, receiver.url))
    with override_settings(BATCHBOARD={"ALERTS_RETRY_SECONDS": 3600}):
        delivery.deliver_due()
        waiting = Delivery.objects.get()
        assert delivery.retry_delay(2).total_seconds() == 7200
    assert waiting.state == "PENDING" and waiting.attempts == 1
    assert delivery.deliver_due() == 0


def test_an_apprise_channel_reports_a_refused_notification_redacted(
    owner: User,
) -> None:
    url = "json://127.0.0.1:9/secret-path-4242"
    channel = Channel.objects.create(
        name="chat",
        kind="APPRISE",
        target=url,
        shown_target=channels.shown("APPRISE", url),
        owner=owner,
        created_at=factories.now(),
    )
    _failed_alert(owner, channel)
    delivery.deliver_due()
    attempted = Delivery.objects.get()
    assert attempted.attempts == 1 and attempted.state == "PENDING"
    assert attempted.last_error.startswith("Apprise could not notify")
    assert "secret-path-4242" not in attempted.last_error
    assert channel.shown_target == "json://127.0.0.1/…"


def test_an_email_channel_sends_through_djangos_backend(owner: User) -> None:
    # The test environment's backend keeps the messages in mail.outbox.
    from django.core import mail

    _failed_alert(owner, email(owner, "ops@example.org, oncall@example.org"))
    assert delivery.deliver_due() == 1
    (sent,) = mail.outbox
    assert sent.to == ["ops@example.org", "oncall@example.org"]
    assert "payroll-run" in sent.subject and "USER_COMPONENT" in sent.body


def _mail_settings(site: dict[str, Any]) -> dict[str, Any]:
    """Return what the standalone site's settings give Django's mail."""
    return {
        name: value
        for name, value in site.items()
        if name in ("MAILERS", "DEFAULT_FROM_EMAIL") or name.startswith("EMAIL_")
    }


def test_the_standalone_site_sends_an_email_alert_over_smtp(
    owner: User, mail_server: MailServer
) -> None:
    site = site_settings(
        EMAIL_HOST="127.0.0.1",
        EMAIL_PORT=str(mail_server.port),
        DEFAULT_FROM_EMAIL="batchboard@example.org",
    )
    channel = email(owner, "ops@example.org")
    with override_settings(**_mail_settings(site)):
        _failed_alert(owner, channel)
        assert delivery.deliver_due() == 1
    (sent,) = mail_server.messages
    assert (sent["From"], sent["To"]) == ("batchboard@example.org", "ops@example.org")
    assert "payroll-run" in sent["Subject"]
    assert Delivery.objects.get().state == "SENT"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("ALERTS_CYCLE_SECONDS", 0),
        ("ALERTS_MAX_ATTEMPTS", "3"),
        ("ALERTS_RETRY_SECONDS", -1),
        ("ALERTS_BASE_URL", "batchboard.example.org"),
    ],
)
def test_bad_alert_settings_fail_check_e019(key: str, value: object) -> None:
    from django.core.checks import run_checks

    with override_settings(BATCHBOARD={key: value}):
        found = [message for message in run_checks() if message.id == "batchboard.E019"]
    assert len(found) == 1 and key in found[0].msg


def test_apprise_logs_no_url_to_the_sites_log(
    owner: User, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    assert channels.valid_apprise_url("notaservice://secret-one/x") is False
    assert channels.valid_apprise_url("json://127.0.0.1:9/secret-two") is True
    assert "secret-one" not in caplog.text and "secret-two" not in caplog.text
