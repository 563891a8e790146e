"""
Plain factory functions that insert metadata rows and users for the tests.

Each function writes one row through the models with every NOT NULL column
set, the CHECK shapes respected (finished statuses carry ``ended_at``,
FAILED carries a failure, holds and stop requests are all-or-nothing) and
keys computed as oxide-batch computes them. Timestamps are whole
milliseconds, as oxide-batch writes them.

:class:`actions` builds the same rows with the defaults the operator-action
tests want (an execution an operator finds: its own instance, version 3,
last updated an hour ago); those tests import it as ``factories``.
"""

from __future__ import annotations

import hashlib
import itertools
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import Permission, User
from django.utils import timezone

from batchboard import digests, schema
from batchboard.db import truncate_ms
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

_sequence = itertools.count(1)
EMPTY_SCHEMA = "oxide_batch.empty.v1"


def now() -> datetime:
    """Return the current time truncated to whole milliseconds."""
    return truncate_ms(timezone.now())


def ago(**delta: float) -> datetime:
    """Return now minus ``timedelta(**delta)``, in whole milliseconds."""
    return truncate_ms(timezone.now() - timedelta(**delta))


def _digest(*parts: Any) -> bytes:
    return hashlib.sha256(repr(parts).encode()).digest()


def definition(
    job_name: str = "nightly-import",
    revision: str = "v1",
    *,
    manifest: dict[str, Any] | None = None,
    registered_at: datetime | None = None,
) -> JobDefinition:
    """Register (or return) a definition of ``job_name`` at ``revision``."""
    existing = JobDefinition.objects.filter(
        job_name=job_name, definition_revision=revision
    ).first()
    if existing is not None:
        return existing
    manifest = manifest or {
        "format": 1,
        "job": job_name,
        "kind": "tasklet",
        "step": "load",
        "revision": revision,
    }
    return JobDefinition.objects.create(
        job_name=job_name,
        definition_revision=revision,
        manifest_format=int(manifest.get("format", 1)),
        manifest_digest=digests.manifest_digest(manifest),
        manifest=manifest,
        registered_at=registered_at or now(),
    )


def instance(
    job_name: str = "nightly-import",
    parameters: dict[str, digests.JobParameter] | None = None,
    *,
    created_at: datetime | None = None,
    hold: tuple[str, str] | None = None,
    id: int | None = None,
) -> JobInstance:
    """Create a job instance keyed as spec 7.1 says; ``hold`` = (actor, reason)."""
    if parameters is None:
        parameters = {"run": digests.JobParameter.u64(next(_sequence))}
    created = created_at or now()
    return JobInstance.objects.create(
        id=id,
        job_name=job_name,
        instance_key=digests.instance_key(job_name, parameters),
        identifying_parameters=digests.parameters_json(parameters),
        created_at=created,
        hold_actor=hold[0] if hold else None,
        hold_reason=hold[1] if hold else None,
        hold_placed_at=created if hold else None,
    )


def execution(
    job_instance: JobInstance,
    status: str = "COMPLETED",
    *,
    job_definition: JobDefinition | None = None,
    attempt: int | None = None,
    created_at: datetime | None = None,
    duration: timedelta = timedelta(minutes=3),
    updated_at: datetime | None = None,
    restart_of: JobExecution | None = None,
    context_payload: dict[str, Any] | None = None,
    exit_code: str | None = None,
    owner_token: bytes | None = None,
    stop_requested_by: str | None = None,
    version: int = 0,
    failure: tuple[str, int] | None = None,
) -> JobExecution:
    """
    Create an execution in ``status`` with consistent timestamps and failure.

    A FAILED execution gets a USER_COMPONENT failure unless ``failure``
    (category, id) names one; any other status records ``failure`` if given.
    """
    if attempt is None:
        attempt = JobExecution.objects.filter(job_instance=job_instance).count() + 1
    # Finished executions default to having ended just now, never in the future.
    created = created_at or (
        now() - duration - timedelta(seconds=1) if status in schema.FINISHED else now()
    )
    started = None if status == "STARTING" else created + timedelta(seconds=1)
    ended = (started or created) + duration if status in schema.FINISHED else None
    if failure is None and status == "FAILED":
        failure = ("USER_COMPONENT", next(_sequence))
    return JobExecution.objects.create(
        job_instance=job_instance,
        definition=job_definition or definition(job_instance.job_name),
        restart_of_execution=restart_of,
        attempt=attempt,
        status=status,
        exit_code=exit_code or (status if status in schema.FINISHED else "UNKNOWN"),
        parameters=job_instance.identifying_parameters,
        context_format=1,
        context_schema=EMPTY_SCHEMA,
        context_schema_version=1,
        context_payload=context_payload if context_payload is not None else {},
        failure_category=failure[0] if failure else None,
        failure_id=failure[1] if failure else None,
        created_at=created,
        started_at=started,
        ended_at=ended,
        updated_at=updated_at or ended or started or created,
        version=version,
        owner_token=owner_token,
        stop_requested_at=created if stop_requested_by else None,
        stop_requested_by=stop_requested_by,
    )


