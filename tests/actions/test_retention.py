"""Holds, purge plans and purge apply: the held row is never touched."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.contrib.auth.models import User
from django.db import connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from batchboard import actions, conf
from batchboard.actions.holds import COUNT_FIELDS
from batchboard.digests import plan_digest
from batchboard.models import (
    ComponentState,
    FlowDecision,
    JobExecution,
    JobInstance,
    OperatorRequest,
    RecoveryDecision,
    RetentionAction,
    StepExecution,
    StepPartition,
)
from tests.actions.conftest import retention_row
from tests.factories import actions as factories

pytestmark = pytest.mark.django_db

OLD = {"days": 40}


def _hold(
    user: User, instance_id: int, op: str, reason: str = "AUDIT"
) -> actions.ActionResult:
    return actions.place_hold(
        user=user, instance_id=instance_id, reason_code=reason, operation_id=op
    )


def test_hold_sets_the_columns_and_records_one_row(admin_user: User) -> None:
    instance = factories.instance()
    result = _hold(admin_user, instance.pk, "op-h")
    assert (result.outcome, result.changed) == ("APPLIED", True)
    fresh = JobInstance.objects.get(pk=instance.pk)
    assert (fresh.hold_actor, fresh.hold_reason) == ("user:administrator", "AUDIT")
    row = retention_row("HOLD", "op-h")
    assert row.pop("id") == result.audit_id
    assert row.pop("applied_at") == fresh.hold_placed_at
    assert row == {
        "job_instance_id": instance.pk,
        "action": "HOLD",
        "operation_id": "op-h",
        "actor_ref": "user:administrator",
        "reason_code": "AUDIT",
        "plan_digest": None,
        "batch_bound": None,
        **dict.fromkeys(COUNT_FIELDS, 0),
        "outcome_class": "APPLIED",
    }


def test_release_nulls_the_hold_even_when_none_was_placed(admin_user: User) -> None:
    held = factories.instance(held=True)
    free = factories.instance()
    first = actions.release_hold(
        user=admin_user,
        instance_id=held.pk,
        reason_code="PLACED_IN_ERROR",
        operation_id="op-r1",
    )
    second = actions.release_hold(
        user=admin_user,
        instance_id=free.pk,
        reason_code="PLACED_IN_ERROR",
        operation_id="op-r2",
    )
    assert (first.changed, second.changed) == (True, False)
    assert not JobInstance.objects.filter(hold_actor__isnull=False).exists()
    assert RetentionAction.objects.filter(action="RELEASE_HOLD").count() == 2


def test_hold_replay_compares_instance_and_reason(admin_user: User) -> None:
    instance = factories.instance()
    other = factories.instance()
    first = _hold(admin_user, instance.pk, "op-h")
    again = _hold(admin_user, instance.pk, "op-h")
    assert (again.outcome, again.audit_id) == ("REPLAYED", first.audit_id)
    with pytest.raises(actions.OperationIdConflict):
        _hold(admin_user, instance.pk, "op-h", reason="LEGAL_HOLD")
    with pytest.raises(actions.OperationIdConflict):
        _hold(admin_user, other.pk, "op-h")
    assert JobInstance.objects.get(pk=other.pk).hold_actor is None
    assert RetentionAction.objects.count() == 1


def test_release_replays_and_conflicts(admin_user: User) -> None:
    instance = factories.instance(held=True)

    def release(reason: str) -> actions.ActionResult:
        return actions.release_hold(
            user=admin_user,
            instance_id=instance.pk,
            reason_code=reason,
            operation_id="op-rel",
        )

    first = release("PLACED_IN_ERROR")
    assert release("PLACED_IN_ERROR").audit_id == first.audit_id
    with pytest.raises(actions.OperationIdConflict):
        release("HOLD_NO_LONGER_NEEDED")


def test_hold_on_a_missing_instance_is_refused_unaudited(admin_user: User) -> None:
    with pytest.raises(actions.TargetNotFound):
        _hold(admin_user, 777, "op-h")
    assert not RetentionAction.objects.exists()


def _plan(user: User, **kwargs: object) -> actions.PurgePlan:
    return actions.plan_purge(user=user, job_name="nightly-import", **kwargs)  # type: ignore[arg-type]


def _apply(
    user: User, plan: actions.PurgePlan, op: str, reason: str = "RETENTION_POLICY"
) -> actions.ActionResult:
    return actions.apply_purge(
        user=user,
        criteria=plan.criteria,
        candidates=plan.candidates,
        plan_digest_hex=plan.digest_hex,
        reason_code=reason,
        operation_id=op,
    )


def _history() -> dict[str, object]:
    """Old finished history with one row in every dependent table."""
    job_instance = factories.instance()
    first = factories.execution(
        "FAILED", job_instance=job_instance, updated_at=factories.ago(**OLD)
    )
    second = factories.execution(
        "COMPLETED",
        job_instance=job_instance,
        restart_of=first,
        updated_at=factories.ago(days=35),
    )
    parent = factories.step(second, "COMPLETED")
    worker = factories.step(second, "COMPLETED")
    factories.partition(parent, worker=worker)
    ComponentState.objects.create(
        step_execution=worker,
        namespace="reader",
        schema_id="s",
        schema_version=1,
        codec_id="json",
        codec_version=1,
        checksum_algorithm=1,
        checksum_algorithm_version=1,
        checksum=b"\x00" * 32,
        payload_kind="INLINE",
        payload=b"{}",
        updated_at=second.updated_at,
    )
    decision = factories.flow_decision(first, source=factories.step(first, "FAILED"))
    factories.flow_decision(second, reused=decision)
    factories.recovery_decision(first)
    factories.operator_request(job_execution=first, job_instance=job_instance)
    factories.operator_request(job_instance=job_instance)
    hold_row = RetentionAction.objects.create(
        job_instance=job_instance,
        action="RELEASE_HOLD",
        operation_id="old-release",
        actor_ref="user:x",
        reason_code="PLACED_IN_ERROR",
        outcome_class="APPLIED",
        applied_at=factories.ago(days=50),
    )
    return {
        "instance": job_instance,
        "first": first,
        "second": second,
        "hold_row": hold_row,
    }


def _table_counts() -> dict[str, int]:
    return {
        "deleted_flow_decisions": FlowDecision.objects.count(),
        "deleted_recovery_decisions": RecoveryDecision.objects.count(),
        "deleted_operator_requests": OperatorRequest.objects.count(),
        "deleted_step_partitions": StepPartition.objects.count(),
        "deleted_step_executions": StepExecution.objects.count(),
        "deleted_job_executions": JobExecution.objects.count(),
        "deleted_job_instances": JobInstance.objects.count(),
    }


def test_plan_lists_candidates_counts_and_digest(viewer_user: User) -> None:
    history = _history()
    plan = _plan(viewer_user)
    first, second = history["first"], history["second"]
    instance_id = history["instance"].pk  # type: ignore[attr-defined]
    assert plan.candidates == (
        (instance_id, first.pk, 3),  # type: ignore[attr-defined]
        (instance_id, second.pk, 3),  # type: ignore[attr-defined]
    )
    assert plan.counts == {
        "deleted_flow_decisions": 2,
        "deleted_recovery_decisions": 1,
        "deleted_operator_requests": 2,
        "deleted_step_partitions": 1,
        "deleted_step_executions": 3,
        "deleted_job_executions": 2,
        "deleted_job_instances": 1,
    }
    assert plan.digest == plan_digest(
        job_name="nightly-import",
        statuses=("STOPPED", "FAILED", "COMPLETED", "ABANDONED"),
        min_age_seconds=30 * 86400,
        batch=1000,
        candidates=plan.candidates,
    )
    assert actions.parse_candidates(plan.candidates_text()) == plan.candidates


def test_plan_skips_held_recent_running_other_jobs_and_other_statuses(
    viewer_user: User,
) -> None:
    factories.execution(
        "FAILED",
        job_instance=factories.instance(held=True),
        updated_at=factories.ago(**OLD),
    )
    factories.execution("FAILED", updated_at=factories.ago(days=2))
    busy = factories.instance()
    factories.execution("FAILED", job_instance=busy, updated_at=factories.ago(**OLD))
    factories.execution("STARTED", job_instance=busy)
    factories.execution(
        "FAILED",
        job_instance=factories.instance("other-job"),
        updated_at=factories.ago(**OLD),
    )
    stopped = factories.execution("STOPPED", updated_at=factories.ago(**OLD))
    assert _plan(viewer_user).candidates == ((stopped.job_instance_id, stopped.pk, 3),)
    assert _plan(viewer_user, statuses=["FAILED"]).candidates == ()
    assert len(_plan(viewer_user, min_age_seconds=86400).candidates) == 2


@pytest.mark.parametrize(
    "kwargs",
    [
        {"min_age_seconds": 3599},
        {"batch": 0},
        {"batch": 1001},
        {"statuses": []},
        {"statuses": ["STARTED"]},
        {"job_name": ""},
        {"batch": "many"},
    ],
)
def test_plan_inputs_are_validated(
    viewer_user: User, kwargs: dict[str, object]
) -> None:
    arguments: dict[str, object] = {"job_name": "nightly-import", **kwargs}
    with pytest.raises(actions.InvalidRequest):
        actions.plan_purge(user=viewer_user, **arguments)  # type: ignore[arg-type]


def test_apply_deletes_in_order_and_records_what_it_deleted(admin_user: User) -> None:
    history = _history()
    survivor = factories.execution(
        "COMPLETED",
        updated_at=factories.ago(**OLD),
        job_instance=factories.instance(held=True),
    )
    plan = _plan(admin_user)
    before = _table_counts()
    with CaptureQueriesContext(connections[conf.database_alias()]) as captured:
        result = _apply(admin_user, plan, "op-purge")
    after = _table_counts()
    deleted = {name: before[name] - after[name] for name in COUNT_FIELDS}
    # The purge's own audit row is a retention action, so every table's
    # difference is exactly what the purge deleted.
    assert deleted == plan.counts == result.counts
    row = retention_row("APPLY_PURGE", "op-purge")
    assert {name: row[name] for name in COUNT_FIELDS} == deleted
    assert (row["job_instance_id"], row["plan_digest"], row["batch_bound"]) == (
        None,
        plan.digest,
        1000,
    )
    assert (row["reason_code"], row["actor_ref"], row["outcome_class"]) == (
        "RETENTION_POLICY",
        "user:administrator",
        "APPLIED",
    )
    assert not ComponentState.objects.exists()
    assert JobExecution.objects.filter(pk=survivor.pk).exists()
    # The earlier retention row outlives its instance, detached.
    hold_row = RetentionAction.objects.get(pk=history["hold_row"].pk)  # type: ignore[attr-defined]
    assert hold_row.job_instance_id is None
    tables = [
        match.group(1)
        for query in captured.captured_queries
        for match in [re.match(r'\s*DELETE FROM "?(\w+)"?', query["sql"])]
        if match
    ]
    assert tables == [
        "ob_flow_decision",
        "ob_recovery_decision",
        "ob_operator_request",
        "ob_step_partition",
        "ob_component_state",
        "ob_step_execution",
        "ob_job_execution",
        "ob_operator_request",
        "ob_job_instance",
    ]


def test_restart_chain_keeps_a_referenced_attempt(admin_user: User) -> None:
    """Old FAILED attempt 1 restarted by recent attempt 2: attempt 1 stays."""
    job_instance = factories.instance()
    first = factories.execution(
        "FAILED", job_instance=job_instance, updated_at=factories.ago(**OLD)
    )
    factories.execution(
        "COMPLETED",
        job_instance=job_instance,
        restart_of=first,
        updated_at=factories.ago(days=1),
    )
    plan = _plan(admin_user)
    assert plan.candidates == ()
    assert plan.left_out == (first.pk,)
    result = _apply(admin_user, plan, "op-chain")
    assert result.outcome == "APPLIED"
    assert JobExecution.objects.filter(pk=first.pk).exists()


def test_the_rule_is_transitive_and_follows_step_links(admin_user: User) -> None:
    """A kept attempt keeps what it references; flow and worker links count."""
    chain = factories.instance()
    a1 = factories.execution(
        "FAILED", job_instance=chain, updated_at=factories.ago(days=50)
    )
    a2 = factories.execution(
        "FAILED", job_instance=chain, restart_of=a1, updated_at=factories.ago(**OLD)
    )
    factories.execution(
        "COMPLETED", job_instance=chain, restart_of=a2, updated_at=factories.ago(days=1)
    )
    flow = factories.instance()
    source = factories.execution(
        "FAILED", job_instance=flow, updated_at=factories.ago(**OLD)
    )
    later = factories.execution(
        "COMPLETED", job_instance=flow, updated_at=factories.ago(days=1)
    )
    factories.flow_decision(later, source=factories.step(source, "FAILED"))
    worked = factories.instance()
    worker_run = factories.execution(
        "FAILED", job_instance=worked, updated_at=factories.ago(**OLD)
    )
    parent_run = factories.execution(
        "COMPLETED", job_instance=worked, updated_at=factories.ago(days=1)
    )
    factories.partition(factories.step(parent_run), worker=factories.step(worker_run))
    plan = _plan(admin_user)
    assert plan.candidates == ()
    assert set(plan.left_out) == {a1.pk, a2.pk, source.pk, worker_run.pk}


def test_a_reused_decision_is_detached_not_blocking(admin_user: User) -> None:
    job_instance = factories.instance()
    old = factories.execution(
        "FAILED", job_instance=job_instance, updated_at=factories.ago(**OLD)
    )
    # A later attempt of the same instance (the repository reuses decisions
    # within an instance only) that cites a decision of the old one.
    new = factories.execution(
        "COMPLETED", job_instance=job_instance, updated_at=factories.ago(days=1)
    )
    reused = factories.flow_decision(old)
    citing = factories.flow_decision(new, reused=reused)
    plan = _plan(admin_user)
    assert [e for _i, e, _v in plan.candidates] == [old.pk]
    _apply(admin_user, plan, "op-reuse")
    assert FlowDecision.objects.get(pk=citing.pk).reused_decision_id is None
    assert FlowDecision.objects.filter(pk=citing.pk).exists()


def test_citations_from_younger_instances_are_cleared(admin_user: User) -> None:
    """
    Decisions of the plan cited by decisions of younger instances, which the
    plan leaves, do not stop the purge: the citations become NULL, as
    oxide-batch's apply makes them (spec 6.3).
    """
    old = factories.execution(
        "FAILED", job_instance=factories.instance(), updated_at=factories.ago(**OLD)
    )
    first, second = factories.flow_decision(old), factories.flow_decision(old)
    citing = []
    for cited in (first, second, first):
        younger = factories.execution(
            "COMPLETED",
            job_instance=factories.instance(),
            updated_at=factories.ago(days=1),
        )
        citing.append(factories.flow_decision(younger, reused=cited))
    untouched = factories.flow_decision(citing[0].job_execution, reused=citing[1])
    plan = _plan(admin_user)
    assert [e for _i, e, _v in plan.candidates] == [old.pk]
    result = _apply(admin_user, plan, "op-across")
    assert result.outcome == "APPLIED"
    assert result.counts["deleted_flow_decisions"] == 2
    assert not JobExecution.objects.filter(pk=old.pk).exists()
    assert [
        FlowDecision.objects.get(pk=row.pk).reused_decision_id for row in citing
    ] == [None, None, None]
    assert FlowDecision.objects.get(pk=untouched.pk).reused_decision_id == citing[1].pk


def test_a_held_instance_is_never_purged(admin_user: User) -> None:
    """A hold placed after the plan makes it stale: nothing is deleted."""
    history = _history()
    plan = _plan(admin_user)
    _hold(admin_user, history["instance"].pk, "op-hold")  # type: ignore[attr-defined]
    before = _table_counts()
    with pytest.raises(actions.PlanStale) as raised:
        _apply(admin_user, plan, "op-purge")
    assert "Nothing was deleted" in raised.value.message
    assert _table_counts() == before
    assert not RetentionAction.objects.filter(action="APPLY_PURGE").exists()


@pytest.mark.parametrize("change", ["version", "restart", "delete"])
def test_a_stale_plan_deletes_nothing(admin_user: User, change: str) -> None:
    history = _history()
    plan = _plan(admin_user)
    second = history["second"]
    if change == "version":
        JobExecution.objects.filter(pk=second.pk).update(version=9)  # type: ignore[attr-defined]
    elif change == "restart":
        factories.execution(
            "STARTING",
            job_instance=history["instance"],  # type: ignore[arg-type]
            restart_of=second,
        )  # type: ignore[arg-type]
    else:
        StepPartition.objects.all().delete()
        ComponentState.objects.all().delete()
        FlowDecision.objects.filter(job_execution=second).delete()
        StepExecution.objects.filter(job_execution=second).delete()
        JobExecution.objects.filter(pk=second.pk).delete()  # type: ignore[attr-defined]
    before = _table_counts()
    with pytest.raises(actions.PlanStale):
        _apply(admin_user, plan, "op-stale")
    assert _table_counts() == before
    assert not RetentionAction.objects.filter(action="APPLY_PURGE").exists()


def test_purge_replay_compares_reason_and_digest(admin_user: User) -> None:
    _history()
    plan = _plan(admin_user)
    first = _apply(admin_user, plan, "op-p")
    again = _apply(admin_user, plan, "op-p")
    assert (again.outcome, again.audit_id, again.counts) == (
        "REPLAYED",
        first.audit_id,
        first.counts,
    )
    with pytest.raises(actions.OperationIdConflict):
        _apply(admin_user, plan, "op-p", reason="STORAGE_PRESSURE")
    other = _plan(admin_user, batch=5)
    with pytest.raises(actions.OperationIdConflict):
        _apply(admin_user, other, "op-p")


def test_a_plan_must_match_its_digest(admin_user: User) -> None:
    history = _history()
    plan = _plan(admin_user)
    forged = plan.candidates[:1]
    with pytest.raises(actions.InvalidRequest):
        actions.apply_purge(
            user=admin_user,
            criteria=plan.criteria,
            candidates=forged,
            plan_digest_hex=plan.digest_hex,
            reason_code="RETENTION_POLICY",
            operation_id="op-f",
        )
    with pytest.raises(actions.InvalidRequest):
        actions.apply_purge(
            user=admin_user,
            criteria=plan.criteria,
            candidates=plan.candidates,
            plan_digest_hex="zz",
            reason_code="RETENTION_POLICY",
            operation_id="op-f",
        )
    assert JobExecution.objects.filter(pk=history["first"].pk).exists()  # type: ignore[attr-defined]


def test_a_hand_made_candidate_list_cannot_purge_recent_rows(admin_user: User) -> None:
    """Apply re-checks the age, so a self-digested list of fresh rows is stale."""
    recent = factories.execution("FAILED", updated_at=factories.ago(days=2))
    criteria = actions.PurgeCriteria.validated(job_name="nightly-import")
    candidates = ((recent.job_instance_id, recent.pk, 3),)
    digest = plan_digest(
        job_name="nightly-import",
        statuses=criteria.statuses,
        min_age_seconds=criteria.min_age_seconds,
        batch=criteria.batch,
        candidates=candidates,
    )
    with pytest.raises(actions.PlanStale):
        actions.apply_purge(
            user=admin_user,
            criteria=criteria,
            candidates=candidates,
            plan_digest_hex=digest.hex(),
            reason_code="RETENTION_POLICY",
            operation_id="op-hand",
        )
    assert JobExecution.objects.filter(pk=recent.pk).exists()


def test_parse_candidates_refuses_garbage() -> None:
    with pytest.raises(actions.InvalidRequest):
        actions.parse_candidates("1:2")
    with pytest.raises(actions.InvalidRequest):
        actions.parse_candidates("1:2:-3")
    assert actions.parse_candidates("") == ()


def test_applied_at_is_recent(admin_user: User) -> None:
    _history()
    result = _apply(admin_user, _plan(admin_user), "op-t")
    row = RetentionAction.objects.get(pk=result.audit_id)
    assert abs(timezone.now() - row.applied_at) < dt.timedelta(minutes=1)


def test_a_version_moving_during_the_purge_rolls_everything_back(
    admin_user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Executions are deleted by (id, version): a moved one undoes the purge."""
    from batchboard.actions import purge

    history = _history()
    plan = _plan(admin_user)
    real = purge._revalidate

    def revalidate_then_race(*args: object) -> None:
        real(*args)  # type: ignore[arg-type]
        JobExecution.objects.filter(pk=history["first"].pk).update(version=8)  # type: ignore[attr-defined]

    monkeypatch.setattr(purge, "_revalidate", revalidate_then_race)
    before = _table_counts()
    with pytest.raises(actions.PlanStale) as raised:
        _apply(admin_user, plan, "op-race")
    assert "changed while the purge ran" in raised.value.message
    assert _table_counts() == before
    assert ComponentState.objects.exists()
    assert not RetentionAction.objects.filter(action="APPLY_PURGE").exists()
