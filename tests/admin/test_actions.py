"""
The operator actions in the real admin site: offered by authorization class,
a confirmation asking the reason, then the bulk result page of every object.
"""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.contrib import admin
from django.contrib.admin import helpers
from django.contrib.auth.models import User
from django.test import Client, RequestFactory
from django.urls import reverse

from batchboard.admin.registrations import JobExecutionAdmin, JobInstanceAdmin
from batchboard.models import (
    JobExecution,
    JobInstance,
    OperatorRequest,
    RetentionAction,
)
from tests.factories import actions as factories

pytestmark = pytest.mark.django_db

EXECUTIONS = "admin:batchboard_jobexecution_changelist"
INSTANCES = "admin:batchboard_jobinstance_changelist"


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _hidden(html: str) -> list[tuple[str, str]]:
    found = re.findall(r'<input type="hidden" name="([\w-]+)" value="([^"]*)"', html)
    return [(name, unescape(value)) for name, value in found]


def _confirm_then_apply(
    client: Client, url: str, action: str, pks: list[int], reason: str | None
) -> tuple[str, list[tuple[str, str]]]:
    first = client.post(url, {"action": action, helpers.ACTION_CHECKBOX_NAME: pks})
    assert first.status_code == 200
    page = first.content.decode()
    data: dict[str, list[str]] = {}
    for name, value in _hidden(page):
        if name != "csrfmiddlewaretoken":
            data.setdefault(name, []).append(value)
    if reason:
        data["reason_code"] = [reason]
    second = client.post(url, data, follow=True)
    assert second.status_code == 200
    return second.content.decode(), _hidden(page)


def test_stop_reports_each_object(admin_user: User) -> None:
    running = factories.execution("STARTED")
    unknown = factories.execution("UNKNOWN")
    done = factories.execution("COMPLETED")
    body, form = _confirm_then_apply(
        _client(admin_user),
        reverse(EXECUTIONS),
        "stop_executions",
        [running.pk, unknown.pk, done.pk],
        None,
    )
    assert (f"version_{running.pk}", "3") in form
    # Only the running execution offers STOP: the others are listed with
    # why, and left out of the confirmed form.
    selected = [value for name, value in form if name == helpers.ACTION_CHECKBOX_NAME]
    assert selected == [str(running.pk)]
    assert "APPLIED" in body and "REJECTED" not in body
    assert (
        JobExecution.objects.get(pk=running.pk).stop_requested_by
        == "user:administrator"
    )
    assert OperatorRequest.objects.count() == 1
    assert "admin/batchboard/operatorrequest/" in body


def test_the_confirmation_says_why_an_object_is_not_offered(admin_user: User) -> None:
    """Each object the action cannot change is named with the reason."""
    unknown = factories.execution("UNKNOWN")
    done = factories.execution("COMPLETED")
    page = (
        _client(admin_user)
        .post(
            reverse(EXECUTIONS),
            {
                "action": "stop_executions",
                helpers.ACTION_CHECKBOX_NAME: [unknown.pk, done.pk],
            },
        )
        .content.decode()
    )
    assert page.count("not offered") == 2
    assert "The execution is UNKNOWN" in page and "it has finished" in page
    # Nothing to confirm: no form, no button.
    assert 'name="post"' not in page and "Yes, stop" not in page
    assert "None of the selected objects offers STOP" in page
    assert not OperatorRequest.objects.exists()


def test_reposting_the_confirmation_replays(admin_user: User) -> None:
    execution = factories.execution("FAILED")
    client = _client(admin_user)
    url = reverse(EXECUTIONS)
    first = client.post(
        url,
        {"action": "abandon_executions", helpers.ACTION_CHECKBOX_NAME: [execution.pk]},
    ).content.decode()
    assert "Operator decision (OPERATOR_DECISION)" in first
    data = {
        name: value for name, value in _hidden(first) if name != "csrfmiddlewaretoken"
    }
    data["reason_code"] = "OPERATOR_DECISION"
    applied = client.post(url, data)
    assert "APPLIED" in client.get(applied["Location"]).content.decode()
    again = client.post(url, data, follow=True)
    # The same bulk id: its page again, and the message counts a replay.
    assert again.redirect_chain[0][0] == applied["Location"]
    assert "0 applied, 1 replayed" in str(list(again.context["messages"]))
    assert OperatorRequest.objects.count() == 1
    assert JobExecution.objects.get(pk=execution.pk).status == "ABANDONED"


def test_a_missing_reason_is_explained_per_object(admin_user: User) -> None:
    execution = factories.execution("FAILED")
    body, _form = _confirm_then_apply(
        _client(admin_user),
        reverse(EXECUTIONS),
        "abandon_executions",
        [execution.pk],
        None,
    )
    assert "was not applied" in body and "reason code is empty" in body
    assert not OperatorRequest.objects.exists()


