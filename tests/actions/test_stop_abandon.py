"""STOP and ABANDON: every row of the guard table, replays and conflicts."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from batchboard import actions
from batchboard.digests import request_digest
from batchboard.models import JobExecution, OperatorRequest
from tests.actions.conftest import audit_row
from tests.factories import actions as factories

pytestmark = pytest.mark.django_db


def _expected_row(
    action: str,
    execution: JobExecution | int,
    op: str,
    *,
    version: int,
    reason: str | None,
    prior: str | None,
    result: str | None,
    code: str | None,
    instance_id: int | None,
    auth: str,
) -> dict[str, Any]:
    ident = execution if isinstance(execution, int) else execution.pk
    return {
        "job_instance_id": instance_id,
        "job_execution_id": ident,
        "action": action,
        "authorization_class": auth,
        "operation_id": op,
        "actor_ref": "user:administrator",
        "reason_code": reason,
        "request_digest": request_digest(
            action=action,
            target=f"execution:{ident}",
            expected_version=version,
            reason_code=reason,
        ),
        "observed_version": version,
        "prior_status": prior,
        "result_status": result,
        "outcome_class": "REJECTED" if code else "APPLIED",
        "rejection_code": code,
    }


def _check_row(action: str, op: str, expected: dict[str, Any]) -> None:
    row = audit_row(action, op)
    requested_at = row.pop("requested_at")
    row.pop("id")
    assert row == expected
    assert abs(timezone.now() - requested_at) < dt.timedelta(minutes=1)


def _stop(
    user: User, execution: JobExecution, op: str, version: int | None = None
) -> Any:
    return actions.stop_execution(
        user=user,
        execution_id=execution.pk,
        expected_version=execution.version if version is None else version,
        operation_id=op,
    )


@pytest.mark.parametrize("status", ["STARTING", "STARTED"])
def test_stop_records_a_stop_request_without_bumping_the_version(
    admin_user: User, status: str
) -> None:
    """A running execution gets a stop request; status and version stay."""
    execution = factories.execution(status)
    result = _stop(admin_user, execution, "op-stop")
    assert (result.outcome, result.changed) == ("APPLIED", True)
    assert "moves the execution to STOPPING" in result.explanation()
    fresh = JobExecution.objects.get(pk=execution.pk)
    assert (fresh.status, fresh.version) == (status, execution.version)
    assert fresh.stop_requested_by == "user:administrator"
    assert fresh.stop_requested_at is not None
    assert fresh.updated_at >= execution.updated_at
    _check_row(
        "STOP",
        "op-stop",
        _expected_row(
            "STOP",
            execution,
            "op-stop",
            version=3,
            reason=None,
            prior=status,
            result=status,
            code=None,
            instance_id=execution.job_instance_id,
            auth="LIFECYCLE",
        ),
    )


@pytest.mark.parametrize(
    "status", ["STOPPING", "STOPPED", "FAILED", "COMPLETED", "ABANDONED"]
)
def test_stop_of_a_stopping_or_finished_execution_is_an_applied_no_op(
    admin_user: User, status: str
) -> None:
    """No stop request is written, whatever version was observed."""
    execution = factories.execution(status)
    result = _stop(admin_user, execution, "op-noop", version=99)
    assert (result.outcome, result.changed) == ("APPLIED", False)
    fresh = JobExecution.objects.get(pk=execution.pk)
    assert fresh.stop_requested_at is None
    assert fresh.updated_at == execution.updated_at
    _check_row(
        "STOP",
        "op-noop",
        _expected_row(
            "STOP",
            execution,
            "op-noop",
            version=99,
            reason=None,
            prior=status,
            result=status,
            code=None,
            instance_id=execution.job_instance_id,
            auth="LIFECYCLE",
        ),
    )


@pytest.mark.parametrize(
    ("status", "version", "code"),
    [("UNKNOWN", 3, "INVALID_STATE"), ("STARTED", 2, "OPTIMISTIC_CONFLICT")],
)
def test_stop_rejections_are_audited(
    admin_user: User, status: str, version: int, code: str
) -> None:
    execution = factories.execution(status)
    result = _stop(admin_user, execution, "op-rej", version=version)
    assert (result.outcome, result.rejection_code) == ("REJECTED", code)
    assert code in result.explanation()
    assert JobExecution.objects.get(pk=execution.pk).stop_requested_at is None
    _check_row(
        "STOP",
        "op-rej",
        _expected_row(
            "STOP",
            execution,
            "op-rej",
            version=version,
            reason=None,
            prior=None,
            result=None,
            code=code,
            instance_id=None,
            auth="LIFECYCLE",
        ),
    )


def test_stop_of_a_missing_execution_is_refused_unaudited(admin_user: User) -> None:
    """EXECUTION_NOT_FOUND cannot be recorded: its foreign key has no target."""
    with pytest.raises(actions.TargetNotFound) as raised:
        actions.stop_execution(
            user=admin_user, execution_id=4242, expected_version=0, operation_id="op-x"
        )
    assert "could not be recorded" in raised.value.message
    assert not OperatorRequest.objects.exists()


def test_stop_digest_is_the_golden_vector(admin_user: User) -> None:
    """STOP of execution 42 at version 3 records the digest of spec 8.2."""
    assert (
        request_digest(
            action="STOP", target="execution:42", expected_version=3, reason_code=None
        ).hex()
        == "82788f21a6fc659f71d70568b47968b0a9073a38d477f6b4edca491db2a294e5"
    )


def _abandon(
    user: User,
    execution: JobExecution,
    op: str,
    *,
    version: int | None = None,
    reason: str = "OPERATOR_DECISION",
) -> Any:
    return actions.abandon_execution(
        user=user,
        execution_id=execution.pk,
        expected_version=execution.version if version is None else version,
        reason_code=reason,
        operation_id=op,
    )


@pytest.mark.parametrize("status", ["STOPPED", "FAILED"])
def test_abandon_transitions_and_keeps_failure_and_end(
    admin_user: User, status: str
) -> None:
    execution = factories.execution(status)
    result = _abandon(admin_user, execution, "op-ab")
    assert (result.outcome, result.changed) == ("APPLIED", True)
    fresh = JobExecution.objects.get(pk=execution.pk)
    assert (fresh.status, fresh.version) == ("ABANDONED", 4)
    assert fresh.ended_at == execution.ended_at
    assert (fresh.failure_category, fresh.failure_id) == (
        execution.failure_category,
        execution.failure_id,
    )
    assert fresh.updated_at > execution.updated_at
    _check_row(
        "ABANDON",
        "op-ab",
        _expected_row(
            "ABANDON",
            execution,
            "op-ab",
            version=3,
            reason="OPERATOR_DECISION",
            prior=status,
            result="ABANDONED",
            code=None,
            instance_id=execution.job_instance_id,
            auth="DESTRUCTIVE",
        ),
    )


def test_abandon_of_unknown_after_a_recovery_decision(admin_user: User) -> None:
    execution = factories.execution("UNKNOWN")
    factories.recovery_decision(execution, version=1)
    result = _abandon(admin_user, execution, "op-unk")
    assert result.outcome == "APPLIED"
    fresh = JobExecution.objects.get(pk=execution.pk)
    assert fresh.status == "ABANDONED"
    assert fresh.ended_at is not None
    _check_row(
        "ABANDON",
        "op-unk",
        _expected_row(
            "ABANDON",
            execution,
            "op-unk",
            version=3,
            reason="OPERATOR_DECISION",
            prior="UNKNOWN",
            result="ABANDONED",
            code=None,
            instance_id=execution.job_instance_id,
            auth="DESTRUCTIVE",
        ),
    )


def test_abandon_of_abandoned_is_an_applied_no_op(admin_user: User) -> None:
    execution = factories.execution("ABANDONED")
    result = _abandon(admin_user, execution, "op-again", version=0)
    assert (result.outcome, result.changed) == ("APPLIED", False)
    assert JobExecution.objects.get(pk=execution.pk).version == 3
    _check_row(
        "ABANDON",
        "op-again",
        _expected_row(
            "ABANDON",
            execution,
            "op-again",
            version=0,
            reason="OPERATOR_DECISION",
            prior="ABANDONED",
            result="ABANDONED",
            code=None,
            instance_id=execution.job_instance_id,
            auth="DESTRUCTIVE",
        ),
    )


@pytest.mark.parametrize(
    ("status", "version", "code"),
    [
        ("STARTING", 3, "INVALID_STATE"),
        ("STARTED", 3, "INVALID_STATE"),
        ("STOPPING", 3, "INVALID_STATE"),
        ("COMPLETED", 3, "INVALID_STATE"),
        ("UNKNOWN", 3, "UNRESOLVED_RECOVERY_REQUIRED"),
        ("FAILED", 2, "OPTIMISTIC_CONFLICT"),
    ],
)
def test_abandon_rejections_are_audited(
    admin_user: User, status: str, version: int, code: str
) -> None:
    execution = factories.execution(status)
    result = _abandon(admin_user, execution, "op-rej", version=version)
    assert (result.outcome, result.rejection_code) == ("REJECTED", code)
    fresh = JobExecution.objects.get(pk=execution.pk)
    assert (fresh.status, fresh.version) == (status, 3)
    _check_row(
        "ABANDON",
        "op-rej",
        _expected_row(
            "ABANDON",
            execution,
            "op-rej",
            version=version,
            reason="OPERATOR_DECISION",
            prior=None,
            result=None,
            code=code,
            instance_id=None,
            auth="DESTRUCTIVE",
        ),
    )


def test_abandon_of_a_missing_execution_is_refused_unaudited(admin_user: User) -> None:
    with pytest.raises(actions.TargetNotFound):
        actions.abandon_execution(
            user=admin_user,
            execution_id=4242,
            expected_version=0,
            reason_code="OPERATOR_DECISION",
            operation_id="op-x",
        )
    assert not OperatorRequest.objects.exists()


def test_stop_replays_and_refuses_a_reused_operation_id(admin_user: User) -> None:
    """The same form twice replays; the same id for another request conflicts."""
    execution = factories.execution("STARTED")
    first = _stop(admin_user, execution, "op-1")
    stamped = JobExecution.objects.get(pk=execution.pk).stop_requested_at
    again = _stop(admin_user, execution, "op-1")
    assert (again.outcome, again.recorded_outcome) == ("REPLAYED", "APPLIED")
    assert again.audit_id == first.audit_id
    assert JobExecution.objects.get(pk=execution.pk).stop_requested_at == stamped
    with pytest.raises(actions.OperationIdConflict):
        _stop(admin_user, execution, "op-1", version=4)
    assert OperatorRequest.objects.count() == 1


def test_a_replayed_rejection_reports_the_recorded_rejection(admin_user: User) -> None:
    execution = factories.execution("UNKNOWN")
    first = _stop(admin_user, execution, "op-r")
    again = _stop(admin_user, execution, "op-r")
    assert (again.outcome, again.rejection_code) == ("REPLAYED", "INVALID_STATE")
    assert again.audit_id == first.audit_id
    assert "already recorded as rejected" in again.explanation()


def test_abandon_replays_and_refuses_a_reused_operation_id(admin_user: User) -> None:
    execution = factories.execution("FAILED")
    first = _abandon(admin_user, execution, "op-1")
    again = _abandon(admin_user, execution, "op-1")
    assert (again.outcome, again.audit_id) == ("REPLAYED", first.audit_id)
    assert JobExecution.objects.get(pk=execution.pk).version == 4
    with pytest.raises(actions.OperationIdConflict):
        _abandon(admin_user, execution, "op-1", reason="HOST_LOST")
    assert OperatorRequest.objects.count() == 1


def test_a_different_actor_replaying_is_a_replay(admin_user: User) -> None:
    """Actor and operation id are outside the digest (spec 4.2)."""
    execution = factories.execution("STARTED")
    _stop(admin_user, execution, "op-shared")
    other = factories.user("other", "operate_lifecycle")
    assert _stop(other, execution, "op-shared").outcome == "REPLAYED"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("operation_id", ""),
        ("operation_id", "x" * 65),
        ("operation_id", "has space"),
        ("reason_code", "lower"),
        ("reason_code", "LEGAL_HOLD"),
    ],
)
def test_envelope_errors_are_refused_before_any_write(
    admin_user: User, field: str, value: str
) -> None:
    execution = factories.execution("FAILED")
    kwargs = {"operation_id": "op-ok", "reason_code": "OPERATOR_DECISION", field: value}
    with pytest.raises(actions.InvalidRequest):
        actions.abandon_execution(
            user=admin_user, execution_id=execution.pk, expected_version=3, **kwargs
        )
    assert not OperatorRequest.objects.exists()
