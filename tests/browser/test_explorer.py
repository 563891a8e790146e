"""The explorer in a real browser: drill down, load more, live updates, history."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User

from tests import factories
from tests.explorer.conftest import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def log_in(page: Any, live_server: Any) -> User:
    # A reader who is not staff: the site's own sign-in page admits every
    # active user, and the view permissions are the only grants.
    user = make_user("operator")
    page.goto(f"{live_server.url}/")
    # Anonymous visitors land on the sign-in page, then come back.
    page.fill("#id_username", "operator")
    page.fill("#id_password", "pw")
    page.click("input[type=submit]")
    page.wait_for_selector("h1:text('Overview')")
    return user


def seed_drill_down() -> dict[str, Any]:
    now = factories.now()
    factories.definition("nightly-import")
    instance = factories.instance("nightly-import", created_at=now - timedelta(hours=2))
    failed = factories.execution(
        instance, "FAILED", created_at=now - timedelta(hours=2)
    )
    step = factories.step(failed, "load", "FAILED", counts={"read_count": 4200})
    return {"instance": instance, "execution": failed, "step": step}


def test_log_in_and_drill_from_overview_to_step(page: Any, live_server: Any) -> None:
    seeded = seed_drill_down()
    log_in(page, live_server)
    page.click("table a:text('nightly-import')")
    page.wait_for_selector("h1:has-text('Job')")
    # The instance list's link (the steps grid above labels runs "#id day").
    page.click(f"#bb-rows a:text-is('#{seeded['instance'].pk}')")
    page.wait_for_selector(f"h1:has-text('Instance #{seeded['instance'].pk}')")
    page.click(f"a:text('#{seeded['execution'].pk}')")
    page.wait_for_selector(f"h1:has-text('Execution #{seeded['execution'].pk}')")
    assert page.locator(".bb-status--bad").first.inner_text() == "FAILED"
    page.click("table a:text('load')")
    page.wait_for_selector("h1:has-text('Step')")
    assert "4 200" in page.inner_text("#bb-step-summary").replace("\u2009", " ")


def test_load_more_reaches_the_end_and_history_restores_the_list(
    page: Any, live_server: Any
) -> None:
    factories.definition("batch")
    instance = factories.instance("batch")
    for attempt in range(1, 13):
        factories.execution(
            instance, "FAILED" if attempt < 12 else "COMPLETED", attempt=attempt
        )
    log_in(page, live_server)
    page.goto(f"{live_server.url}/executions/?size=5")
    rows = page.locator("#bb-rows tr[id^='bb-execution-']")
    # The sentinel row loads the next page when it scrolls into view; on a
    # tall window that happens page after page until the end.
    for _ in range(10):
        if page.locator(".bb-end").count():
            break
        page.mouse.wheel(0, 4000)
        page.wait_for_timeout(300)
    page.wait_for_selector(".bb-end")
    assert rows.count() == 12
    first_id = rows.first.get_attribute("id")
    # The URL follows the cursor, so a shared link shows the same page.
    assert "cursor=" in page.url
    rows.nth(7).locator("th a").click()
    page.wait_for_selector("h1:has-text('Execution #')")
    page.go_back()
    page.wait_for_selector("#bb-rows tr[id^='bb-execution-']")
    assert page.locator("#bb-rows tr[id^='bb-execution-']").count() >= 2
    page.go_forward()
    page.wait_for_selector("h1:has-text('Execution #')")
    page.go_back()
    page.wait_for_selector("#bb-rows")
    assert first_id is not None


def test_running_counters_update_and_polling_stops_when_finished(
    page: Any, live_server: Any
) -> None:
    factories.definition("stream")
    instance = factories.instance("stream")
    execution = factories.execution(instance, "STARTED")
    step = factories.step(execution, "ingest", "STARTED", counts={"read_count": 10})
    log_in(page, live_server)
    page.goto(f"{live_server.url}/executions/{execution.pk}/")
    region = page.locator("#bb-execution-live")
    assert "every 1s" in (region.get_attribute("hx-trigger") or "")
    factories.advance_step(step, "STARTED", read_count=777, write_count=700)
    page.wait_for_function(
        f"document.querySelector('#bb-step-{step.pk}').innerText.includes('777')"
    )
    # A step created while the page is open appears in the steps table.
    late = factories.step(execution, "publish", "STARTED")
    page.wait_for_selector(f"#bb-step-{late.pk}")
    factories.advance_step(late, "COMPLETED")
    factories.advance_step(step, "COMPLETED", read_count=1000, write_count=1000)
    factories.advance(execution, "COMPLETED")
    page.wait_for_function(
        "document.querySelector('#bb-execution-summary')"
        ".innerText.includes('COMPLETED')"
    )
    page.wait_for_function(
        f"document.querySelector('#bb-step-{step.pk}').innerText.includes('COMPLETED')"
    )
    # The finished region is re-rendered without its timer: polling stops.
    assert "every" not in (region.get_attribute("hx-trigger") or "")
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.wait_for_timeout(2500)
    assert not [url for url in requests if "/live/" in url or "/row/" in url]


def test_hidden_tab_does_not_poll(page: Any, live_server: Any) -> None:
    factories.definition("stream")
    instance = factories.instance("stream")
    execution = factories.execution(instance, "STARTED")
    log_in(page, live_server)
    page.goto(f"{live_server.url}/executions/{execution.pk}/")
    polls: list[str] = []
    page.on(
        "request",
        lambda request: polls.append(request.url) if "/live/" in request.url else None,
    )
    page.evaluate(
        "Object.defineProperty(document, 'visibilityState', "
        "{value: 'hidden', configurable: true})"
    )
    page.wait_for_timeout(2500)
    assert polls == []
    page.evaluate(
        "Object.defineProperty(document, 'visibilityState', "
        "{value: 'visible', configurable: true})"
    )
    page.wait_for_timeout(2500)
    assert polls


def test_overview_and_job_page_load_their_panels_and_say_when_one_fails(
    page: Any, live_server: Any
) -> None:
    seeded = seed_drill_down()
    log_in(page, live_server)
    # The attention panel arrives on its own request, right after the page.
    panel = page.locator("#bb-attention")
    page.wait_for_selector("#bb-attention:not([aria-busy])")
    assert "Recent failures" in panel.inner_text()
    assert f"#{seeded['execution'].pk}" in panel.inner_text()
    # So do a job's trend and grid.
    page.click("table a:text('nightly-import')")
    page.wait_for_selector("svg.bb-trend-chart")
    assert page.locator("#bb-history[aria-busy]").count() == 0
    # A panel whose request fails says so instead of loading forever.
    page.route("**/attention/", lambda route: route.fulfill(status=503, body="down"))
    page.goto(f"{live_server.url}/")
    page.wait_for_selector("#bb-attention .bb-attention-text")
    text = panel.inner_text()
    assert "Could not read what needs attention just now" in text
    assert "Checking for stuck runs" not in text
