"""
Step executions: creation with restart carry-over, transitions, chunk
commits and retry reservations (spec 7.4).

A step of a restarted attempt starts from the state its predecessor
committed: counters, checkpoint, context, retry and skip counters, fault
state and component states. The chunk commit is the one place progress
becomes durable; it is a compare-and-swap that also requires the step to be
STARTED, so a step that was stopped or failed meanwhile commits nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from batchboard import digests
from batchboard.models import (
    ComponentState,
    DefinitionUpgrade,
    JobExecution,
    JobInstance,
    StepExecution,
)
from batchboard.repository.cas import cas_transition, check_version
from batchboard.repository.errors import (
    DuplicateStepExecution,
    InvalidArgument,
    InvalidDefinitionUpgrade,
    RestartStateNotFound,
    StartLimitExceeded,
    StepExecutionNotFound,
    StepNotStarted,
)
from batchboard.repository.executions import EMPTY_CONTEXT_SCHEMA, ExecutionsMixin
from batchboard.repository.lifecycle import STARTED, STARTING, Failure
from batchboard.repository.validation import (
    PAYLOAD_LIMIT,
    check_count,
    check_name,
    check_payload,
)
from batchboard.schema import FAULT_COUNTERS, ITEM_COUNTERS
from batchboard.vocabulary import MAX_BIGINT

DEFAULT_START_LIMIT = 4_294_967_295
FAULT_STATE_SCHEMA = "oxide-batch.fault-state"
FAULT_STATE_LIMIT = 65_536
# Everything a restarted step inherits from its source step.
CARRIED_FIELDS = (
    *ITEM_COUNTERS,
    "checkpoint_format",
    "checkpoint_schema",
    "checkpoint_schema_version",
    "checkpoint_payload",
    "context_format",
    "context_schema",
    "context_schema_version",
    "context_payload",
    *FAULT_COUNTERS,
    "fault_state_format",
    "fault_state_schema",
    "fault_state_schema_version",
    "fault_state_payload",
    "fault_state_checksum",
)


@dataclass(frozen=True)
class StatePayload:
    """
    A versioned JSON state: a checkpoint or an execution context.

    ``schema`` names the payload's layout (1..128 bytes) and
    ``schema_version`` its revision; ``payload`` is a JSON object of at most
    1 MiB. The payload is never logged or displayed.
    """

    schema: str
    payload: Mapping[str, Any] = field(repr=False)
    schema_version: int = 1
    format_version: int = 1

    def validated(self, what: str) -> StatePayload:
        check_name(self.schema, f"{what} schema")
        # Checked whatever the annotations say: callers may be untyped.
        numbers: tuple[object, ...] = (self.schema_version, self.format_version)
        for number in numbers:
            if isinstance(number, bool) or not isinstance(number, int) or number < 1:
                raise InvalidArgument(f"the {what} versions are positive integers")
        if self.format_version > 32767 or self.schema_version > 2**31 - 1:
            raise InvalidArgument(f"the {what} versions are out of range")
        return StatePayload(
            self.schema,
            check_payload(self.payload, what),
            self.schema_version,
            self.format_version,
        )

    def columns(self, prefix: str) -> dict[str, Any]:
        """Return the state as the columns ``<prefix>_format``, ``_schema``, ..."""
        return {
            f"{prefix}_format": self.format_version,
            f"{prefix}_schema": self.schema,
            f"{prefix}_schema_version": self.schema_version,
            f"{prefix}_payload": dict(self.payload),
        }


#: The checkpoint and context of a step that has committed nothing (spec 7.3).
EMPTY_STATE = StatePayload(EMPTY_CONTEXT_SCHEMA, {})


@dataclass(frozen=True)
class ComponentStateInput:
    """
    One component-state row to upsert with a chunk commit.

    Give ``payload`` (UTF-8 JSON object bytes) for INLINE state, or
    ``external_content_id`` (32 bytes) and ``external_encoded_len`` for
    EXTERNAL state; the checksum is computed from these fields.
    """

    namespace: str
    schema_id: str
    codec_id: str
    schema_version: int = 1
    codec_version: int = 1
    payload: bytes | None = field(default=None, repr=False)
    external_content_id: bytes | None = None
    external_encoded_len: int | None = None

    def columns(self) -> dict[str, Any]:
        for name in (self.namespace, self.schema_id, self.codec_id):
            check_name(name, "component-state name")
        inline = self.payload is not None
        if inline == (self.external_content_id is not None):
            raise InvalidArgument("component state is either inline or external")
        if inline:
            assert self.payload is not None
            if not 1 <= len(self.payload) <= PAYLOAD_LIMIT:
                raise InvalidArgument("inline component state is 1 byte to 1 MiB")
            try:
                parsed = json.loads(self.payload.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                parsed = None
            if not isinstance(parsed, dict):
                raise InvalidArgument("inline component state must be a JSON object")
        else:
            if len(self.external_content_id or b"") != 32:
                raise InvalidArgument("an external content id is 32 bytes")
            check_count(self.external_encoded_len, "external encoded length")
        return {
            "schema_id": self.schema_id,
            "schema_version": self.schema_version,
            "codec_id": self.codec_id,
            "codec_version": self.codec_version,
            "checksum_algorithm": 1,
            "checksum_algorithm_version": 1,
            "checksum": digests.component_state_checksum(
                namespace=self.namespace,
                schema_id=self.schema_id,
                schema_version=self.schema_version,
                codec_id=self.codec_id,
                codec_version=self.codec_version,
                payload=self.payload,
                external_content_id=self.external_content_id,
                external_encoded_len=self.external_encoded_len,
            ),
            "payload_kind": "INLINE" if inline else "EXTERNAL",
            "payload": self.payload,
            "external_content_id": self.external_content_id,
            "external_encoded_len": self.external_encoded_len,
        }


@dataclass(frozen=True)
class ChunkCounts:
    """What one chunk read, processed, wrote, filtered and skipped."""

    read: int = 0
    processed: int = 0
    written: int = 0
    filtered: int = 0
    read_skips: int = 0
    process_skips: int = 0
    write_skips: int = 0
    no_rollbacks: int = 0


def fault_state_columns(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Return the fault-state columns recording ``payload`` and its checksum."""
    return {
        "fault_state_format": 1,
        "fault_state_schema": FAULT_STATE_SCHEMA,
        "fault_state_schema_version": 1,
        "fault_state_payload": dict(payload),
        "fault_state_checksum": digests.fault_state_checksum(payload),
    }


