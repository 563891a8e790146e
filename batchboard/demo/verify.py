"""
Check stored history against the invariants of the contract.

PostgreSQL enforces the schema's constraints itself; SQLite enforces most
of them; neither enforces the rules that span rows (attempt numbering,
restart links, upgrade edges, recomputable keys and checksums). This
module checks both kinds over whatever the metadata tables hold and returns
one line per violation. Lines name ids, statuses and rules, never parameter
values or payloads, so they are safe to print.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypeVar

from django.db.models import Model

from batchboard import conf, digests, models, vocabulary
from batchboard.demo.runs import RESTARTABLE

UNRESOLVED = frozenset(vocabulary.UNRESOLVED)
FINISHED = frozenset(vocabulary.FINISHED)
#: The statuses a partition's worker step ends in.
WORKER_ENDS = frozenset(("COMPLETED", "FAILED", "STOPPED", "UNKNOWN"))

_Row = TypeVar("_Row", bound=Model)


def _by_id(model: type[_Row], alias: str) -> dict[int, _Row]:
    return {int(row.pk): row for row in model._default_manager.using(alias)}


@dataclass
class _History:
    """The rows that other rows are checked against, by id."""

    alias: str
    definitions: dict[int, models.JobDefinition]
    instances: dict[int, models.JobInstance]
    executions: dict[int, models.JobExecution]
    steps: dict[int, models.StepExecution]

    @classmethod
    def load(cls, alias: str) -> _History:
        return cls(
            alias,
            _by_id(models.JobDefinition, alias),
            _by_id(models.JobInstance, alias),
            _by_id(models.JobExecution, alias),
            _by_id(models.StepExecution, alias),
        )

    def instance_of(self, step: models.StepExecution) -> int:
        """Return the instance id of a step's execution."""
        return self.executions[step.job_execution_id].job_instance_id


def check_history(using: str | None = None) -> list[str]:
    """Return every invariant violation in the metadata tables (empty if none)."""
    history = _History.load(using or conf.database_alias())
    return [
        *_instances(history),
        *_executions(history),
        *_attempts(history),
        *_steps(history),
        *_partitions(history),
        *_flow_decisions(history),
        *_recovery_decisions(history),
        *_operator_requests(history.alias),
        *_retention_actions(history.alias),
    ]


def _lifecycle(
    label: str, row: models.JobExecution | models.StepExecution
) -> Iterator[str]:
    """Yield violations of the per-row rules shared by jobs and steps."""
    status = row.status
    if status not in vocabulary.STATUSES:
        yield f"{label}: unknown status {status}"
    if status in UNRESOLVED and row.ended_at is not None:
        yield f"{label}: {status} with ended_at"
    if status in FINISHED and row.ended_at is None:
        yield f"{label}: {status} without ended_at"
    created, started, ended = row.created_at, row.started_at, row.ended_at
    if started is not None and started < created:
        yield f"{label}: started before created"
    if ended is not None and ended < (started or created):
        yield f"{label}: ended before started"
    if row.updated_at < created:
        yield f"{label}: updated before created"
    if (row.failure_category is None) != (row.failure_id is None):
        yield f"{label}: half a failure"
    if status == "FAILED" and row.failure_category is None:
        yield f"{label}: FAILED without a failure"
    if row.failure_category is not None and (
        row.failure_category not in vocabulary.FAILURE_CATEGORIES
        or (row.failure_id is not None and row.failure_id < 1)
    ):
        yield f"{label}: malformed failure"
    if row.version < 0:
        yield f"{label}: negative version"


def _instances(history: _History) -> Iterator[str]:
    for instance in history.instances.values():
        label = f"instance {instance.pk}"
        try:
            parameters = digests.parameters_from_json(instance.identifying_parameters)
            key = digests.instance_key(instance.job_name, parameters)
        except (digests.ParameterError, TypeError):
            yield f"{label}: unreadable parameters"
            continue
        if key != bytes(instance.instance_key):
            yield f"{label}: instance key does not recompute"
        holds = (instance.hold_actor, instance.hold_reason, instance.hold_placed_at)
        if len({value is None for value in holds}) > 1:
            yield f"{label}: half a hold"


