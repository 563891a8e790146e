"""
The repository's errors, one class per error of the oxide-batch contract.

Every error derives from :class:`RepositoryError` and carries only
displayable facts: ids, versions, statuses, names, counts and categories.
Parameter values, payloads and manifests never reach a message (spec 9.2),
and database errors are re-raised without their driver message, whose
detail line may quote row values.
"""

from __future__ import annotations


class RepositoryError(Exception):
    """Base class of every error the job repository raises."""

    #: The contract's name of the error (spec 2, 4.5, 7).
    code = "REPOSITORY"


# -- infrastructure -----------------------------------------------------------


class Unavailable(RepositoryError):
    """The metadata database refused the unit of work for a reason not listed."""

    code = "UNAVAILABLE"

    def __init__(self, sqlstate: str | None = None) -> None:
        self.sqlstate = sqlstate
        suffix = f" (SQLSTATE {sqlstate})" if sqlstate else ""
        super().__init__(f"the metadata database refused the operation{suffix}")


class ConcurrentModification(RepositoryError):
    """A concurrent writer changed the rows this unit of work depended on."""

    code = "CONCURRENT_MODIFICATION"

    def __init__(self, what: str = "a metadata row") -> None:
        self.what = what
        super().__init__(f"{what} was modified concurrently; retry the operation")


class InvalidArgument(RepositoryError):
    """An argument is outside the contract's bounds (sizes, names, shapes)."""

    code = "INVALID_ARGUMENT"


# -- lifecycle (spec 2.1) -----------------------------------------------------


class StaleVersion(RepositoryError):
    code = "STALE_VERSION"

    def __init__(self, expected: int, actual: int, *, what: str = "execution") -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"{what} is at version {actual}, not the expected version {expected}"
        )


class IllegalTransition(RepositoryError):
    code = "ILLEGAL_TRANSITION"

    def __init__(self, from_status: str, to_status: str) -> None:
        self.from_status = from_status
        self.to_status = to_status
        super().__init__(f"illegal transition {from_status} -> {to_status}")

    # The spec names the fields ``from`` and ``to``; ``from`` is a keyword.
    @property
    def to(self) -> str:
        return self.to_status


class RestartRequiresNewAttempt(RepositoryError):
    code = "RESTART_REQUIRES_NEW_ATTEMPT"

    def __init__(self, from_status: str) -> None:
        self.from_status = from_status
        super().__init__(
            f"a {from_status} execution cannot start again in place; "
            "create a new attempt"
        )


class FailedTransitionMissingFailure(RepositoryError):
    code = "FAILED_TRANSITION_MISSING_FAILURE"

    def __init__(self) -> None:
        super().__init__("a transition to FAILED needs a failure summary")


class InvalidTransitionTime(RepositoryError):
    code = "INVALID_TRANSITION_TIME"

    def __init__(self) -> None:
        super().__init__(
            "the transition time is earlier than the execution's start or end"
        )


# -- not found ----------------------------------------------------------------


class JobInstanceNotFound(RepositoryError):
    code = "JOB_INSTANCE_NOT_FOUND"

    def __init__(self, instance_id: int) -> None:
        self.instance_id = instance_id
        super().__init__(f"job instance {instance_id} does not exist")


class JobExecutionNotFound(RepositoryError):
    code = "JOB_EXECUTION_NOT_FOUND"

    def __init__(self, execution_id: int) -> None:
        self.execution_id = execution_id
        super().__init__(f"job execution {execution_id} does not exist")


class StepExecutionNotFound(RepositoryError):
    code = "STEP_EXECUTION_NOT_FOUND"

    def __init__(self, step_execution_id: int) -> None:
        self.step_execution_id = step_execution_id
        super().__init__(f"step execution {step_execution_id} does not exist")


# -- attempts and restart (spec 2.2, 7.4) -------------------------------------


class CompletedInstance(RepositoryError):
    code = "COMPLETED_INSTANCE"

    def __init__(self, instance_id: int) -> None:
        self.instance_id = instance_id
        super().__init__(f"job instance {instance_id} already completed")


class AbandonedInstance(RepositoryError):
    code = "ABANDONED_INSTANCE"

    def __init__(self, instance_id: int) -> None:
        self.instance_id = instance_id
        super().__init__(f"job instance {instance_id} was abandoned")


class ExecutionAlreadyActive(RepositoryError):
    code = "EXECUTION_ALREADY_ACTIVE"

    def __init__(self, instance_id: int, execution_id: int, status: str) -> None:
        self.instance_id = instance_id
        self.execution_id = execution_id
        self.status = status
        super().__init__(
            f"job instance {instance_id} already has execution {execution_id} "
            f"in status {status}"
        )


