"""The dashboard's bulk actions: entry points, plan review, chunked apply, result."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from batchboard.models import (
    BulkItem,
    BulkOperation,
    JobExecution,
    JobInstance,
    OperatorRequest,
)
from tests.factories import actions as factories


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _failed(count: int, job: str = "bulk-ui") -> list[JobExecution]:
    return [
        factories.execution("FAILED", job_instance=factories.instance(job))
        for _ in range(count)
    ]


def _plan_url(source: str = "executions", action: str = "ABANDON") -> str:
    return reverse("batchboard:bulk_plan", args=[source, action])


def _hidden(html: str) -> dict[str, str]:
    found = re.findall(r'type="hidden" name="(\w+)" value="([^"]*)"', html)
    return {name: unescape(value) for name, value in found}


@pytest.mark.django_db
def test_the_executions_list_offers_bulk_actions_the_user_may_apply(
    admin_user: User, operator_user: User, viewer_user: User
) -> None:
    url = reverse("batchboard:executions") + "?status=FAILED&job=bulk-ui&size=5"
    admin = _client(admin_user).get(url).content.decode()
    assert "Act on all matching…" in admin
    assert f"{_plan_url()}?status=FAILED&amp;job=bulk-ui" in admin
    operator = _client(operator_user).get(url).content.decode()
    assert _plan_url(action="STOP") in operator
    assert _plan_url(action="ABANDON") not in operator
    assert "Act on all matching" not in _client(viewer_user).get(url).content.decode()


@pytest.mark.django_db
def test_the_plan_shows_counts_digest_items_and_the_apply_form(
    admin_user: User,
) -> None:
    runs = _failed(2)
    started = factories.execution("STARTED", job_instance=factories.instance("bulk-ui"))
    response = _client(admin_user).get(f"{_plan_url()}?job=bulk-ui")
    html = response.content.decode()
    assert response.status_code == 200
    assert "will be rejected: <code>INVALID_STATE</code>" in html
    for run in [*runs, started]:
        assert f"#{run.pk}</a>" in html
    hidden = _hidden(html)
    assert re.fullmatch(r"[0-9a-f]{64}", hidden["digest"])
    assert hidden["digest"] in html
    assert hidden["action"] == "ABANDON"
    assert 'name="reason_code"' in html


@pytest.mark.django_db
def test_a_reader_sees_the_plan_as_review_only(viewer_user: User) -> None:
    _failed(1)
    html = _client(viewer_user).get(f"{_plan_url()}?job=bulk-ui").content.decode()
    assert "Review only" in html
    assert "batchboard:bulk_apply" not in html and 'name="digest"' not in html


@pytest.mark.django_db
def test_the_plans_items_are_keyset_paged(admin_user: User) -> None:
    runs = sorted(_failed(3), key=lambda run: run.pk)
    client = _client(admin_user)
    first = client.get(f"{_plan_url()}?job=bulk-ui&size=2").content.decode()
    assert f"after={runs[1].pk}" in first
    second = client.get(
        f"{_plan_url()}?job=bulk-ui&size=2&after={runs[1].pk}",
        headers={"HX-Request": "true"},
    ).content.decode()
    assert f"#{runs[2].pk}</a>" in second and f"#{runs[0].pk}</a>" not in second


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("executions/PURGE", 404),
        ("nowhere/ABANDON", 404),
        ("instances/ABANDON", 400),
        ("executions/ABANDON?status=LOST", 400),
    ],
)
def test_bad_plan_requests_get_an_error_page(
    admin_user: User, url: str, status: int
) -> None:
    path, _, query = url.partition("?")
    source, action = path.split("/")
    full = _plan_url(source, action) + (f"?{query}" if query else "")
    assert _client(admin_user).get(full).status_code == status


@pytest.mark.django_db
def test_a_filter_over_the_bound_is_refused_on_the_page(
    admin_user: User, settings: Any
) -> None:
    _failed(3)
    settings.BATCHBOARD = {"BULK_MAX_ITEMS": 2}
    response = _client(admin_user).get(f"{_plan_url()}?job=bulk-ui")
    assert response.status_code == 400
    assert "more than 2 records" in response.content.decode()


def _apply(client: Client, html: str, **change: str) -> Any:
    data = {**_hidden(html), "reason_code": "OPERATOR_DECISION", **change}
    return client.post(reverse("batchboard:bulk_apply"), data)


@pytest.mark.django_db
def test_apply_records_the_operation_and_chunks_finish_it(admin_user: User) -> None:
    runs = _failed(3)
    client = _client(admin_user)
    plan = client.get(f"{_plan_url()}?status=FAILED&job=bulk-ui").content.decode()
    response = _apply(client, plan)
    assert response.status_code == 303
    operation = BulkOperation.objects.get()
    assert response["Location"] == reverse(
        "batchboard:bulk_operation", args=[operation.bulk_id]
    )
    page = client.get(response["Location"]).content.decode()
    assert "hx-post" in page and "0 of 3 items done" in page
    continued = client.post(
        reverse("batchboard:bulk_continue", args=[operation.bulk_id]),
        headers={"HX-Request": "true"},
    )
    assert continued.status_code == 200 and continued["HX-Refresh"] == "true"
    result = client.get(response["Location"]).content.decode()
    assert result.count('class="bb-bulk-item"') == 3
    for run in runs:
        row = OperatorRequest.objects.get(operation_id=f"{operation.bulk_id}:{run.pk}")
        assert f"/admin/batchboard/operatorrequest/{row.pk}/change/" in result
    assert "APPLIED" in result and "hx-post" not in result


@pytest.mark.django_db
def test_a_tampered_digest_applies_nothing_and_says_why(admin_user: User) -> None:
    _failed(2)
    client = _client(admin_user)
    plan = client.get(f"{_plan_url()}?job=bulk-ui").content.decode()
    response = _apply(client, plan, digest="f" * 64)
    assert response.status_code == 400
    assert "does not match" in response.content.decode()
    assert not BulkOperation.objects.exists() and not BulkItem.objects.exists()


@pytest.mark.django_db
def test_applying_is_checked_on_the_server(
    admin_user: User, operator_user: User
) -> None:
    _failed(2)
    plan = _client(admin_user).get(f"{_plan_url()}?job=bulk-ui").content.decode()
    response = _apply(_client(operator_user), plan)
    assert response.status_code == 403
    assert not BulkOperation.objects.exists()


@pytest.mark.django_db
def test_the_audit_log_lists_bulk_operations_linking_to_their_items(
    admin_user: User,
) -> None:
    run = _failed(1)[0]
    client = _client(admin_user)
    plan = client.get(f"{_plan_url()}?job=bulk-ui").content.decode()
    location = _apply(client, plan)["Location"]
    operation = BulkOperation.objects.get()
    client.post(reverse("batchboard:bulk_continue", args=[operation.bulk_id]))
    audit = client.get(reverse("batchboard:audit")).content.decode()
    assert f'<a href="{location}">{operation.bulk_id}</a>' in audit
    assert f"{operation.bulk_id}:{run.pk}" in audit


@pytest.mark.django_db
def test_recover_all_unresolved_with_one_directive(admin_user: User) -> None:
    stale = factories.execution("STARTED", job_instance=factories.instance("lost"))
    client = _client(admin_user)
    url = reverse("batchboard:unresolved") + "?age=900"
    assert _plan_url("unresolved", "RECOVER") in client.get(url).content.decode()
    plan = client.get(f"{_plan_url('unresolved', 'RECOVER')}?age=900").content.decode()
    assert 'name="directive"' in plan
    missing = _apply(client, plan, reason_code="HOST_LOST")
    assert missing.status_code == 400  # no directive chosen: nothing written
    assert not BulkOperation.objects.exists()
    response = _apply(client, plan, reason_code="HOST_LOST", directive="ABANDONED")
    operation = BulkOperation.objects.get()
    assert response.status_code == 303 and operation.resulting_status == "ABANDONED"
    client.post(reverse("batchboard:bulk_continue", args=[operation.bulk_id]))
    assert JobExecution.objects.get(pk=stale.pk).status == "ABANDONED"


@pytest.mark.django_db
def test_hold_all_of_a_jobs_instances(admin_user: User) -> None:
    instances = [factories.instance("kept"), factories.instance("kept")]
    factories.execution("COMPLETED", job_instance=instances[0])
    client = _client(admin_user)
    job = client.get(reverse("batchboard:job", args=["kept"])).content.decode()
    assert f"{_plan_url('instances', 'HOLD')}?job=kept" in job
    plan = client.get(f"{_plan_url('instances', 'HOLD')}?job=kept").content.decode()
    _apply(client, plan, reason_code="LEGAL_HOLD")
    operation = BulkOperation.objects.get()
    client.post(reverse("batchboard:bulk_continue", args=[operation.bulk_id]))
    assert operation.items.filter(outcome="APPLIED").count() == 2
    assert all(
        JobInstance.objects.get(pk=i.pk).hold_reason == "LEGAL_HOLD" for i in instances
    )