def step(
    job_execution: JobExecution,
    name: str = "load",
    status: str = "COMPLETED",
    *,
    counts: dict[str, int] | None = None,
    checkpoint_schema: str = EMPTY_SCHEMA,
    checkpoint_payload: dict[str, Any] | None = None,
    context_payload: dict[str, Any] | None = None,
    created_at: datetime | None = None,
    duration: timedelta = timedelta(seconds=40),
) -> StepExecution:
    """Create a step execution; ``counts`` sets any ``*_count`` columns."""
    created = created_at or job_execution.started_at or job_execution.created_at
    started = None if status == "STARTING" else created
    ended = (started or created) + duration if status in schema.FINISHED else None
    failed = status == "FAILED"
    return StepExecution.objects.create(
        job_execution=job_execution,
        step_name=name,
        step_logical_id=name,
        status=status,
        exit_code=status if status in schema.FINISHED else "UNKNOWN",
        checkpoint_format=1,
        checkpoint_schema=checkpoint_schema,
        checkpoint_schema_version=1,
        checkpoint_payload=checkpoint_payload if checkpoint_payload is not None else {},
        context_format=1,
        context_schema=EMPTY_SCHEMA,
        context_schema_version=1,
        context_payload=context_payload if context_payload is not None else {},
        failure_category="USER_COMPONENT" if failed else None,
        failure_id=next(_sequence) if failed else None,
        created_at=created,
        started_at=started,
        ended_at=ended,
        updated_at=ended or started or created,
        fault_state_payload=digests.EMPTY_FAULT_STATE,
        fault_state_checksum=bytes.fromhex(schema.EMPTY_FAULT_STATE_CHECKSUM),
        **(counts or {}),
    )


def partition(
    parent: StepExecution,
    key: str,
    ordinal: int,
    status: str = "STARTING",
    *,
    worker: StepExecution | None = None,
    counts: dict[str, int] | None = None,
    context_payload: dict[str, Any] | None = None,
) -> StepPartition:
    """Create a partition; STARTING partitions have no worker."""
    payload = context_payload if context_payload is not None else {}
    return StepPartition.objects.create(
        step_execution=parent,
        worker_step_execution=None if status == "STARTING" else worker,
        partition_key=key,
        partition_ordinal=ordinal,
        status=status,
        exit_code=status if status in schema.FINISHED else None,
        context_format=1,
        context_schema="part.ctx",
        context_schema_version=1,
        context_payload=payload,
        context_checksum=digests.partition_context_checksum(1, "part.ctx", 1, payload),
        **(counts or {}),
    )


def flow_decision(
    job_execution: JobExecution,
    sequence: int,
    source: str,
    *,
    outcome: str = "COMPLETED",
    target: str | None = "next",
    terminal: str | None = None,
    source_step: StepExecution | None = None,
    reused: FlowDecision | None = None,
) -> FlowDecision:
    """Record a flow decision: exactly one of ``target`` and ``terminal``."""
    return FlowDecision.objects.create(
        job_execution=job_execution,
        source_step_execution=source_step,
        reused_decision=reused,
        sequence=sequence,
        source_node_id=source,
        observed_outcome=outcome,
        target_node_id=None if terminal else target,
        terminal_kind=terminal,
        transition_kind="STEP_EXIT",
        plan_fingerprint=_digest("plan", job_execution.pk),
        input_digest=_digest("input", job_execution.pk, sequence),
        decided_at=now(),
    )


def recovery_decision(
    job_execution: JobExecution,
    version: int | None = None,
    *,
    prior: str = "STARTED",
    result: str = "FAILED",
    reason: str = "HOST_LOST",
) -> RecoveryDecision:
    """Record a decision taken at ``version`` (default: the execution's)."""
    return RecoveryDecision.objects.create(
        job_execution=job_execution,
        execution_version=job_execution.version if version is None else version,
        prior_status=prior,
        resulting_status=result,
        reason_code=reason,
        operator_reference="ops@example.org",
        evidence_digest=_digest("evidence", job_execution.pk),
        decided_at=now(),
    )