class RestartStateNotFound(RepositoryError):
    code = "RESTART_STATE_NOT_FOUND"

    def __init__(self, execution_id: int, step_name: str) -> None:
        self.execution_id = execution_id
        self.step_name = step_name
        super().__init__(
            f"execution {execution_id} restarts an attempt that has no step "
            f"{step_name!r} to carry state from"
        )


class StartLimitExceeded(RepositoryError):
    code = "START_LIMIT_EXCEEDED"

    def __init__(self, instance_id: int, node_id: str, limit: int) -> None:
        self.instance_id = instance_id
        self.node_id = node_id
        self.limit = limit
        super().__init__(
            f"node {node_id!r} of job instance {instance_id} reached its start "
            f"limit of {limit}"
        )


class DuplicateStepExecution(RepositoryError):
    code = "DUPLICATE_STEP_EXECUTION"

    def __init__(self, execution_id: int, step_name: str) -> None:
        self.execution_id = execution_id
        self.step_name = step_name
        super().__init__(
            f"execution {execution_id} already has a step named {step_name!r} "
            "or with that logical id"
        )


class StepNotStarted(RepositoryError):
    """A chunk commit or retry reservation found the step not STARTED."""

    code = "STEP_NOT_STARTED"

    def __init__(self, step_execution_id: int, status: str) -> None:
        self.step_execution_id = step_execution_id
        self.status = status
        super().__init__(
            f"step execution {step_execution_id} is {status}, not STARTED; "
            "nothing was committed"
        )


# -- definitions (spec 2.3) ---------------------------------------------------


class IncompatibleDefinition(RepositoryError):
    code = "INCOMPATIBLE_DEFINITION"

    def __init__(self, instance_id: int, from_id: int, to_id: int) -> None:
        self.instance_id = instance_id
        self.from_definition_id = from_id
        self.to_definition_id = to_id
        super().__init__(
            f"job instance {instance_id} ran definition {from_id}; no upgrade "
            f"edge leads directly to definition {to_id}"
        )


class DefinitionDrift(RepositoryError):
    code = "DEFINITION_DRIFT"

    def __init__(self, job_name: str, revision: str) -> None:
        self.job_name = job_name
        self.revision = revision
        super().__init__(
            f"revision {revision!r} of job {job_name!r} is registered with a "
            "different manifest"
        )


class DefinitionJobMismatch(RepositoryError):
    code = "DEFINITION_JOB_MISMATCH"

    def __init__(self, expected: str, actual: str) -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(f"the manifest describes job {actual!r}, not job {expected!r}")


class UnsupportedManifestVersion(RepositoryError):
    code = "UNSUPPORTED_MANIFEST_VERSION"

    def __init__(self, manifest_format: object) -> None:
        self.manifest_format = manifest_format
        super().__init__(
            f"manifest format {manifest_format!r} is not supported (1 to 3)"
        )


class DefinitionUpgradeConflict(RepositoryError):
    code = "DEFINITION_UPGRADE_CONFLICT"

    def __init__(self, from_id: int, to_id: int) -> None:
        self.from_definition_id = from_id
        self.to_definition_id = to_id
        super().__init__(
            f"the upgrade edge {from_id} -> {to_id} is registered with another "
            "key or step mapping"
        )


class InvalidDefinitionUpgrade(RepositoryError):
    code = "INVALID_DEFINITION_UPGRADE"

    def __init__(self, reason: str, *, execution_id: int | None = None) -> None:
        self.execution_id = execution_id
        self.reason = reason
        super().__init__(f"invalid definition upgrade: {reason}")


class DefinitionNotFound(RepositoryError):
    code = "DEFINITION_NOT_FOUND"

    def __init__(self, definition_id: int) -> None:
        self.definition_id = definition_id
        super().__init__(f"job definition {definition_id} does not exist")


# -- partitions (spec 7.6) ----------------------------------------------------


class EmptyPartitionPlan(RepositoryError):
    code = "EMPTY_PARTITION_PLAN"

    def __init__(self) -> None:
        super().__init__("a partition plan needs at least one partition")


class PartitionPlanTooLarge(RepositoryError):
    code = "PARTITION_PLAN_TOO_LARGE"

    def __init__(self, count: int, limit: int = 1024) -> None:
        self.count = count
        self.limit = limit
        super().__init__(f"a partition plan holds at most {limit} entries, not {count}")


class DuplicatePartitionKey(RepositoryError):
    code = "DUPLICATE_PARTITION_KEY"

    def __init__(self, ordinal: int) -> None:
        self.ordinal = ordinal
        super().__init__(f"partition {ordinal} repeats an earlier partition key")


