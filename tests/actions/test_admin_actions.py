"""Admin actions: a confirmation asking the reason, then per-object results."""

from __future__ import annotations

import re

import pytest
from django.contrib.admin import helpers
from django.contrib.auth.models import User
from django.test import Client, RequestFactory
from django.urls import reverse

from batchboard.models import (
    JobExecution,
    JobInstance,
    OperatorRequest,
    RetentionAction,
)
from tests.actions import factories
from tests.actions.admin_urls import ExecutionAdmin, site

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.actions.admin_urls")]

EXECUTIONS = "admin:batchboard_jobexecution_changelist"
INSTANCES = "admin:batchboard_jobinstance_changelist"


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _hidden(html: str) -> list[tuple[str, str]]:
    return re.findall(r'<input type="hidden" name="([\w-]+)" value="([^"]*)"', html)


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
    second = client.post(url, data)
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
    assert "APPLIED" in body and "REJECTED" in body and "INVALID_STATE" in body
    assert "already in that state" in body
    assert (
        JobExecution.objects.get(pk=running.pk).stop_requested_by
        == "user:administrator"
    )
    assert OperatorRequest.objects.count() == 3
    assert "admin/batchboard/operatorrequest/" in body


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
    assert "APPLIED" in client.post(url, data).content.decode()
    assert "REPLAYED" in client.post(url, data).content.decode()
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
    assert "NOT DONE" in body and "reason code is empty" in body
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
    execution_admin = site._registry[JobExecution]
    instance_admin = site._registry[JobInstance]

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
    assert isinstance(execution_admin, ExecutionAdmin)


def test_more_than_the_cap_is_refused(admin_user: User) -> None:
    from batchboard import admin_actions

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
    mixin = site._registry[JobExecution]
    assert "recovery-proposal" in mixin.recovery_proposal_link(running)  # type: ignore[attr-defined]
    assert mixin.recovery_proposal_link(finished) == "—"  # type: ignore[attr-defined]