def operator_request(
    job_execution: JobExecution | None,
    action: str = "STOP",
    *,
    job_instance: JobInstance | None = None,
    rejection: str | None = None,
    requested_at: datetime | None = None,
) -> OperatorRequest:
    """
    Record an operator request on an execution, or on ``job_instance`` alone.

    A request naming no execution (a LAUNCH or RESTART) must be rejected:
    an applied one would have created its execution.
    """
    applied = rejection is None
    if job_execution is not None:
        job_instance = job_execution.job_instance
    return OperatorRequest.objects.create(
        job_execution=job_execution,
        job_instance=job_instance,
        action=action,
        authorization_class="LIFECYCLE" if action == "STOP" else "DESTRUCTIVE",
        operation_id=f"op-{next(_sequence)}",
        actor_ref="ops@example.org",
        reason_code=None if action == "STOP" else "PLANNED_MAINTENANCE",
        request_digest=_digest("request", job_execution and job_execution.pk, action),
        observed_version=job_execution.version if job_execution else None,
        prior_status=job_execution.status if job_execution and applied else None,
        result_status=job_execution.status if job_execution and applied else None,
        outcome_class="APPLIED" if applied else "REJECTED",
        rejection_code=rejection,
        requested_at=requested_at or now(),
    )


def advance(job_execution: JobExecution, status: str, **fields: Any) -> JobExecution:
    """
    Move an execution (or a step, via :func:`advance_step`) to ``status``.

    Sets ``ended_at`` when finishing, a failure for FAILED and bumps the
    version, as a CAS transition would.
    """
    moment = now()
    job_execution.status = status
    job_execution.updated_at = max(moment, job_execution.updated_at)
    job_execution.version += 1
    if status == "STARTED" and job_execution.started_at is None:
        job_execution.started_at = job_execution.updated_at
    if status in schema.FINISHED and job_execution.ended_at is None:
        job_execution.ended_at = job_execution.updated_at
    if status == "FAILED" and job_execution.failure_category is None:
        job_execution.failure_category = "USER_COMPONENT"
        job_execution.failure_id = next(_sequence)
    for name, value in fields.items():
        setattr(job_execution, name, value)
    job_execution.save()
    return job_execution


def advance_step(
    step_execution: StepExecution, status: str, **fields: Any
) -> StepExecution:
    """Move a step to ``status`` and set any counters given in ``fields``."""
    moment = now()
    step_execution.status = status
    step_execution.updated_at = max(moment, step_execution.updated_at)
    step_execution.version += 1
    if status == "STARTED" and step_execution.started_at is None:
        step_execution.started_at = step_execution.updated_at
    if status in schema.FINISHED and step_execution.ended_at is None:
        step_execution.ended_at = step_execution.updated_at
    if status == "FAILED" and step_execution.failure_category is None:
        step_execution.failure_category = "USER_COMPONENT"
        step_execution.failure_id = next(_sequence)
    if status in schema.FINISHED:
        step_execution.exit_code = status
    for name, value in fields.items():
        setattr(step_execution, name, value)
    step_execution.save()
    return step_execution


# -- users ------------------------------------------------------------------------


def user(name: str, *codenames: str) -> User:
    """Create a staff user holding the named batchboard permissions."""
    account = User.objects.create_user(name, password=name, is_staff=True)
    account.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="batchboard", codename__in=codenames
        )
    )
    return User.objects.get(pk=account.pk)