class PartitionContextTooLarge(RepositoryError):
    code = "PARTITION_CONTEXT_TOO_LARGE"

    def __init__(self, ordinal: int, size: int, limit: int = 4096) -> None:
        self.ordinal = ordinal
        self.size = size
        super().__init__(
            f"partition {ordinal} has a {size}-byte context envelope; "
            f"the limit is {limit}"
        )


class PartitionParentNotActive(RepositoryError):
    code = "PARTITION_PARENT_NOT_ACTIVE"

    def __init__(self, step_execution_id: int, status: str) -> None:
        self.step_execution_id = step_execution_id
        self.status = status
        super().__init__(
            f"partition parent step {step_execution_id} is {status}, not active"
        )


class PartitionPlanExists(RepositoryError):
    code = "PARTITION_PLAN_EXISTS"

    def __init__(self, step_execution_id: int) -> None:
        self.step_execution_id = step_execution_id
        super().__init__(f"step {step_execution_id} already has a partition plan")


class PartitionPlanNotCommitted(RepositoryError):
    code = "PARTITION_PLAN_NOT_COMMITTED"

    def __init__(self, step_execution_id: int) -> None:
        self.step_execution_id = step_execution_id
        super().__init__(
            f"the partition plan of step {step_execution_id} was created in this "
            "unit of work; commit it before assigning workers"
        )


class StepPartitionNotFound(RepositoryError):
    code = "STEP_PARTITION_NOT_FOUND"

    def __init__(self, partition_id: int) -> None:
        self.partition_id = partition_id
        super().__init__(f"step partition {partition_id} does not exist")


class PartitionUpdateNotAllowed(RepositoryError):
    code = "PARTITION_UPDATE_NOT_ALLOWED"

    def __init__(self, partition_id: int, status: str) -> None:
        self.partition_id = partition_id
        self.status = status
        super().__init__(
            f"step partition {partition_id} in status {status} cannot take this update"
        )


class PartitionWorkerMismatch(RepositoryError):
    code = "PARTITION_WORKER_MISMATCH"

    def __init__(self, partition_id: int, worker_id: int) -> None:
        self.partition_id = partition_id
        self.worker_id = worker_id
        super().__init__(
            f"step {worker_id} is not another step of partition {partition_id}'s "
            "job execution"
        )


class PartitionWorkerAlreadyAssigned(RepositoryError):
    code = "PARTITION_WORKER_ALREADY_ASSIGNED"

    def __init__(self, worker_id: int) -> None:
        self.worker_id = worker_id
        super().__init__(f"worker step {worker_id} is already assigned a partition")


class PartitionWorkerStale(RepositoryError):
    code = "PARTITION_WORKER_STALE"

    def __init__(self, partition_id: int, worker_id: int) -> None:
        self.partition_id = partition_id
        self.worker_id = worker_id
        super().__init__(
            f"step {worker_id} is not the worker assigned to partition {partition_id}"
        )


class PartitionAggregationIncomplete(RepositoryError):
    code = "PARTITION_AGGREGATION_INCOMPLETE"

    def __init__(self, step_execution_id: int) -> None:
        self.step_execution_id = step_execution_id
        super().__init__(
            f"the partitions of step {step_execution_id} are not all finished "
            "with their worker"
        )


class PartitionStateCorrupt(RepositoryError):
    code = "PARTITION_STATE_CORRUPT"

    def __init__(self, reason: str, *, partition_id: int | None = None) -> None:
        self.reason = reason
        self.partition_id = partition_id
        subject = (
            f"step partition {partition_id}" if partition_id else "partition state"
        )
        super().__init__(f"{subject} is inconsistent: {reason}")


class PartitionCountOverflow(RepositoryError):
    code = "PARTITION_COUNT_OVERFLOW"

    def __init__(self, step_execution_id: int) -> None:
        self.step_execution_id = step_execution_id
        super().__init__(
            f"the summed partition counters of step {step_execution_id} exceed 2^63-1"
        )


# -- flows and ownership (spec 7.5, 7.7) --------------------------------------


class FlowStateCorrupt(RepositoryError):
    code = "FLOW_STATE_CORRUPT"

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"flow decision rejected: {reason}")


class ExecutionOwnershipNotAllowed(RepositoryError):
    code = "EXECUTION_OWNERSHIP_NOT_ALLOWED"

    def __init__(self, execution_id: int, status: str) -> None:
        self.execution_id = execution_id
        self.status = status
        super().__init__(
            f"execution {execution_id} is {status}; only a STARTING execution "
            "can be claimed"
        )


class ExecutionOwned(RepositoryError):
    code = "EXECUTION_OWNED"

    def __init__(self, execution_id: int) -> None:
        self.execution_id = execution_id
        super().__init__(f"execution {execution_id} is claimed by another owner")
