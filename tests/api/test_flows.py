"""Every API command end to end: lists and their cursors, records, every action."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from batchboard import cursors
from batchboard.api import tokens
from batchboard.models import JobExecution, JobInstance, OperatorRequest
from batchboard.vocabulary import DESTRUCTIVE, LIFECYCLE, READ
from tests import factories as rows
from tests.api.test_schema_and_input import check
from tests.factories import actions as factories

pytestmark = pytest.mark.django_db


class Api:
    """A token's calls, every answer checked against the document."""

    def __init__(self, user: Any = None) -> None:
        owner = user or factories.user(
            "partitions",
            *factories.VIEW,
            "view_steppartition",
            "operate_lifecycle",
            "operate_destructive",
        )
        _token, self.secret = tokens.create_token(
            owner, "t", [READ, LIFECYCLE, DESTRUCTIVE]
        )
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {self.secret}")

    def get(self, path: str, **params: Any) -> tuple[int, dict[str, Any]]:
        response = self.client.get(f"/api/v1/{path}", params)
        return response.status_code, check(response)

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        response = self.client.post(
            f"/api/v1/{path}", json.dumps(body), content_type="application/json"
        )
        return response.status_code, check(response)


@pytest.fixture
def api(db: None) -> Api:
    return Api()


def _all(api: Api, path: str, **params: Any) -> list[dict[str, Any]]:
    """Follow a list's cursors to the end; return every row."""
    found: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = dict(params, page_size="2", **({"cursor": cursor} if cursor else {}))
        status, body = api.get(path, **query)
        assert status == 200, body
        found += body["data"]
        assert body["page"]["returned"] == len(body["data"])
        cursor = body["page"]["next_cursor"]
        if cursor is None:
            return found


def test_lists_page_to_the_end_with_their_cursors(api: Api) -> None:
    instance = factories.instance("orders")
    executions = [
        factories.execution("FAILED", job_instance=instance, attempt=n)
        for n in (1, 2, 3)
    ]
    step = factories.step(executions[-1])
    for _ in range(3):
        factories.partition(step)
    for n in range(3):
        rows.flow_decision(executions[-1], n + 1, f"node-{n}")
    assert [row["job_name"] for row in _all(api, "jobs/")] == ["orders"]
    assert [row["instance_id"] for row in _all(api, "jobs/orders/instances/")] == [
        instance.pk
    ]
    listed = _all(api, f"instances/{instance.pk}/executions/")
    assert [row["attempt"] for row in listed] == [3, 2, 1]
    assert listed[0]["counts"] == {
        "committed": 0,
        "filtered": 0,
        "processed": 0,
        "read": 0,
        "written": 0,
    }
    assert listed[0]["definition"]["revision"].startswith("action-")
    recent = _all(api, "executions/", status="FAILED")
    assert [row["execution_id"] for row in recent] == [e.pk for e in executions][::-1]
    assert [
        row["step_name"] for row in _all(api, f"executions/{executions[-1].pk}/steps/")
    ] == [step.step_name]
    assert len(_all(api, f"steps/{step.pk}/partitions/")) == 3
    flow = _all(api, f"executions/{executions[-1].pk}/history/", record="flow")
    assert [row["sequence"] for row in flow] == [1, 2, 3]
    assert flow[0]["record"] == "flow_decision"
    assert api.get(f"steps/{step.pk}/")[1]["data"]["step_execution_id"] == step.pk
    shown = api.get(f"instances/{instance.pk}/")[1]["data"]
    assert shown["instance_key_digest"] == bytes(instance.instance_key).hex()
    job = api.get("jobs/orders/")[1]["data"]
    assert job["newest_instance_id"] == instance.pk and job["definition"] is not None


