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
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from batchboard import digests, schema
from batchboard.conf import database_alias
from batchboard.models import (
    DefinitionUpgrade,
    FlowDecision,
    JobDefinition,
    JobExecution,
    JobInstance,
    OperatorRequest,
    RecoveryDecision,
    RetentionAction,
    StepExecution,
    StepPartition,
)

UNRESOLVED = frozenset(schema.UNRESOLVED)
FINISHED = frozenset(schema.FINISHED)


def _lifecycle_row(kind: str, row: dict[str, Any]) -> Iterable[str]:
    """Yield violations of the per-row rules shared by jobs and steps."""
    label = f"{kind} {row['id']}"
    status = row["status"]
    if status not in schema.STATUSES:
        yield f"{label}: unknown status {status}"
    if status in UNRESOLVED and row["ended_at"] is not None:
        yield f"{label}: {status} with ended_at"
    if status in FINISHED and row["ended_at"] is None:
        yield f"{label}: {status} without ended_at"
    created: datetime = row["created_at"]
    started, ended = row["started_at"], row["ended_at"]
    if started is not None and started < created:
        yield f"{label}: started before created"
    if ended is not None and ended < (started or created):
        yield f"{label}: ended before started"
    if row["updated_at"] < created:
        yield f"{label}: updated before created"
    if (row["failure_category"] is None) != (row["failure_id"] is None):
        yield f"{label}: half a failure"
    if status == "FAILED" and row["failure_category"] is None:
        yield f"{label}: FAILED without a failure"
    if row["failure_category"] is not None and (
        row["failure_category"] not in schema.FAILURE_CATEGORIES
        or row["failure_id"] < 1
    ):
        yield f"{label}: malformed failure"
    if row["version"] < 0:
        yield f"{label}: negative version"


