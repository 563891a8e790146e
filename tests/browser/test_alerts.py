"""
An alert in a real browser: a rule made on the rules page, a failed run,
the header's count and the inbox, and the channel's delivery log.

``BATCHBOARD_SCREENSHOTS=1`` also writes the documentation's screenshots of
the rules page, a delivery log and the inbox (docs/screens/alerts-*.png).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import override_settings

from batchboard.alerts import delivery, detector
from batchboard.alerts.models import Channel
from tests import factories
from tests.alerts.conftest import Receiver, receiver, webhook  # noqa: F401
from tests.browser.test_actions import member, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENS = Path(__file__).resolve().parents[2] / "docs" / "screens"


def _shot(page: Any, name: str) -> None:
    if os.environ.get("BATCHBOARD_SCREENSHOTS") == "1":
        SCREENS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENS / f"alerts-{name}.png"), full_page=True)


@override_settings(BATCHBOARD={"POLL_SECONDS": 1, "ALERTS_RETRY_SECONDS": 0})
def test_an_alert_reaches_the_inbox(
    page: Any,
    live_server: Any,
    receiver: Receiver,  # noqa: F811
) -> None:
    user = member("administrator", staff=True)
    user.user_permissions.add(Permission.objects.get(codename="manage_alerts"))
    factories.definition("payroll-run")
    webhook(user, receiver.url, "ops-webhook")
    webhook(user, "http://127.0.0.1:9/hooks/T0KEN-secret-path", "broken-webhook")
    sign_in(page, live_server, "administrator", "/alerts/")
    page.fill("#id_rule-name", "payroll failures")
    page.select_option("#id_rule-kind", "FAILED")
    page.fill("#id_rule-job_name", "payroll-run")
    page.select_option(
        "#id_rule-channels",
        [str(pk) for pk in Channel.objects.values_list("pk", flat=True)],
    )
    page.click("text=Save rule")
    page.wait_for_selector("td:text('payroll failures')")
    detector.cycle()
    failed = factories.execution(factories.instance("payroll-run"), "FAILED")
    detector.cycle()
    for _ in range(3):
        delivery.deliver_due()
    page.goto(f"{live_server.url}/")
    badge = page.wait_for_selector(".bb-inbox-link .bb-badge")
    assert badge.inner_text() == "1"
    page.goto(f"{live_server.url}/alerts/")
    _shot(page, "rules")
    page.click(".bb-inbox-link")
    page.wait_for_selector(f"a[href='/executions/{failed.pk}/']")
    row = page.locator("tr.bb-unread")
    assert "payroll-run" in row.inner_text()
    assert "USER_COMPONENT" in row.inner_text()
    _shot(page, "inbox")
    broken = Channel.objects.get(name="broken-webhook")
    page.goto(f"{live_server.url}/alerts/channels/{broken.pk}/")
    text = page.locator("main").inner_text()
    assert "webhook unreachable" in text and "T0KEN-secret-path" not in text
    _shot(page, "delivery-log")
    page.goto(f"{live_server.url}/inbox/")
    page.click("text=Mark read")
    page.wait_for_selector("tr.bb-read")
    assert page.locator(".bb-inbox-link .bb-badge").count() == 0
    assert [item.key for item in receiver.received] and len(receiver.received) == 1
