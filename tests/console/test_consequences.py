"""One wording of what each action does, and audit links, for both consoles."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.admin import helpers
from django.contrib.auth.models import User
from django.test import Client
from django.urls import include, path, reverse

from batchboard import actions, vocabulary
from batchboard.console.consequences import CONSEQUENCES, audit_url, consequence
from tests.factories import actions as factories

pytestmark = pytest.mark.django_db

#: A site without the admin, for the audit link's fallback.
urlpatterns = [path("", include("batchboard.urls"))]


def _result(audit_id: int) -> actions.ActionResult:
    return actions.ActionResult(
        outcome=actions.APPLIED,
        action=vocabulary.HOLD,
        operation_id="op",
        recorded_outcome=actions.APPLIED,
        audit_model="retentionaction",
        audit_id=audit_id,
    )


def test_the_audit_link_opens_the_audit_row_in_the_admin() -> None:
    assert audit_url(_result(42)) == reverse(
        "admin:batchboard_retentionaction_change", args=[42]
    )


@pytest.mark.urls(__name__)
def test_without_the_admin_the_audit_row_has_no_link() -> None:
    assert audit_url(_result(42)) is None


def test_every_action_with_a_confirmation_is_described() -> None:
    assert set(CONSEQUENCES) == {
        vocabulary.STOP,
        vocabulary.ABANDON,
        vocabulary.HOLD,
        vocabulary.RELEASE_HOLD,
        vocabulary.APPLY_PURGE,
    }
    for action in CONSEQUENCES:
        assert consequence(action) == str(CONSEQUENCES[action])


def _dialog_text(client: Client, url: str) -> str:
    body = client.get(url, headers={"HX-Request": "true"}).content.decode()
    found = re.search(r"<dt>What happens</dt><dd>(.*?)</dd>", body, re.S)
    assert found, body
    return html.unescape(found.group(1))


def _admin_text(client: Client, changelist: str, action: str, pk: int) -> str:
    body = client.post(
        reverse(changelist), {"action": action, helpers.ACTION_CHECKBOX_NAME: [pk]}
    ).content.decode()
    found = re.search(r"class\. For each object listed: (.*?)</p>", body, re.S)
    assert found, body
    return html.unescape(found.group(1))


def test_dashboard_and_admin_tell_the_same_consequence(admin_user: User) -> None:
    """The dialog and the admin's confirmation page use one wording per action."""
    client = Client()
    client.force_login(admin_user)
    running = factories.execution("STARTED")
    failed = factories.execution("FAILED")
    instance = factories.instance()
    executions = "admin:batchboard_jobexecution_changelist"
    instances = "admin:batchboard_jobinstance_changelist"
    cases = [
        (vocabulary.STOP, "action_stop", running.pk, executions, "stop_executions"),
        (
            vocabulary.ABANDON,
            "action_abandon",
            failed.pk,
            executions,
            "abandon_executions",
        ),
        (vocabulary.HOLD, "action_hold", instance.pk, instances, "place_holds"),
        (
            vocabulary.RELEASE_HOLD,
            "action_release",
            instance.pk,
            instances,
            "release_holds",
        ),
    ]
    for action, url_name, pk, changelist, admin_action in cases:
        dialog = _dialog_text(client, reverse(f"batchboard:{url_name}", args=[pk]))
        confirmation = _admin_text(client, changelist, admin_action, pk)
        assert dialog == confirmation == consequence(action), action


def test_the_purge_page_tells_the_purges_consequence(admin_user: User) -> None:
    factories.execution("FAILED", updated_at=factories.ago(days=40))
    client = Client()
    client.force_login(admin_user)
    body = client.get(
        reverse("batchboard:purge_plan"), {"job_name": "nightly-import"}
    ).content.decode()
    assert html.escape(consequence(vocabulary.APPLY_PURGE)) in body
