"""
Operator actions in a real browser: stop, hold, and what a viewer sees.

Users belong to the groups ``batchboard_groups`` creates, as in the demo,
and sign in through the standalone site's sign-in page (none is staff
except the administrator).
"""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command

from batchboard.models import JobExecution, JobInstance, OperatorRequest
from batchboard.repository import JobRepository
from tests import factories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OWNER = bytes(range(16))


def member(group: str, *, staff: bool = False) -> User:
    """Create a user named and passworded after ``group``, in that group only."""
    call_command("batchboard_groups", stdout=StringIO())
    user = User.objects.create_user(group, password=group, is_staff=staff)
    user.groups.set([Group.objects.get(name=group)])
    return user


def sign_in(page: Any, live_server: Any, username: str, path: str) -> None:
    """Open ``path`` anonymously, sign in on the login page, land on ``path``."""
    page.goto(f"{live_server.url}{path}")
    page.wait_for_selector("h1:text('Sign in')")
    page.fill("#id_username", username)
    page.fill("#id_password", username)
    page.click("input[type=submit]")
    page.wait_for_url(f"{live_server.url}{path}")


def action_controls(page: Any) -> Any:
    """
    Return the page's action controls: links that open a dialog ("Stop…")
    and buttons of POST forms. Buttons of GET forms (a list's filters) only
    read, and a reader's own forms (``bb-personal``: saving a view) change
    nothing of the history.
    """
    return page.locator(
        "main a:text-matches('…$'), main form[method=post]:not(.bb-personal) button"
    )


def running_execution() -> JobExecution:
    """Return a STARTED execution claimed by a simulated owner (token ``OWNER``)."""
    factories.definition("nightly-import")
    instance = factories.instance("nightly-import")
    # Created a minute ago: the factory starts a run a second after it is
    # created, and the owner's STOPPING transition, stamped with the real
    # now, must not come before that start (the schema's time order).
    return factories.execution(
        instance, "STARTED", owner_token=OWNER, created_at=factories.ago(minutes=1)
    )


def test_operator_stops_a_running_execution_and_sees_stopping_arrive(
    page: Any, live_server: Any
) -> None:
    """Stop… opens a dialog; confirming records the request; the owner stops."""
    member("operator")
    execution = running_execution()
    sign_in(page, live_server, "operator", f"/executions/{execution.pk}/")
    headline = page.locator("#bb-execution-summary .bb-headline")
    assert headline.inner_text().startswith("STARTED")
    # What the viewer test looks for finds the operator's button.
    assert action_controls(page).all_inner_texts() == ["Stop…"]
    page.click(f"#bb-actions-{execution.pk} a:text('Stop…')")
    dialog = page.locator(f"#bb-action-slot-{execution.pk}-STARTED .bb-dialog")
    dialog.wait_for()
    assert "LIFECYCLE" in dialog.text_content()
    assert f"#{execution.pk}" in dialog.locator("dd").first.inner_text()
    dialog.locator("button[type=submit]").click()
    result = page.locator(f"#bb-action-slot-{execution.pk}-STARTED .bb-result")
    result.wait_for()
    assert "APPLIED" in result.inner_text()
    assert "Stop requested and recorded." in result.inner_text()
    assert "The status stays STARTED until the owner acts" in result.inner_text()
    request = OperatorRequest.objects.get(job_execution_id=execution.pk)
    assert (request.action, request.outcome_class) == ("STOP", "APPLIED")
    assert request.actor_ref == "user:operator"
    # The request alone changes no status: the live summary shows it pending.
    page.wait_for_selector("#bb-execution-summary .bb-flag--warn:text('requested')")
    assert headline.inner_text().startswith("STARTED")
    control = JobRepository().observe_control(execution.pk, OWNER)
    assert control.execution.status == "STOPPING"
    page.wait_for_function(
        "() => document.querySelector('#bb-execution-summary .bb-headline')"
        ".innerText.startsWith('STOPPING')"
    )


