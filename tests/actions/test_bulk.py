"""
Bulk actions by filter: plan, digest, apply, resume, races and bad input.

The digest is recomputed here from its documented format
(docs/bulk-actions.md), not with the service's own function.
"""

from __future__ import annotations

import hashlib
import json
import threading
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import connections
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from batchboard import actions
from batchboard.actions.bulk import plan_bulk
from batchboard.explorer import surveys
from batchboard.models import (
    BulkItem,
    BulkOperation,
    JobExecution,
    OperatorRequest,
    RetentionAction,
)
from tests.factories import actions as factories


def recomputed(action: str, filters: dict[str, Any], items: list[list[Any]]) -> str:
    """The digest as another program computes it from the documented format."""
    document = {"action": action, "filters": filters, "items": sorted(items)}
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def failed_runs(count: int, job: str = "bulk-job") -> list[JobExecution]:
    return [
        factories.execution("FAILED", job_instance=factories.instance(job))
        for _ in range(count)
    ]


def abandon_plan(user: User, job: str = "bulk-job") -> actions.BulkPlan:
    return plan_bulk(
        user=user,
        action="ABANDON",
        survey=surveys.executions(status="FAILED", job=job),
    )


def apply(user: User, plan: actions.BulkPlan, **extra: Any) -> actions.BulkResult:
    arguments: dict[str, Any] = {
        "user": user,
        "action": plan.action,
        "filters": plan.filters,
        "items": plan.items_text(),
        "digest": plan.digest,
        "bulk_id": "bulk-test-1",
        "reason_code": "OPERATOR_DECISION",
    }
    arguments.update(extra)
    return actions.apply_bulk(**arguments)


@pytest.mark.django_db
def test_the_plan_freezes_every_match_with_its_version_and_digest(
    admin_user: User,
) -> None:
    runs = failed_runs(3)
    factories.execution("FAILED", job_instance=factories.instance("other-job"))
    plan = abandon_plan(admin_user)
    expected = [[run.pk, run.version] for run in runs]
    assert [list(item.item) for item in plan.items] == sorted(expected)
    filters = {"list": "executions", "status": "FAILED", "job": "bulk-job"}
    assert plan.digest == recomputed("ABANDON", filters, expected)
    assert plan.counts["APPLIED"] == 3


@pytest.mark.django_db
def test_an_item_the_guards_reject_is_shown_with_its_code(admin_user: User) -> None:
    started = factories.execution("STARTED", job_instance=factories.instance("j"))
    plan = plan_bulk(
        user=admin_user, action="ABANDON", survey=surveys.executions(job="j")
    )
    (item,) = plan.items
    assert (item.target_id, item.expected, item.code) == (
        started.pk,
        "REJECTED",
        "INVALID_STATE",
    )


@pytest.mark.django_db
def test_a_filter_over_the_bound_is_refused_naming_it(admin_user: User) -> None:
    failed_runs(4)
    with (
        override_settings(BATCHBOARD={"BULK_MAX_ITEMS": 3}),
        pytest.raises(actions.BulkTooLarge) as refused,
    ):
        abandon_plan(admin_user)
    assert "more than 3 records" in refused.value.message
    assert "Narrow the filter" in refused.value.message
    assert not BulkOperation.objects.exists()


@pytest.mark.django_db
def test_stale_items_are_reported_and_the_others_applied(admin_user: User) -> None:
    runs = failed_runs(3)
    plan = abandon_plan(admin_user)
    moved = runs[1]
    JobExecution.objects.filter(pk=moved.pk).update(version=moved.version + 1)
    result = apply(admin_user, plan)
    outcomes = {item.target_id: item.outcome for item in result.items}
    assert outcomes == {
        runs[0].pk: "APPLIED",
        moved.pk: "STALE",
        runs[2].pk: "APPLIED",
    }
    assert not OperatorRequest.objects.filter(job_execution_id=moved.pk).exists()
    assert JobExecution.objects.get(pk=moved.pk).status == "FAILED"
    operation = BulkOperation.objects.get(bulk_id="bulk-test-1")
    assert (operation.applied, operation.stale, operation.rejected) == (2, 1, 0)
    assert operation.finished_at is not None
    audited = OperatorRequest.objects.get(operation_id=f"bulk-test-1:{runs[0].pk}")
    item = BulkItem.objects.get(operation=operation, target_id=runs[0].pk)
    assert (item.audit_model, item.audit_id) == ("operatorrequest", audited.pk)


@pytest.mark.django_db
def test_a_reapply_replays_every_item_and_writes_nothing(admin_user: User) -> None:
    failed_runs(3)
    plan = abandon_plan(admin_user)
    apply(admin_user, plan)
    before = (
        OperatorRequest.objects.count(),
        list(BulkItem.objects.values_list("finished_at", flat=True)),
        list(BulkOperation.objects.values()),
    )
    again = apply(admin_user, plan)
    assert {item.outcome for item in again.items} == {"REPLAYED"}
    assert {item.recorded for item in again.items} == {"APPLIED"}
    assert again.counts["REPLAYED"] == 3
    after = (
        OperatorRequest.objects.count(),
        list(BulkItem.objects.values_list("finished_at", flat=True)),
        list(BulkOperation.objects.values()),
    )
    assert after == before


