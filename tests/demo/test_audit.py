"""The demo's operator rows are the console service's, on the demo's clock."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from batchboard import digests
from batchboard.actions import Directive, NotRecoverable
from batchboard.demo.audit import Operator
from batchboard.demo.catalogue import job
from batchboard.demo.runs import InstanceMemory, JobRun, RunPlan
from batchboard.demo.verify import check_history
from batchboard.models import (
    JobExecution,
    JobInstance,
    OperatorRequest,
    RecoveryDecision,
    RetentionAction,
)
from batchboard.repository import Definition, JobRepository, ManualClock

pytestmark = pytest.mark.django_db(transaction=True)

START = datetime(2026, 10, 1, 8, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def repository(clock: ManualClock) -> JobRepository:
    return JobRepository(clock=clock)


def _run(
    repository: JobRepository, clock: ManualClock, plan: RunPlan, serial: int = 1
) -> JobRun:
    spec = job("nightly-ledger-import")
    rng = random.Random(serial)
    run = JobRun(
        repository,
        spec,
        spec.revisions[0],
        spec.parameters(serial, clock.now()),
        plan=plan,
        memory=InstanceMemory(volume=40_000),
        rng=rng,
        pace=lambda seconds: clock.advance(seconds=seconds),
    )
    run.run_to_end()
    return run


def _idle(execution: JobExecution, clock: ManualClock) -> int:
    """Return the seconds since the execution's last update, by ``clock``."""
    return int((clock.now() - execution.updated_at).total_seconds())


def test_stop_applies_to_a_started_execution_and_is_rejected_on_unknown(
    repository: JobRepository, clock: ManualClock
) -> None:
    operator = Operator(repository, actor="ops@example.org", prefix="t")
    vanished = _run(repository, clock, RunPlan("VANISH", 0, 0.5))
    execution = vanished.refresh()
    clock.advance(seconds=5)
    outcome = operator.stop(execution.pk, execution.version)
    row = OperatorRequest.objects.get(pk=outcome.audit_id)
    assert (row.action, row.authorization_class, row.outcome_class) == (
        "STOP",
        "LIFECYCLE",
        "APPLIED",
    )
    assert (row.prior_status, row.result_status) == ("STARTED", "STARTED")
    assert (row.job_instance_id, row.job_execution_id) == (
        execution.job_instance_id,
        execution.pk,
    )
    assert row.observed_version == execution.version
    assert (row.actor_ref, row.requested_at) == ("ops@example.org", clock.now())
    assert bytes(row.request_digest) == digests.request_digest(
        action="STOP",
        target=f"execution:{execution.pk}",
        expected_version=execution.version,
        reason_code=None,
    )
    stopped = JobExecution.objects.get(pk=execution.pk)
    assert stopped.stop_requested_by == "ops@example.org"
    assert stopped.stop_requested_at == clock.now()
    assert stopped.version == execution.version  # a stop request is no transition

    unknown = _run(repository, clock, RunPlan("UNKNOWN", 0, 0.5), serial=2).refresh()
    result = operator.stop(unknown.pk, unknown.version)
    rejected = OperatorRequest.objects.get(pk=result.audit_id)
    assert (rejected.outcome_class, rejected.rejection_code) == (
        "REJECTED",
        "INVALID_STATE",
    )
    assert (rejected.prior_status, rejected.result_status) == (None, None)
    assert (rejected.job_instance_id, rejected.job_execution_id) == (None, unknown.pk)