def test_holds_from_the_admin(admin_user: User) -> None:
    instances = [factories.instance(), factories.instance()]
    pks = [i.pk for i in instances]
    client = _client(admin_user)
    body, _form = _confirm_then_apply(
        client, reverse(INSTANCES), "place_holds", pks, "LEGAL_HOLD"
    )
    assert body.count("APPLIED") >= 2
    assert JobInstance.objects.filter(hold_reason="LEGAL_HOLD").count() == 2
    _confirm_then_apply(
        client, reverse(INSTANCES), "release_holds", pks, "HOLD_NO_LONGER_NEEDED"
    )
    assert not JobInstance.objects.filter(hold_actor__isnull=False).exists()
    assert RetentionAction.objects.count() == 4


def test_actions_follow_the_classes(
    viewer_user: User, operator_user: User, admin_user: User
) -> None:
    """The admin offers each action only to its class and refuses the POST."""
    execution_admin = admin.site.get_model_admin(JobExecution)
    instance_admin = admin.site.get_model_admin(JobInstance)
    assert isinstance(execution_admin, JobExecutionAdmin)
    assert isinstance(instance_admin, JobInstanceAdmin)

    def offered(model_admin: object, user: User) -> set[str]:
        request = RequestFactory().get("/")
        request.user = user
        return set(model_admin.get_actions(request))  # type: ignore[attr-defined]

    assert offered(execution_admin, viewer_user) == set()
    assert offered(execution_admin, operator_user) == {"stop_executions"}
    assert offered(execution_admin, admin_user) == {
        "stop_executions",
        "abandon_executions",
    }
    assert offered(instance_admin, operator_user) == set()
    assert offered(instance_admin, admin_user) == {"place_holds", "release_holds"}
    execution = factories.execution("FAILED")
    response = _client(operator_user).post(
        reverse(EXECUTIONS),
        {
            "action": "abandon_executions",
            helpers.ACTION_CHECKBOX_NAME: [execution.pk],
            "post": "yes",
            "reason_code": "OPERATOR_DECISION",
            "operation_id": "op-x",
        },
    )
    assert response.status_code in (200, 302)
    assert not OperatorRequest.objects.exists()
    assert JobExecution.objects.get(pk=execution.pk).status == "FAILED"


def test_more_than_the_cap_is_refused(admin_user: User) -> None:
    from batchboard.admin import actions as admin_actions

    executions = [factories.execution("STARTED") for _ in range(3)]
    original = admin_actions.MAX_OBJECTS
    admin_actions.MAX_OBJECTS = 2
    try:
        response = _client(admin_user).post(
            reverse(EXECUTIONS),
            {
                "action": "stop_executions",
                helpers.ACTION_CHECKBOX_NAME: [e.pk for e in executions],
            },
            follow=True,
        )
    finally:
        admin_actions.MAX_OBJECTS = original
    assert "Select at most 2 objects" in response.content.decode()
    assert not OperatorRequest.objects.exists()


def test_admin_actions_require_csrf(admin_user: User) -> None:
    execution = factories.execution("STARTED")
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    response = client.post(
        reverse(EXECUTIONS),
        {
            "action": "stop_executions",
            helpers.ACTION_CHECKBOX_NAME: [execution.pk],
            "post": "yes",
            f"version_{execution.pk}": "3",
            "operation_id": "op-c",
        },
    )
    assert response.status_code == 403
    assert not OperatorRequest.objects.exists()


def test_recovery_links_to_the_dashboard(admin_user: User) -> None:
    running = factories.execution("STARTED")
    finished = factories.execution("FAILED")
    mixin = admin.site.get_model_admin(JobExecution)
    assert isinstance(mixin, JobExecutionAdmin)
    assert "recovery-proposal" in mixin.recovery_proposal_link(running)
    assert mixin.recovery_proposal_link(finished) == "—"


def _options(client: Client, url: str) -> set[str]:
    body = client.get(url).content.decode()
    if 'name="action"' not in body:
        return set()
    return set(re.findall(r'<option value="(\w+)"', body)) - {""}


def test_changelists_offer_each_action_to_its_class_only(
    viewer_user: User, operator_user: User, admin_user: User
) -> None:
    """The rendered changelists list exactly the actions each class may use."""
    factories.execution("STARTED")
    factories.instance()
    executions, instances = reverse(EXECUTIONS), reverse(INSTANCES)
    viewer, operator, administrator = (
        _client(viewer_user),
        _client(operator_user),
        _client(admin_user),
    )
    assert _options(viewer, executions) == set()
    assert _options(viewer, instances) == set()
    assert _options(operator, executions) == {"stop_executions"}
    assert _options(operator, instances) == set()
    assert _options(administrator, executions) == {
        "stop_executions",
        "abandon_executions",
    }
    assert _options(administrator, instances) == {"place_holds", "release_holds"}
    body = administrator.get(executions).content.decode()
    assert 'id="action-toggle"' in body
    assert re.search(
        r'<input type="checkbox" name="_selected_action" value="\d+" '
        r'class="action-select"',
        body,
    )
    # Read-only everywhere else: no action at all, delete_selected least of all.
    for model in ("operatorrequest", "retentionaction", "recoverydecision"):
        url = reverse(f"admin:batchboard_{model}_changelist")
        assert _options(administrator, url) == set()


