"""The executions list's filters in a real browser: statuses and job names."""

from __future__ import annotations

from typing import Any

import pytest

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
