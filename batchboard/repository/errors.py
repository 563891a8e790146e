"""
The repository's errors, one class per error of the oxide-batch contract.

Every error derives from :class:`RepositoryError` and carries only
displayable facts: ids, versions, statuses, names, counts and categories.
Parameter values, payloads and manifests never reach a message (spec 9.2).
The base and the three errors of the unit of work itself,
:class:`ConcurrentModification`, :class:`ConstraintViolation` and
:class:`Unavailable`, are those of
:mod:`batchboard.db`; each class below declares its code, its message
template and its facts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from batchboard.db import ConcurrentModification as ConcurrentModification
from batchboard.db import ConstraintViolation as ConstraintViolation
from batchboard.db import RepositoryError as RepositoryError
from batchboard.db import Unavailable as Unavailable


@dataclass(eq=False)
class InvalidArgument(RepositoryError):
    """An argument is outside the contract's bounds (sizes, names, shapes)."""

    code = "INVALID_ARGUMENT"
    template = "{message}"

    message: str


# -- lifecycle (spec 2.1) -----------------------------------------------------


@dataclass(eq=False)
class StaleVersion(RepositoryError):
    code = "STALE_VERSION"
    template = "{what} is at version {actual}, not the expected version {expected}"

    expected: int
    actual: int
    what: str = field(default="execution", kw_only=True)


@dataclass(eq=False)
class IllegalTransition(RepositoryError):
    code = "ILLEGAL_TRANSITION"
    template = "illegal transition {from_status} -> {to_status}"

    from_status: str
    to_status: str

    # The spec names the fields ``from`` and ``to``; ``from`` is a keyword.
    @property
    def to(self) -> str:
        return self.to_status


@dataclass(eq=False)
class RestartRequiresNewAttempt(RepositoryError):
    code = "RESTART_REQUIRES_NEW_ATTEMPT"
    template = (
        "a {from_status} execution cannot start again in place; create a new attempt"
    )

    from_status: str


@dataclass(eq=False)
class FailedTransitionMissingFailure(RepositoryError):
    code = "FAILED_TRANSITION_MISSING_FAILURE"
    template = "a transition to FAILED needs a failure summary"


@dataclass(eq=False)
class InvalidTransitionTime(RepositoryError):
    code = "INVALID_TRANSITION_TIME"
    template = "the transition time is earlier than the execution's start or end"


# -- not found ----------------------------------------------------------------


@dataclass(eq=False)
class JobInstanceNotFound(RepositoryError):
    code = "JOB_INSTANCE_NOT_FOUND"
    template = "job instance {instance_id} does not exist"

    instance_id: int


@dataclass(eq=False)
class JobExecutionNotFound(RepositoryError):
    code = "JOB_EXECUTION_NOT_FOUND"
    template = "job execution {execution_id} does not exist"

    execution_id: int


@dataclass(eq=False)
class StepExecutionNotFound(RepositoryError):
    code = "STEP_EXECUTION_NOT_FOUND"
    template = "step execution {step_execution_id} does not exist"

    step_execution_id: int


# -- attempts and restart (spec 2.2, 7.4) -------------------------------------


@dataclass(eq=False)
class CompletedInstance(RepositoryError):
    code = "COMPLETED_INSTANCE"
    template = "job instance {instance_id} already completed"

    instance_id: int


@dataclass(eq=False)
class AbandonedInstance(RepositoryError):
    code = "ABANDONED_INSTANCE"
    template = "job instance {instance_id} was abandoned"

    instance_id: int


@dataclass(eq=False)
class ExecutionAlreadyActive(RepositoryError):
    code = "EXECUTION_ALREADY_ACTIVE"
    template = (
        "job instance {instance_id} already has execution {execution_id} "
        "in status {status}"
    )

    instance_id: int
    execution_id: int
    status: str


