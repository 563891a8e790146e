"""A small, valid history with a secret in every payload column."""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass

from batchboard import schema
from batchboard.models import (
    ComponentState,
    DefinitionUpgrade,
    FlowDecision,
    JobDefinition,
    JobExecution,
    JobInstance,
    OperatorRequest,
    RecoveryDecision,
    RetentionAction,
    SchemaVersion,
    StepExecution,
    StepPartition,
)

# Planted in every payload, manifest and parameter value; no page may show it.
SECRET = "secret-payload-7f3a9c"
OWNER_TOKEN = bytes.fromhex("5ec2e7000000000000000000000a11ce")
T0 = dt.datetime(2026, 11, 30, 8, 0, tzinfo=dt.UTC)


def _digest(label: str) -> bytes:
    return hashlib.sha256(label.encode()).digest()


@dataclass
class History:
    definition: JobDefinition
    upgraded: JobDefinition
    instance: JobInstance
    failed: JobExecution
    restart: JobExecution
    step: StepExecution
    partition: StepPartition
    component: ComponentState
    recovery: RecoveryDecision
    flow: FlowDecision
    request: OperatorRequest
    retention: RetentionAction

    def objects(self) -> list[object]:
        """Return one row of every registered model, the schema version first."""
        return [
            SchemaVersion.objects.get(),
            self.definition,
            self.instance,
            self.restart,
            self.step,
            self.recovery,
            self.flow,
            self.request,
            self.retention,
            self.partition,
            self.component,
        ]


def _descriptor(prefix: str) -> dict[str, object]:
    return {
        f"{prefix}_format": 1,
        f"{prefix}_schema": "batchboard.tests.v1",
        f"{prefix}_schema_version": 1,
        f"{prefix}_payload": {"note": SECRET},
    }


def create_history() -> History:
    """Create a failed execution, its restart across an upgrade, and its trail."""
    manifest = {"steps": [{"id": "load", "pattern": SECRET}]}
    definition = JobDefinition.objects.create(
        job_name="nightly_export",
        definition_revision="r1",
        manifest_format=1,
        manifest_digest=_digest("r1"),
        manifest=manifest,
        registered_at=T0,
    )
    upgraded = JobDefinition.objects.create(
        job_name="nightly_export",
        definition_revision="r2",
        manifest_format=1,
        manifest_digest=_digest("r2"),
        manifest=manifest,
        registered_at=T0,
    )
    DefinitionUpgrade.objects.create(
        from_definition=definition,
        to_definition=upgraded,
        upgrade_key="rename-load",
        step_mapping={"load": "load"},
        registered_at=T0,
    )
    parameters = {
        "region": {"type": "string", "identifying": True, "value": SECRET},
        "run_date": {"type": "i64", "identifying": True, "value": 20261130},
    }
    instance = JobInstance.objects.create(
        job_name="nightly_export",
        instance_key=_digest("instance"),
        identifying_parameters=parameters,
        created_at=T0,
        hold_actor="ops:alice",
        hold_reason="AUDIT",
        hold_placed_at=T0,
    )
    failed = JobExecution.objects.create(
        job_instance=instance,
        definition=definition,
        attempt=1,
        status="FAILED",
        exit_code="FAILED",
        parameters=parameters,
        failure_category="USER_COMPONENT",
        failure_id=1,
        created_at=T0,
        started_at=T0,
        ended_at=T0 + dt.timedelta(minutes=3),
        updated_at=T0 + dt.timedelta(minutes=3),
        **_descriptor("context"),
    )
    restart = JobExecution.objects.create(
        job_instance=instance,
        definition=upgraded,
        upgrade_from_definition=definition,
        restart_of_execution=failed,
        attempt=2,
        status="STARTED",
        exit_code="UNKNOWN",
        parameters=parameters,
        created_at=T0 + dt.timedelta(minutes=5),
        started_at=T0 + dt.timedelta(minutes=5),
        updated_at=T0 + dt.timedelta(minutes=6),
        owner_token=OWNER_TOKEN,
        **_descriptor("context"),
    )
    step = StepExecution.objects.create(
        job_execution=restart,
        step_name="load",
        step_logical_id="load",
        status="STARTED",
        exit_code="UNKNOWN",
        read_count=120,
        write_count=118,
        read_skip_count=2,
        created_at=T0 + dt.timedelta(minutes=5),
        started_at=T0 + dt.timedelta(minutes=5),
        updated_at=T0 + dt.timedelta(minutes=6),
        fault_state_payload={"checkpoint": "0" * 64, "entries": [SECRET]},
        fault_state_checksum=bytes.fromhex(schema.EMPTY_FAULT_STATE_CHECKSUM),
        **_descriptor("checkpoint"),
        **_descriptor("context"),
    )
    partition = StepPartition.objects.create(
        step_execution=step,
        partition_key="partition-0",
        partition_ordinal=1,
        status="STARTING",
        context_checksum=_digest("partition"),
        **_descriptor("context"),
    )
    component = ComponentState.objects.create(
        step_execution=step,
        namespace="reader",
        schema_id="batchboard.tests.reader",
        schema_version=1,
        codec_id="json",
        codec_version=1,
        checksum_algorithm=1,
        checksum_algorithm_version=1,
        checksum=_digest("component"),
        payload_kind="INLINE",
        payload=('{"cursor": "' + SECRET + '"}').encode(),
        updated_at=T0 + dt.timedelta(minutes=6),
    )
    recovery = RecoveryDecision.objects.create(
        job_execution=failed,
        execution_version=0,
        prior_status="UNKNOWN",
        resulting_status="FAILED",
        reason_code="STALE_OWNER",
        operator_reference="ticket-42",
        evidence_digest=_digest("evidence"),
        decided_at=T0 + dt.timedelta(minutes=4),
    )
    flow = FlowDecision.objects.create(
        job_execution=restart,
        source_step_execution=step,
        sequence=1,
        source_node_id="load",
        observed_outcome="COMPLETED",
        terminal_kind="COMPLETE",
        transition_kind="STEP_EXIT",
        plan_fingerprint=_digest("plan"),
        input_digest=_digest("input"),
        decided_at=T0 + dt.timedelta(minutes=6),
    )
    request = OperatorRequest.objects.create(
        job_instance=instance,
        job_execution=failed,
        action="RESTART",
        authorization_class="LIFECYCLE",
        operation_id="op-1",
        actor_ref="ops:alice",
        request_digest=_digest("request"),
        outcome_class="REJECTED",
        rejection_code="EXECUTION_ALREADY_ACTIVE",
        requested_at=T0 + dt.timedelta(minutes=7),
    )
    retention = RetentionAction.objects.create(
        job_instance=instance,
        action="HOLD",
        operation_id="hold-1",
        actor_ref="ops:alice",
        reason_code="AUDIT",
        outcome_class="APPLIED",
        applied_at=T0,
    )
    return History(
        definition=definition,
        upgraded=upgraded,
        instance=instance,
        failed=failed,
        restart=restart,
        step=step,
        partition=partition,
        component=component,
        recovery=recovery,
        flow=flow,
        request=request,
        retention=retention,
    )
