"""
An action that fails in the database tells the operator the real cause.

Each error here is raised by the database itself during an action: a
violated foreign key or unique key is a :class:`ConstraintViolation`
(trying again cannot help); a serialization failure, a deadlock, a lock
timeout or SQLite's busy database is a :class:`ConcurrentModification`
(trying again can help). Nothing is recorded either way.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db import connection, connections
from django.db.utils import load_backend

from batchboard import actions, db
from batchboard.actions import holds, purge
from batchboard.models import JobExecution, RetentionAction
from tests.factories import actions as factories

pytestmark = pytest.mark.django_db

OLD = {"days": 40}


def _apply(user: User, plan: actions.PurgePlan, op: str) -> actions.ActionResult:
    return actions.apply_purge(
        user=user,
        criteria=plan.criteria,
        candidates=plan.candidates,
        plan_digest_hex=plan.digest_hex,
        reason_code="RETENTION_POLICY",
        operation_id=op,
    )


def _hold(user: User, instance_id: int, op: str) -> actions.ActionResult:
    return actions.place_hold(
        user=user, instance_id=instance_id, reason_code="AUDIT", operation_id=op
    )


def test_a_foreign_key_violation_is_not_a_concurrent_modification(
    admin_user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the restart-chain rule a survivor's restart link stops the delete."""
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
    monkeypatch.setattr(purge, "_referenced", lambda *args: set())
    plan = actions.plan_purge(user=admin_user, job_name="nightly-import")
    assert [e for _i, e, _v in plan.candidates] == [first.pk]
    with pytest.raises(actions.ConstraintViolation) as raised:
        _apply(admin_user, plan, "op-fk")
    error = raised.value
    assert not isinstance(error, db.ConcurrentModification)
    assert (error.code, error.retryable) == ("CONSTRAINT_VIOLATION", False)
    expected = (
        "constraint ob_job_execution_restart_of_execution_id_fkey"
        if connection.vendor == "postgresql"
        else "a foreign key"
    )
    assert error.what == expected
    assert f"would break {expected}" in error.message
    assert "Trying again will not help" in error.message
    assert JobExecution.objects.filter(pk=first.pk).exists()
    assert not RetentionAction.objects.exists()


def test_a_unique_violation_is_not_a_concurrent_modification(
    admin_user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An operation id recorded but not found by the probe: the key refuses."""
    instance = factories.instance()
    _hold(admin_user, instance.pk, "op-twice")
    monkeypatch.setattr(holds, "_probe", lambda *args, **kwargs: None)
    with pytest.raises(actions.ConstraintViolation) as raised:
        _hold(admin_user, instance.pk, "op-twice")
    expected = (
        "constraint ob_retention_action_identity_unique"
        if connection.vendor == "postgresql"
        else "a unique key"
    )
    assert raised.value.what == expected
    assert "will not help" in raised.value.message
    assert RetentionAction.objects.count() == 1


@pytest.mark.postgresql
@pytest.mark.parametrize("sqlstate", ["40001", "40P01", "55P03"])
def test_a_lost_race_is_a_concurrent_modification(
    admin_user: User, monkeypatch: pytest.MonkeyPatch, sqlstate: str
) -> None:
    """
    The server's serialization failure, deadlock and lock timeout, raised
    where the purge re-validates its plan under row locks. (A real lock
    timeout is in test_concurrency; these are the driver's own errors.)
    """
    factories.execution("COMPLETED", updated_at=factories.ago(**OLD))
    plan = actions.plan_purge(user=admin_user, job_name="nightly-import")

    def lose(*args: object) -> None:
        with db.connection().cursor() as cursor:
            cursor.execute(
                "DO $$ BEGIN RAISE EXCEPTION 'lost' USING ERRCODE = "
                f"'{sqlstate}'; END $$"
            )

    monkeypatch.setattr(purge, "_revalidate", lose)
    with pytest.raises(actions.ConcurrentModification) as raised:
        _apply(admin_user, plan, "op-race")
    assert (raised.value.code, raised.value.retryable) == (
        "CONCURRENT_MODIFICATION",
        True,
    )
    assert "Trying again can help" in raised.value.message
    assert JobExecution.objects.count() == 1
    assert not RetentionAction.objects.exists()


@pytest.fixture
def busy_sqlite(tmp_path: Path) -> Iterator[str]:
    """
    An alias on a SQLite file whose write lock another connection holds.

    The suite's own SQLite database is in memory, shared by its
    connections, where a lock reads "database table is locked"; a file
    answers a second writer as a real deployment's does.
    """
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's busy database")
    path = tmp_path / "busy.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (id integer PRIMARY KEY)")
    holder.execute("BEGIN IMMEDIATE")
    backend = load_backend("django.db.backends.sqlite3")
    wrapper = backend.DatabaseWrapper(
        {
            **connections["default"].settings_dict,
            "NAME": str(path),
            "OPTIONS": {"timeout": 0.05},
        },
        "busy",
    )
    connections["busy"] = wrapper
    try:
        yield "busy"
    finally:
        wrapper.close()
        del connections["busy"]
        holder.rollback()
        holder.close()


def test_sqlite_s_busy_database_is_a_concurrent_modification(
    busy_sqlite: str,
) -> None:
    with (
        pytest.raises(db.ConcurrentModification) as raised,
        db.unit(busy_sqlite),
        connections[busy_sqlite].cursor() as cursor,
    ):
        cursor.execute("INSERT INTO t (id) VALUES (1)")
    assert raised.value.retryable is True
    told = actions.results.told(raised.value)
    assert type(told) is actions.ConcurrentModification
    assert "Trying again can help" in told.message
