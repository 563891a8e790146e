from __future__ import annotations

import json

import pytest

from batchboard import digests
from batchboard.models import ComponentState, StepExecution
from batchboard.repository import (
    ChunkCounts,
    ComponentStateInput,
    Definition,
    DuplicateStepExecution,
    IllegalTransition,
    InvalidArgument,
    InvalidDefinitionUpgrade,
    JobRepository,
    ManualClock,
    RestartStateNotFound,
    StaleVersion,
    StartLimitExceeded,
    StatePayload,
    StepExecutionNotFound,
    StepNotStarted,
)
from tests.repository.helpers import FAILURE, drive_execution
from tests.repository.test_definitions import manifest

pytestmark = pytest.mark.django_db


def started_step(repo: JobRepository, name: str = "load", job: str = "j"):  # type: ignore[no-untyped-def]
    execution = drive_execution(repo, repo.launch(job), "STARTED")
    step = repo.create_step(execution.pk, name)
    return execution, repo.transition_step(step.pk, 0, "STARTED")


def commit(repo: JobRepository, step, offset: int, **counts: int):  # type: ignore[no-untyped-def]
    return repo.commit_chunk(
        step.pk,
        step.version,
        job_execution_id=step.job_execution_id,
        counts=ChunkCounts(**counts),
        checkpoint=StatePayload("load.position", {"offset": offset}),
        context=StatePayload("load.context", {"seen": offset}, schema_version=2),
    )


def test_first_attempt_step_has_empty_state(repo: JobRepository) -> None:
    execution = repo.launch("j")
    step = repo.create_step(execution.pk, "load")
    assert (step.status, step.exit_code, step.step_logical_id) == (
        "STARTING",
        "UNKNOWN",
        "load",
    )
    assert (step.checkpoint_schema, step.checkpoint_payload) == (
        "oxide_batch.empty.v1",
        {},
    )
    assert step.fault_state_payload == digests.EMPTY_FAULT_STATE
    assert bytes(step.fault_state_checksum).hex() == (
        "a491114819e0d3bd8b7ca004dc0636f95b45e2fcb1a67ddb5726beaea12f9922"
    )
    assert step.read_count == step.commit_count == step.version == 0
    with pytest.raises(DuplicateStepExecution):
        repo.create_step(execution.pk, "load")


def test_chunk_commit_accumulates_and_replaces_state(
    repo: JobRepository, clock: ManualClock
) -> None:
    _, step = started_step(repo)
    step = commit(repo, step, 10, read=10, processed=10, written=9, filtered=1)
    now = clock.advance(seconds=1)
    step = commit(repo, step, 20, read=10, processed=10, written=10, write_skips=1)
    stored = StepExecution.objects.get(pk=step.pk)
    assert (stored.read_count, stored.write_count, stored.filter_count) == (20, 19, 1)
    assert (stored.commit_count, stored.write_skip_count, stored.version) == (2, 1, 3)
    assert stored.checkpoint_payload == {"offset": 20}
    assert (stored.checkpoint_schema, stored.context_schema_version) == (
        "load.position",
        2,
    )
    assert stored.updated_at == now


