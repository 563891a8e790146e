"""
What a page offers in a real browser, and how it follows its own actions.

Every action dialog opened by its address offers Confirm exactly where the
record offers the action (the rule of ``batchboard.actions.eligibility``),
and says why not elsewhere. After a hold, a release or a recovery, every
region of the page shows the new state without a reload.
"""

from __future__ import annotations

from typing import Any

import pytest

from batchboard import vocabulary
from batchboard.models import JobExecution, JobInstance, OperatorRequest
from tests import factories
from tests.browser.test_actions import member, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OWNER = bytes(range(16))

#: Where each execution action is offered, by the contract (spec 4.5).
STOP_OFFERED = {"STARTING", "STARTED"}
ABANDON_OFFERED = {"STOPPED", "FAILED"}


def _confirm(page: Any) -> Any:
    return page.locator("main .bb-dialog button[type=submit]:text-matches('^Confirm')")


def _dialog(page: Any, live_server: Any, path: str) -> Any:
    page.goto(f"{live_server.url}{path}")
    dialog = page.locator("main .bb-dialog")
    dialog.wait_for()
    return dialog


def _no_reload_marker(page: Any) -> None:
    """Mark the page, so that a reload (which drops the mark) is seen."""
    page.evaluate("() => { window.bbNoReload = true; }")


def _not_reloaded(page: Any) -> bool:
    return bool(page.evaluate("() => window.bbNoReload === true"))


def test_a_dialog_offers_confirm_only_where_the_record_offers_the_action(
    page: Any, live_server: Any
) -> None:
    """Stop, abandon, recover, hold and release, opened by their address."""
    member("administrator", staff=True)
    factories.definition("nightly-import")
    executions = {}
    for status in vocabulary.STATUSES:
        # Two hours old: an unresolved one is stale, a recovery candidate.
        executions[status] = factories.execution(
            factories.instance("nightly-import"),
            status,
            created_at=factories.ago(hours=2),
        )
    first = next(iter(executions.values()))
    sign_in(page, live_server, "administrator", f"/executions/{first.pk}/")
    for status, execution in executions.items():
        stop = _dialog(page, live_server, f"/executions/{execution.pk}/stop/")
        assert _confirm(page).count() == (status in STOP_OFFERED), status
        if status not in STOP_OFFERED:
            assert "Not offered" in stop.inner_text(), status
            assert page.locator("main form[method=post]:not(.bb-personal)").count() == 0
        abandon = _dialog(page, live_server, f"/executions/{execution.pk}/abandon/")
        assert _confirm(page).count() == (status in ABANDON_OFFERED), status
        if status not in ABANDON_OFFERED:
            assert "Not offered" in abandon.inner_text(), status
        # The recovery proposal's two forms (mark failed, abandon) appear
        # exactly where the execution offers a recovery.
        page.goto(f"{live_server.url}/executions/{execution.pk}/recovery-proposal/")
        proposal = page.locator("main .bb-recovery")
        proposal.wait_for()
        submits = proposal.locator("form[method=post] button[type=submit]")
        assert submits.count() == (2 if status in vocabulary.UNRESOLVED else 0), status
    # A stop requested already, a restarted attempt, and an UNKNOWN run with
    # a recovery decision (which the service lets abandon).
    requested = executions["STARTED"]
    JobExecution.objects.filter(pk=requested.pk).update(
        stop_requested_at=factories.now(), stop_requested_by="user:x"
    )
    dialog = _dialog(page, live_server, f"/executions/{requested.pk}/stop/")
    assert _confirm(page).count() == 0
    assert "already requested" in dialog.inner_text()
    failed = executions["FAILED"]
    factories.execution(failed.job_instance, "COMPLETED", restart_of=failed)
    dialog = _dialog(page, live_server, f"/executions/{failed.pk}/abandon/")
    assert _confirm(page).count() == 0
    assert "later attempt" in dialog.inner_text()
    unknown = executions["UNKNOWN"]
    factories.recovery_decision(unknown, prior="UNKNOWN")
    _dialog(page, live_server, f"/executions/{unknown.pk}/abandon/")
    assert _confirm(page).count() == 1
    # Holds: placing is always offered (it replaces a hold), releasing only
    # a hold that is there.
    free = factories.instance("nightly-import")
    held = factories.instance("nightly-import", hold=("user:keeper", "AUDIT"))
    for instance, release_offered in ((free, False), (held, True)):
        _dialog(page, live_server, f"/instances/{instance.pk}/hold/")
        assert _confirm(page).count() == 1
        dialog = _dialog(page, live_server, f"/instances/{instance.pk}/release/")
        assert _confirm(page).count() == int(release_offered)
        if not release_offered:
            assert "not held" in dialog.inner_text()
    # Opening a dialog changed nothing.
    assert not OperatorRequest.objects.exists()