def test_administrator_places_a_hold_in_the_admin_and_sees_the_badge(
    page: Any, live_server: Any
) -> None:
    """The admin's hold action, confirmed with a reason, shows in the dashboard."""
    member("administrator", staff=True)
    factories.definition("nightly-import")
    instance = factories.instance("nightly-import")
    factories.execution(instance, "FAILED")
    sign_in(page, live_server, "administrator", f"/instances/{instance.pk}/")
    assert page.locator(".bb-flag:text('held')").count() == 0
    page.goto(f"{live_server.url}/admin/batchboard/jobinstance/")
    page.check(f"input[name=_selected_action][value='{instance.pk}']")
    page.select_option("select[name=action]", "place_holds")
    page.click("button[name=index]")
    page.wait_for_selector("#bb-admin-reason")
    assert "DESTRUCTIVE" in page.inner_text("#content").upper()
    page.select_option("#bb-admin-reason", "LEGAL_HOLD")
    page.click("input[type=submit][value^='Yes']")
    # The admin's actions show the bulk result page, every item's outcome.
    page.wait_for_selector("tr.bb-bulk-item:has-text('APPLIED')")
    held = JobInstance.objects.get(pk=instance.pk)
    assert (held.hold_actor, held.hold_reason) == ("user:administrator", "LEGAL_HOLD")
    page.goto(f"{live_server.url}/instances/{instance.pk}/")
    page.wait_for_selector(".bb-facts .bb-flag--warn:text('held')")
    assert "LEGAL_HOLD" in page.inner_text(".bb-facts")
    page.goto(f"{live_server.url}/jobs/nightly-import/")
    page.wait_for_selector(f"tr:has(a:text('#{instance.pk}')) .bb-flag:text('held')")


def test_administrator_places_a_hold_on_the_instance_page(
    page: Any, live_server: Any
) -> None:
    """The dashboard's own hold dialog does the same, in place."""
    member("administrator", staff=True)
    factories.definition("nightly-import")
    instance = factories.instance("nightly-import")
    factories.execution(instance, "FAILED")
    sign_in(page, live_server, "administrator", f"/instances/{instance.pk}/")
    page.click("a:text('Place hold…')")
    dialog = page.locator(f"#bb-action-slot-instance-{instance.pk} .bb-dialog")
    dialog.wait_for()
    assert "DESTRUCTIVE" in dialog.text_content()
    dialog.locator("select[name=reason_code]").select_option("AUDIT")
    dialog.locator("button[type=submit]").click()
    result = page.locator(f"#bb-action-slot-instance-{instance.pk} .bb-result")
    result.wait_for()
    assert "APPLIED" in result.inner_text()
    assert JobInstance.objects.get(pk=instance.pk).hold_actor == "user:administrator"
    page.reload()
    page.wait_for_selector(".bb-facts .bb-flag--warn:text('held')")
    assert "Release hold…" in page.inner_text(f"#bb-actions-instance-{instance.pk}")


def assert_no_actions(page: Any) -> None:
    """Fail if the page offers any action: a "…" button or a POST form."""
    page.wait_for_load_state("networkidle")
    buttons = action_controls(page)
    assert buttons.count() == 0, buttons.all_inner_texts()
    assert page.locator("main form[method=post]:not(.bb-personal)").count() == 0


def test_viewer_sees_no_action_anywhere(page: Any, live_server: Any) -> None:
    """Execution, instance and unresolved list offer a viewer nothing to press."""
    member("viewer")
    moment = factories.now()
    factories.definition("nightly-import")
    instance = factories.instance(
        "nightly-import", created_at=moment - timedelta(hours=2)
    )
    # Running, owned and silent for an hour: an operator would see Stop… on
    # each page and an administrator Recover… and Place hold….
    execution = factories.execution(
        instance,
        "STARTED",
        created_at=moment - timedelta(hours=2),
        updated_at=moment - timedelta(hours=1),
        owner_token=OWNER,
    )
    sign_in(page, live_server, "viewer", f"/executions/{execution.pk}/")
    page.wait_for_selector(f"h1:has-text('Execution #{execution.pk}')")
    assert_no_actions(page)
    page.goto(f"{live_server.url}/instances/{instance.pk}/")
    page.wait_for_selector(f"h1:has-text('Instance #{instance.pk}')")
    assert_no_actions(page)
    page.goto(f"{live_server.url}/unresolved/?age=60")
    page.wait_for_selector(f"#bb-execution-{execution.pk}")
    assert_no_actions(page)