def test_chunk_commit_guards(repo: JobRepository) -> None:
    execution, step = started_step(repo)
    with pytest.raises(StaleVersion):
        repo.commit_chunk(
            step.pk,
            0,
            job_execution_id=execution.pk,
            counts=ChunkCounts(),
            checkpoint=StatePayload("s", {}),
        )
    with pytest.raises(StepExecutionNotFound):
        repo.commit_chunk(
            step.pk,
            step.version,
            job_execution_id=execution.pk + 1000,
            counts=ChunkCounts(),
            checkpoint=StatePayload("s", {}),
        )
    with pytest.raises(StepExecutionNotFound):
        repo.commit_chunk(
            10**9,
            0,
            job_execution_id=execution.pk,
            counts=ChunkCounts(),
            checkpoint=StatePayload("s", {}),
        )
    with pytest.raises(InvalidArgument):
        repo.commit_chunk(
            step.pk,
            step.version,
            job_execution_id=execution.pk,
            counts=ChunkCounts(read=-1),
            checkpoint=StatePayload("s", {}),
        )
    with pytest.raises(InvalidArgument):
        repo.commit_chunk(
            step.pk,
            step.version,
            job_execution_id=execution.pk,
            counts=ChunkCounts(),
            checkpoint=StatePayload("s", ["not", "an", "object"]),
        )  # type: ignore[arg-type]
    stopping = repo.transition_step(step.pk, step.version, "STOPPING")
    with pytest.raises(StepNotStarted):
        repo.commit_chunk(
            step.pk,
            stopping.version,
            job_execution_id=execution.pk,
            counts=ChunkCounts(),
            checkpoint=StatePayload("s", {}),
        )
    assert StepExecution.objects.get(pk=step.pk).commit_count == 0


def test_step_transitions_follow_the_table(repo: JobRepository) -> None:
    _, step = started_step(repo)
    step = repo.transition_step(step.pk, step.version, "FAILED", failure=FAILURE)
    assert step.ended_at is not None and step.failure_id == 7
    with pytest.raises(IllegalTransition):
        repo.transition_step(step.pk, step.version, "COMPLETED")
    enriched = repo.enrich_step_exit_status(step.pk, step.version, "FAILED_READ")
    assert (enriched.exit_code, enriched.version) == ("FAILED_READ", step.version + 1)
    with pytest.raises(StaleVersion):
        repo.enrich_step_exit_status(step.pk, step.version, "X")


def test_retry_reservation(repo: JobRepository) -> None:
    execution, step = started_step(repo)
    fault = {"checkpoint": "ab" * 32, "entries": [{"phase": "write", "ordinal": 1}]}
    reserved = repo.reserve_retry(
        step.pk,
        step.version,
        job_execution_id=execution.pk,
        phase="write",
        fault_state=fault,
    )
    assert (reserved.write_retry_count, reserved.rollback_count) == (1, 1)
    assert reserved.version == step.version + 1
    assert reserved.fault_state_payload == fault
    assert bytes(reserved.fault_state_checksum) == digests.fault_state_checksum(fault)
    # The next chunk commit clears the fault state.
    committed = commit(repo, reserved, 1, read=1)
    assert committed.fault_state_payload == digests.EMPTY_FAULT_STATE
    assert committed.write_retry_count == 1
    with pytest.raises(InvalidArgument):
        repo.reserve_retry(
            step.pk,
            committed.version,
            job_execution_id=execution.pk,
            phase="write",
            fault_state={"entries": []},
        )
    with pytest.raises(InvalidArgument):
        repo.reserve_retry(
            step.pk,
            committed.version,
            job_execution_id=execution.pk,
            phase="commit",
            fault_state=fault,
        )  # type: ignore[arg-type]
    with pytest.raises(StaleVersion):
        repo.reserve_retry(
            step.pk, 0, job_execution_id=execution.pk, phase="read", fault_state=fault
        )


def component(offset: int) -> ComponentStateInput:
    return ComponentStateInput(
        namespace="reader",
        schema_id="reader.cursor",
        codec_id="json",
        payload=json.dumps({"offset": offset}).encode(),
    )


def test_component_state_upserts_with_the_chunk(repo: JobRepository) -> None:
    execution, step = started_step(repo)
    for offset in (5, 10):
        step = repo.commit_chunk(
            step.pk,
            step.version,
            job_execution_id=execution.pk,
            counts=ChunkCounts(read=5),
            checkpoint=StatePayload("s", {"o": offset}),
            component_states=[component(offset)],
        )
    state = ComponentState.objects.get(step_execution_id=step.pk)
    assert (state.version, state.payload_kind, bytes(state.payload)) == (
        1,
        "INLINE",
        b'{"offset": 10}',
    )
    assert bytes(state.checksum) == digests.component_state_checksum(
        namespace="reader",
        schema_id="reader.cursor",
        schema_version=1,
        codec_id="json",
        codec_version=1,
        payload=b'{"offset": 10}',
    )
    with pytest.raises(InvalidArgument):
        ComponentStateInput("n", "s", "c", payload=b"[1]").columns()
    with pytest.raises(InvalidArgument):
        ComponentStateInput("n", "s", "c").columns()
    external = ComponentStateInput(
        "n", "s", "c", external_content_id=b"\x01" * 32, external_encoded_len=9
    ).columns()
    assert external["payload_kind"] == "EXTERNAL" and external["payload"] is None