def test_a_cursor_of_another_query_or_damaged_is_rejected(api: Api) -> None:
    factories.execution("FAILED")
    other = cursors.encode(cursors.job_names(), 2, cursors.Name("x"), 1)
    status, body = api.get("executions/", page_size="2", cursor=other)
    assert status == 409
    assert body["diagnostics"] == [
        {
            "code": "CURSOR_REJECTED",
            "detail": "the continuation token does not belong to this query",
        }
    ]
    status, body = api.get("executions/", cursor="not-hex")
    assert body["diagnostics"][0]["detail"] == (
        "the continuation token is not a valid cursor"
    )
    assert api.get("jobs/", page_size="501")[1]["diagnostics"][0]["code"] == (
        "PAGE_SIZE_OUT_OF_RANGE"
    )


def test_unresolved_needs_an_age_of_a_minute(api: Api) -> None:
    stale = factories.execution("STARTED")
    assert [
        row["execution_id"] for row in _all(api, "unresolved/", unresolved_age="15m")
    ] == [stale.pk]
    status, body = api.get("unresolved/", unresolved_age="59s")
    assert status == 400 and body["diagnostics"][0]["code"] == "AGE_BOUND_TOO_SMALL"


def test_abandon_recover_and_the_history(api: Api) -> None:
    execution = factories.execution("STARTED")
    status, body = api.get(f"executions/{execution.pk}/recovery/")
    proposal = body["data"]
    assert status == 200 and proposal["observed_version"] == 3
    shown = api.get(f"executions/{execution.pk}/")[1]["data"]
    assert shown["recovery_proposal"] == proposal | {
        "server_time": shown["recovery_proposal"]["server_time"],
        "inactivity_millis": shown["recovery_proposal"]["inactivity_millis"],
    }
    stale_version = {
        "expected_version": 2,
        "operation_id": "rec-0",
        "reason": "HOST_LOST",
        "directive": "mark-failed",
        "failure_category": "user_component",
        "failure_id": 7,
        "evidence_digest": proposal["evidence_digest"],
    }
    status, body = api.post(f"executions/{execution.pk}/recover/", stale_version)
    assert status == 409 and body["outcome"] == "conflict"
    assert body["data"] == {"current_version": 3}
    status, body = api.post(
        f"executions/{execution.pk}/recover/",
        stale_version | {"expected_version": 3, "operation_id": "rec-1"},
    )
    assert status == 200, body
    assert body["data"]["outcome"] == "APPLIED"
    assert body["data"]["execution"]["status"] == "FAILED"
    other = factories.execution("FAILED")
    status, body = api.post(
        f"executions/{other.pk}/abandon/",
        {"expected_version": 3, "operation_id": "ab-1", "reason": "OPERATOR_DECISION"},
    )
    assert status == 200 and body["data"]["execution"]["status"] == "ABANDONED"
    history = _all(api, f"executions/{execution.pk}/history/", record="recovery")
    assert history[0]["resulting_status"] == "FAILED"
    requests = _all(api, f"executions/{other.pk}/history/")
    assert requests[0]["operation_id"] == "ab-1"
    assert (
        requests[0]["digest"]
        == bytes(OperatorRequest.objects.get(operation_id="ab-1").request_digest).hex()
    )


def test_a_stale_version_is_a_conflict_with_its_record(api: Api) -> None:
    running = factories.execution("STARTED")
    status, body = api.post(
        f"executions/{running.pk}/stop/", {"expected_version": 1, "operation_id": "s-2"}
    )
    assert status == 409 and body["outcome"] == "conflict"
    assert body["data"]["record"]["rejection"] == "OPTIMISTIC_CONFLICT"
    assert body["diagnostics"] == [
        {
            "code": "GUARD_REJECTED",
            "detail": "the action was rejected as OPTIMISTIC_CONFLICT",
        }
    ]


