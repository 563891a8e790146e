"""
Concurrent submissions on separate connections, and a lost commit.

Each race holds the execution's row lock from the test's own connection
until both worker threads wait on it (seen in ``pg_locks``), so both have
passed the replay probe before either acts: the worst interleaving, every
time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import OperationalError, connection, connections

from batchboard import actions, conf
from batchboard.models import (
    JobExecution,
    JobInstance,
    OperatorRequest,
    RecoveryDecision,
)
from tests.conftest import held_lock
from tests.factories import actions as factories


def _waiting_on_locks() -> int:
    with connections[conf.database_alias()].cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
        return int(cursor.fetchone()[0])


def _race(*calls: Callable[[], Any], lock: tuple[str, int]) -> list[Any]:
    """Run ``calls`` in threads that all queue behind one row lock."""
    results: list[Any] = [None] * len(calls)

    def run(index: int, call: Callable[[], Any]) -> None:
        try:
            results[index] = call()
        except actions.ActionError as error:
            results[index] = error
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    with held_lock(*lock):
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 10
        while _waiting_on_locks() < len(calls) and time.monotonic() < deadline:
            time.sleep(0.02)
    for thread in threads:
        thread.join(20)
    return results


EXECUTION_LOCK = "SELECT 1 FROM ob_job_execution WHERE id = %s FOR UPDATE"
INSTANCE_LOCK = "SELECT 1 FROM ob_job_instance WHERE id = %s FOR UPDATE"


@pytest.fixture
def second_admin(admin_user: User) -> User:
    return factories.user(
        "second", *factories.VIEW, "operate_lifecycle", "operate_destructive"
    )


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_two_operators_stopping_at_once_each_get_their_row(
    admin_user: User, second_admin: User
) -> None:
    execution = factories.execution("STARTED")

    def stop(user: User, op: str) -> Callable[[], Any]:
        return lambda: actions.stop_execution(
            user=user, execution_id=execution.pk, expected_version=3, operation_id=op
        )

    results = _race(
        stop(admin_user, "op-a"),
        stop(second_admin, "op-b"),
        lock=(EXECUTION_LOCK, execution.pk),
    )
    assert [r.outcome for r in results] == ["APPLIED", "APPLIED"]
    assert OperatorRequest.objects.count() == 2
    assert JobExecution.objects.get(pk=execution.pk).version == 3


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_two_operators_abandoning_at_once_abandon_once(
    admin_user: User, second_admin: User
) -> None:
    """The loser finds the execution already abandoned and is told so."""
    execution = factories.execution("FAILED")

    def abandon(user: User, op: str) -> Callable[[], Any]:
        return lambda: actions.abandon_execution(
            user=user,
            execution_id=execution.pk,
            expected_version=3,
            reason_code="OPERATOR_DECISION",
            operation_id=op,
        )

    results = _race(
        abandon(admin_user, "op-a"),
        abandon(second_admin, "op-b"),
        lock=(EXECUTION_LOCK, execution.pk),
    )
    assert sorted(r.changed for r in results) == [False, True]
    loser = next(r for r in results if not r.changed)
    assert loser.prior_status == "ABANDONED"
    assert "already in that state" in loser.explanation()
    assert JobExecution.objects.get(pk=execution.pk).version == 4
    assert OperatorRequest.objects.count() == 2


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_two_operators_recovering_at_once_decide_once(
    admin_user: User, second_admin: User
) -> None:
    execution = factories.execution("STARTED")
    proposal = actions.propose(execution.pk)

    def recover(user: User, op: str) -> Callable[[], Any]:
        return lambda: actions.recover_execution(
            user=user,
            execution_id=execution.pk,
            expected_version=3,
            evidence_digest=proposal.digest,
            unknown_commit=False,
            directive=actions.Directive.mark_failed("STALE_RECOVERED", 1),
            reason_code="HOST_LOST",
            operation_id=op,
        )

    results = _race(
        recover(admin_user, "op-a"),
        recover(second_admin, "op-b"),
        lock=(EXECUTION_LOCK, execution.pk),
    )
    outcomes = sorted((r.outcome, r.rejection_code or "") for r in results)
    assert outcomes == [("APPLIED", ""), ("REJECTED", "OPTIMISTIC_CONFLICT")]
    assert RecoveryDecision.objects.count() == 1
    assert JobExecution.objects.get(pk=execution.pk).version == 4
    assert OperatorRequest.objects.count() == 2


def _same_id_twice(call: Callable[[], Any], lock: tuple[str, int]) -> list[Any]:
    results = _race(call, call, lock=lock)
    assert sorted(r.outcome for r in results) == ["APPLIED", "REPLAYED"] or sorted(
        r.outcome for r in results
    ) == ["REJECTED", "REPLAYED"]
    assert len({r.audit_id for r in results}) == 1
    return results


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("action", ["STOP", "ABANDON", "RECOVER"])
def test_the_same_operation_id_twice_at_once_acts_once(
    admin_user: User, action: str
) -> None:
    status = {"STOP": "STARTED", "ABANDON": "FAILED", "RECOVER": "STARTED"}[action]
    execution = factories.execution(status)
    proposal = actions.propose(execution.pk)
    calls: dict[str, Callable[[], Any]] = {
        "STOP": lambda: actions.stop_execution(
            user=admin_user,
            execution_id=execution.pk,
            expected_version=3,
            operation_id="op-twice",
        ),
        "ABANDON": lambda: actions.abandon_execution(
            user=admin_user,
            execution_id=execution.pk,
            expected_version=3,
            reason_code="OPERATOR_DECISION",
            operation_id="op-twice",
        ),
        "RECOVER": lambda: actions.recover_execution(
            user=admin_user,
            execution_id=execution.pk,
            expected_version=3,
            evidence_digest=proposal.digest,
            unknown_commit=False,
            directive=actions.Directive.abandon(),
            reason_code="HOST_LOST",
            operation_id="op-twice",
        ),
    }
    results = _same_id_twice(calls[action], (EXECUTION_LOCK, execution.pk))
    assert OperatorRequest.objects.filter(operation_id="op-twice").count() == 1
    assert {r.outcome for r in results} == {"APPLIED", "REPLAYED"}
    expected_version = 3 if action == "STOP" else 4
    assert JobExecution.objects.get(pk=execution.pk).version == expected_version
    assert RecoveryDecision.objects.count() == (1 if action == "RECOVER" else 0)


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_the_same_hold_twice_at_once_is_recorded_once(admin_user: User) -> None:
    instance = factories.instance()

    def hold() -> Any:
        return actions.place_hold(
            user=admin_user,
            instance_id=instance.pk,
            reason_code="AUDIT",
            operation_id="op-hold",
        )

    results = _same_id_twice(hold, (INSTANCE_LOCK, instance.pk))
    assert {r.outcome for r in results} == {"APPLIED", "REPLAYED"}
    assert JobInstance.objects.get(pk=instance.pk).hold_actor == "user:administrator"


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_the_same_purge_twice_at_once_deletes_once(admin_user: User) -> None:
    job_instance = factories.instance()
    factories.execution(
        "FAILED", job_instance=job_instance, updated_at=factories.ago(days=40)
    )
    plan = actions.plan_purge(user=admin_user, job_name="nightly-import")
    assert len(plan.candidates) == 1

    def purge() -> Any:
        return actions.apply_purge(
            user=admin_user,
            criteria=plan.criteria,
            candidates=plan.candidates,
            plan_digest_hex=plan.digest_hex,
            reason_code="RETENTION_POLICY",
            operation_id="op-purge",
        )

    results = _same_id_twice(purge, (INSTANCE_LOCK, job_instance.pk))
    assert {r.outcome for r in results} == {"APPLIED", "REPLAYED"}
    assert all(r.counts["deleted_job_executions"] == 1 for r in results)
    assert not JobExecution.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_lost_commit_reports_an_unknown_outcome_then_replays(
    admin_user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The operator resubmits the same form and learns the outcome."""
    execution = factories.execution("FAILED")
    metadata = connections[conf.database_alias()]

    def lost_commit() -> None:
        raise OperationalError("connection lost during COMMIT")

    def abandon() -> actions.ActionResult:
        return actions.abandon_execution(
            user=admin_user,
            execution_id=execution.pk,
            expected_version=3,
            reason_code="OPERATOR_DECISION",
            operation_id="op-lost",
        )

    monkeypatch.setattr(metadata, "commit", lost_commit)
    with pytest.raises(actions.OperationOutcomeUnknown) as raised:
        abandon()
    assert "Submit the same form again" in raised.value.message
    monkeypatch.undo()
    assert connection.in_atomic_block is False
    assert abandon().outcome == "APPLIED"
    assert abandon().outcome == "REPLAYED"
    assert OperatorRequest.objects.count() == 1


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_a_row_held_too_long_asks_the_operator_to_retry(
    admin_user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A runtime holding the row past the lock timeout writes nothing here."""
    from batchboard import db

    monkeypatch.setattr(db, "DEFAULT_TIMEOUTS", db.Timeouts(lock_ms=100))
    execution = factories.execution("STARTED")
    with (
        held_lock(EXECUTION_LOCK, execution.pk),
        pytest.raises(actions.ConcurrentModification) as raised,
    ):
        actions.stop_execution(
            user=admin_user,
            execution_id=execution.pk,
            expected_version=3,
            operation_id="op-wait",
        )
    assert "try again" in raised.value.message
    assert not OperatorRequest.objects.exists()
    assert JobExecution.objects.get(pk=execution.pk).stop_requested_at is None
