"""Service actors, the back-dated clock and proposals as of a past moment."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.exceptions import PermissionDenied
from django.test import override_settings

from batchboard import actions, db
from batchboard.actions import permissions, unit
from batchboard.models import JobExecution, JobInstance, RecoveryDecision
from tests.actions.conftest import audit_row, retention_row
from tests.factories import actions as factories

pytestmark = pytest.mark.django_db

EVERY_CLASS = ("READ", "LIFECYCLE", "DESTRUCTIVE")


def test_a_service_actor_holds_exactly_its_classes() -> None:
    lifecycle = actions.ServiceActor("scheduler.bot", ["LIFECYCLE"])
    assert actions.actor_ref_for(lifecycle) == "scheduler.bot"
    assert actions.may(lifecycle, "STOP")
    assert not actions.may(lifecycle, "ABANDON")
    assert not actions.may(lifecycle, "PLAN_PURGE")
    execution = factories.execution("FAILED")
    with pytest.raises(PermissionDenied):
        actions.abandon_execution(
            user=lifecycle,
            execution_id=execution.pk,
            expected_version=execution.version,
            reason_code="OPERATOR_DECISION",
            operation_id="svc-abandon-1",
        )
    assert permissions.action_permissions(lifecycle)["stop"] is True


@pytest.mark.parametrize(
    ("ref", "classes"),
    [
        ("user:admin", EVERY_CLASS),
        ("uid:1", EVERY_CLASS),
        ("has space", EVERY_CLASS),
        ("", EVERY_CLASS),
        ("scheduler.bot", ("SUPERUSER",)),
    ],
)
def test_a_service_actor_cannot_pass_for_a_user_or_invent_a_class(
    ref: str, classes: tuple[str, ...]
) -> None:
    with pytest.raises(actions.InvalidRequest):
        actions.ServiceActor(ref, classes)


def test_back_dated_actions_take_their_time_from_the_clock() -> None:
    actor = actions.ServiceActor("ops@example.org", EVERY_CLASS)
    moment = factories.ago(minutes=30)
    execution = factories.execution("STARTED", updated_at=factories.ago(hours=2))
    with actions.back_dated(lambda: moment, using="default"):
        stopped = actions.stop_execution(
            user=actor,
            execution_id=execution.pk,
            expected_version=execution.version,
            operation_id="svc-stop-1",
        )
        held = actions.place_hold(
            user=actor,
            instance_id=execution.job_instance_id,
            reason_code="AUDIT",
            operation_id="svc-hold-1",
        )
    assert stopped.recorded_outcome == held.recorded_outcome == "APPLIED"
    row = audit_row("STOP", "svc-stop-1")
    assert (row["actor_ref"], row["requested_at"]) == ("ops@example.org", moment)
    assert JobExecution.objects.get(pk=execution.pk).stop_requested_at == moment
    assert retention_row("HOLD", "svc-hold-1")["applied_at"] == moment
    instance = JobInstance.objects.get(pk=execution.job_instance_id)
    assert (instance.hold_actor, instance.hold_placed_at) == ("ops@example.org", moment)
    # Outside the block the host's clock is back.
    assert db.back_dated_now() is None
    assert db.now() > moment


def test_back_dated_actions_write_through_the_given_alias_only() -> None:
    roles = {"ACTION_DATABASES": {"OPERATOR": "elsewhere", "RETENTION": "elsewhere"}}
    with override_settings(BATCHBOARD=roles):
        with pytest.raises(actions.ActionError), unit.writing(db.OPERATOR):
            pass
        with (
            actions.back_dated(db.now, using="default"),
            unit.writing(db.OPERATOR),
        ):
            assert db.alias() == "default"


def test_a_purge_plan_measures_ages_on_the_back_dated_clock() -> None:
    actor = actions.ServiceActor("retention.bot", EVERY_CLASS)
    old = factories.execution("COMPLETED", updated_at=factories.ago(days=40))
    factories.execution("COMPLETED", updated_at=factories.ago(days=20))
    month = 30 * 24 * 3600
    plan = actions.plan_purge(
        user=actor, job_name="nightly-import", min_age_seconds=month
    )
    assert {e for _i, e, _v in plan.candidates} == {old.pk}
    # Fifteen days ago, the oldest execution was only 25 days old.
    earlier = factories.ago(days=15)
    with actions.back_dated(lambda: earlier, using="default"):
        plan = actions.plan_purge(
            user=actor, job_name="nightly-import", min_age_seconds=month
        )
    assert plan.candidates == ()


def test_propose_as_of_a_past_moment_measures_there() -> None:
    execution = factories.execution("STARTED", updated_at=factories.ago(hours=3))
    now = actions.propose(execution.pk)
    assert now.is_candidate and now.as_of_ms is None
    soon_after = execution.updated_at + dt.timedelta(minutes=5)
    early = actions.propose(execution.pk, as_of=soon_after)
    assert early.verdict == "NOT_STALE" and early.inactivity_seconds == 300
    assert early.digest == now.digest  # the evidence does not depend on time
    before = actions.propose(
        execution.pk, as_of=execution.updated_at - dt.timedelta(seconds=1)
    )
    assert before.verdict == "CLOCK_EVIDENCE_UNUSABLE"
    with pytest.raises(actions.InvalidRequest):
        actions.propose(execution.pk, as_of=factories.ago(days=-1))


def test_a_back_dated_recovery_is_decided_on_evidence_stale_at_its_moment() -> None:
    actor = actions.ServiceActor("ops@example.org", EVERY_CLASS)
    execution = factories.execution("STARTED", updated_at=factories.ago(hours=3))
    directive = actions.Directive.mark_failed("STALE_RECOVERED", 7)

    def recover(moment: dt.datetime, op: str) -> actions.ActionResult:
        proposal = actions.propose(execution.pk)
        with actions.back_dated(lambda: moment, using="default"):
            return actions.recover_execution(
                user=actor,
                execution_id=execution.pk,
                expected_version=execution.version,
                evidence_digest=proposal.digest,
                unknown_commit=proposal.evidence.unknown_commit,
                directive=directive,
                reason_code="HOST_LOST",
                operation_id=op,
            )

    # Stale by the server's clock, but not at the moment the writer claims.
    with pytest.raises(actions.NotRecoverable):
        recover(execution.updated_at + dt.timedelta(minutes=5), "svc-recover-1")
    assert not RecoveryDecision.objects.exists()
    moment = execution.updated_at + dt.timedelta(hours=1)
    result = recover(moment, "svc-recover-2")
    assert result.recorded_outcome == "APPLIED"
    decision = RecoveryDecision.objects.get(job_execution_id=execution.pk)
    assert (decision.decided_at, decision.operator_reference) == (
        moment,
        "ops@example.org",
    )
    assert JobExecution.objects.get(pk=execution.pk).ended_at == moment
