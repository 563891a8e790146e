"""
The operator's view in a real browser: the job page's trend and grid, a job
name with "/", the audit log paged in place, the bare sign-in page and the
retention form.

With ``BATCHBOARD_SCREENSHOTS=1`` the job page and audit log tests also
write the screenshots the docs show (``docs/screens/job-trend-grid.png``,
``docs/screens/audit-log.png``); a plain run leaves the checkout untouched.
"""

from __future__ import annotations

import contextlib
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission

from batchboard.models import RetentionAction
from tests import factories
from tests.explorer.conftest import make_user

PlaywrightError = pytest.importorskip("playwright.sync_api").Error

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENS = Path(__file__).resolve().parents[2] / "docs" / "screens"


def sign_in(page: Any, live_server: Any, path: str = "/", **grants: bool) -> None:
    user = make_user("operator", values=grants.get("values", False))
    codenames = ["view_retentionaction"]
    if grants.get("destructive"):
        codenames.append("operate_destructive")
    user.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="batchboard", codename__in=codenames
        )
    )
    page.goto(f"{live_server.url}{path}")
    page.fill("#id_username", "operator")
    page.fill("#id_password", "pw")
    page.click("input[type=submit]")
    page.wait_for_load_state()


def seed_job(name: str, runs: int = 40) -> list[Any]:
    now = factories.now()
    executions = []
    for index in range(runs):
        status = "FAILED" if index % 7 == 3 else "COMPLETED"
        if index == runs - 1:
            status = "STARTED"
        created = now - timedelta(hours=runs - index)
        execution = factories.execution(
            factories.instance(name, created_at=created),
            status,
            created_at=created,
            duration=timedelta(seconds=120 + (index * 37) % 300),
        )
        for step in ("extract", "transform", "load"):
            step_status = status
            if status == "FAILED" and step != "load":
                step_status = "COMPLETED"
            if status == "STARTED" and step == "load":
                continue
            factories.step(execution, step, step_status)
        executions.append(execution)
    return executions


def test_job_page_shows_trend_and_grid(page: Any, live_server: Any) -> None:
    executions = seed_job("nightly-import")
    sign_in(page, live_server, "/jobs/nightly-import/")
    page.wait_for_selector("svg.bb-trend-chart")
    assert page.locator("svg.bb-trend-chart rect.bb-trend-bar").count() == 40
    # The run still going after an hour is past 1.5 x p95: drawn clipped.
    assert page.locator("rect.bb-trend-bar--clipped").count() == 1
    assert page.locator("rect.bb-trend-clip").count() == 1
    assert page.locator(".bb-trend-line--median").count() == 1
    box = page.locator("svg.bb-trend-chart").bounding_box()
    assert box is not None and box["width"] > 600 and box["height"] > 60
    assert page.locator(".bb-grid-run").count() == 25
    assert page.locator("th.bb-grid-name").count() == 3
    if os.environ.get("BATCHBOARD_SCREENSHOTS") == "1":
        SCREENS.mkdir(parents=True, exist_ok=True)
        page.locator(".bb-history").screenshot(path=str(SCREENS / "job-trend-grid.png"))
    href = page.locator("td a.bb-grid-cell--bad").first.get_attribute("href")
    assert href is not None and href.startswith("/steps/")
    page.goto(f"{live_server.url}{href}")
    page.wait_for_selector(".bb-status--bad")
    assert "load" in page.locator("h1").inner_text()
    assert executions


def test_job_name_with_a_slash_round_trips(page: Any, live_server: Any) -> None:
    seed_job("team/nightly", runs=3)
    sign_in(page, live_server)
    link = page.locator("a:text('team/nightly')").first
    assert link.get_attribute("href") == "/jobs/team%2Fnightly/"
    link.click()
    page.wait_for_selector("h1:has-text('team/nightly')")
    page.goto(f"{live_server.url}/jobs/team%2Fnightly/")
    page.wait_for_selector("h1:has-text('team/nightly')")


def test_audit_log_pages_in_place(page: Any, live_server: Any) -> None:
    executions = seed_job("billing.export", runs=6)
    now = factories.now()
    for index in range(30):
        target = executions[index % len(executions)]
        factories.operator_request(
            target,
            "STOP" if index % 2 else "ABANDON",
            requested_at=now - timedelta(minutes=40 - index),
            rejection=None if index % 5 else "INVALID_STATE",
        )
    RetentionAction.objects.create(
        job_instance=executions[0].job_instance,
        action="HOLD",
        operation_id="bb-" + "1" * 32,
        actor_ref="user:administrator",
        reason_code="AUDIT",
        outcome_class="APPLIED",
        applied_at=now - timedelta(seconds=30),
    )
    sign_in(page, live_server, "/audit/?size=10")
    page.wait_for_selector("h1:text('Audit log')")
    if os.environ.get("BATCHBOARD_SCREENSHOTS") == "1":
        SCREENS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENS / "audit-log.png"))
    rows = page.locator("#bb-rows tr:not(.bb-more):not(.bb-end)")
    for _ in range(5):
        if page.locator(".bb-end").count():
            break
        # The row may be swapped for the next page while being scrolled to.
        with contextlib.suppress(PlaywrightError):
            page.locator(".bb-more").scroll_into_view_if_needed()
        page.wait_for_timeout(400)
    page.wait_for_selector(".bb-end")
    assert rows.count() == 31
    ids = rows.locator("th").all_inner_texts()
    assert len(ids) == len(set(ids))


def test_sign_in_page_is_bare_and_centred(page: Any, live_server: Any) -> None:
    page.goto(f"{live_server.url}/login/")
    assert page.locator(".bb-nav").count() == 0
    assert page.locator("#bb-jump-id").count() == 0
    form = page.locator("form.bb-signin").bounding_box()
    assert form is not None
    centre = form["x"] + form["width"] / 2
    assert abs(centre - 700) < 20


def test_retention_form_layout_and_disabled_apply(page: Any, live_server: Any) -> None:
    seed_job("nightly-import", runs=2)
    sign_in(page, live_server, "/retention/purge/", destructive=True)
    for status in ("COMPLETED", "FAILED"):
        box = page.locator(f"input[value={status}]").bounding_box()
        label = page.locator(f"label.bb-check:has(input[value={status}])")
        text = label.bounding_box()
        assert box is not None and text is not None
        # The checkbox sits beside its label, on one line.
        assert text["height"] < 2 * box["height"] + 8
    assert page.locator("input[name=age_days]").input_value() == "30"
    page.fill("#bb-purge-job", "nightly-import")
    page.click("button:text('Plan')")
    page.wait_for_selector("h2:has-text('Plan for')")
    assert page.locator("button:text('Apply this plan')").is_disabled()
    assert page.locator("text=deleted_flow_decisions").count() == 0