@dataclass(eq=False)
class RestartStateNotFound(RepositoryError):
    code = "RESTART_STATE_NOT_FOUND"
    template = (
        "execution {execution_id} restarts an attempt that has no step "
        "{step_name!r} to carry state from"
    )

    execution_id: int
    step_name: str


@dataclass(eq=False)
class StartLimitExceeded(RepositoryError):
    code = "START_LIMIT_EXCEEDED"
    template = (
        "node {node_id!r} of job instance {instance_id} reached its start "
        "limit of {limit}"
    )

    instance_id: int
    node_id: str
    limit: int


@dataclass(eq=False)
class DuplicateStepExecution(RepositoryError):
    code = "DUPLICATE_STEP_EXECUTION"
    template = (
        "execution {execution_id} already has a step named {step_name!r} "
        "or with that logical id"
    )

    execution_id: int
    step_name: str


@dataclass(eq=False)
class StepNotStarted(RepositoryError):
    """A chunk commit or retry reservation found the step not STARTED."""

    code = "STEP_NOT_STARTED"
    template = (
        "step execution {step_execution_id} is {status}, not STARTED; "
        "nothing was committed"
    )

    step_execution_id: int
    status: str


# -- definitions (spec 2.3) ---------------------------------------------------


@dataclass(eq=False)
class IncompatibleDefinition(RepositoryError):
    code = "INCOMPATIBLE_DEFINITION"
    template = (
        "job instance {instance_id} ran definition {from_definition_id}; no "
        "upgrade edge leads directly to definition {to_definition_id}"
    )

    instance_id: int
    from_definition_id: int
    to_definition_id: int


@dataclass(eq=False)
class DefinitionDrift(RepositoryError):
    code = "DEFINITION_DRIFT"
    template = (
        "revision {revision!r} of job {job_name!r} is registered with a "
        "different manifest"
    )

    job_name: str
    revision: str


@dataclass(eq=False)
class DefinitionJobMismatch(RepositoryError):
    code = "DEFINITION_JOB_MISMATCH"
    template = "the manifest describes job {actual!r}, not job {expected!r}"

    expected: str
    actual: str


@dataclass(eq=False)
class UnsupportedManifestVersion(RepositoryError):
    code = "UNSUPPORTED_MANIFEST_VERSION"
    template = "manifest format {manifest_format!r} is not supported (1 to 3)"

    manifest_format: object


@dataclass(eq=False)
class DefinitionUpgradeConflict(RepositoryError):
    code = "DEFINITION_UPGRADE_CONFLICT"
    template = (
        "the upgrade edge {from_definition_id} -> {to_definition_id} is "
        "registered with another key or step mapping"
    )

    from_definition_id: int
    to_definition_id: int


@dataclass(eq=False)
class InvalidDefinitionUpgrade(RepositoryError):
    code = "INVALID_DEFINITION_UPGRADE"
    template = "invalid definition upgrade: {reason}"

    reason: str
    execution_id: int | None = field(default=None, kw_only=True)


@dataclass(eq=False)
class DefinitionNotFound(RepositoryError):
    code = "DEFINITION_NOT_FOUND"
    template = "job definition {definition_id} does not exist"

    definition_id: int


# -- partitions (spec 7.6) ----------------------------------------------------


@dataclass(eq=False)
class EmptyPartitionPlan(RepositoryError):
    code = "EMPTY_PARTITION_PLAN"
    template = "a partition plan needs at least one partition"


@dataclass(eq=False)
class PartitionPlanTooLarge(RepositoryError):
    code = "PARTITION_PLAN_TOO_LARGE"
    template = "a partition plan holds at most {limit} entries, not {count}"

    count: int
    limit: int


@dataclass(eq=False)
class DuplicatePartitionKey(RepositoryError):
    code = "DUPLICATE_PARTITION_KEY"
    template = "partition {ordinal} repeats an earlier partition key"

    ordinal: int


