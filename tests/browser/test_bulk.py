"""
A bulk action in a real browser: filter the executions list to one job's
FAILED runs, plan ABANDON, review, apply, reload mid-apply, see the results.

With ``BATCHBOARD_SCREENSHOTS=1`` the test also writes the screenshots the
docs show (``docs/screens/bulk-plan.png``, ``docs/screens/bulk-result.png``);
a plain run leaves the checkout untouched.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from django.db import OperationalError

from batchboard.actions.bulk import apply as bulk_apply
from batchboard.models import BulkItem, BulkOperation, JobExecution, OperatorRequest
from tests.browser.test_actions import member, sign_in
from tests.factories import actions as factories

T = TypeVar("T")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENS = Path(__file__).resolve().parents[2] / "docs" / "screens"


def _while_applying(read: Callable[[], T]) -> T:
    """
    Read while the live server's apply writes: on the in-memory SQLite of
    the tests, whose connections share one cache, a table being written
    is locked to the other connections at once (no busy wait), so read
    again until it is not.
    """
    deadline = time.monotonic() + 10
    while True:
        try:
            return read()
        except OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def test_abandon_one_jobs_failed_runs_with_a_reload_during_the_apply(
    page: Any, live_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    failed = [
        factories.execution("FAILED", job_instance=factories.instance("nightly-import"))
        for _ in range(6)
    ]
    running = factories.execution(
        "STARTED", job_instance=factories.instance("nightly-import")
    )
    other = factories.execution("FAILED", job_instance=factories.instance("reports"))
    # One item a request, each a little slow: the apply is still running
    # when the page is reloaded.
    monkeypatch.setattr("batchboard.actions.bulk.CHUNK_SECONDS", 0.0)
    slow = bulk_apply._apply_item

    def slowly(*args: Any) -> Any:
        time.sleep(0.3)
        return slow(*args)

    monkeypatch.setattr(bulk_apply, "_apply_item", slowly)
    member("administrator", staff=True)
    sign_in(page, live_server, "administrator", "/executions/")

    page.check("input[name=status][value=FAILED]")
    page.fill("input[name=job]", "nightly-import")
    page.click(".bb-filters button[type=submit]")
    page.wait_for_url("**/executions/?status=FAILED&job=nightly-import*")
    page.click("summary:text('Act on all matching…')")
    page.click("a:text('Abandon all matching')")

    page.wait_for_selector("h1:text('ABANDON 6 matching records')")
    assert page.locator("#bb-bulk-counts").inner_text().count("6") == 1
    digest = page.locator("#bb-bulk-digest").inner_text()
    assert len(digest) == 64
    for run in failed:
        assert page.locator(f"a:text-is('#{run.pk}')").count() == 1
    assert page.locator(f"a:text-is('#{running.pk}')").count() == 0
    assert page.locator(f"a:text-is('#{other.pk}')").count() == 0
    if os.environ.get("BATCHBOARD_SCREENSHOTS") == "1":
        SCREENS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENS / "bulk-plan.png"), full_page=True)

    page.select_option("#bb-bulk-reason", "OPERATOR_DECISION")
    page.click("button:text('Apply this plan')")
    page.wait_for_url("**/bulk/operations/*/")
    page.wait_for_selector("#bb-bulk-progress")
    deadline = time.monotonic() + 10
    while (
        not _while_applying(lambda: BulkItem.objects.filter(state="DONE").exists())
        and time.monotonic() < deadline
    ):
        time.sleep(0.05)
    page.reload()
    finished = _while_applying(lambda: BulkOperation.objects.get().finished_at)
    assert finished is None, "reloaded after the end"

    page.wait_for_selector('caption:text("Every item\'s outcome")', timeout=20000)
    rows = page.locator("tr.bb-bulk-item")
    assert rows.count() == 6
    assert page.locator("tr.bb-bulk-item:has-text('APPLIED')").count() == 6
    operation = BulkOperation.objects.get()
    assert (operation.applied, operation.rejected, operation.stale) == (6, 0, 0)
    assert operation.digest == digest
    for run in failed:
        audit = OperatorRequest.objects.get(
            operation_id=f"{operation.bulk_id}:{run.pk}"
        )
        link = page.locator(f"tr.bb-bulk-item:has(a:text-is('#{run.pk}')) a.bb-audit")
        assert link.get_attribute("href") == (
            f"/admin/batchboard/operatorrequest/{audit.pk}/change/"
        )
    assert OperatorRequest.objects.count() == 6
    assert set(
        JobExecution.objects.filter(pk__in=[r.pk for r in failed]).values_list(
            "status", flat=True
        )
    ) == {"ABANDONED"}
    if os.environ.get("BATCHBOARD_SCREENSHOTS") == "1":
        page.screenshot(path=str(SCREENS / "bulk-result.png"), full_page=True)

    link = page.locator(f"tr.bb-bulk-item:has(a:text-is('#{failed[0].pk}')) a.bb-audit")
    link.click()
    page.wait_for_url("**/admin/batchboard/operatorrequest/*/change/")
    assert f"{operation.bulk_id}:{failed[0].pk}" in page.content()
