"""The database itself rejects rows that break schema version 4."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
from django.db import IntegrityError, transaction

from batchboard.models import (
    ComponentState,
    FlowDecision,
    JobDefinition,
    JobExecution,
    JobInstance,
    OperatorRequest,
    RetentionAction,
    StepPartition,
)
from tests.site.history import T0, History, create_history

pytestmark = pytest.mark.django_db


@pytest.fixture
def history() -> History:
    return create_history()


def _definition(**overrides: Any) -> Callable[[History], object]:
    def create(history: History) -> object:
        values: dict[str, Any] = {
            "job_name": "other_job",
            "definition_revision": "r1",
            "manifest_format": 1,
            "manifest_digest": b"\x01" * 32,
            "manifest": {},
            "registered_at": T0,
        }
        return JobDefinition.objects.create(**{**values, **overrides})

    return create


def _execution(**overrides: Any) -> Callable[[History], object]:
    def create(history: History) -> object:
        values: dict[str, Any] = {
            "job_instance": history.instance,
            "definition": history.definition,
            "attempt": 3,
            "status": "COMPLETED",
            "exit_code": "COMPLETED",
            "parameters": {},
            "context_format": 1,
            "context_schema": "oxide_batch.empty.v1",
            "context_schema_version": 1,
            "context_payload": {},
            "created_at": T0,
            "started_at": T0,
            "ended_at": T0,
            "updated_at": T0,
        }
        return JobExecution.objects.create(**{**values, **overrides})

    return create


def _instance(**overrides: Any) -> Callable[[History], object]:
    def create(history: History) -> object:
        values: dict[str, Any] = {
            "job_name": "other_job",
            "instance_key": b"\x02" * 32,
            "identifying_parameters": {},
            "created_at": T0,
        }
        return JobInstance.objects.create(**{**values, **overrides})

    return create


def _partition(**overrides: Any) -> Callable[[History], object]:
    def create(history: History) -> object:
        values: dict[str, Any] = {
            "step_execution": history.step,
            "partition_key": "partition-9",
            "partition_ordinal": 9,
            "status": "STARTING",
            "context_format": 1,
            "context_schema": "s",
            "context_schema_version": 1,
            "context_payload": {},
            "context_checksum": b"\x03" * 32,
        }
        return StepPartition.objects.create(**{**values, **overrides})

    return create


def _flow(**overrides: Any) -> Callable[[History], object]:
    def create(history: History) -> object:
        values: dict[str, Any] = {
            "job_execution": history.restart,
            "sequence": 2,
            "source_node_id": "export",
            "observed_outcome": "COMPLETED",
            "transition_kind": "STEP_EXIT",
            "plan_fingerprint": b"\x04" * 32,
            "input_digest": b"\x05" * 32,
            "decided_at": T0,
        }
        return FlowDecision.objects.create(**{**values, **overrides})

    return create


def _request(**overrides: Any) -> Callable[[History], object]:
    def create(history: History) -> object:
        values: dict[str, Any] = {
            "action": "STOP",
            "authorization_class": "LIFECYCLE",
            "operation_id": "op-9",
            "actor_ref": "ops:bob",
            "request_digest": b"\x06" * 32,
            "outcome_class": "APPLIED",
            "requested_at": T0,
        }
        return OperatorRequest.objects.create(**{**values, **overrides})

    return create


def _retention(**overrides: Any) -> Callable[[History], object]:
    def create(history: History) -> object:
        values: dict[str, Any] = {
            "action": "APPLY_PURGE",
            "operation_id": "purge-9",
            "actor_ref": "ops:bob",
            "reason_code": "AGE",
            "plan_digest": b"\x07" * 32,
            "batch_bound": 100,
            "outcome_class": "APPLIED",
            "applied_at": T0,
        }
        return RetentionAction.objects.create(**{**values, **overrides})

    return create


def _component(**overrides: Any) -> Callable[[History], object]:
    def create(history: History) -> object:
        values: dict[str, Any] = {
            "step_execution": history.step,
            "namespace": "writer",
            "schema_id": "s",
            "schema_version": 1,
            "codec_id": "json",
            "codec_version": 1,
            "checksum_algorithm": 1,
            "checksum_algorithm_version": 1,
            "checksum": b"\x08" * 32,
            "payload_kind": "INLINE",
            "payload": b"{}",
            "updated_at": T0,
        }
        return ComponentState.objects.create(**{**values, **overrides})

    return create


VALID = {
    "definition": _definition(),
    "execution": _execution(),
    "instance": _instance(),
    "partition": _partition(),
    "flow": _flow(terminal_kind="COMPLETE"),
    "request": _request(),
    "retention": _retention(),
    "component": _component(),
}

BAD = {
    # 65 two-byte characters: 130 bytes, over the 128-byte limit.
    "name over 128 bytes": _definition(job_name="é" * 65),
    "empty name": _definition(job_name=""),
    "digest of 31 bytes": _definition(manifest_digest=b"\x01" * 31),
    "manifest not an object": _definition(manifest=["steps"]),
    "manifest format 0": _definition(manifest_format=0),
    "status outside the set": _execution(status="RUNNING"),
    "finished without ended_at": _execution(ended_at=None),
    "unresolved with ended_at": _execution(status="STARTED"),
    "ended before started": _execution(ended_at=T0 - dt.timedelta(seconds=1)),
    "failure category without id": _execution(failure_category="TIMEOUT"),
    "second unresolved execution": _execution(
        status="STARTING", started_at=None, ended_at=None
    ),
    "duplicate attempt": _execution(attempt=1),
    "attempt 0": _execution(attempt=0),
    "owner token of 8 bytes": _execution(owner_token=b"\x00" * 8),
    "half a hold": _instance(hold_actor="ops:bob"),
    "partition context over 4096 bytes": _partition(
        context_payload={"pad": "x" * 5000}
    ),
    "partition ordinal 0": _partition(partition_ordinal=0),
    "flow with target and terminal": _flow(
        target_node_id="next", terminal_kind="COMPLETE"
    ),
    "flow with neither target nor terminal": _flow(),
    "rejection code on an applied request": _request(rejection_code="INVALID_STATE"),
    "rejected request without a code": _request(outcome_class="REJECTED"),
    "unstorable rejection code": _request(
        outcome_class="REJECTED", rejection_code="UNSUPPORTED_ACTION"
    ),
    "purge without plan digest": _retention(plan_digest=None),
    "purge batch over 1000": _retention(batch_bound=1001),
    "hold with a batch bound": _retention(action="HOLD", plan_digest=None),
    "inline component without payload": _component(payload=None),
    "component payload not an object": _component(payload=b"[1]"),
    "external component with payload": _component(
        payload_kind="EXTERNAL",
        external_content_id=b"\x09" * 32,
        external_encoded_len=3,
    ),
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_row_is_accepted(name: str, history: History) -> None:
    """The baseline of each bad row is itself acceptable."""
    with transaction.atomic():
        VALID[name](history)


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_row_is_rejected(name: str, history: History) -> None:
    """The database refuses the row; nothing relies on Python validation."""
    with pytest.raises(IntegrityError), transaction.atomic():
        BAD[name](history)