def test_holds_and_the_purge_through_the_api(api: Api) -> None:
    instance = factories.instance("archive")
    old = JobExecution.objects.filter(
        pk=rows.execution(
            instance, "COMPLETED", created_at=factories.ago(days=91), attempt=1
        ).pk
    )
    status, body = api.post(
        f"instances/{instance.pk}/hold/", {"operation_id": "h-1", "reason": "AUDIT"}
    )
    assert status == 200, body
    assert body["data"]["hold"]["reason"] == "AUDIT"
    assert body["data"]["record"]["action"] == "HOLD"
    status, body = api.post(
        f"instances/{instance.pk}/release/",
        {"operation_id": "r-1", "reason": "HOLD_NO_LONGER_NEEDED"},
    )
    assert status == 200 and body["data"]["hold"] is None
    plan_body = {"job": "archive", "older_than": "30d"}
    status, body = api.post("retention/plan/", plan_body)
    assert status == 200, body
    plan = body["data"]
    assert [c["execution_id"] for c in plan["candidates"]] == [old.get().pk]
    status, body = api.post(
        "retention/apply/",
        plan_body
        | {
            "plan_digest": "0" * 64,
            "reason": "RETENTION_POLICY",
            "operation_id": "p-0",
        },
    )
    assert status == 409 and body["diagnostics"][0]["code"] == "PLAN_STALE"
    assert body["data"] == {"observed_plan_digest": plan["plan_digest"]}
    reviewed = plan_body | {
        "plan_digest": plan["plan_digest"],
        "reason": "RETENTION_POLICY",
        "operation_id": "p-1",
    }
    status, body = api.post("retention/apply/", reviewed | {"dry_run": True})
    assert status == 200
    assert body["data"] == {"applied": False, "dry_run": True, "plan": plan}
    assert body["diagnostics"][0]["code"] == "DRY_RUN"
    assert JobInstance.objects.filter(pk=instance.pk).exists()
    status, body = api.post("retention/apply/", reviewed)
    assert status == 200, body
    assert body["data"]["counts"]["job_executions"] == 1
    assert not JobInstance.objects.filter(pk=instance.pk).exists()
    audit = _all(api, "audit/")
    assert [row["operation_id"] for row in audit][:3] == ["p-1", "r-1", "h-1"]
    assert _all(api, "audit/", operation="h-1")[0]["action"] == "HOLD"


def test_bulk_plan_apply_and_list(api: Api) -> None:
    targets = [
        factories.execution("STARTED", job_instance=factories.instance("bulkjob"))
        for _ in range(3)
    ]
    status, body = api.post(
        "bulk/plan/", {"action": "STOP", "list": "executions", "job": "bulkjob"}
    )
    assert status == 200, body
    plan = body["data"]
    assert sorted(item["target_id"] for item in plan["items"]) == sorted(
        t.pk for t in targets
    )
    status, body = api.post(
        "bulk/apply/",
        {
            "action": plan["action"],
            "filters": plan["filters"],
            "items": plan["items"],
            "digest": plan["digest"],
        },
    )
    assert status == 200, body
    assert body["data"]["finished"] is True
    assert {item["outcome"] for item in body["data"]["items"]} == {"APPLIED"}
    listed = _all(api, "bulk/")
    assert [row["bulk_id"] for row in listed] == [body["data"]["bulk_id"]]
    assert listed[0]["applied"] == 3
    tampered = plan["items"][:2]
    status, body = api.post(
        "bulk/apply/",
        {
            "action": "STOP",
            "filters": plan["filters"],
            "items": tampered,
            "digest": plan["digest"],
        },
    )
    assert status == 400 and body["outcome"] == "error"


def test_a_viewer_reads_but_cannot_act(db: None) -> None:
    api = Api(factories.viewer())
    execution = factories.execution("STARTED")
    assert api.get(f"executions/{execution.pk}/")[0] == 200
    status, body = api.post(
        f"executions/{execution.pk}/abandon/",
        {"expected_version": 3, "operation_id": "v-1", "reason": "OPERATOR_DECISION"},
    )
    assert status == 403
    assert not OperatorRequest.objects.exists()