def check_fault_state(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Return a fault-state payload if it has the envelope's shape and size."""
    value = check_payload(payload, "fault state", FAULT_STATE_LIMIT)
    checkpoint = value.get("checkpoint")
    if (
        set(value) != {"checkpoint", "entries"}
        or not isinstance(checkpoint, str)
        or len(checkpoint) != 64
        or any(ch not in "0123456789abcdef" for ch in checkpoint)
        or not isinstance(value.get("entries"), list)
    ):
        raise InvalidArgument(
            "a fault state is {checkpoint: 64 hex digits, entries: [...]}"
        )
    return value


class StepsMixin(ExecutionsMixin):
    # -- reading --------------------------------------------------------------

    def get_step(self, step_execution_id: int) -> StepExecution:
        """Return step ``step_execution_id`` or raise :class:`StepExecutionNotFound`."""
        return self._row(StepExecution, step_execution_id)

    def component_states(self, step_execution_id: int) -> list[ComponentState]:
        """Return a step's component-state rows in namespace order."""
        return list(
            ComponentState.objects.using(self.alias)
            .filter(step_execution_id=step_execution_id)
            .order_by("namespace")
        )

    # -- creation -------------------------------------------------------------

    def create_step(self, job_execution_id: int, step_name: str) -> StepExecution:
        """
        Create step ``step_name`` of an execution (logical id = name), STARTING.

        In a restarted attempt the state comes from the previous attempt's
        latest step of that name, or, after a definition upgrade, of the
        step the upgrade's mapping maps to it. Raises
        :class:`JobExecutionNotFound`, :class:`InvalidDefinitionUpgrade`
        (no mapping entry), :class:`RestartStateNotFound` (no source step)
        and :class:`DuplicateStepExecution`.
        """
        check_name(step_name, "step name")
        with self.unit():
            execution = self.get_execution(job_execution_id)
            source = None
            if execution.restart_of_execution_id is not None:
                source_name = step_name
                if execution.upgrade_from_definition_id is not None:
                    source_name = self._mapped_source(execution, step_name)
                source = (
                    StepExecution.objects.using(self.alias)
                    .filter(
                        job_execution_id=execution.restart_of_execution_id,
                        step_name=source_name,
                    )
                    .order_by("-id")
                    .first()
                )
                if source is None:
                    raise RestartStateNotFound(job_execution_id, step_name)
            return self._insert_step(execution, step_name, step_name, source)

    def create_flow_step(
        self,
        job_execution_id: int,
        step_name: str,
        node_id: str,
        *,
        start_limit: int = DEFAULT_START_LIMIT,
    ) -> StepExecution:
        """
        Create the step of flow node ``node_id``, enforcing its start limit.

        Every step of the instance with this logical id counts as a start,
        STARTING ones included; reaching ``start_limit`` raises
        :class:`StartLimitExceeded`. State is carried from the instance's
        latest step of the node (highest attempt, then id), if any.
        """
        check_name(step_name, "step name")
        check_name(node_id, "node id")
        if not 1 <= start_limit <= DEFAULT_START_LIMIT:
            raise InvalidArgument("a start limit is between 1 and 2^32-1")
        with self.unit():
            execution = self.get_execution(job_execution_id)
            # The instance lock serialises start counting across attempts.
            JobInstance.objects.using(self.alias).select_for_update().filter(
                pk=execution.job_instance_id
            ).values_list("id", flat=True).first()
            history = StepExecution.objects.using(self.alias).filter(
                job_execution__job_instance_id=execution.job_instance_id,
                step_logical_id=node_id,
            )
            if history.count() >= start_limit:
                raise StartLimitExceeded(
                    execution.job_instance_id, node_id, start_limit
                )
            source = history.order_by("-job_execution__attempt", "-id").first()
            return self._insert_step(execution, step_name, node_id, source)

    def _mapped_source(self, execution: JobExecution, step_name: str) -> str:
        edge = (
            DefinitionUpgrade.objects.using(self.alias)
            .filter(
                from_definition_id=execution.upgrade_from_definition_id,
                to_definition_id=execution.definition_id,
            )
            .first()
        )
        mapping = edge.step_mapping if edge is not None else {}
        for source, target in mapping.items():
            if target == step_name:
                return str(source)
        raise InvalidDefinitionUpgrade(
            f"the upgrade maps no step to {step_name!r}", execution_id=execution.pk
        )

    def _insert_step(
        self,
        execution: JobExecution,
        step_name: str,
        logical_id: str,
        source: StepExecution | None,
    ) -> StepExecution:
        now = self.now()
        values: dict[str, Any] = {
            "job_execution_id": execution.pk,
            "step_name": step_name,
            "step_logical_id": logical_id,
            "status": STARTING,
            "exit_code": "UNKNOWN",
            "created_at": now,
            "updated_at": now,
            "version": 0,
        }
        if source is None:
            values.update(
                **EMPTY_STATE.columns("checkpoint"),
                **EMPTY_STATE.columns("context"),
                **fault_state_columns(digests.EMPTY_FAULT_STATE),
            )
        else:
            values.update({name: getattr(source, name) for name in CARRIED_FIELDS})
            values["fault_state_checksum"] = bytes(source.fault_state_checksum)
        step = self._insert(StepExecution, **values)
        if step is None:
            raise DuplicateStepExecution(execution.pk, step_name)
        if source is not None:
            ComponentState.objects.using(self.alias).bulk_create(
                [
                    ComponentState(
                        step_execution_id=step.pk,
                        namespace=state.namespace,
                        schema_id=state.schema_id,
                        schema_version=state.schema_version,
                        codec_id=state.codec_id,
                        codec_version=state.codec_version,
                        checksum_algorithm=state.checksum_algorithm,
                        checksum_algorithm_version=state.checksum_algorithm_version,
                        checksum=bytes(state.checksum),
                        payload_kind=state.payload_kind,
                        payload=None if state.payload is None else bytes(state.payload),
                        external_content_id=None
                        if state.external_content_id is None
                        else bytes(state.external_content_id),
                        external_encoded_len=state.external_encoded_len,
                        version=0,
                        updated_at=state.updated_at,
                    )
                    for state in self.component_states(source.pk)
                ]
            )
        return step

    # -- lifecycle ------------------------------------------------------------

    def transition_step(
        self,
        step_execution_id: int,
        expected_version: int,
        to_status: str,
        *,
        at: datetime | None = None,
        failure: Failure | None = None,
    ) -> StepExecution:
        """Move a step by the rules of :meth:`transition_execution`."""
        with self.unit():
            return cas_transition(
                self.get_step(step_execution_id),
                using=self.alias,
                expected=expected_version,
                to_status=to_status,
                at=self.instant(at),
                failure=failure,
            )

    def enrich_step_exit_status(
        self, step_execution_id: int, expected_version: int, exit_code: str
    ) -> StepExecution:
        """Set a step's exit code (and nothing else) by compare-and-swap."""
        return self._set_exit_code(
            StepExecution, step_execution_id, expected_version, exit_code
        )

    # -- progress -------------------------------------------------------------

    def commit_chunk(
        self,
        step_execution_id: int,
        expected_version: int,
        *,
        job_execution_id: int,
        counts: ChunkCounts,
        checkpoint: StatePayload,
        context: StatePayload | None = None,
        component_states: Iterable[ComponentStateInput] = (),
    ) -> StepExecution:
        """
        Make one chunk durable: counters, checkpoint, context, state, version.

        Adds ``counts`` to the committed counters (``commit_count`` + 1),
        replaces the checkpoint and, when given, the context, resets the
        fault state to empty and upserts ``component_states``. The step must
        be STARTED at ``expected_version`` and belong to
        ``job_execution_id``; else :class:`StaleVersion`,
        :class:`StepNotStarted` or :class:`StepExecutionNotFound`, with
        nothing written.

        Call it inside your own ``transaction.atomic`` on the metadata
        alias to commit your chunk's writes with it.
        """
        checkpoint = checkpoint.validated("checkpoint")
        context = context.validated("context") if context is not None else None
        states = [(state.namespace, state.columns()) for state in component_states]
        deltas = {
            "read_count": counts.read,
            "processed_count": counts.processed,
            "write_count": counts.written,
            "filter_count": counts.filtered,
            "commit_count": 1,
            "read_skip_count": counts.read_skips,
            "process_skip_count": counts.process_skips,
            "write_skip_count": counts.write_skips,
            "no_rollback_count": counts.no_rollbacks,
        }
        for name, delta in deltas.items():
            check_count(delta, name)
        with self.unit():
            row = self._started_step(
                step_execution_id, expected_version, job_execution_id
            )
            values: dict[str, Any] = {}
            for name, delta in deltas.items():
                total = getattr(row, name) + delta
                if total > MAX_BIGINT:
                    raise InvalidArgument(f"{name} would exceed 2^63-1")
                values[name] = total
            values.update(
                **checkpoint.columns("checkpoint"),
                **fault_state_columns(digests.EMPTY_FAULT_STATE),
            )
            if context is not None:
                values.update(context.columns("context"))
            now = self.now()
            self._guarded_update(row, expected_version, {"updated_at": now, **values})
            for namespace, columns in states:
                existing = ComponentState.objects.using(self.alias).filter(
                    step_execution_id=step_execution_id, namespace=namespace
                )
                current = existing.values_list("version", flat=True).first()
                if current is None:
                    ComponentState.objects.using(self.alias).create(
                        step_execution_id=step_execution_id,
                        namespace=namespace,
                        version=0,
                        updated_at=now,
                        **columns,
                    )
                else:
                    existing.update(version=current + 1, updated_at=now, **columns)
            return self.get_step(step_execution_id)

    def reserve_retry(
        self,
        step_execution_id: int,
        expected_version: int,
        *,
        job_execution_id: int,
        phase: Literal["read", "process", "write"],
        fault_state: Mapping[str, Any],
    ) -> StepExecution:
        """
        Durably reserve one retry of a chunk phase before attempting it.

        Adds one to ``<phase>_retry_count`` and ``rollback_count`` and
        records the runtime's new fault state (its checksum computed here).
        Same guards and errors as :meth:`commit_chunk`.
        """
        if phase not in ("read", "process", "write"):
            raise InvalidArgument("a retry phase is read, process or write")
        payload = check_fault_state(fault_state)
        with self.unit():
            row = self._started_step(
                step_execution_id, expected_version, job_execution_id
            )
            column = f"{phase}_retry_count"
            values = {
                column: getattr(row, column) + 1,
                "rollback_count": row.rollback_count + 1,
                **fault_state_columns(payload),
            }
            self._guarded_update(
                row, expected_version, {"updated_at": self.now(), **values}
            )
            return self.get_step(step_execution_id)

    def _started_step(
        self, step_execution_id: int, expected_version: int, job_execution_id: int
    ) -> StepExecution:
        row = self.get_step(step_execution_id)
        if row.job_execution_id != job_execution_id:
            raise StepExecutionNotFound(step_execution_id)
        check_version(row, expected_version)
        if row.status != STARTED:
            raise StepNotStarted(step_execution_id, row.status)
        return row

    def _guarded_update(
        self, row: StepExecution, expected: int, values: dict[str, Any]
    ) -> None:
        """Update a STARTED step at version ``expected`` with ``values``, bumped."""
        updated = (
            StepExecution.objects.using(self.alias)
            .filter(
                pk=row.pk,
                job_execution_id=row.job_execution_id,
                version=expected,
                status=STARTED,
            )
            .update(version=expected + 1, **values)
        )
        if updated != 1:
            current = self.get_step(row.pk)
            check_version(current, expected)
            raise StepNotStarted(row.pk, current.status)