def _executions(history: _History) -> Iterator[str]:
    for execution in history.executions.values():
        label = f"execution {execution.pk}"
        yield from _lifecycle(label, execution)
        instance = history.instances.get(execution.job_instance_id)
        if instance is None:
            yield f"{label}: missing instance"
            continue
        if execution.parameters != instance.identifying_parameters:
            yield f"{label}: parameters differ from its instance's"
        definition = history.definitions.get(execution.definition_id)
        if definition is None or definition.job_name != instance.job_name:
            yield f"{label}: definition of another job"
        if (execution.stop_requested_at is None) != (
            execution.stop_requested_by is None
        ):
            yield f"{label}: half a stop request"
        token = execution.owner_token
        if token is not None and len(bytes(token)) != 16:
            yield f"{label}: owner token is not 16 bytes"


def _attempts(history: _History) -> Iterator[str]:
    """Yield violations of attempt numbering, restart links and upgrades."""
    edges = set(
        models.DefinitionUpgrade.objects.using(history.alias).values_list(
            "from_definition_id", "to_definition_id"
        )
    )
    by_instance: dict[int, list[models.JobExecution]] = defaultdict(list)
    for execution in history.executions.values():
        by_instance[execution.job_instance_id].append(execution)
    for instance_id, attempts in by_instance.items():
        attempts.sort(key=lambda execution: execution.attempt)
        if [row.attempt for row in attempts] != list(range(1, len(attempts) + 1)):
            yield f"instance {instance_id}: attempts not 1..{len(attempts)}"
        if sum(1 for row in attempts if row.status in UNRESOLVED) > 1:
            yield f"instance {instance_id}: more than one unresolved execution"
        first = attempts[0]
        if first.restart_of_execution_id is not None:
            yield f"execution {first.pk}: first attempt restarts something"
        if first.upgrade_from_definition_id is not None:
            yield f"execution {first.pk}: first attempt upgrades something"
        for previous, row in zip(attempts, attempts[1:], strict=False):
            yield from _restart(previous, row, edges)


def _restart(
    previous: models.JobExecution,
    row: models.JobExecution,
    edges: set[tuple[int, int]],
) -> Iterator[str]:
    """Yield what is wrong with ``row`` as the restart of ``previous``."""
    label = f"execution {row.pk}"
    if row.restart_of_execution_id != previous.pk:
        yield f"{label}: restart_of is not the previous attempt"
    if previous.status not in RESTARTABLE:
        yield f"{label}: restarts a {previous.status} attempt"
    if previous.ended_at is None or row.created_at < previous.ended_at:
        yield f"{label}: created before the previous attempt ended"
    if row.definition_id == previous.definition_id:
        if row.upgrade_from_definition_id is not None:
            yield f"{label}: upgrade recorded without a definition change"
        return
    edge = (previous.definition_id, row.definition_id)
    if row.upgrade_from_definition_id != previous.definition_id:
        yield f"{label}: upgrade not recorded"
    elif edge not in edges:
        yield f"{label}: no upgrade edge {edge}"


def _steps(history: _History) -> Iterator[str]:
    recovered = set(
        models.RecoveryDecision.objects.using(history.alias).values_list(
            "job_execution_id", flat=True
        )
    )
    for step in history.steps.values():
        label = f"step {step.pk}"
        yield from _lifecycle(label, step)
        execution = history.executions.get(step.job_execution_id)
        if execution is None:
            yield f"{label}: missing execution"
            continue
        if step.created_at < execution.created_at:
            yield f"{label}: created before its execution"
        if (
            execution.status in FINISHED
            and step.status in UNRESOLVED
            and execution.pk not in recovered
        ):
            yield f"{label}: {step.status} under a {execution.status} execution"
        if execution.status == "COMPLETED" and step.status != "COMPLETED":
            yield f"{label}: {step.status} under a COMPLETED execution"
        if execution.ended_at and step.ended_at and step.ended_at > execution.ended_at:
            yield f"{label}: ended after its execution"
        checksum = digests.fault_state_checksum(step.fault_state_payload)
        if checksum != bytes(step.fault_state_checksum):
            yield f"{label}: fault state checksum does not recompute"


