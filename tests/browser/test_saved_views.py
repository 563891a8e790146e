"""
Saved views in a real browser: an operator filters the executions list to one
job's FAILED runs, saves the view, shares it with the operator group, and a
second operator opens it from the header's menu.

With ``BATCHBOARD_SCREENSHOTS=1`` the test also writes the screenshot the
docs show (``docs/screens/saved-views.png``); a plain run leaves the
checkout untouched.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User

from batchboard.personal.models import SavedView
from tests import factories
from tests.browser.test_actions import member, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENS = Path(__file__).resolve().parents[2] / "docs" / "screens"
NAME = "Failed payroll runs"


def _history() -> set[int]:
    """Seed two jobs' runs; return the ids of payroll's FAILED ones."""
    for job in ("payroll", "nightly-import"):
        factories.definition(job)
    failed = set()
    for number in range(3):
        payroll = factories.instance("payroll")
        failed.add(factories.execution(payroll, "FAILED").pk)
        factories.execution(factories.instance("payroll"), "COMPLETED")
        factories.execution(factories.instance("nightly-import"), "FAILED")
        del number
    return failed


def _open_menu(page: Any) -> Any:
    page.click(".bb-views-menu > summary")
    return page.wait_for_selector(".bb-views-list")


def test_an_operator_shares_a_view_another_operator_opens(
    page: Any, browser: Any, live_server: Any
) -> None:
    failed = _history()
    member("operator")
    second = User.objects.create_user("operator-2", password="operator-2")
    second.groups.set([Group.objects.get(name="operator")])

    sign_in(page, live_server, "operator", "/executions/")
    page.check("input[name=status][value=FAILED]")
    page.fill("input[name=job]", "payroll")
    page.click("form.bb-filters button[type=submit]")
    page.wait_for_url("**/executions/?*status=FAILED*")

    page.click(".bb-save-view > summary")
    page.fill(".bb-save-view input[name=name]", NAME)
    page.click(".bb-save-view button[type=submit]")
    page.wait_for_url("**/views/?saved=*")
    view = SavedView.objects.get(name=NAME)
    assert "cursor" not in view.query

    row = page.locator(f"#bb-view-{view.pk}")
    row.locator("select[name=group]").select_option(label="operator")
    row.locator("form:has(select[name=group]) button").click()
    page.wait_for_url("**/views/")
    assert SavedView.objects.get(pk=view.pk).group_id == (
        Group.objects.get(name="operator").pk
    )
    assert page.locator(f"#bb-view-{view.pk}").inner_text().count("operator") >= 1

    menu = _open_menu(page)
    assert NAME in menu.inner_text()
    if os.environ.get("BATCHBOARD_SCREENSHOTS") == "1":
        SCREENS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENS / "saved-views.png"))

    other = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        tab = other.new_page()
        tab.set_default_timeout(10000)
        sign_in(tab, live_server, "operator-2", "/")
        _open_menu(tab)
        tab.click(f".bb-views-list a:text('{NAME}')")
        tab.wait_for_url("**/executions/?*job=payroll*")
        tab.wait_for_selector("#bb-rows > tr[id]")
        shown = {
            int(ident.removeprefix("bb-execution-"))
            for ident in tab.eval_on_selector_all(
                "#bb-rows > tr[id^=bb-execution-]", "rows => rows.map(r => r.id)"
            )
        }
        assert shown == failed
        # The second operator may open it, and is offered no change of it.
        tab.goto(f"{live_server.url}/views/")
        assert tab.locator(f"#bb-view-{view.pk} form").count() == 0
    finally:
        other.close()