def test_hold_then_release_and_the_instance_page_follows(
    page: Any, live_server: Any
) -> None:
    """The hold, its buttons and the result agree after each, with no reload."""
    member("administrator", staff=True)
    factories.definition("nightly-import")
    instance = factories.instance("nightly-import")
    factories.execution(instance, "FAILED")
    sign_in(page, live_server, "administrator", f"/instances/{instance.pk}/")
    _no_reload_marker(page)
    hold_fact = page.locator(f"#bb-instance-hold-{instance.pk}")
    buttons = page.locator(f"#bb-instance-buttons-{instance.pk} a")
    slot = page.locator(f"#bb-action-slot-instance-{instance.pk}")
    assert "not held" in hold_fact.inner_text()
    assert buttons.all_inner_texts() == ["Place hold…"]

    page.click("a:text('Place hold…')")
    slot.locator(".bb-dialog select[name=reason_code]").select_option("AUDIT")
    slot.locator(".bb-dialog button[type=submit]").click()
    result = page.locator(f"#bb-action-slot-instance-{instance.pk} .bb-result")
    result.wait_for()
    assert "APPLIED" in result.inner_text() and "HOLD" in result.inner_text()
    assert "The instance is held" in result.inner_text()
    page.wait_for_function(
        f"() => !document.querySelector('#bb-instance-hold-{instance.pk}')"
        ".innerText.includes('not held')"
    )
    assert "held" in hold_fact.inner_text()
    assert "user:administrator (AUDIT)" in hold_fact.inner_text()
    assert buttons.all_inner_texts() == ["Replace hold…", "Release hold…"]
    assert JobInstance.objects.get(pk=instance.pk).hold_reason == "AUDIT"

    page.click("a:text('Release hold…')")
    slot.locator(".bb-dialog select[name=reason_code]").select_option("PLACED_IN_ERROR")
    slot.locator(".bb-dialog button[type=submit]").click()
    page.wait_for_function(
        f"() => document.querySelector('#bb-instance-hold-{instance.pk}')"
        ".innerText.includes('not held')"
    )
    result = page.locator(f"#bb-action-slot-instance-{instance.pk} .bb-result")
    assert "RELEASE_HOLD" in result.inner_text() and "APPLIED" in result.inner_text()
    assert "The hold is released" in result.inner_text()
    assert buttons.all_inner_texts() == ["Place hold…"]
    assert JobInstance.objects.get(pk=instance.pk).hold_actor is None
    assert _not_reloaded(page)


def test_a_recovery_shows_its_result_and_the_execution_page_follows(
    page: Any, live_server: Any
) -> None:
    """
    An UNKNOWN execution marked failed from its page: the form carries the
    one reason the service accepts, the result stays, and the summary, the
    buttons and the recorded lists show the new state without a reload.
    """
    member("administrator", staff=True)
    factories.definition("nightly-import")
    instance = factories.instance("nightly-import")
    execution = factories.execution(
        instance, "UNKNOWN", owner_token=OWNER, created_at=factories.ago(minutes=5)
    )
    sign_in(page, live_server, "administrator", f"/executions/{execution.pk}/")
    _no_reload_marker(page)
    headline = page.locator("#bb-execution-summary .bb-headline")
    assert headline.inner_text().startswith("UNKNOWN")
    panel = page.locator(".bb-recovery")
    panel.locator("button:text('Mark failed')").wait_for()
    # Neither Stop nor Abandon: only a recovery resolves an UNKNOWN run.
    assert page.locator(f"#bb-actions-{execution.pk} > a.bb-button").count() == 0
    assert "Reason: UNKNOWN_EFFECT" in panel.inner_text()
    assert panel.locator("input[name=failure_id]").input_value().isdigit()
    panel.locator("button:text('Mark failed')").click()
    result = page.locator(f"#bb-action-slot-{execution.pk}-FAILED .bb-result")
    result.wait_for()
    assert "APPLIED" in result.inner_text() and "RECOVER" in result.inner_text()
    assert "UNKNOWN → FAILED" in result.inner_text()
    page.wait_for_function(
        "() => document.querySelector('#bb-execution-summary .bb-headline')"
        ".innerText.startsWith('FAILED')"
    )
    page.wait_for_function(
        "() => document.querySelector('#bb-recovery_decisions')"
        ".innerText.includes('UNKNOWN_EFFECT')"
    )
    # The refresh the result triggered kept the result, dropped the
    # recovery form and offers what a FAILED run offers.
    assert result.is_visible()
    assert page.locator(".bb-recovery").count() == 0
    assert page.locator(
        f"#bb-actions-{execution.pk} > a.bb-button"
    ).all_inner_texts() == ["Abandon…"]
    recovered = JobExecution.objects.get(pk=execution.pk)
    assert (recovered.status, recovered.failure_category) == (
        "FAILED",
        "UNKNOWN_COMMIT",
    )
    request = OperatorRequest.objects.get(job_execution_id=execution.pk)
    assert (request.outcome_class, request.reason_code) == ("APPLIED", "UNKNOWN_EFFECT")
    assert _not_reloaded(page)


def test_an_abandon_shows_its_result_after_the_refresh(
    page: Any, live_server: Any
) -> None:
    """The outcome outlives the refresh it triggers, though the status moved."""
    member("administrator", staff=True)
    factories.definition("nightly-import")
    execution = factories.execution(factories.instance("nightly-import"), "FAILED")
    sign_in(page, live_server, "administrator", f"/executions/{execution.pk}/")
    _no_reload_marker(page)
    page.click(f"#bb-actions-{execution.pk} a:text('Abandon…')")
    dialog = page.locator(f"#bb-action-slot-{execution.pk}-FAILED .bb-dialog")
    dialog.locator("select[name=reason_code]").select_option("OPERATOR_DECISION")
    dialog.locator("button[type=submit]").click()
    page.wait_for_function(
        "() => document.querySelector('#bb-execution-summary .bb-headline')"
        ".innerText.startsWith('ABANDONED')"
    )
    result = page.locator(f"#bb-action-slot-{execution.pk}-ABANDONED .bb-result")
    assert "FAILED → ABANDONED" in result.inner_text()
    assert page.locator(f"#bb-actions-{execution.pk} > a.bb-button").count() == 0
    assert _not_reloaded(page)