def test_restart_carries_the_previous_step_state(repo: JobRepository) -> None:
    execution, step = started_step(repo)
    step = commit(repo, step, 30, read=30, written=30)
    repo.commit_chunk(
        step.pk,
        step.version,
        job_execution_id=execution.pk,
        counts=ChunkCounts(read=1),
        checkpoint=StatePayload("load.position", {"offset": 31}),
        component_states=[component(31)],
    )
    step = repo.get_step(step.pk)
    repo.transition_step(step.pk, step.version, "FAILED", failure=FAILURE)
    repo.transition_execution(
        execution.pk, execution.version, "FAILED", failure=FAILURE
    )
    second = repo.launch("j")
    restarted = repo.create_step(second.pk, "load")
    assert (restarted.status, restarted.version, restarted.exit_code) == (
        "STARTING",
        0,
        "UNKNOWN",
    )
    assert (restarted.read_count, restarted.commit_count) == (31, 2)
    assert restarted.checkpoint_payload == {"offset": 31}
    assert restarted.context_schema == "load.context"
    copied = ComponentState.objects.get(step_execution_id=restarted.pk)
    assert (copied.version, bytes(copied.payload)) == (0, b'{"offset": 31}')
    with pytest.raises(RestartStateNotFound):
        repo.create_step(second.pk, "report")


def test_upgraded_restart_follows_the_step_mapping(repo: JobRepository) -> None:
    v1 = Definition("v1", manifest("load", job="j"))
    v2 = Definition("v2", manifest("import", job="j"))
    first = drive_execution(repo, repo.launch("j", definition=v1), "STARTED")
    step = repo.transition_step(repo.create_step(first.pk, "load").pk, 0, "STARTED")
    commit(repo, step, 7, read=7)
    repo.transition_execution(first.pk, first.version, "FAILED", failure=FAILURE)
    one, two = (
        repo.register_definition("j", v1).pk,
        repo.register_definition("j", v2).pk,
    )
    repo.register_upgrade(
        one, two, upgrade_key="rename", step_mapping={"load": "import"}
    )
    second = repo.launch("j", definition=v2)
    imported = repo.create_step(second.pk, "import")
    assert imported.checkpoint_payload == {"offset": 7}
    with pytest.raises(InvalidDefinitionUpgrade):
        repo.create_step(second.pk, "load")


def test_flow_steps_count_starts_across_attempts(repo: JobRepository) -> None:
    execution = drive_execution(repo, repo.launch("j"), "STARTED")
    first = repo.create_flow_step(execution.pk, "load#1", "load", start_limit=2)
    assert first.step_logical_id == "load"
    first = repo.transition_step(first.pk, 0, "STARTED")
    commit(repo, first, 3, read=3)
    repo.transition_step(first.pk, first.version + 1, "FAILED", failure=FAILURE)
    repo.transition_execution(
        execution.pk, execution.version, "FAILED", failure=FAILURE
    )
    second = repo.launch("j")
    again = repo.create_flow_step(second.pk, "load#2", "load", start_limit=2)
    assert again.checkpoint_payload == {"offset": 3}
    with pytest.raises(StartLimitExceeded) as caught:
        repo.create_flow_step(second.pk, "load#3", "load", start_limit=2)
    assert (caught.value.node_id, caught.value.limit) == ("load", 2)
    with pytest.raises(DuplicateStepExecution):
        repo.create_flow_step(second.pk, "other", "load")
