"""
The eligibility rule agrees with the service, on real rows.

For every status and every flag an answer depends on (a stop request, a
recovery decision, a later attempt, a hold, a recovery candidate, an
unknown commit), the answer's ``service`` is what the service does with a
request on that row: CHANGES is APPLIED with a change, UNCHANGED is APPLIED
without one, REJECTS is REJECTED with the answer's code, REFUSES is an
error that records nothing. An offered action always changes something.
"""

from __future__ import annotations

import itertools
from typing import get_args

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from batchboard import actions, vocabulary
from batchboard.actions import eligibility
from batchboard.models import JobExecution, OperatorRequest
from tests.factories import actions as factories

pytestmark = pytest.mark.django_db

_ops = itertools.count(1)


def _op() -> str:
    return f"op-eligibility-{next(_ops)}"


def _agrees(answer: eligibility.Eligibility, result: actions.ActionResult) -> None:
    """Fail unless ``result`` is what ``answer`` says the service does."""
    if answer.service == eligibility.REJECTS:
        assert (result.recorded_outcome, result.rejection_code) == (
            "REJECTED",
            answer.code,
        )
    else:
        assert result.recorded_outcome == "APPLIED"
        assert result.changed is (answer.service == eligibility.CHANGES)
    if answer.offered:
        assert answer.service == eligibility.CHANGES and answer.code is None
    else:
        assert answer.code is not None and str(answer.why)


def _execution(
    status: str, *, stop_requested: bool, decided: bool, superseded: bool
) -> JobExecution:
    execution = factories.execution(status)
    if stop_requested:
        JobExecution.objects.filter(pk=execution.pk).update(
            stop_requested_at=execution.updated_at, stop_requested_by="user:x"
        )
    if decided:
        factories.recovery_decision(execution, 1)
    if superseded:
        factories.execution(
            "COMPLETED", job_instance=execution.job_instance, restart_of=execution
        )
    return JobExecution.objects.get(pk=execution.pk)


FLAGS = list(itertools.product(vocabulary.STATUSES, (False, True), (False, True)))


@pytest.mark.parametrize(("status", "stop_requested", "superseded"), FLAGS)
def test_stop_answers_as_the_service_does(
    admin_user: User, status: str, stop_requested: bool, superseded: bool
) -> None:
    execution = _execution(
        status, stop_requested=stop_requested, decided=False, superseded=superseded
    )
    answer = eligibility.of_execution(execution)[vocabulary.STOP]
    assert answer == eligibility.stop(status, stop_requested=stop_requested)
    result = actions.stop_execution(
        user=admin_user,
        execution_id=execution.pk,
        expected_version=execution.version,
        operation_id=_op(),
    )
    _agrees(answer, result)


@pytest.mark.parametrize(("status", "decided", "superseded"), FLAGS)
def test_abandon_answers_as_the_service_does(
    admin_user: User, status: str, decided: bool, superseded: bool
) -> None:
    execution = _execution(
        status, stop_requested=False, decided=decided, superseded=superseded
    )
    answer = eligibility.of_execution(execution)[vocabulary.ABANDON]
    result = actions.abandon_execution(
        user=admin_user,
        execution_id=execution.pk,
        expected_version=execution.version,
        reason_code="OPERATOR_DECISION",
        operation_id=_op(),
    )
    _agrees(answer, result)
    # A restarted attempt is abandoned all the same, yet not offered.
    if superseded and answer.service == eligibility.CHANGES:
        assert not answer.offered


@pytest.mark.parametrize(
    ("status", "stale"), list(itertools.product(vocabulary.STATUSES, (False, True)))
)
def test_recover_answers_as_the_service_does(
    admin_user: User, status: str, stale: bool
) -> None:
    updated = factories.ago(hours=1) if stale else timezone.now()
    execution = factories.execution(status, updated_at=updated)
    proposal = actions.propose(execution.pk)
    answer = eligibility.recover(
        status, candidate=proposal.is_candidate, verdict=proposal.verdict_text()
    )
    request = {
        "user": admin_user,
        "execution_id": execution.pk,
        "expected_version": proposal.observed_version,
        "evidence_digest": proposal.digest,
        "unknown_commit": proposal.evidence.unknown_commit,
        "directive": actions.Directive.abandon(),
        "reason_code": "HOST_LOST",
        "operation_id": _op(),
    }
    if answer.service == eligibility.REFUSES:
        with pytest.raises(actions.NotRecoverable):
            actions.recover_execution(**request)
        assert not OperatorRequest.objects.exists()
        assert answer.code == eligibility.NOT_A_CANDIDATE
        return
    _agrees(answer, actions.recover_execution(**request))


@pytest.mark.parametrize(
    ("status", "directive", "reason"),
    list(
        itertools.product(
            ("UNKNOWN", "STARTED"),
            ("FAILED", "ABANDONED"),
            [reason.code for reason in vocabulary.reasons_for("RECOVER")],
        )
    ),
)
def test_a_recovery_directive_answers_as_the_service_does(
    admin_user: User, status: str, directive: str, reason: str
) -> None:
    """UNKNOWN has an unknown commit, a stale STARTED run here has not."""
    execution = factories.execution(status)
    proposal = actions.propose(execution.pk)
    assert proposal.is_candidate
    answer = eligibility.directive(
        unknown_commit=proposal.evidence.unknown_commit,
        resulting_status=directive,
        reason_code=reason,
    )
    result = actions.recover_execution(
        user=admin_user,
        execution_id=execution.pk,
        expected_version=proposal.observed_version,
        evidence_digest=proposal.digest,
        unknown_commit=proposal.evidence.unknown_commit,
        directive=actions.Directive(directive, "STALE_RECOVERED", 9001),
        reason_code=reason,
        operation_id=_op(),
    )
    _agrees(answer, result)


@pytest.mark.parametrize(
    ("action", "held"),
    list(itertools.product((vocabulary.HOLD, vocabulary.RELEASE_HOLD), (False, True))),
)
def test_holds_answer_as_the_service_does(
    admin_user: User, action: str, held: bool
) -> None:
    instance = factories.instance(held=held)
    answer = eligibility.of_instance(instance)[action]
    service = actions.place_hold if action == vocabulary.HOLD else actions.release_hold
    reason = "LEGAL_HOLD" if action == vocabulary.HOLD else "PLACED_IN_ERROR"
    result = service(
        user=admin_user, instance_id=instance.pk, reason_code=reason, operation_id=_op()
    )
    _agrees(answer, result)


def test_the_literal_types_match_the_vocabulary() -> None:
    assert set(get_args(vocabulary.ActionName)) <= set(vocabulary.ACTION_CLASSES)
    assert get_args(vocabulary.RejectionCode) == vocabulary.REJECTION_CODES


def test_a_stop_records_a_request_only_where_it_is_offered_first() -> None:
    """The audit log's and the result's "stop requested" read the same rule."""
    recorded = [s for s in vocabulary.STATUSES if eligibility.records_stop_request(s)]
    assert recorded == [s for s in vocabulary.STATUSES if eligibility.stop(s).offered]