def test_permission_methods_follow_the_classes(
    viewer_user: User, operator_user: User, admin_user: User
) -> None:
    """Each has_<action>_permission asks for its own class."""
    execution_admin = admin.site.get_model_admin(JobExecution)
    instance_admin = admin.site.get_model_admin(JobInstance)
    assert isinstance(execution_admin, JobExecutionAdmin)
    assert isinstance(instance_admin, JobInstanceAdmin)

    def allowed(user: User) -> tuple[bool, ...]:
        request = RequestFactory().get("/")
        request.user = user
        return (
            execution_admin.has_stop_permission(request),
            execution_admin.has_abandon_permission(request),
            instance_admin.has_hold_permission(request),
            instance_admin.has_release_permission(request),
        )

    assert allowed(viewer_user) == (False, False, False, False)
    assert allowed(operator_user) == (True, False, False, False)
    assert allowed(admin_user) == (True, True, True, True)


@pytest.mark.parametrize(
    "action", ["stop_executions", "abandon_executions", "delete_selected"]
)
def test_a_viewer_forging_an_execution_action_writes_nothing(
    action: str, viewer_user: User
) -> None:
    """A complete, confirmed POST from a user without the class changes nothing."""
    status = "STARTED" if action == "stop_executions" else "FAILED"
    execution = factories.execution(status)
    before = JobExecution.objects.values().get(pk=execution.pk)
    response = _client(viewer_user).post(
        reverse(EXECUTIONS),
        {
            "action": action,
            helpers.ACTION_CHECKBOX_NAME: [execution.pk],
            "post": "yes",
            "reason_code": "OPERATOR_DECISION",
            f"version_{execution.pk}": "3",
            "operation_id": "op-forged",
        },
    )
    assert response.status_code in (200, 302)
    assert JobExecution.objects.values().get(pk=execution.pk) == before
    assert not OperatorRequest.objects.exists()


@pytest.mark.parametrize("action", ["place_holds", "release_holds", "delete_selected"])
def test_an_operator_forging_a_hold_writes_nothing(
    action: str, operator_user: User
) -> None:
    """Holds are Destructive: the Lifecycle class cannot place or release one."""
    held = action == "release_holds"
    instance = factories.instance(held=held)
    response = _client(operator_user).post(
        reverse(INSTANCES),
        {
            "action": action,
            helpers.ACTION_CHECKBOX_NAME: [instance.pk],
            "post": "yes",
            "reason_code": "LEGAL_HOLD",
            "operation_id": "op-forged",
        },
    )
    assert response.status_code in (200, 302)
    after = JobInstance.objects.get(pk=instance.pk)
    assert (after.hold_actor is not None) is held
    assert not RetentionAction.objects.exists()


def test_actions_work_from_a_keyset_page(admin_user: User) -> None:
    """A deep page's action form posts back to its own URL and still acts."""
    running = factories.execution("STARTED")
    newer = factories.execution("STARTED")
    url = reverse(EXECUTIONS) + f"?after={newer.pk}"
    client = _client(admin_user)
    first = client.post(
        url, {"action": "stop_executions", helpers.ACTION_CHECKBOX_NAME: [running.pk]}
    )
    assert first.status_code == 200
    data = {
        name: value
        for name, value in _hidden(first.content.decode())
        if name != "csrfmiddlewaretoken"
    }
    assert "APPLIED" in client.post(url, data, follow=True).content.decode()
    assert JobExecution.objects.get(pk=running.pk).stop_requested_at is not None
    assert JobExecution.objects.get(pk=newer.pk).stop_requested_at is None


def test_an_execution_page_links_to_its_recovery_proposal(viewer_user: User) -> None:
    """The real admin's execution page links an unresolved run to the dashboard."""
    running = factories.execution("STARTED")
    finished = factories.execution("COMPLETED")
    client = _client(viewer_user)
    proposal = reverse("batchboard:recovery_proposal", args=[running.pk])
    body = client.get(
        reverse("admin:batchboard_jobexecution_change", args=[running.pk])
    ).content.decode()
    assert f'href="{proposal}"' in body
    body = client.get(
        reverse("admin:batchboard_jobexecution_change", args=[finished.pk])
    ).content.decode()
    assert "recovery-proposal" not in body