@pytest.mark.django_db
def test_chunks_resume_where_the_last_one_stopped(admin_user: User) -> None:
    failed_runs(5)
    plan = abandon_plan(admin_user)
    first = apply(admin_user, plan, limit=2)
    assert first.counts["APPLIED"] == 2 and first.counts["PENDING"] == 3
    assert not first.finished
    second = apply(admin_user, plan, limit=10)
    assert second.counts == {
        "APPLIED": 3,
        "REJECTED": 0,
        "STALE": 0,
        "REPLAYED": 2,
        "PENDING": 0,
    }
    assert second.finished
    assert OperatorRequest.objects.count() == 5


@pytest.mark.django_db
def test_an_item_applied_before_its_process_stopped_is_replayed(
    admin_user: User,
) -> None:
    (run,) = failed_runs(1)
    plan = abandon_plan(admin_user)
    # The single action committed under the item's operation id, but the
    # process stopped before marking the item done.
    actions.abandon_execution(
        user=admin_user,
        execution_id=run.pk,
        expected_version=run.version,
        reason_code="OPERATOR_DECISION",
        operation_id=f"bulk-test-1:{run.pk}",
    )
    result = apply(admin_user, plan)
    (item,) = result.items
    assert (item.outcome, item.recorded) == ("APPLIED", "APPLIED")
    assert OperatorRequest.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    "change",
    [
        {"digest": "0" * 64},
        {"action": "PURGE"},
        {"bulk_id": "bad id!"},
        {"bulk_id": "x" * 41},
        {"items": "EXTRA"},
        {"items": "VERSION"},
    ],
    ids=["digest", "action", "bulk-id", "bulk-id-long", "extra-item", "version"],
)
def test_bad_input_writes_nothing(admin_user: User, change: dict[str, Any]) -> None:
    runs = failed_runs(2)
    plan = abandon_plan(admin_user)
    if change.get("items") == "EXTRA":
        other = factories.execution("FAILED")
        change = {"items": f"{plan.items_text()} {other.pk}:{other.version}"}
    elif change.get("items") == "VERSION":
        change = {"items": f"{runs[0].pk}:v3 {runs[1].pk}:{runs[1].version}"}
    with pytest.raises(actions.InvalidRequest):
        apply(admin_user, plan, **change)
    assert not BulkOperation.objects.exists()
    assert not OperatorRequest.objects.exists()


@pytest.mark.django_db
def test_a_bulk_id_used_for_another_plan_is_refused(admin_user: User) -> None:
    failed_runs(2)
    plan = abandon_plan(admin_user)
    apply(admin_user, plan, limit=1)
    with pytest.raises(actions.InvalidRequest, match="another plan"):
        apply(admin_user, plan, reason_code="DUPLICATE_RUN")


@pytest.mark.django_db
def test_applying_needs_the_actions_class_planning_only_read(
    viewer_user: User, operator_user: User
) -> None:
    failed_runs(2)
    plan = abandon_plan(viewer_user)
    for user in (viewer_user, operator_user):
        with pytest.raises(PermissionDenied):
            apply(user, plan)
    assert not BulkOperation.objects.exists()
    assert not OperatorRequest.objects.exists()


@pytest.mark.django_db
def test_holds_by_filter_use_the_hold_stamp_as_version(admin_user: User) -> None:
    held = factories.instance("kept", held=True)
    unheld = factories.instance("kept")
    plan = plan_bulk(user=admin_user, action="HOLD", survey=surveys.instances("kept"))
    stamps = {item.target_id: item.version for item in plan.items}
    assert stamps[unheld.pk] == 0 and stamps[held.pk] > 0
    result = apply(admin_user, plan, reason_code="AUDIT")
    assert {item.outcome for item in result.items} == {"APPLIED"}
    assert RetentionAction.objects.filter(action="HOLD").count() == 2


@pytest.mark.django_db
def test_a_bulk_recovery_keeps_each_items_evidence_digest(admin_user: User) -> None:
    run = factories.execution("STARTED", job_instance=factories.instance("lost"))
    plan = plan_bulk(
        user=admin_user, action="RECOVER", survey=surveys.executions(job="lost")
    )
    (item,) = plan.items
    proposal = actions.propose(run.pk)
    assert item.item == (run.pk, run.version, proposal.digest_hex)
    filters = {"list": "executions", "job": "lost"}
    assert plan.digest == recomputed(
        "RECOVER", filters, [[run.pk, run.version, proposal.digest_hex]]
    )
    result = apply(
        admin_user,
        plan,
        reason_code="HOST_LOST",
        directive=actions.Directive.abandon(),
    )
    assert [i.outcome for i in result.items] == ["APPLIED"]
    assert JobExecution.objects.get(pk=run.pk).status == "ABANDONED"


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_sixteen_concurrent_applies_apply_each_item_once(admin_user: User) -> None:
    failed_runs(40)
    plan = abandon_plan(admin_user)
    start = threading.Barrier(16)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            start.wait()
            apply(admin_user, plan)
        except BaseException as error:
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert OperatorRequest.objects.count() == 40
    operation = BulkOperation.objects.get()
    assert (operation.applied, operation.rejected, operation.stale) == (40, 0, 0)
    assert set(BulkItem.objects.values_list("state", flat=True)) == {"DONE"}
    BulkOperation.objects.all().delete()


