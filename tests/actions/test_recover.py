"""RECOVER: server-time proposals, the guard table, stale evidence, UNKNOWN_EFFECT."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from batchboard import actions
from batchboard.actions import recovery
from batchboard.digests import RecoveryArgument, epoch_ms, request_digest
from batchboard.explorer.presenters import Clock
from batchboard.models import JobExecution, OperatorRequest, RecoveryDecision
from tests.actions.conftest import audit_row
from tests.factories import actions as factories

pytestmark = pytest.mark.django_db

FAIL = actions.Directive.mark_failed("STALE_RECOVERED", 9001)


def _recover(
    user: User,
    proposal: actions.RecoveryProposal,
    op: str,
    *,
    directive: actions.Directive = FAIL,
    reason: str = "HOST_LOST",
    version: int | None = None,
) -> actions.ActionResult:
    return actions.recover_execution(
        user=user,
        execution_id=proposal.execution_id,
        expected_version=proposal.observed_version if version is None else version,
        evidence_digest=proposal.digest,
        unknown_commit=proposal.evidence.unknown_commit,
        directive=directive,
        reason_code=reason,
        operation_id=op,
    )


def _expected(
    proposal: actions.RecoveryProposal,
    op: str,
    *,
    directive: actions.Directive = FAIL,
    reason: str = "HOST_LOST",
    version: int | None = None,
    prior: str | None,
    result: str | None,
    code: str | None,
    instance_id: int | None,
) -> dict[str, Any]:
    version = proposal.observed_version if version is None else version
    argument = RecoveryArgument(
        resulting_status=directive.resulting_status,  # type: ignore[arg-type]
        evidence_digest=proposal.digest,
        unknown_commit=proposal.evidence.unknown_commit,
        category=directive.category,
        failure_id=directive.failure_id,
    )
    return {
        "job_instance_id": instance_id,
        "job_execution_id": proposal.execution_id,
        "action": "RECOVER",
        "authorization_class": "DESTRUCTIVE",
        "operation_id": op,
        "actor_ref": "user:administrator",
        "reason_code": reason,
        "request_digest": request_digest(
            action="RECOVER",
            target=f"execution:{proposal.execution_id}",
            expected_version=version,
            reason_code=reason,
            arguments=argument,
        ),
        "observed_version": version,
        "prior_status": prior,
        "result_status": result,
        "outcome_class": "REJECTED" if code else "APPLIED",
        "rejection_code": code,
    }


def _check(op: str, expected: dict[str, Any]) -> None:
    row = audit_row("RECOVER", op)
    row.pop("id")
    requested_at = row.pop("requested_at")
    assert row == expected
    assert abs(timezone.now() - requested_at) < dt.timedelta(minutes=1)


def test_a_stale_started_execution_is_a_candidate_with_its_evidence() -> None:
    execution = factories.execution("STARTED", owner_token=b"\x01" * 16)
    latest = factories.step(execution, "STARTED")
    factories.flow_decision(execution)
    proposal = actions.propose(execution.pk)
    assert proposal.verdict == recovery.CANDIDATE
    evidence = proposal.evidence
    assert (evidence.status, evidence.attempt, evidence.version) == ("STARTED", 1, 3)
    assert evidence.owner == "OTHER_PROCESS"
    assert evidence.updated_at_ms == epoch_ms(execution.updated_at)
    assert evidence.latest_step is not None
    assert evidence.latest_step.step_id == latest.pk
    assert evidence.latest_step.checkpoint is not None
    assert evidence.latest_step.checkpoint.schema_id == "m5.upgrade.position"
    assert [flag for _name, flag in proposal.markers] == [False, False, True, True]
    assert 3500 <= proposal.inactivity_seconds <= 3700
    assert "threshold" in proposal.verdict_text()


@pytest.mark.parametrize(
    ("status", "updated", "verdict"),
    [
        ("STARTED", {"minutes": 1}, recovery.NOT_STALE),
        ("STOPPING", {"minutes": 20}, recovery.CANDIDATE),
        ("UNKNOWN", {"seconds": 5}, recovery.CANDIDATE),
        ("FAILED", {"days": 1}, recovery.NOT_RECOVERABLE),
        ("STARTED", {"minutes": -10}, recovery.CLOCK_EVIDENCE_UNUSABLE),
    ],
)
def test_verdicts(status: str, updated: dict[str, float], verdict: str) -> None:
    execution = factories.execution(status, updated_at=factories.ago(**updated))
    proposal = actions.propose(execution.pk)
    assert proposal.verdict == verdict
    assert proposal.verdict_text()


def test_the_threshold_comes_from_the_settings() -> None:
    execution = factories.execution("STARTED", updated_at=factories.ago(minutes=5))
    with override_settings(BATCHBOARD={"STALE_SECONDS": 60}):
        assert actions.propose(execution.pk).verdict == recovery.CANDIDATE
    with (
        override_settings(BATCHBOARD={"STALE_SECONDS": 10}),
        pytest.raises(actions.InvalidRequest),
    ):
        actions.propose(execution.pk)


def test_unknown_commit_markers() -> None:
    failed_commit = factories.execution("STARTED", failure=("UNKNOWN_COMMIT", 1))
    assert actions.propose(failed_commit.pk).evidence.unknown_commit is True
    step_unknown = factories.execution("STARTED")
    factories.step(step_unknown, "UNKNOWN")
    assert actions.propose(step_unknown.pk).evidence.unknown_commit is True
    partitioned = factories.execution(
        "STARTED",
        job_definition=factories.definition(delivery_mode="atomic_same_resource"),
    )
    parent = factories.step(partitioned, "STARTED")
    factories.partition(parent, worker=factories.step(partitioned, "COMPLETED"))
    marks = [flag for _n, flag in actions.propose(partitioned.pk).markers]
    assert marks == [False, True, False, False]


@pytest.mark.postgresql
def test_evidence_digest_equals_oxide_batch_for_vector_a() -> None:
    """Execution 42 of spec 8.2 evidence A yields its digest from the database."""
    job_instance = factories.instance()
    job_definition = factories.definition()
    updated = dt.datetime.fromtimestamp(1785000000.123, tz=dt.UTC)
    factories.execution(
        "FAILED", job_instance=job_instance, job_definition=job_definition
    )
    JobExecution.objects.create(
        id=42,
        job_instance=job_instance,
        definition=job_definition,
        attempt=2,
        status="STARTED",
        exit_code="UNKNOWN",
        parameters={},
        context_format=1,
        context_schema="x",
        context_schema_version=1,
        context_payload={},
        created_at=updated - dt.timedelta(hours=1),
        started_at=updated - dt.timedelta(hours=1),
        updated_at=updated,
        version=3,
        owner_token=b"\x02" * 16,
    )
    source = factories.step(JobExecution.objects.get(pk=42), "STARTED", name="s77")
    from batchboard.models import StepExecution

    StepExecution.objects.filter(pk=source.pk).update(
        id=77, checkpoint_payload={"a": "abcd"}
    )
    factories.flow_decision(JobExecution.objects.get(pk=42))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_column_size(checkpoint_payload) FROM ob_step_execution WHERE id = 77"
        )
        assert cursor.fetchone()[0] == 18
    proposal = actions.propose(42)
    assert proposal.digest_hex == (
        "c7141fb9bee81bc58aa4841f9e05cc4df59f65db1ec178b4b78d01632eca0c3c"
    )


def test_recover_marks_a_stale_execution_failed_in_one_transaction(
    admin_user: User,
) -> None:
    execution = factories.execution("STARTED")
    proposal = actions.propose(execution.pk)
    result = _recover(admin_user, proposal, "op-rec")
    assert (result.outcome, result.prior_status, result.result_status) == (
        "APPLIED",
        "STARTED",
        "FAILED",
    )
    fresh = JobExecution.objects.get(pk=execution.pk)
    assert (fresh.status, fresh.version) == ("FAILED", 4)
    assert (fresh.failure_category, fresh.failure_id) == ("STALE_RECOVERED", 9001)
    assert fresh.ended_at == fresh.updated_at
    assert fresh.started_at == execution.started_at
    decision = RecoveryDecision.objects.get(job_execution=execution)
    assert (
        decision.execution_version,
        decision.prior_status,
        decision.resulting_status,
        decision.reason_code,
        decision.operator_reference,
        bytes(decision.evidence_digest),
        decision.decided_at,
    ) == (
        3,
        "STARTED",
        "FAILED",
        "HOST_LOST",
        "user:administrator",
        proposal.digest,
        fresh.updated_at,
    )
    _check(
        "op-rec",
        _expected(
            proposal,
            "op-rec",
            prior="STARTED",
            result="FAILED",
            code=None,
            instance_id=execution.job_instance_id,
        ),
    )


def test_recover_abandon_clears_the_failure(admin_user: User) -> None:
    execution = factories.execution("UNKNOWN", failure=("TIMEOUT", 3))
    proposal = actions.propose(execution.pk)
    directive = actions.Directive.abandon()
    result = _recover(admin_user, proposal, "op-ab", directive=directive)
    assert result.outcome == "APPLIED"
    fresh = JobExecution.objects.get(pk=execution.pk)
    assert (fresh.status, fresh.failure_category, fresh.failure_id) == (
        "ABANDONED",
        None,
        None,
    )
    _check(
        "op-ab",
        _expected(
            proposal,
            "op-ab",
            directive=directive,
            prior="UNKNOWN",
            result="ABANDONED",
            code=None,
            instance_id=execution.job_instance_id,
        ),
    )


def test_unknown_effect_rule(admin_user: User) -> None:
    """With an unknown commit only UNKNOWN_EFFECT may mark failed; abandon may."""
    execution = factories.execution("UNKNOWN")
    proposal = actions.propose(execution.pk)
    assert proposal.evidence.unknown_commit is True
    refused = _recover(admin_user, proposal, "op-1")
    assert (refused.outcome, refused.rejection_code) == (
        "REJECTED",
        "UNRESOLVED_RECOVERY_REQUIRED",
    )
    _check(
        "op-1",
        _expected(
            proposal,
            "op-1",
            prior=None,
            result=None,
            code="UNRESOLVED_RECOVERY_REQUIRED",
            instance_id=None,
        ),
    )
    assert JobExecution.objects.get(pk=execution.pk).status == "UNKNOWN"
    directive = actions.Directive.mark_failed("UNKNOWN_COMMIT", 1)
    applied = _recover(
        admin_user, proposal, "op-2", directive=directive, reason="UNKNOWN_EFFECT"
    )
    assert (applied.outcome, applied.result_status) == ("APPLIED", "FAILED")


def test_recover_rejects_a_moved_version(admin_user: User) -> None:
    execution = factories.execution("STARTED")
    proposal = actions.propose(execution.pk)
    JobExecution.objects.filter(pk=execution.pk).update(version=4)
    result = _recover(admin_user, proposal, "op-old")
    assert (result.outcome, result.rejection_code) == (
        "REJECTED",
        "OPTIMISTIC_CONFLICT",
    )
    assert "Someone else changed" in result.explanation()
    _check(
        "op-old",
        _expected(
            proposal,
            "op-old",
            prior=None,
            result=None,
            code="OPTIMISTIC_CONFLICT",
            instance_id=None,
        ),
    )
    assert not RecoveryDecision.objects.exists()


def test_recover_of_a_finished_execution_is_invalid_state(admin_user: User) -> None:
    execution = factories.execution("FAILED")
    proposal = actions.propose(execution.pk)
    result = _recover(admin_user, proposal, "op-fin")
    assert (result.outcome, result.rejection_code) == ("REJECTED", "INVALID_STATE")
    _check(
        "op-fin",
        _expected(
            proposal,
            "op-fin",
            prior=None,
            result=None,
            code="INVALID_STATE",
            instance_id=None,
        ),
    )


def test_stale_evidence_is_refused_without_a_record(admin_user: User) -> None:
    """A new step at the same version changes the digest: nothing is written."""
    execution = factories.execution("STARTED")
    proposal = actions.propose(execution.pk)
    factories.step(execution, "STARTED")
    with pytest.raises(actions.EvidenceStale):
        _recover(admin_user, proposal, "op-stale")
    assert not OperatorRequest.objects.exists()
    assert not RecoveryDecision.objects.exists()
    assert JobExecution.objects.get(pk=execution.pk).status == "STARTED"


def test_a_stop_request_after_the_proposal_makes_it_stale(admin_user: User) -> None:
    """A stop request bumps no version but moves updated_at, so the digest."""
    execution = factories.execution("STARTED")
    proposal = actions.propose(execution.pk)
    actions.stop_execution(
        user=admin_user,
        execution_id=execution.pk,
        expected_version=3,
        operation_id="op-stop",
    )
    with pytest.raises(actions.EvidenceStale):
        _recover(admin_user, proposal, "op-late")


def test_a_fresh_execution_is_not_recoverable(admin_user: User) -> None:
    execution = factories.execution("STARTED", updated_at=factories.ago(seconds=30))
    proposal = actions.propose(execution.pk)
    with pytest.raises(actions.NotRecoverable):
        _recover(admin_user, proposal, "op-fresh")
    assert not OperatorRequest.objects.exists()


def test_recover_of_a_missing_execution_is_refused_unaudited(admin_user: User) -> None:
    with pytest.raises(actions.TargetNotFound):
        actions.recover_execution(
            user=admin_user,
            execution_id=999,
            expected_version=0,
            evidence_digest=b"\x00" * 32,
            unknown_commit=False,
            directive=FAIL,
            reason_code="HOST_LOST",
            operation_id="op-x",
        )
    with pytest.raises(actions.TargetNotFound):
        actions.propose(999)
    assert not OperatorRequest.objects.exists()


def test_recover_replays_and_refuses_a_reused_operation_id(admin_user: User) -> None:
    execution = factories.execution("STARTED")
    proposal = actions.propose(execution.pk)
    first = _recover(admin_user, proposal, "op-1")
    again = _recover(admin_user, proposal, "op-1")
    assert (again.outcome, again.audit_id) == ("REPLAYED", first.audit_id)
    assert RecoveryDecision.objects.count() == 1
    with pytest.raises(actions.OperationIdConflict):
        _recover(admin_user, proposal, "op-1", directive=actions.Directive.abandon())


@pytest.mark.parametrize(
    "directive",
    [
        actions.Directive("RESTARTED"),
        actions.Directive.mark_failed("NOPE", 1),
        actions.Directive.mark_failed("TIMEOUT", 0),
    ],
)
def test_bad_directives_are_refused(
    admin_user: User, directive: actions.Directive
) -> None:
    execution = factories.execution("STARTED")
    proposal = actions.propose(execution.pk)
    with pytest.raises(actions.InvalidRequest):
        _recover(admin_user, proposal, "op-bad", directive=directive)
    assert not OperatorRequest.objects.exists()


def test_decision_update_and_audit_commit_together(
    admin_user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed audit insert takes the decision and the update back with it."""
    from django.db import IntegrityError

    from batchboard.actions import executions

    real_audit = executions._audit

    def failing_audit(
        request: object, at: object, effect: object, code: object
    ) -> object:
        if effect is not None:
            raise IntegrityError("duplicate key")
        return real_audit(request, at, effect, code)  # type: ignore[arg-type]

    monkeypatch.setattr(executions, "_audit", failing_audit)
    execution = factories.execution("STARTED")
    proposal = actions.propose(execution.pk)
    with pytest.raises(actions.ConstraintViolation):
        _recover(admin_user, proposal, "op-torn")
    fresh = JobExecution.objects.get(pk=execution.pk)
    assert (fresh.status, fresh.version, fresh.failure_category) == ("STARTED", 3, None)
    assert not RecoveryDecision.objects.exists()
    assert not OperatorRequest.objects.exists()


def test_the_verdict_says_spans_as_the_pages_do() -> None:
    """One humaniser: the verdict's "5 h 07 min" is the execution page's."""
    execution = factories.execution(
        "STARTED", updated_at=factories.ago(hours=5, minutes=7, seconds=18)
    )
    with override_settings(BATCHBOARD={"STALE_SECONDS": 900}):
        proposal = actions.propose(execution.pk)
    assert proposal.verdict_text() == (
        f"No update for {Clock().span(proposal.inactivity_seconds)}, "
        "more than the 15 min threshold."
    )
    assert proposal.verdict_text().startswith("No update for 5 h 07 min")
    fresh = factories.execution("STARTED", updated_at=factories.ago(seconds=42))
    assert re.match(
        r"Updated 4\d s ago, within the 15 min threshold",
        actions.propose(fresh.pk).verdict_text(),
    )