@dataclass(eq=False)
class PartitionContextTooLarge(RepositoryError):
    code = "PARTITION_CONTEXT_TOO_LARGE"
    template = (
        "partition {ordinal} has a {size}-byte context envelope; the limit is {limit}"
    )

    ordinal: int
    size: int
    limit: int


@dataclass(eq=False)
class PartitionParentNotActive(RepositoryError):
    code = "PARTITION_PARENT_NOT_ACTIVE"
    template = "partition parent step {step_execution_id} is {status}, not active"

    step_execution_id: int
    status: str


@dataclass(eq=False)
class PartitionPlanExists(RepositoryError):
    code = "PARTITION_PLAN_EXISTS"
    template = "step {step_execution_id} already has a partition plan"

    step_execution_id: int


@dataclass(eq=False)
class PartitionPlanNotCommitted(RepositoryError):
    code = "PARTITION_PLAN_NOT_COMMITTED"
    template = (
        "the partition plan of step {step_execution_id} was created in this "
        "unit of work; commit it before assigning workers"
    )

    step_execution_id: int


@dataclass(eq=False)
class StepPartitionNotFound(RepositoryError):
    code = "STEP_PARTITION_NOT_FOUND"
    template = "step partition {partition_id} does not exist"

    partition_id: int


@dataclass(eq=False)
class PartitionUpdateNotAllowed(RepositoryError):
    code = "PARTITION_UPDATE_NOT_ALLOWED"
    template = (
        "step partition {partition_id} in status {status} cannot take this update"
    )

    partition_id: int
    status: str


@dataclass(eq=False)
class PartitionWorkerMismatch(RepositoryError):
    code = "PARTITION_WORKER_MISMATCH"
    template = (
        "step {worker_id} is not another step of partition {partition_id}'s "
        "job execution"
    )

    partition_id: int
    worker_id: int


@dataclass(eq=False)
class PartitionWorkerAlreadyAssigned(RepositoryError):
    code = "PARTITION_WORKER_ALREADY_ASSIGNED"
    template = "worker step {worker_id} is already assigned a partition"

    worker_id: int


@dataclass(eq=False)
class PartitionWorkerStale(RepositoryError):
    code = "PARTITION_WORKER_STALE"
    template = "step {worker_id} is not the worker assigned to partition {partition_id}"

    partition_id: int
    worker_id: int


@dataclass(eq=False)
class PartitionAggregationIncomplete(RepositoryError):
    code = "PARTITION_AGGREGATION_INCOMPLETE"
    template = (
        "the partitions of step {step_execution_id} are not all finished "
        "with their worker"
    )

    step_execution_id: int


@dataclass(eq=False)
class PartitionStateCorrupt(RepositoryError):
    code = "PARTITION_STATE_CORRUPT"

    reason: str
    partition_id: int | None = field(default=None, kw_only=True)

    def describe(self) -> str:
        subject = (
            f"step partition {self.partition_id}"
            if self.partition_id
            else "partition state"
        )
        return f"{subject} is inconsistent: {self.reason}"


@dataclass(eq=False)
class PartitionCountOverflow(RepositoryError):
    code = "PARTITION_COUNT_OVERFLOW"
    template = "the summed partition counters of step {step_execution_id} exceed 2^63-1"

    step_execution_id: int


# -- flows and ownership (spec 7.5, 7.7) --------------------------------------


@dataclass(eq=False)
class FlowStateCorrupt(RepositoryError):
    code = "FLOW_STATE_CORRUPT"
    template = "flow decision rejected: {reason}"

    reason: str


@dataclass(eq=False)
class ExecutionOwnershipNotAllowed(RepositoryError):
    code = "EXECUTION_OWNERSHIP_NOT_ALLOWED"
    template = (
        "execution {execution_id} is {status}; only a STARTING execution can be claimed"
    )

    execution_id: int
    status: str


@dataclass(eq=False)
class ExecutionOwned(RepositoryError):
    code = "EXECUTION_OWNED"
    template = "execution {execution_id} is claimed by another owner"

    execution_id: int