def _statements(user: User) -> int:
    survey = surveys.executions(job="bulk-job")
    plan_bulk(user=user, action="ABANDON", survey=survey)  # the user's permissions
    with CaptureQueriesContext(connections["default"]) as captured:
        plan = plan_bulk(user=user, action="ABANDON", survey=survey)
    assert plan.counts["REJECTED"] == 1  # the UNKNOWN one, without a decision
    return len(captured)


@pytest.mark.django_db
def test_planning_costs_the_same_statements_for_few_items_and_many(
    admin_user: User,
) -> None:
    """The list's keyset page and two statements for ABANDON's answers."""
    failed_runs(3)
    factories.execution("UNKNOWN", job_instance=factories.instance("bulk-job"))
    few = _statements(admin_user)
    failed_runs(40)
    assert _statements(admin_user) == few
    assert few == 3


@pytest.mark.django_db
def test_a_plan_reads_the_list_page_by_page_up_to_the_bound(
    admin_user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of the list's own size, continued by its cursor, stop at bound + 1."""
    monkeypatch.setattr(surveys, "MAX_PAGE_SIZE", 2)
    runs = failed_runs(5)
    with override_settings(BATCHBOARD={"BULK_MAX_ITEMS": 10}):
        plan = abandon_plan(admin_user)
    assert [item.target_id for item in plan.items] == sorted(r.pk for r in runs)
    with (
        override_settings(BATCHBOARD={"BULK_MAX_ITEMS": 4}),
        pytest.raises(actions.BulkTooLarge, match="more than 4 records"),
    ):
        abandon_plan(admin_user)


@pytest.mark.django_db
def test_a_claim_whose_process_is_gone_is_taken_over(admin_user: User) -> None:
    runs = sorted(failed_runs(3), key=lambda run: run.pk)
    plan = abandon_plan(admin_user)
    apply(admin_user, plan, limit=0)
    items = BulkItem.objects.order_by("target_id")
    now = timezone.now()
    items.filter(target_id=runs[0].pk).update(
        state="CLAIMED", claim="gone", claimed_at=now - timedelta(seconds=60)
    )
    items.filter(target_id=runs[1].pk).update(
        state="CLAIMED", claim="alive", claimed_at=now
    )
    result = apply(admin_user, plan)
    outcomes = {item.target_id: item.outcome for item in result.items}
    assert outcomes == {
        runs[0].pk: "APPLIED",
        runs[1].pk: "PENDING",
        runs[2].pk: "APPLIED",
    }
    assert not result.finished


@pytest.mark.django_db
def test_the_batch_read_is_each_new_items_probe(admin_user: User) -> None:
    """An item read as unrecorded with its batch is not probed once more."""
    runs = failed_runs(3)
    plan = abandon_plan(admin_user)
    connection = connections[OperatorRequest.objects.db]
    with CaptureQueriesContext(connection) as seen:
        result = apply(admin_user, plan)
    assert result.counts["APPLIED"] == 3
    probes = [
        query["sql"]
        for query in seen.captured_queries
        if query["sql"].lstrip().startswith("SELECT")
        and 'FROM "ob_operator_request"' in query["sql"]
    ]
    # One read of the batch's operation ids, no probe per item.
    assert len(probes) == 1
    assert (
        OperatorRequest.objects.filter(
            job_execution_id__in=[run.pk for run in runs]
        ).count()
        == 3
    )


@pytest.mark.django_db
def test_an_id_recorded_after_the_batch_read_settles_to_its_record(
    admin_user: User,
) -> None:
    """Another process recording an item between the read and the item."""
    (run,) = failed_runs(1)
    plan = abandon_plan(admin_user)
    op = f"bulk-test-1:{run.pk}"
    with actions.unit.unrecorded([op]):
        # What the other process did: the same single action, same id.
        first = actions.abandon_execution(
            user=admin_user,
            execution_id=run.pk,
            expected_version=run.version,
            reason_code="OPERATOR_DECISION",
            operation_id=op,
        )
        # This process still believes the id new: its unit loses the race
        # on the operation id and reports the recorded outcome.
        again = actions.abandon_execution(
            user=admin_user,
            execution_id=run.pk,
            expected_version=run.version,
            reason_code="OPERATOR_DECISION",
            operation_id=op,
        )
    assert first.outcome == "APPLIED"
    assert again.outcome == "REPLAYED" and again.audit_id == first.audit_id
    assert OperatorRequest.objects.filter(operation_id=op).count() == 1
    result = apply(admin_user, plan)
    assert [item.outcome for item in result.items] == ["APPLIED"]
