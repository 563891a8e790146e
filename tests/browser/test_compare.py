"""
Comparing two executions in a real browser: an operator opens a failed
attempt's instance, follows the lineage to the comparison with its
successful restart, then selects the same two rows in the executions list.

With ``BATCHBOARD_SCREENSHOTS=1`` the test also writes the screenshot the
docs show (``docs/screens/compare.png``); a plain run leaves the checkout
untouched.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from batchboard.digests import JobParameter
from batchboard.models import DefinitionUpgrade
from tests import factories
from tests.browser.test_operator_history import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENS = Path(__file__).resolve().parents[2] / "docs" / "screens"


def test_compare_a_failed_attempt_with_its_successful_restart(
    page: Any, live_server: Any
) -> None:
    old = factories.definition("ledger-close", "2026.02")
    new = factories.definition("ledger-close", "2026.03")
    DefinitionUpgrade.objects.create(
        from_definition=old,
        to_definition=new,
        upgrade_key="skip-empty-ledgers",
        step_mapping={},
        registered_at=factories.now(),
    )
    instance = factories.instance(
        "ledger-close",
        {
            "period": JobParameter.string("2026-02-private"),
            "region": JobParameter.u64(7),
        },
    )
    failed = factories.execution(
        instance, "FAILED", job_definition=old, duration=timedelta(minutes=6)
    )
    restart = factories.execution(
        instance,
        "COMPLETED",
        job_definition=new,
        restart_of=failed,
        duration=timedelta(minutes=11),
    )
    factories.step(failed, "extract", "COMPLETED", counts={"read_count": 12000})
    factories.step(
        failed, "post", "FAILED", counts={"read_count": 800, "write_retry_count": 3}
    )
    factories.step(restart, "post", "COMPLETED", counts={"write_count": 11800})
    factories.flow_decision(failed, 1, "extract", target="post")
    factories.flow_decision(
        failed, 2, "post", outcome="FAILED", target=None, terminal="FAIL"
    )
    factories.flow_decision(restart, 1, "post", target=None, terminal="COMPLETE")
    sign_in(page, live_server, f"/instances/{instance.pk}/", values=True)

    page.click("nav.bb-chain a:text('compare with previous')")
    page.wait_for_url(f"**/compare/{failed.pk}/{restart.pk}/")
    runs = page.locator("#bb-compare-runs")
    assert "FAILED" in runs.inner_text() and "COMPLETED" in runs.inner_text()
    assert "2026.02 → 2026.03 (upgrade key skip-empty-ledgers)" in runs.inner_text()
    steps = page.locator("#bb-compare-steps")
    assert steps.locator("tr.bb-differs").count() == 2
    assert "not run" in steps.inner_text()
    assert "retries 3" in steps.inner_text()
    parameters = page.locator("#bb-compare-parameters")
    assert "period" in parameters.inner_text() and "same" in parameters.inner_text()
    assert "2026-02-private" not in page.content()
    if os.environ.get("BATCHBOARD_SCREENSHOTS") == "1":
        SCREENS.mkdir(parents=True, exist_ok=True)
        page.set_viewport_size({"width": 1280, "height": 900})
        page.screenshot(path=str(SCREENS / "compare.png"), full_page=True)

    # The same two rows, selected in the executions list.
    page.goto(f"{live_server.url}/executions/?job=ledger-close")
    page.check(f"input.bb-pick[value='{restart.pk}']")
    page.check(f"input.bb-pick[value='{failed.pk}']")
    page.click("button:text('Compare selected')")
    page.wait_for_url(f"**/compare/{failed.pk}/{restart.pk}/")
    assert page.locator("h1").inner_text() == (
        f"Compare #{failed.pk} and #{restart.pk}"
    )
