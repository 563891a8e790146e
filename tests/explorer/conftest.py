"""Fixtures of the explorer tests: signed-in readers and a small history."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from batchboard.digests import JobParameter
from batchboard.models import JobExecution, JobInstance, StepExecution
from tests import factories

#: The one moment the presenter and stamp tests present rows as of.
NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)

READ_MODELS = (
    "jobdefinition",
    "jobinstance",
    "jobexecution",
    "stepexecution",
    "steppartition",
    "flowdecision",
    "recoverydecision",
    "operatorrequest",
)


def make_user(username: str, *, values: bool = False) -> User:
    """Create a user with the Read class (and parameter values if asked)."""
    user = User.objects.create_user(username, password="pw")
    codenames = [f"view_{model}" for model in READ_MODELS]
    if values:
        codenames.append("view_parameter_values")
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="batchboard", codename__in=codenames
        )
    )
    return user


@pytest.fixture
def reader(db: None) -> Client:
    client = Client()
    client.force_login(make_user("reader"))
    return client


@pytest.fixture
def value_reader(db: None) -> Client:
    client = Client()
    client.force_login(make_user("valuereader", values=True))
    return client


@dataclass
class History:
    instance: JobInstance
    failed: JobExecution
    restart: JobExecution
    running: JobExecution
    step: StepExecution
    running_step: StepExecution
    partitioned: StepExecution
    executions: list[JobExecution] = field(default_factory=list)


@pytest.fixture
def history(db: None) -> History:
    """A small history: a failed run and its running restart, with steps."""
    now = factories.now()
    factories.definition("nightly-import")
    factories.definition("billing.export")
    instance = factories.instance(
        "nightly-import",
        {"run_date": JobParameter.string("2026-01-01"), "shard": JobParameter.u64(3)},
        created_at=now - timedelta(hours=3),
    )
    failed = factories.execution(
        instance, "FAILED", created_at=now - timedelta(hours=3)
    )
    step = factories.step(
        failed, "load", "FAILED", counts={"read_count": 1200, "write_count": 1100}
    )
    restart = factories.execution(
        instance,
        "STARTED",
        restart_of=failed,
        created_at=now - timedelta(hours=1),
        updated_at=now - timedelta(hours=1),
        owner_token=b"\x01" * 16,
    )
    running_step = factories.step(restart, "load", "STARTED", counts={"read_count": 10})
    partitioned = factories.step(restart, "fan-out", "STARTED")
    for ordinal in range(1, 5):
        factories.partition(
            partitioned,
            f"part-{ordinal}",
            ordinal,
            "COMPLETED" if ordinal < 3 else "STARTING",
            worker=running_step if ordinal < 3 else None,
        )
    factories.flow_decision(failed, 1, "load", target="reconcile", source_step=step)
    factories.recovery_decision(failed)
    factories.operator_request(failed, "STOP")
    other = factories.instance("billing.export")
    executions = [
        factories.execution(other, "COMPLETED", created_at=now - timedelta(minutes=30))
    ]
    return History(
        instance=instance,
        failed=failed,
        restart=restart,
        running=restart,
        step=step,
        running_step=running_step,
        partitioned=partitioned,
        executions=executions,
    )


def execution_row(**values: Any) -> dict[str, Any]:
    """Return an execution row as the list query reads it, ``values`` over it."""
    row = {
        "id": 7,
        "job_instance_id": 3,
        "job_name": "nightly",
        "attempt": 1,
        "status": "STARTED",
        "created_at": NOW - timedelta(hours=1),
        "started_at": NOW - timedelta(minutes=59),
        "ended_at": None,
        "updated_at": NOW - timedelta(minutes=1),
    }
    row.update(values)
    return row
