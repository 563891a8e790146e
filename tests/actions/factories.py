"""Plain factory functions for the action tests: valid rows, nothing more."""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
from typing import Any

from django.contrib.auth.models import Permission, User
from django.utils import timezone

from batchboard import schema
from batchboard.models import (
    FlowDecision,
    JobDefinition,
    JobExecution,
    JobInstance,
    OperatorRequest,
    RecoveryDecision,
    StepExecution,
    StepPartition,
)

_counter = itertools.count(1)
EMPTY = {"format": 1, "schema": "oxide_batch.empty.v1", "schema_version": 1}


def _digest(label: str) -> bytes:
    return hashlib.sha256(label.encode()).digest()


def ago(**delta: float) -> dt.datetime:
    """Return now minus ``delta``, in whole milliseconds."""
    moment = timezone.now() - dt.timedelta(**delta)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def definition(job_name: str = "nightly-import", **manifest: Any) -> JobDefinition:
    n = next(_counter)
    return JobDefinition.objects.create(
        job_name=job_name,
        definition_revision=f"v{n}",
        manifest_format=1,
        manifest_digest=_digest(f"definition-{n}"),
        manifest={"job": job_name, **manifest},
        registered_at=ago(days=400),
    )


def instance(job_name: str = "nightly-import", *, held: bool = False) -> JobInstance:
    n = next(_counter)
    extra = (
        {
            "hold_actor": "user:keeper",
            "hold_reason": "AUDIT",
            "hold_placed_at": ago(days=1),
        }
        if held
        else {}
    )
    return JobInstance.objects.create(
        job_name=job_name,
        instance_key=_digest(f"instance-{n}"),
        identifying_parameters={
            "run_date": {"type": "string", "identifying": True, "value": f"d{n}"}
        },
        created_at=ago(days=400),
        **extra,
    )


def execution(
    status: str = "STARTED",
    *,
    job_instance: JobInstance | None = None,
    job_definition: JobDefinition | None = None,
    attempt: int | None = None,
    version: int = 3,
    updated_at: dt.datetime | None = None,
    owner_token: bytes | None = None,
    failure: tuple[str, int] | None = None,
    restart_of: JobExecution | None = None,
) -> JobExecution:
    """Create one execution in ``status``, last updated an hour ago by default."""
    job_instance = job_instance or instance()
    job_definition = job_definition or definition(job_instance.job_name)
    if attempt is None:
        attempt = job_instance.executions.count() + 1
    updated = updated_at or ago(hours=1)
    created = updated - dt.timedelta(minutes=10)
    if failure is None and status == "FAILED":
        failure = ("USER_COMPONENT", 7)
    return JobExecution.objects.create(
        job_instance=job_instance,
        definition=job_definition,
        restart_of_execution=restart_of,
        attempt=attempt,
        status=status,
        exit_code="UNKNOWN",
        parameters={},
        context_format=1,
        context_schema="oxide_batch.empty.v1",
        context_schema_version=1,
        context_payload={},
        failure_category=failure[0] if failure else None,
        failure_id=failure[1] if failure else None,
        created_at=created,
        started_at=None if status == "STARTING" else created,
        ended_at=updated if status in schema.FINISHED else None,
        updated_at=updated,
        version=version,
        owner_token=owner_token,
    )


def step(
    job_execution: JobExecution, status: str = "STARTED", *, name: str | None = None
) -> StepExecution:
    name = name or f"step-{next(_counter)}"
    at = job_execution.created_at
    return StepExecution.objects.create(
        job_execution=job_execution,
        step_name=name,
        step_logical_id=name,
        status=status,
        exit_code="UNKNOWN",
        checkpoint_format=1,
        checkpoint_schema="m5.upgrade.position",
        checkpoint_schema_version=1,
        checkpoint_payload={"offset": 18},
        context_format=1,
        context_schema="oxide_batch.empty.v1",
        context_schema_version=1,
        context_payload={},
        created_at=at,
        started_at=at,
        ended_at=at if status in schema.FINISHED else None,
        updated_at=at,
        fault_state_payload={"checkpoint": "0" * 64, "entries": []},
        fault_state_checksum=bytes.fromhex(schema.EMPTY_FAULT_STATE_CHECKSUM),
    )


def partition(
    parent: StepExecution,
    *,
    worker: StepExecution | None = None,
    status: str = "COMPLETED",
) -> StepPartition:
    n = next(_counter)
    return StepPartition.objects.create(
        step_execution=parent,
        worker_step_execution=worker,
        partition_key=f"p-{n}",
        partition_ordinal=n,
        status=status,
        context_format=1,
        context_schema="part.ctx",
        context_schema_version=1,
        context_payload={},
        context_checksum=_digest(f"partition-{n}"),
    )


def flow_decision(
    job_execution: JobExecution,
    *,
    source: StepExecution | None = None,
    reused: FlowDecision | None = None,
) -> FlowDecision:
    n = next(_counter)
    return FlowDecision.objects.create(
        job_execution=job_execution,
        source_step_execution=source,
        reused_decision=reused,
        sequence=n,
        source_node_id=f"node-{n}",
        observed_outcome="COMPLETED",
        terminal_kind="COMPLETE",
        transition_kind="STEP_EXIT",
        plan_fingerprint=_digest("plan"),
        input_digest=_digest(f"input-{n}"),
        decided_at=job_execution.updated_at,
    )


def recovery_decision(
    job_execution: JobExecution, version: int = 0
) -> RecoveryDecision:
    return RecoveryDecision.objects.create(
        job_execution=job_execution,
        execution_version=version,
        prior_status="STARTED",
        resulting_status="FAILED",
        reason_code="HOST_LOST",
        operator_reference="user:earlier",
        evidence_digest=_digest("evidence"),
        decided_at=job_execution.updated_at,
    )


def operator_request(
    *,
    job_execution: JobExecution | None = None,
    job_instance: JobInstance | None = None,
) -> OperatorRequest:
    n = next(_counter)
    return OperatorRequest.objects.create(
        job_instance=job_instance,
        job_execution=job_execution,
        action="RESTART" if job_execution is None else "STOP",
        authorization_class="LIFECYCLE",
        operation_id=f"seed-{n}",
        actor_ref="user:seed",
        request_digest=_digest(f"request-{n}"),
        outcome_class="REJECTED",
        rejection_code="EXECUTION_ALREADY_ACTIVE",
        requested_at=ago(days=300),
    )


def user(name: str, *codenames: str) -> User:
    """Create a staff user holding the named batchboard permissions."""
    account = User.objects.create_user(name, password=name, is_staff=True)
    account.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="batchboard", codename__in=codenames
        )
    )
    return User.objects.get(pk=account.pk)


VIEW = (
    "view_jobexecution",
    "view_jobinstance",
    "view_operatorrequest",
    "view_retentionaction",
    "view_recoverydecision",
)


def viewer() -> User:
    return user("viewer", *VIEW)


def operator() -> User:
    return user("operator", *VIEW, "operate_lifecycle")


def administrator() -> User:
    return user("administrator", *VIEW, "operate_lifecycle", "operate_destructive")
