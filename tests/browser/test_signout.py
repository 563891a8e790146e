"""
After signing out, the browser keeps no page of the site.

htmx would keep snapshots of pages (parameter values included) in
``sessionStorage`` for its history; batchboard turns that off, and signing
out clears the site's storage (``Clear-Site-Data``) besides.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission, User

from batchboard import digests
from batchboard.models import JobExecution
from tests import factories
from tests.browser.test_csp import RECORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

#: A parameter value that must not outlive the sign-out.
SECRET = "acct-7731-payroll"

STORAGE = "() => Object.fromEntries(Object.entries(sessionStorage))"


def _administrator() -> User:
    user = User.objects.create_user("chief", password="pw", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="batchboard")
    )
    return user


def _snapshots(page: Any) -> list[str]:
    """Return the sessionStorage entries that hold any page or value."""
    stored: dict[str, str] = page.evaluate(STORAGE)
    return [
        key
        for key, value in stored.items()
        if key == "htmx-history-cache" or SECRET in value or "<" in value
    ]


def test_no_page_snapshot_survives_signing_out(page: Any, strict: Any) -> None:
    _administrator()
    factories.definition("payroll")
    instance = factories.instance(
        "payroll",
        {"account": digests.JobParameter.string(SECRET)},
    )
    for attempt in range(1, 13):
        factories.execution(instance, "FAILED", attempt=attempt)
    page.add_init_script(RECORD)
    page.goto(f"{strict.url}/login/")
    page.fill("#id_username", "chief")
    page.fill("#id_password", "pw")
    page.click("input[type=submit]")
    page.wait_for_selector("h1:text('Overview')")

    # Pages with parameter values, and a list whose rows load as it scrolls:
    # each loaded page replaces the URL, where htmx would snapshot the page.
    page.goto(f"{strict.url}/instances/{instance.pk}/")
    assert SECRET in page.content()
    execution = JobExecution.objects.filter(job_instance=instance).first()
    assert execution is not None
    page.goto(f"{strict.url}/executions/{execution.pk}/")
    page.goto(f"{strict.url}/executions/?job=payroll&size=5")
    for _ in range(10):
        if page.locator(".bb-end").count():
            break
        page.mouse.wheel(0, 4000)
        page.wait_for_timeout(300)
    page.wait_for_selector(".bb-end")
    assert "cursor=" in page.url
    page.go_back()
    page.wait_for_selector("h1")
    assert _snapshots(page) == []

    # What an older page, or another tab of the site, left behind.
    page.evaluate(
        "(secret) => { sessionStorage.setItem('htmx-history-cache', "
        "JSON.stringify([{url: '/x', content: '<td>' + secret + '</td>'}]));"
        " sessionStorage.setItem('left-behind', secret); }",
        SECRET,
    )
    page.goto(f"{strict.url}/")
    with page.expect_response(lambda response: "/logout/" in response.url) as out:
        page.click("button:text('Log out')")
    assert out.value.all_headers()["clear-site-data"] == '"cache", "storage"'
    page.wait_for_selector("h1:text('Signed out')")
    # The signed-out page's script runs under the site's strict policy.
    assert page.evaluate("window.__violations") == []
    assert page.evaluate(STORAGE) == {}
    assert _snapshots(page) == []
    # Back shows no record: the pages were never stored.
    page.go_back()
    page.wait_for_load_state()
    assert SECRET not in page.content()