def test_recover_resolves_a_stale_execution_with_its_evidence(
    repository: JobRepository, clock: ManualClock
) -> None:
    operator = Operator(repository, actor="ops@example.org", prefix="t")
    execution = _run(repository, clock, RunPlan("VANISH", 0, 0.5)).refresh()
    directive = Directive.mark_failed("STALE_RECOVERED", 9001)
    clock.advance(seconds=60)
    # A minute after its last update, by the demo's clock, the execution is
    # not stale yet, whatever the server's clock says.
    early = operator.propose(execution.pk)
    assert early.verdict == "NOT_STALE"
    assert early.inactivity_seconds == _idle(execution, clock) < 900
    with pytest.raises(NotRecoverable):
        operator.recover(
            execution.pk,
            expected_version=execution.version,
            reason="HOST_LOST",
            directive=directive,
            proposal=early,
        )
    clock.advance(seconds=3600)
    proposal = operator.propose(execution.pk)
    assert proposal.is_candidate
    assert proposal.inactivity_seconds == _idle(execution, clock) > 3600
    evidence = proposal.evidence
    assert evidence.owner == "OTHER_PROCESS" and evidence.status == "STARTED"
    stale = operator.recover(
        execution.pk,
        expected_version=execution.version + 1,
        reason="HOST_LOST",
        directive=directive,
        proposal=proposal,
    )
    assert stale.rejection_code == "OPTIMISTIC_CONFLICT"
    outcome = operator.recover(
        execution.pk,
        expected_version=execution.version,
        reason="HOST_LOST",
        directive=directive,
        proposal=proposal,
    )
    assert outcome.recorded_outcome == "APPLIED"
    recovered = JobExecution.objects.get(pk=execution.pk)
    assert recovered.status == "FAILED"
    assert recovered.version == execution.version + 1
    assert recovered.ended_at == recovered.updated_at == clock.now()
    assert (recovered.failure_category, recovered.failure_id) == (
        "STALE_RECOVERED",
        9001,
    )
    decision = RecoveryDecision.objects.get(job_execution_id=execution.pk)
    assert decision.execution_version == execution.version
    assert (decision.prior_status, decision.resulting_status) == ("STARTED", "FAILED")
    assert bytes(decision.evidence_digest) == digests.evidence_digest(evidence)
    assert decision.decided_at == clock.now()
    assert (decision.operator_reference, decision.reason_code) == (
        "ops@example.org",
        "HOST_LOST",
    )
    assert (outcome.prior_status, outcome.result_status) == ("STARTED", "FAILED")
    assert check_history() == []


def test_an_unknown_commit_needs_unknown_effect_to_be_marked_failed(
    repository: JobRepository, clock: ManualClock
) -> None:
    operator = Operator(repository, actor="ops@example.org", prefix="t")
    execution = _run(repository, clock, RunPlan("UNKNOWN", 0, 0.5)).refresh()
    first = operator.abandon(execution.pk, execution.version, "OPERATOR_DECISION")
    assert first.rejection_code == "UNRESOLVED_RECOVERY_REQUIRED"
    directive = Directive.mark_failed("UNKNOWN_COMMIT", 1)
    wrong = operator.recover(
        execution.pk,
        expected_version=execution.version,
        reason="HOST_LOST",
        directive=directive,
    )
    assert wrong.rejection_code == "UNRESOLVED_RECOVERY_REQUIRED"
    right = operator.recover(
        execution.pk,
        expected_version=execution.version,
        reason="UNKNOWN_EFFECT",
        directive=directive,
    )
    assert right.recorded_outcome == "APPLIED"
    assert JobExecution.objects.get(pk=execution.pk).status == "FAILED"


def test_abandon_keeps_the_failure_and_the_end(
    repository: JobRepository, clock: ManualClock
) -> None:
    operator = Operator(repository, actor="ops@example.org", prefix="t")
    failed = _run(repository, clock, RunPlan("FAILED", 0, 0.5, "TIMEOUT")).refresh()
    clock.advance(seconds=600)
    outcome = operator.abandon(failed.pk, failed.version, "BAD_INPUT_DATA")
    assert outcome.recorded_outcome == "APPLIED"
    row = JobExecution.objects.get(pk=failed.pk)
    assert row.status == "ABANDONED"
    assert (row.failure_category, row.ended_at) == ("TIMEOUT", failed.ended_at)
    assert (outcome.prior_status, outcome.result_status) == ("FAILED", "ABANDONED")
    restart = operator.restart(row.job_instance_id, _definition())
    assert restart.request.rejection_code == "INSTANCE_ABANDONED"
    assert restart.request.job_instance_id == row.job_instance_id
    assert restart.request.job_execution_id is None