def check_history(using: str | None = None) -> list[str]:
    """Return every invariant violation in the metadata tables (empty if none)."""
    alias = using or database_alias()
    problems: list[str] = []
    definitions = {
        row["id"]: row
        for row in JobDefinition.objects.using(alias).values(
            "id", "job_name", "manifest_digest"
        )
    }
    edges = {
        (row["from_definition_id"], row["to_definition_id"])
        for row in DefinitionUpgrade.objects.using(alias).values(
            "from_definition_id", "to_definition_id"
        )
    }
    instances = {
        row["id"]: row
        for row in JobInstance.objects.using(alias).values(
            "id",
            "job_name",
            "instance_key",
            "identifying_parameters",
            "hold_actor",
            "hold_reason",
            "hold_placed_at",
        )
    }
    for row in instances.values():
        try:
            parameters = digests.parameters_from_json(row["identifying_parameters"])
            key = digests.instance_key(row["job_name"], parameters)
        except (digests.ParameterError, TypeError):
            problems.append(f"instance {row['id']}: unreadable parameters")
            continue
        if key != bytes(row["instance_key"]):
            problems.append(f"instance {row['id']}: instance key does not recompute")
        holds = (row["hold_actor"], row["hold_reason"], row["hold_placed_at"])
        if any(value is None for value in holds) and any(
            value is not None for value in holds
        ):
            problems.append(f"instance {row['id']}: half a hold")

    executions = {
        row["id"]: row
        for row in JobExecution.objects.using(alias).values(
            "id",
            "job_instance_id",
            "definition_id",
            "upgrade_from_definition_id",
            "restart_of_execution_id",
            "attempt",
            "status",
            "exit_code",
            "parameters",
            "failure_category",
            "failure_id",
            "created_at",
            "started_at",
            "ended_at",
            "updated_at",
            "version",
            "owner_token",
            "stop_requested_at",
            "stop_requested_by",
        )
    }
    by_instance: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in executions.values():
        problems.extend(_lifecycle_row("execution", row))
        by_instance[row["job_instance_id"]].append(row)
        label = f"execution {row['id']}"
        instance = instances.get(row["job_instance_id"])
        if instance is None:
            problems.append(f"{label}: missing instance")
            continue
        if row["parameters"] != instance["identifying_parameters"]:
            problems.append(f"{label}: parameters differ from its instance's")
        definition = definitions.get(row["definition_id"])
        if definition is None or definition["job_name"] != instance["job_name"]:
            problems.append(f"{label}: definition of another job")
        if (row["stop_requested_at"] is None) != (row["stop_requested_by"] is None):
            problems.append(f"{label}: half a stop request")
        if row["owner_token"] is not None and len(bytes(row["owner_token"])) != 16:
            problems.append(f"{label}: owner token is not 16 bytes")
    for instance_id, rows in by_instance.items():
        rows.sort(key=lambda row: row["attempt"])
        attempts = [row["attempt"] for row in rows]
        if attempts != list(range(1, len(rows) + 1)):
            problems.append(f"instance {instance_id}: attempts not 1..{len(rows)}")
        if sum(1 for row in rows if row["status"] in UNRESOLVED) > 1:
            problems.append(
                f"instance {instance_id}: more than one unresolved execution"
            )
        for previous, row in zip([None, *rows[:-1]], rows, strict=True):
            label = f"execution {row['id']}"
            if previous is None:
                if row["restart_of_execution_id"] is not None:
                    problems.append(f"{label}: first attempt restarts something")
                if row["upgrade_from_definition_id"] is not None:
                    problems.append(f"{label}: first attempt upgrades something")
                continue
            if row["restart_of_execution_id"] != previous["id"]:
                problems.append(f"{label}: restart_of is not the previous attempt")
            if previous["status"] not in ("FAILED", "STOPPED"):
                problems.append(f"{label}: restarts a {previous['status']} attempt")
            if previous["ended_at"] is None or row["created_at"] < previous["ended_at"]:
                problems.append(f"{label}: created before the previous attempt ended")
            if row["definition_id"] != previous["definition_id"]:
                edge = (previous["definition_id"], row["definition_id"])
                if row["upgrade_from_definition_id"] != previous["definition_id"]:
                    problems.append(f"{label}: upgrade not recorded")
                elif edge not in edges:
                    problems.append(f"{label}: no upgrade edge {edge}")
            elif row["upgrade_from_definition_id"] is not None:
                problems.append(
                    f"{label}: upgrade recorded without a definition change"
                )

    recovered = set(
        RecoveryDecision.objects.using(alias).values_list("job_execution_id", flat=True)
    )
    steps = {
        row["id"]: row
        for row in StepExecution.objects.using(alias).values(
            "id",
            "job_execution_id",
            "step_name",
            "step_logical_id",
            "status",
            "exit_code",
            "failure_category",
            "failure_id",
            "created_at",
            "started_at",
            "ended_at",
            "updated_at",
            "version",
            "read_count",
            "write_count",
            "processed_count",
            "filter_count",
            "commit_count",
            "fault_state_payload",
            "fault_state_checksum",
        )
    }
    for row in steps.values():
        problems.extend(_lifecycle_row("step", row))
        label = f"step {row['id']}"
        execution = executions.get(row["job_execution_id"])
        if execution is None:
            problems.append(f"{label}: missing execution")
            continue
        if row["created_at"] < execution["created_at"]:
            problems.append(f"{label}: created before its execution")
        if (
            execution["status"] in FINISHED
            and row["status"] in UNRESOLVED
            and execution["id"] not in recovered
        ):
            problems.append(
                f"{label}: {row['status']} under a {execution['status']} execution"
            )
        if execution["status"] == "COMPLETED" and row["status"] != "COMPLETED":
            problems.append(f"{label}: {row['status']} under a COMPLETED execution")
        if (
            execution["ended_at"]
            and row["ended_at"]
            and (row["ended_at"] > execution["ended_at"])
        ):
            problems.append(f"{label}: ended after its execution")
        checksum = digests.fault_state_checksum(row["fault_state_payload"])
        if checksum != bytes(row["fault_state_checksum"]):
            problems.append(f"{label}: fault state checksum does not recompute")

    for row in StepPartition.objects.using(alias).values(
        "id",
        "step_execution_id",
        "worker_step_execution_id",
        "status",
        "context_format",
        "context_schema",
        "context_schema_version",
        "context_payload",
        "context_checksum",
        "partition_ordinal",
    ):
        label = f"partition {row['id']}"
        checksum = digests.partition_context_checksum(
            row["context_format"],
            row["context_schema"],
            row["context_schema_version"],
            row["context_payload"],
        )
        if checksum != bytes(row["context_checksum"]):
            problems.append(f"{label}: context checksum does not recompute")
        if (row["status"] == "STARTING") != (row["worker_step_execution_id"] is None):
            problems.append(f"{label}: STARTING must mean no worker")
        worker = steps.get(row["worker_step_execution_id"] or 0)
        parent = steps.get(row["step_execution_id"])
        if worker is not None and parent is not None:
            # A restarted plan keeps completed partitions with the worker of
            # the attempt that completed them; anything else runs here.
            worker_instance = executions[worker["job_execution_id"]]["job_instance_id"]
            parent_instance = executions[parent["job_execution_id"]]["job_instance_id"]
            if worker_instance != parent_instance or (
                row["status"] != "COMPLETED"
                and worker["job_execution_id"] != parent["job_execution_id"]
            ):
                problems.append(f"{label}: worker of another execution")
            if worker["status"] in ("COMPLETED", "FAILED", "STOPPED", "UNKNOWN") and (
                row["status"] not in (worker["status"], "STARTED")
            ):
                problems.append(f"{label}: status differs from its worker's")

    for row in FlowDecision.objects.using(alias).values(
        "id",
        "job_execution_id",
        "source_step_execution_id",
        "target_node_id",
        "terminal_kind",
        "plan_fingerprint",
        "source_node_id",
    ):
        label = f"flow decision {row['id']}"
        if (row["target_node_id"] is None) == (row["terminal_kind"] is None):
            problems.append(f"{label}: needs exactly one of target and terminal")
        execution = executions[row["job_execution_id"]]
        digest = bytes(definitions[execution["definition_id"]]["manifest_digest"])
        if bytes(row["plan_fingerprint"]) != digest:
            problems.append(f"{label}: plan fingerprint is not the manifest digest")
        source = steps.get(row["source_step_execution_id"] or 0)
        if source is not None:
            source_execution = executions[source["job_execution_id"]]
            if source_execution["job_instance_id"] != execution["job_instance_id"]:
                problems.append(f"{label}: source step of another instance")
            if source["step_logical_id"] != row["source_node_id"]:
                problems.append(f"{label}: source step is another node")

    for row in RecoveryDecision.objects.using(alias).values(
        "id",
        "job_execution_id",
        "prior_status",
        "resulting_status",
        "decided_at",
        "execution_version",
    ):
        label = f"recovery decision {row['id']}"
        if row["prior_status"] not in UNRESOLVED:
            problems.append(f"{label}: prior status {row['prior_status']}")
        execution = executions[row["job_execution_id"]]
        if execution["version"] <= row["execution_version"]:
            problems.append(f"{label}: execution version did not move past it")

    for row in OperatorRequest.objects.using(alias).values(
        "id",
        "outcome_class",
        "rejection_code",
        "request_digest",
        "action",
        "prior_status",
        "result_status",
    ):
        label = f"operator request {row['id']}"
        if (row["outcome_class"] == "APPLIED") != (row["rejection_code"] is None):
            problems.append(f"{label}: outcome and rejection code disagree")
        if row["outcome_class"] == "REJECTED" and (
            row["prior_status"] is not None or row["result_status"] is not None
        ):
            problems.append(f"{label}: a rejection records statuses")
        if len(bytes(row["request_digest"])) != 32:
            problems.append(f"{label}: request digest is not 32 bytes")

    for row in RetentionAction.objects.using(alias).values(
        "id", "action", "plan_digest", "batch_bound"
    ):
        purge = row["action"] == "APPLY_PURGE"
        if purge != (row["plan_digest"] is not None and row["batch_bound"] is not None):
            problems.append(f"retention action {row['id']}: purge shape")
    return problems
