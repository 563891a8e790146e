"""
The CLI's ``data`` projections (spec A.3) of the explorer's rows.

Timestamps are whole seconds since the epoch (fractions dropped, ``null``
before it), or, for an export (:mod:`batchboard.export`), ISO-8601 UTC
text (:func:`iso`): the projections that carry times take the function
that writes them as ``when``. Digests are lowercase hex, codes as stored. An execution's
``counts`` are all zero, as oxide-batch's PostgreSQL adapter reports them
(contract 3.5: job executions keep no counters). Payloads are never read:
a descriptor carries only format, schema and stored size.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from batchboard.explorer.audit import REQUESTS
from batchboard.explorer.pagination import Row, values_rows
from batchboard.models import JobExecution, OperatorRequest, RetentionAction

if TYPE_CHECKING:
    from batchboard.actions import BulkPlan, PurgePlan
    from batchboard.actions.bulk.plan import PlannedItem

#: How a projection writes a moment: :func:`seconds` or :func:`iso`.
When = Callable[[datetime | None], int | str | None]

ZERO_COUNTS = {"committed": 0, "filtered": 0, "processed": 0, "read": 0, "written": 0}


def seconds(moment: datetime | None) -> int | None:
    """Return whole seconds since the epoch, or ``None`` (absent or pre-epoch)."""
    if moment is None:
        return None
    value = math.floor(moment.timestamp())
    return value if value >= 0 else None


def iso(moment: datetime | str | None) -> str | None:
    """
    Return ISO-8601 UTC to the millisecond (``...T12:00:00.000Z``), or ``None``.

    Text is a time the database wrote so already
    (:class:`batchboard.explorer.queries.IsoTime`), returned as it is.
    """
    if moment is None or isinstance(moment, str):
        return moment
    text = moment.astimezone(UTC).isoformat(timespec="milliseconds")
    return f"{text[:-6]}Z"


def _hex(value: Any) -> str | None:
    if value is None:
        return None
    return bytes(value).hex()


def descriptor(row: Row, prefix: str, kind: str, size: str) -> dict[str, Any] | None:
    if row.get(f"{prefix}_format") is None:
        return None
    return {
        "encoded_len": int(row.get(size) or 0),
        "format_version": row[f"{prefix}_format"],
        "kind": kind,
        "schema_id": row[f"{prefix}_schema"],
        "schema_version": row[f"{prefix}_schema_version"],
    }


def failure(row: Row) -> dict[str, Any] | None:
    if row.get("failure_category") is None:
        return None
    return {
        "category": str(row["failure_category"]).lower(),
        "failure_id": row["failure_id"],
    }


def counts(row: Row) -> dict[str, int]:
    return {
        "committed": row["commit_count"],
        "filtered": row["filter_count"],
        "processed": row["processed_count"],
        "read": row["read_count"],
        "written": row["write_count"],
    }


def timestamps(row: Row, when: When = seconds) -> dict[str, int | str | None]:
    return {
        "created_at": when(row["created_at"]),
        "ended_at": when(row["ended_at"]),
        "started_at": when(row["started_at"]),
    }


def instance(row: Row, key_hex: str) -> dict[str, Any]:
    hold = None
    if row.get("hold_actor") is not None:
        hold = {
            "actor": row["hold_actor"],
            "instance_id": row["id"],
            "placed_at": seconds(row["hold_placed_at"]),
            "reason": row["hold_reason"],
        }
    return {
        "created_at": seconds(row["created_at"]),
        "hold": hold,
        "instance_id": row["id"],
        "instance_key_digest": key_hex,
        "job_name": row["job_name"],
        "parameters": [
            {"identifying": True, "kind": kind, "name": name}
            for name, kind in row["parameters"]
        ],
    }


def execution_extras(ids: Sequence[int]) -> dict[int, Row]:
    """
    Return the definition and context descriptor of executions (one statement).

    The statement is compiled once per number of ids (at most a page's
    size), as a list's page is (:func:`values_rows`): an export reads it
    once per page of hundreds of rows.
    """
    from batchboard.explorer.queries import StoredSize, _using  # one home: the reads

    def build(given: Sequence[Any]) -> Any:
        return (
            JobExecution.objects.using(_using())
            .filter(id__in=list(given))
            .annotate(context_size=StoredSize("context_payload"))
            .values(
                "id",
                "definition__definition_revision",
                "definition__manifest_format",
                "definition__manifest_digest",
                "context_format",
                "context_schema",
                "context_schema_version",
                "context_size",
            )
            .order_by()
        )

    if not ids:
        return {}
    rows = values_rows(_using(), ("execution_extras", len(ids)), build, list(ids))
    return {
        int(row["id"]): {
            "definition_revision": row["definition__definition_revision"],
            "manifest_format": row["definition__manifest_format"],
            "manifest_digest": row["definition__manifest_digest"],
            "context_format": row["context_format"],
            "context_schema": row["context_schema"],
            "context_schema_version": row["context_schema_version"],
            "context_size": row["context_size"],
        }
        for row in rows
    }


def execution(
    row: Row, extras: Row | None = None, when: When = seconds
) -> dict[str, Any]:
    source = {**row, **(extras or {})}
    definition = None
    if source.get("definition_revision") is not None:
        definition = {
            "manifest_digest": _hex(source["manifest_digest"]),
            "manifest_format": source["manifest_format"],
            "revision": source["definition_revision"],
        }
    return {
        "attempt": source["attempt"],
        "context": descriptor(source, "context", "execution_context", "context_size"),
        "counts": dict(ZERO_COUNTS),
        "definition": definition,
        "execution_id": source["id"],
        "exit_code": source["exit_code"],
        "failure": failure(source),
        "instance_id": source["job_instance_id"],
        "job_name": source["job_name"],
        "owner_recorded": bool(source["owner_recorded"]),
        "status": source["status"],
        "stop_requested_at": when(source["stop_requested_at"]),
        "timestamps": timestamps(source, when),
        "updated_at": when(source["updated_at"]),
        "version": source["version"],
    }


def step(row: Row) -> dict[str, Any]:
    return {
        "checkpoint": descriptor(row, "checkpoint", "checkpoint", "checkpoint_size"),
        "context": descriptor(row, "context", "execution_context", "context_size"),
        "counts": counts(row),
        "execution_id": row["job_execution_id"],
        "exit_code": row["exit_code"],
        "failure": failure(row),
        "node_id": row["step_logical_id"],
        "status": row["status"],
        "step_execution_id": row["id"],
        "step_name": row["step_name"],
        "timestamps": timestamps(row),
        "version": row["version"],
    }


def partition(row: Row) -> dict[str, Any]:
    return {
        "counts": counts(row),
        "exit_code": row["exit_code"] if row["exit_code"] is not None else "UNKNOWN",
        "ordinal": row["partition_ordinal"],
        "partition_id": row["id"],
        "partition_key": row["partition_key"],
        "status": row["status"],
        "step_execution_id": row["step_execution_id"],
    }


def operator_record(row: Row) -> dict[str, Any]:
    """An operator request row (queries' OPERATOR_REQUESTS columns)."""
    return {
        **audited_request(row),
        "digest": _hex(row["request_digest"]),
        "observed_version": row["observed_version"],
    }


def audited_request(row: Row, when: When = seconds) -> dict[str, Any]:
    """An operator request as the audit list shows it: no digest or version."""
    return {
        "action": row["action"],
        "actor": row["actor_ref"],
        "execution_id": row["job_execution_id"],
        "instance_id": row["job_instance_id"],
        "operation_id": row["operation_id"],
        "outcome": row["outcome_class"],
        "prior_status": row["prior_status"],
        "reason": row["reason_code"],
        "record": "operator_request",
        "rejection": row["rejection_code"],
        "request_id": row["id"],
        "requested_at": when(row["requested_at"]),
        "result_status": row["result_status"],
    }


def operator_request(request: OperatorRequest) -> dict[str, Any]:
    return operator_record(
        {
            "id": request.pk,
            "action": request.action,
            "actor_ref": request.actor_ref,
            "request_digest": request.request_digest,
            "job_execution_id": request.job_execution_id,
            "job_instance_id": request.job_instance_id,
            "observed_version": request.observed_version,
            "operation_id": request.operation_id,
            "outcome_class": request.outcome_class,
            "prior_status": request.prior_status,
            "reason_code": request.reason_code,
            "rejection_code": request.rejection_code,
            "requested_at": request.requested_at,
            "result_status": request.result_status,
        }
    )


def recovery_decision(row: Row, execution_id: int) -> dict[str, Any]:
    return {
        "decision_id": row["id"],
        "evidence_digest": _hex(row["evidence_digest"]),
        "execution_id": execution_id,
        "execution_version": row["execution_version"],
        "operator_reference": row["operator_reference"],
        "prior_status": row["prior_status"],
        "reason_code": row["reason_code"],
        "record": "recovery_decision",
        "resulting_status": row["resulting_status"],
    }


FLOW_KINDS = {
    "STEP_EXIT": "step_exit",
    "DECIDER": "decider",
    "COMPLETED_STEP_REUSE": "completed_step_reuse",
}


def flow_decision(row: Row, execution_id: int) -> dict[str, Any]:
    target: dict[str, Any]
    if row["target_node_id"] is not None:
        target = {"node": row["target_node_id"]}
    else:
        target = {"terminal": str(row["terminal_kind"] or "").lower()}
    return {
        "decided_at": seconds(row["decided_at"]),
        "decision_id": row["id"],
        "execution_id": execution_id,
        "input_digest": _hex(row["input_digest"]),
        "kind": FLOW_KINDS.get(str(row["transition_kind"]), "other"),
        "observed_outcome": row["observed_outcome"],
        "plan_fingerprint": _hex(row["plan_fingerprint"]),
        "record": "flow_decision",
        "reused_decision_id": row["reused_decision_id"],
        "sequence": row["sequence"],
        "source_node_id": row["source_node_id"],
        "source_step_execution_id": row["source_step_execution_id"],
        "target": target,
    }


PURGE_COUNT_NAMES = (
    "flow_decisions",
    "job_executions",
    "job_instances",
    "operator_requests",
    "recovery_decisions",
    "step_executions",
    "step_partitions",
)


def retention_record(action: RetentionAction) -> dict[str, Any]:
    counts = {
        name: int(getattr(action, f"deleted_{name}") or 0) for name in PURGE_COUNT_NAMES
    }
    return {
        "action": action.action,
        "action_id": action.pk,
        "actor": action.actor_ref,
        "applied_at": seconds(action.applied_at),
        "batch_bound": action.batch_bound,
        "counts": counts,
        "instance_id": action.job_instance_id,
        "operation_id": action.operation_id,
        "outcome": action.outcome_class,
        "plan_digest": _hex(action.plan_digest),
        "reason": action.reason_code,
    }


def audit_row(row: Row, when: When = seconds) -> dict[str, Any]:
    """A row of the audit log (:mod:`batchboard.explorer.audit`), either table."""
    if row["kind"] == REQUESTS:
        return audited_request(row, when)
    return {
        "action": row["action"],
        "action_id": row["id"],
        "actor": row["actor_ref"],
        "applied_at": when(row["applied_at"]),
        "batch_bound": row["batch_bound"],
        "counts": {name: int(row[f"deleted_{name}"]) for name in PURGE_COUNT_NAMES},
        "instance_id": row["job_instance_id"],
        "operation_id": row["operation_id"],
        "outcome": row["outcome_class"],
        "reason": row["reason_code"],
        "record": "retention_action",
    }


def purge_candidate(
    plan: PurgePlan, candidate: tuple[int, int, int], when: When = seconds
) -> dict[str, Any]:
    """A purge plan's candidate, as its review shows it, with the plan's digest."""
    instance_id, execution_id, version = candidate
    facts = plan.facts.get(execution_id)
    return {
        "ended_at": when(facts.ended_at) if facts else None,
        "execution_id": execution_id,
        "instance_id": instance_id,
        "job_name": plan.criteria.job_name,
        "plan_digest": plan.digest_hex,
        "status": facts.status if facts else None,
        "updated_at": when(facts.updated_at) if facts else None,
        "version": version,
    }


def bulk_item(item: PlannedItem) -> dict[str, Any]:
    """A bulk plan's item: the frozen record and what the plan expects of it."""
    return {
        "code": item.code,
        "evidence_digest": item.evidence,
        "expected": item.expected,
        "status": item.status,
        "target_id": item.target_id,
        "version": item.version,
    }


def bulk_plan_item(plan: BulkPlan, item: PlannedItem) -> dict[str, Any]:
    """A bulk plan's item with the plan's action, kind and digest."""
    return {
        **bulk_item(item),
        "action": plan.action,
        "kind": plan.kind,
        "plan_digest": plan.digest,
    }
