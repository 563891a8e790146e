"""The executions list's filters in a real browser: statuses and job names."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from tests import factories
from tests.browser.test_explorer import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_several_statuses_and_a_suggested_job_name(page: Any, live_server: Any) -> None:
    for name in ("invoice-daily", "invoice-monthly", "payroll"):
        factories.definition(name)
    runs = {
        (name, status): factories.execution(factories.instance(name), status).pk
        for name in ("invoice-daily", "payroll")
        for status in ("FAILED", "STOPPED", "COMPLETED", "STARTED")
    }
    log_in(page, live_server)
    page.goto(f"{live_server.url}/executions/")
    # Tick two statuses and type the start of a job name: the names that
    # start with it are offered, and one is picked.
    page.check("input[name=status][value=FAILED]")
    page.check("input[name=status][value=STOPPED]")
    page.locator("input[name=job]").press_sequentially("invoice")
    options = page.locator("#bb-job-names option")
    options.first.wait_for(state="attached")
    assert [options.nth(i).get_attribute("value") for i in range(options.count())] == [
        "invoice-daily",
        "invoice-monthly",
    ]
    page.fill("input[name=job]", "invoice-daily")
    page.click("form.bb-filters button[type=submit]")
    page.wait_for_url("**/executions/?*job=invoice-daily*")
    shown = {
        int(text.lstrip("#"))
        for text in page.locator("#bb-rows a[href^='/executions/']").all_inner_texts()
        if text.startswith("#")
    }
    assert shown == {
        runs[("invoice-daily", "FAILED")],
        runs[("invoice-daily", "STOPPED")],
    }
    assert page.is_checked("input[name=status][value=FAILED]")
    assert not page.is_checked("input[name=status][value=COMPLETED]")
    # The shortcut keeps the job and lists every unresolved execution of it.
    page.click("a:text('All active')")
    page.wait_for_url("**status=active*")
    shown = {
        int(text.lstrip("#"))
        for text in page.locator("#bb-rows a[href^='/executions/']").all_inner_texts()
        if text.startswith("#")
    }
    assert shown == {runs[("invoice-daily", "STARTED")]}
    assert page.is_checked("input[name=status][value=UNKNOWN]")
    nav = page.locator(".bb-nav [aria-current=page]")
    assert nav.inner_text() == "Executions"


def test_the_purge_form_shows_a_long_job_name_whole(
    page: Any, live_server: Any
) -> None:
    name = "nightly-invoice-reconciliation-export-for-the-regional-ledgers-of-2026"
    factories.definition(name)
    log_in(page, live_server)
    page.goto(f"{live_server.url}/retention/purge/?job_name={name}")
    field = page.locator("#bb-purge-job")
    assert field.input_value() == name
    # The field grows with the name: nothing of it is scrolled out of view.
    assert field.evaluate("e => e.scrollWidth <= e.clientWidth")
    assert page.title().startswith("Purge ·")
    # The executions list's job field grows the same way.
    page.goto(f"{live_server.url}/executions/?job={name}")
    job = page.locator("input[name=job]")
    assert job.evaluate("e => e.scrollWidth <= e.clientWidth")


def test_a_time_window_from_the_pickers_and_a_shortcut(
    page: Any, live_server: Any
) -> None:
    factories.definition("invoice-daily")
    now = timezone.now().replace(microsecond=0)
    runs = {}
    for hours in (1, 5, 30, 80):
        updated = now - timedelta(hours=hours)
        for status in ("FAILED", "COMPLETED"):
            runs[(hours, status)] = factories.execution(
                factories.instance("invoice-daily"),
                status,
                created_at=updated - timedelta(minutes=10),
                duration=timedelta(minutes=9),
                updated_at=updated,
            ).pk
    log_in(page, live_server)
    page.goto(f"{live_server.url}/executions/")
    # The pickers take UTC: a window from 6 h ago to 2 h ago.
    since = (now - timedelta(hours=6)).strftime("%Y-%m-%dT%H:%M:%S")
    until = (now - timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%S")
    page.fill("input[name=since]", since)
    page.fill("input[name=until]", until)
    page.check("input[name=status][value=FAILED]")
    page.click("form.bb-filters button[type=submit]")
    page.wait_for_url("**/executions/?*since=*")

    def shown() -> list[int]:
        return [
            int(text.lstrip("#"))
            for text in page.locator(
                "#bb-rows a[href^='/executions/']"
            ).all_inner_texts()
            if text.startswith("#")
        ]

    assert shown() == [runs[(5, "FAILED")]]
    assert "Ordered by last update" in page.locator("caption").inner_text()
    assert page.input_value("input[name=since]") == since
    # The shortcut keeps the status and replaces the window.
    page.click("a:text('last 7 days')")
    page.wait_for_url("**since=7d*")
    assert shown() == [runs[(hours, "FAILED")] for hours in (1, 5, 30, 80)]
    if os.environ.get("BATCHBOARD_SCREENSHOTS") == "1":
        screens = Path(__file__).resolve().parents[2] / "docs" / "screens"
        page.screenshot(path=str(screens / "windowed-list.png"), full_page=True)