# What the execution page needs, whose dialogs the roles open.
VIEW = (
    "view_jobdefinition",
    "view_jobexecution",
    "view_jobinstance",
    "view_stepexecution",
    "view_flowdecision",
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


# -- rows as an operator action finds them ----------------------------------------


# Lower case: a namespace of factories, imported as ``factories``.
class actions:
    """
    The rows above with the defaults of the operator-action tests.

    Every call makes what it is not given: an execution its own instance
    and definition, a definition its own revision (``manifest`` adds keys).
    An execution is at version 3 and was last updated an hour ago (a stale
    recovery candidate, too young for a purge), created ten minutes before
    that; a step starts with its execution and holds a small checkpoint.
    Instances were created 400 days ago; a held one is held by
    ``user:keeper`` for AUDIT.
    """

    VIEW = VIEW
    ago = staticmethod(ago)
    user = staticmethod(user)
    viewer = staticmethod(viewer)
    operator = staticmethod(operator)
    administrator = staticmethod(administrator)
    recovery_decision = staticmethod(recovery_decision)

    @staticmethod
    def definition(job_name: str = "nightly-import", **manifest: Any) -> JobDefinition:
        revision = f"action-{next(_sequence)}"
        return definition(
            job_name,
            revision,
            manifest={"format": 1, "job": job_name, "revision": revision, **manifest},
            registered_at=ago(days=400),
        )

    @staticmethod
    def instance(
        job_name: str = "nightly-import", *, held: bool = False
    ) -> JobInstance:
        run_date = digests.JobParameter.string(f"d{next(_sequence)}")
        return instance(
            job_name,
            {"run_date": run_date},
            created_at=ago(days=400),
            hold=("user:keeper", "AUDIT") if held else None,
        )

    @staticmethod
    def execution(
        status: str = "STARTED",
        *,
        job_instance: JobInstance | None = None,
        job_definition: JobDefinition | None = None,
        attempt: int | None = None,
        version: int = 3,
        updated_at: datetime | None = None,
        owner_token: bytes | None = None,
        failure: tuple[str, int] | None = None,
        restart_of: JobExecution | None = None,
    ) -> JobExecution:
        job_instance = job_instance or actions.instance()
        updated = updated_at or ago(hours=1)
        if failure is None and status == "FAILED":
            failure = ("USER_COMPONENT", 7)
        return execution(
            job_instance,
            status,
            job_definition=job_definition or actions.definition(job_instance.job_name),
            created_at=updated - timedelta(minutes=10),
            updated_at=updated,
            attempt=attempt,
            restart_of=restart_of,
            exit_code="UNKNOWN",
            owner_token=owner_token,
            version=version,
            failure=failure,
        )

    @staticmethod
    def step(
        job_execution: JobExecution, status: str = "STARTED", *, name: str | None = None
    ) -> StepExecution:
        return step(
            job_execution,
            name or f"step-{next(_sequence)}",
            status,
            checkpoint_schema="m5.upgrade.position",
            checkpoint_payload={"offset": 18},
            created_at=job_execution.created_at,
            duration=timedelta(0),
        )

    @staticmethod
    def partition(
        parent: StepExecution,
        *,
        worker: StepExecution | None = None,
        status: str = "COMPLETED",
    ) -> StepPartition:
        ordinal = next(_sequence)
        return partition(parent, f"p-{ordinal}", ordinal, status, worker=worker)

    @staticmethod
    def flow_decision(
        job_execution: JobExecution,
        *,
        source: StepExecution | None = None,
        reused: FlowDecision | None = None,
    ) -> FlowDecision:
        sequence = next(_sequence)
        return flow_decision(
            job_execution,
            sequence,
            f"node-{sequence}",
            terminal="COMPLETE",
            source_step=source,
            reused=reused,
        )

    @staticmethod
    def operator_request(
        *,
        job_execution: JobExecution | None = None,
        job_instance: JobInstance | None = None,
    ) -> OperatorRequest:
        """A rejected request made long ago: a RESTART without an execution."""
        return operator_request(
            job_execution,
            "RESTART" if job_execution is None else "STOP",
            job_instance=job_instance,
            rejection="EXECUTION_ALREADY_ACTIVE",
            requested_at=ago(days=300),
        )


def alert_channel(owner: User, url: str = "https://hooks.example.org/batch") -> Any:
    """Create a webhook alert channel of ``owner`` (batchboard's own state)."""
    from batchboard.alerts import channels
    from batchboard.alerts.models import Channel

    return Channel.objects.create(
        name="hook",
        kind="WEBHOOK",
        target=url,
        secret="webhook-secret",
        shown_target=channels.shown("WEBHOOK", url),
        owner=owner,
        created_at=timezone.now(),
    )


def saved_view(
    owner: User,
    name: str = "failed runs",
    query: str = "status=FAILED",
    group: Any = None,
) -> Any:
    """Save the executions list under ``query`` as ``owner``'s view ``name``."""
    from batchboard.personal.models import SavedView

    moment = timezone.now()
    return SavedView.objects.create(
        owner_id=owner.pk,
        name=name,
        url_name="executions",
        query=query,
        group_id=getattr(group, "pk", None),
        created_at=moment,
        updated_at=moment,
    )


def retention_policy(owner: User, job_name: str = "", **fields: Any) -> Any:
    """Create a notifying retention policy of ``owner`` (batchboard's own state)."""
    from batchboard.alerts.models import RetentionPolicy

    values: dict[str, Any] = {
        "name": "keep-90-days",
        "statuses": "COMPLETED,FAILED,STOPPED,ABANDONED",
        "min_age_seconds": 90 * 24 * 3600,
        "batch": 1000,
        "period_hours": 24,
        **fields,
    }
    return RetentionPolicy.objects.create(
        owner=owner,
        job_name=job_name,
        next_due=timezone.now(),
        created_at=timezone.now(),
        **values,
    )