def _partitions(history: _History) -> Iterator[str]:
    for partition in models.StepPartition.objects.using(history.alias):
        label = f"partition {partition.pk}"
        checksum = digests.partition_context_checksum(
            partition.context_format,
            partition.context_schema,
            partition.context_schema_version,
            partition.context_payload,
        )
        if checksum != bytes(partition.context_checksum):
            yield f"{label}: context checksum does not recompute"
        worker_id = partition.worker_step_execution_id
        if (partition.status == "STARTING") != (worker_id is None):
            yield f"{label}: STARTING must mean no worker"
        worker = history.steps.get(worker_id or 0)
        parent = history.steps.get(partition.step_execution_id)
        if worker is None or parent is None:
            continue
        # A restarted plan keeps completed partitions with the worker of the
        # attempt that completed them; anything else runs here.
        if history.instance_of(worker) != history.instance_of(parent) or (
            partition.status != "COMPLETED"
            and worker.job_execution_id != parent.job_execution_id
        ):
            yield f"{label}: worker of another execution"
        if worker.status in WORKER_ENDS and partition.status not in (
            worker.status,
            "STARTED",
        ):
            yield f"{label}: status differs from its worker's"


def _flow_decisions(history: _History) -> Iterator[str]:
    for decision in models.FlowDecision.objects.using(history.alias):
        label = f"flow decision {decision.pk}"
        if (decision.target_node_id is None) == (decision.terminal_kind is None):
            yield f"{label}: needs exactly one of target and terminal"
        execution = history.executions[decision.job_execution_id]
        definition = history.definitions[execution.definition_id]
        if bytes(decision.plan_fingerprint) != bytes(definition.manifest_digest):
            yield f"{label}: plan fingerprint is not the manifest digest"
        source = history.steps.get(decision.source_step_execution_id or 0)
        if source is None:
            continue
        if history.instance_of(source) != execution.job_instance_id:
            yield f"{label}: source step of another instance"
        if source.step_logical_id != decision.source_node_id:
            yield f"{label}: source step is another node"


def _recovery_decisions(history: _History) -> Iterator[str]:
    for decision in models.RecoveryDecision.objects.using(history.alias):
        label = f"recovery decision {decision.pk}"
        if decision.prior_status not in UNRESOLVED:
            yield f"{label}: prior status {decision.prior_status}"
        execution = history.executions[decision.job_execution_id]
        if execution.version <= decision.execution_version:
            yield f"{label}: execution version did not move past it"


def _operator_requests(alias: str) -> Iterator[str]:
    for request in models.OperatorRequest.objects.using(alias):
        label = f"operator request {request.pk}"
        if (request.outcome_class == vocabulary.APPLIED) != (
            request.rejection_code is None
        ):
            yield f"{label}: outcome and rejection code disagree"
        if request.outcome_class == vocabulary.REJECTED and (
            request.prior_status is not None or request.result_status is not None
        ):
            yield f"{label}: a rejection records statuses"
        if len(bytes(request.request_digest)) != 32:
            yield f"{label}: request digest is not 32 bytes"


def _retention_actions(alias: str) -> Iterator[str]:
    for action in models.RetentionAction.objects.using(alias):
        purge = action.action == vocabulary.APPLY_PURGE
        if purge != (action.plan_digest is not None and action.batch_bound is not None):
            yield f"retention action {action.pk}: purge shape"