def _definition() -> Definition:
    spec = job("nightly-ledger-import")
    revision = spec.revisions[0]
    return Definition(revision.name, spec.manifest(revision))


def test_restart_and_launch_record_their_definition_digest(
    repository: JobRepository, clock: ManualClock
) -> None:
    operator = Operator(repository, actor="ops@example.org", prefix="t")
    failed = _run(repository, clock, RunPlan("FAILED", 0, 0.5)).refresh()
    definition = _definition()
    outcome = operator.restart(failed.job_instance_id, definition)
    assert outcome.applied and outcome.execution is not None
    assert outcome.execution.restart_of_execution_id == failed.pk
    assert (outcome.request.prior_status, outcome.request.result_status) == (
        "FAILED",
        "STARTING",
    )
    assert outcome.request.observed_version is None
    assert bytes(outcome.request.request_digest) == digests.request_digest(
        action="RESTART",
        target=f"instance:{failed.job_instance_id}",
        expected_version=None,
        reason_code=None,
        arguments=digests.DefinitionArgument(definition.revision, definition.digest),
    )
    instance = JobInstance.objects.get(pk=failed.job_instance_id)
    parameters = digests.parameters_from_json(instance.identifying_parameters)
    clash = operator.launch(instance.job_name, parameters, definition).request
    assert clash.rejection_code == "EXECUTION_ALREADY_ACTIVE"
    assert (clash.job_instance_id, clash.job_execution_id) == (None, None)


def test_holds_and_a_purge_are_audited_with_their_counts(
    repository: JobRepository, clock: ManualClock
) -> None:
    operator = Operator(repository, actor="ops@example.org", prefix="t")
    kept = _run(repository, clock, RunPlan(), serial=1).refresh()
    old = _run(repository, clock, RunPlan(), serial=2).refresh()
    result = operator.hold(kept.job_instance_id, "LEGAL_HOLD")
    hold = RetentionAction.objects.get(pk=result.audit_id)
    assert hold.plan_digest is None and hold.batch_bound is None
    assert (hold.actor_ref, hold.applied_at) == ("ops@example.org", clock.now())
    assert JobInstance.objects.get(pk=kept.job_instance_id).hold_reason == "LEGAL_HOLD"
    clock.advance(seconds=3 * 86400)
    steps = old.steps.count()
    applied = operator.purge(
        "nightly-ledger-import",
        reason="RETENTION_POLICY",
        min_age_seconds=86400,
        batch=10,
    )
    purge = RetentionAction.objects.get(pk=applied.audit_id)
    assert purge.applied_at == clock.now()
    assert purge.plan_digest is not None
    assert bytes(purge.plan_digest) == digests.plan_digest(
        job_name="nightly-ledger-import",
        statuses=("STOPPED", "FAILED", "COMPLETED", "ABANDONED"),
        min_age_seconds=86400,
        batch=10,
        candidates=[(old.job_instance_id, old.pk, old.version)],
    )
    assert purge.deleted_job_executions == 1
    assert purge.deleted_job_instances == 1
    assert purge.deleted_step_executions == steps
    assert not JobExecution.objects.filter(pk=old.pk).exists()
    assert JobExecution.objects.filter(pk=kept.pk).exists()
    release = operator.release_hold(kept.job_instance_id, "HOLD_NO_LONGER_NEEDED")
    assert (release.action, release.recorded_outcome) == ("RELEASE_HOLD", "APPLIED")
    assert JobInstance.objects.get(pk=kept.job_instance_id).hold_actor is None
    assert set(RetentionAction.objects.values_list("outcome_class", flat=True)) == {
        "APPLIED"
    }
    assert OperatorRequest.objects.count() == 0
    assert check_history() == []
