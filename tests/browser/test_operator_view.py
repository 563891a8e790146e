"""
The operator's view in a real browser: a live execution page that follows
its state after an action, without a reload, and the keyboard shortcuts.

``BATCHBOARD_SCREENSHOTS=1`` also writes the documentation's screenshot of
the execution page mid-stop (docs/screens/execution-mid-stop.png).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from batchboard.models import JobExecution
from batchboard.repository import JobRepository
from batchboard.vocabulary import PARTITION_WORKER_PREFIX
from tests import factories
from tests.browser.test_actions import OWNER, member, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENS = Path(__file__).resolve().parents[2] / "docs" / "screens"


def running_partitioned_execution() -> JobExecution:
    """A STARTED execution with an owner, a finished step and a fan-out step."""
    factories.definition("nightly-import")
    instance = factories.instance("nightly-import")
    execution = factories.execution(
        instance, "STARTED", owner_token=OWNER, created_at=factories.ago(minutes=5)
    )
    factories.step(execution, "extract", "COMPLETED", counts={"read_count": 5400})
    parent = factories.step(execution, "load-regions", "STARTED")
    for ordinal, region in enumerate(("eu-west", "eu-north", "us-east", "ap-south"), 1):
        state = ("COMPLETED", "COMPLETED", "FAILED", "STARTED")[ordinal - 1]
        worker = factories.step(
            execution,
            f"{PARTITION_WORKER_PREFIX}{ordinal:02x}" + "c0ffee" * 10 + "0000",
            state,
            counts={"read_count": 1200 * ordinal, "write_count": 1190 * ordinal},
        )
        factories.partition(
            parent,
            region,
            ordinal,
            state,
            worker=worker,
            counts={"read_count": 1200 * ordinal, "write_count": 1190 * ordinal},
        )
    return execution


def live_polls(page: Any) -> list[str]:
    """Start recording the page's requests for its live region."""
    polls: list[str] = []
    page.on(
        "request",
        lambda request: polls.append(request.url) if "/live/" in request.url else None,
    )
    return polls


def test_operator_stops_an_execution_and_the_page_follows_to_stopped(
    page: Any, live_server: Any
) -> None:
    """
    Stop… records the request; with no reload the page shows it, drops the
    button, lists the request, follows STOPPING to STOPPED and stops polling.
    """
    member("operator")
    execution = running_partitioned_execution()
    url = f"/executions/{execution.pk}/"
    sign_in(page, live_server, "operator", url)
    assert "__ob_partition_worker_" not in page.content()
    requests_list = page.locator("#bb-operator_requests")
    assert "None recorded." in requests_list.inner_text()
    page.click(f"#bb-actions-{execution.pk} a:text('Stop…')")
    dialog = page.locator(".bb-action-slot .bb-dialog")
    dialog.wait_for()
    dialog.locator("button[type=submit]").click()
    page.locator(".bb-action-slot .bb-result").wait_for()
    # The result's event refreshes the page at once: the request is listed,
    # the summary shows it pending and Stop… is no longer offered.
    page.wait_for_function(
        "document.querySelector('#bb-operator_requests').innerText.includes('STOP')"
    )
    page.wait_for_selector("#bb-execution-summary .bb-flag--warn:text('requested')")
    assert page.locator("a:text('Stop…')").count() == 0
    assert "stop requested while STARTED" in requests_list.inner_text()
    # The owner sees the request at its next commit.
    JobRepository().observe_control(execution.pk, OWNER)
    page.wait_for_function(
        "document.querySelector('#bb-execution-summary .bb-headline')"
        ".innerText.startsWith('STOPPING')"
    )
    if os.environ.get("BATCHBOARD_SCREENSHOTS") == "1":
        for details in page.locator("details.bb-partitions").all():
            details.evaluate("el => { el.open = true; }")
        SCREENS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENS / "execution-mid-stop.png"), full_page=True)
    factories.advance(JobExecution.objects.get(pk=execution.pk), "STOPPED")
    page.wait_for_function(
        "document.querySelector('#bb-execution-summary .bb-headline')"
        ".innerText.startsWith('STOPPED')"
    )
    assert page.locator("a:text('Stop…')").count() == 0
    assert "live, refreshing" not in page.locator("#bb-execution-summary").inner_text()
    # The slot opened on STARTED is gone with the status it was opened on.
    assert page.locator(".bb-action-slot .bb-result").count() == 0
    assert "STOP" in requests_list.inner_text()
    polls = live_polls(page)
    page.wait_for_timeout(2500)
    assert polls == []


def test_open_partitions_stay_open_across_refreshes(
    page: Any, live_server: Any
) -> None:
    member("operator")
    execution = running_partitioned_execution()
    sign_in(page, live_server, "operator", f"/executions/{execution.pk}/")
    details = page.locator("details.bb-partitions")
    assert details.get_attribute("open") is None
    details.locator("summary").click()
    assert "eu-north" in details.inner_text()
    polls = live_polls(page)
    page.wait_for_timeout(2500)
    assert polls
    assert page.locator("details.bb-partitions").get_attribute("open") is not None


def test_keyboard_moves_through_rows_and_opens_one(page: Any, live_server: Any) -> None:
    member("operator")
    factories.definition("nightly-import")
    first = factories.execution(factories.instance("nightly-import"), "COMPLETED")
    sign_in(page, live_server, "operator", "/executions/")
    factories.execution(factories.instance("nightly-import"), "FAILED")
    page.reload()
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "bb-jump-id"
    page.keyboard.press("Escape")
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert page.locator("tr.bb-current").get_attribute("id") == (
        f"bb-execution-{first.pk}"
    )
    page.keyboard.press("k")
    page.keyboard.press("j")
    page.keyboard.press("?")
    page.wait_for_function("document.getElementById('bb-shortcuts').open")
    page.keyboard.press("Escape")
    page.wait_for_function("!document.getElementById('bb-shortcuts').open")
    page.wait_for_function("document.activeElement === document.body")
    assert page.locator("tr.bb-current").count() == 1
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/executions/{first.pk}/")


def test_rows_loaded_with_load_more_survive_the_refresh(
    page: Any, live_server: Any
) -> None:
    """The region re-reads as many step rows as the reader loaded."""
    member("operator")
    factories.definition("nightly-import")
    execution = factories.execution(
        factories.instance("nightly-import"), "STARTED", owner_token=OWNER
    )
    for number in range(8):
        factories.step(execution, f"load-{number}", "COMPLETED")
    sign_in(page, live_server, "operator", f"/executions/{execution.pk}/?size=3")
    rows = page.locator("#bb-rows > tr[id^='bb-step-']")
    # The sentinel row loads the next pages as it scrolls into view.
    page.wait_for_function(
        "document.querySelectorAll(\"#bb-rows > tr[id^='bb-step-']\").length === 8"
    )
    assert page.locator("#bb-steps-shown").get_attribute("value") == "9"
    page.wait_for_url(f"{live_server.url}/executions/{execution.pk}/?shown=9")
    polls = live_polls(page)
    page.wait_for_timeout(2500)
    assert polls and all("shown=9" in url for url in polls)
    assert rows.count() == 8
    # All are read again at once: no "load more" is left to reveal.
    assert page.locator("#bb-rows tr.bb-more").count() == 0
