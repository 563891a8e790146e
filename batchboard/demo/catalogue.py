"""
The demo's job catalogue: what each job looks like and how it behaves.

A :class:`JobSpec` describes one job name: its steps (tasklet, chunk,
partitioned, decision), the transitions between them, its definition
revisions (consecutive revisions are joined by an upgrade edge), how it
draws identifying parameters and how often its runs fail. Manifests are
built here in the shapes oxide-batch uses (format 1 for one-step jobs,
2 for flows, 3 for flows with partitioned steps), so their digests are real
plan fingerprints.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from batchboard.digests import JobParameter, manifest_digest
from batchboard.repository import DEFAULT_START_LIMIT
from batchboard.repository.flows import pattern_matches

StepKind = Literal["tasklet", "chunk", "partitioned", "decision"]
Shape = Literal["tasklet", "chunk", "flow", "partitioned"]
Terminal = Literal["complete", "fail", "stop"]

#: Execution context every new execution and step starts with (spec 7.3).
EMPTY_CONTEXT = (1, "oxide_batch.empty.v1", 1)
PARTITION_CONTEXT_SCHEMA = "batchboard.demo.partition"


@dataclass(frozen=True)
class Node:
    """
    One node of a job: a step or a decision.

    ``id`` is the node id (the step's logical id); ``step_name`` is the name
    its step executions carry (equal to the id except across a renaming
    upgrade). ``partitions`` bounds a partitioned step's partition count.
    """

    id: str
    kind: StepKind
    step_name: str = ""
    chunk_size: int = 0
    partitions: tuple[int, int] = (0, 0)
    # Decision outcomes with their relative weights.
    outcomes: tuple[tuple[str, int], ...] = ()

    @property
    def name(self) -> str:
        return self.step_name or self.id

    @property
    def checkpoint_schema(self) -> str:
        return f"batchboard.demo.{self.id}.position"


@dataclass(frozen=True)
class Transition:
    source: str
    pattern: str
    node: str | None = None
    terminal: Terminal | None = None

    def matches(self, outcome: str) -> bool:
        """Match ``*`` (any run) and ``?`` (one character), else literally."""
        return pattern_matches(self.pattern, outcome)


@dataclass(frozen=True)
class Revision:
    """
    One definition revision of a job.

    ``chunk_scale`` multiplies every chunk size (an upgrade that retunes
    commits); ``renames`` maps node ids to the step names this revision
    gives them (an upgrade that renames a step).
    """

    name: str
    chunk_scale: int = 1
    renames: Mapping[str, str] = field(default_factory=dict)
    upgrade_key: str = ""


#: Draws an instance's identifying parameters from its serial number (per
#: job) and its launch time.
ParameterFactory = Callable[[int, datetime], dict[str, JobParameter]]


@dataclass(frozen=True)
class JobSpec:
    """Everything the seeder and simulator need to know about one job."""

    name: str
    shape: Shape
    nodes: tuple[Node, ...]
    transitions: tuple[Transition, ...]
    parameters: ParameterFactory
    revisions: tuple[Revision, ...] = (Revision("1.0.0"),)
    weight: int = 10
    failure_rate: float = 0.05
    # Items a chunk step reads per run, as (low, high).
    volume: tuple[int, int] = (1000, 5000)
    skip_rate: float = 0.0
    retry_rate: float = 0.0
    # Typical duration of one step, in seconds.
    step_seconds: tuple[int, int] = (20, 300)

    @property
    def entry(self) -> Node:
        return self.nodes[0]

    @property
    def manifest_format(self) -> int:
        if self.shape in ("tasklet", "chunk"):
            return 1
        return 3 if any(node.kind == "partitioned" for node in self.nodes) else 2

    def node(self, node_id: str) -> Node:
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(node_id)

    def step_name(self, node: Node, revision: Revision) -> str:
        return revision.renames.get(node.id, node.name)

    def next_target(self, source: str, outcome: str) -> Transition:
        """Return the first transition of ``source`` whose pattern matches."""
        for transition in self.transitions:
            if transition.source == source and transition.matches(outcome):
                return transition
        raise LookupError(f"no transition from {source!r} on {outcome!r}")

    def manifest(self, revision: Revision) -> dict[str, Any]:
        """Return the canonical manifest of ``revision`` of this job."""
        if self.manifest_format == 1:
            return _one_step_manifest(self, self.entry, revision)
        return {
            "entry": self.entry.id,
            "format": self.manifest_format,
            "job": self.name,
            "nodes": [_node_manifest(self, node, revision) for node in self.nodes],
            "transitions": [
                {
                    "pattern": transition.pattern,
                    "source": transition.source,
                    "target": (
                        {"node": transition.node}
                        if transition.node is not None
                        else {"terminal": transition.terminal}
                    ),
                }
                for transition in self.transitions
            ],
        }

    def digest(self, revision: Revision) -> bytes:
        return manifest_digest(self.manifest(revision))

    def step_mapping(self, source: Revision, target: Revision) -> dict[str, str]:
        """Return the upgrade edge's ``{old step name: new step name}`` mapping."""
        return {
            self.step_name(node, source): self.step_name(node, target)
            for node in self.nodes
            if node.kind != "decision"
        }


def _chunk_declaration(node: Node, revision: Revision) -> dict[str, Any]:
    """Return what a chunk step declares, alone or as a node of a flow."""
    return {
        "checkpoint": {"schema": node.checkpoint_schema, "version": 1},
        "components": {
            "processor": f"{node.id}-processor-1",
            "reader": f"{node.id}-reader-1",
            "writer": f"{node.id}-writer-1",
        },
        "delivery_mode": "atomic_same_resource",
        "size": node.chunk_size * revision.chunk_scale,
        "transaction_boundary": "chunk",
    }


#: What every tasklet step declares besides its component.
_TASKLET_DELIVERY = {
    "delivery_mode": "best_effort",
    "transaction_boundary": "tasklet_completion",
}


def _one_step_manifest(job: JobSpec, node: Node, revision: Revision) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "format": 1,
        "job": job.name,
        "kind": node.kind,
        "revision": revision.name,
        "step": job.step_name(node, revision),
    }
    if node.kind == "tasklet":
        return {
            **manifest,
            **_TASKLET_DELIVERY,
            "component": {"tasklet": f"{node.id}-tasklet-1"},
            "restart_state": "none",
        }
    return {
        **manifest,
        **_chunk_declaration(node, revision),
        "restart_state": "checkpoint",
    }


def _start_controls() -> dict[str, Any]:
    return {"allow_start_if_complete": False, "start_limit": DEFAULT_START_LIMIT}


def _node_manifest(job: JobSpec, node: Node, revision: Revision) -> dict[str, Any]:
    if node.kind == "decision":
        return {
            "decision": {"input_version": 1, "revision": f"{node.id}-{revision.name}"},
            "id": node.id,
            "kind": "decision",
        }
    name = job.step_name(node, revision)
    if node.kind == "partitioned":
        return {
            "aggregation": "sum-counters-v1",
            "failure_policy": "finish_siblings",
            "id": node.id,
            "kind": "partitioned_step",
            "partition_count": node.partitions[1],
            "partitioner": f"{node.id}-partitioner-1",
            "start": _start_controls(),
            "step_name": name,
            "worker": {"component": f"{node.id}-worker-1", "kind": "tasklet"},
        }
    if node.kind == "tasklet":
        declaration = {**_TASKLET_DELIVERY, "component": f"{node.id}-tasklet-1"}
    else:
        declaration = _chunk_declaration(node, revision)
    return {
        "id": node.id,
        "kind": "step",
        "listeners": [],
        "policy": None,
        "start": _start_controls(),
        "step": {"declaration": declaration, "kind": node.kind, "name": name},
    }


def partition_worker_name(node_id: str, partition_key: str) -> str:
    """
    Return the step name (and logical id) of a partition's worker step.

    oxide-batch names a worker after its partitioned node and partition key
    so that a restart finds the same worker identity again.
    """
    token = hashlib.sha256(
        b"oxide-batch.local-partition-worker.v1\0"
        + node_id.encode("utf-8")
        + b"\0"
        + partition_key.encode("utf-8")
    ).hexdigest()
    return f"__ob_partition_worker_{token}"


def partition_key(node: Node, ordinal: int, count: int) -> str:
    """Return the key of the ``ordinal``-th (1-based) of ``count`` partitions."""
    width = len(str(count))
    return f"{node.id}-{ordinal:0{width}d}-of-{count}"


# -- parameter factories ------------------------------------------------------------


def _day(when: datetime) -> str:
    return when.date().isoformat()


def _period(when: datetime) -> str:
    return f"{when.year:04d}-{when.month:02d}"


_REGIONS = ("eu-west-1", "eu-central-1", "us-east-1", "ap-southeast-2")
_LEDGERS = ("general", "receivables", "payables", "treasury")


def _ledger_import(serial: int, when: datetime) -> dict[str, JobParameter]:
    return {
        "business_date": JobParameter.string(_day(when)),
        "ledger": JobParameter.string(_LEDGERS[serial % len(_LEDGERS)]),
        "full_refresh": JobParameter.boolean(serial % 17 == 0),
        "run": JobParameter.u64(serial),
    }


def _invoice_export(serial: int, when: datetime) -> dict[str, JobParameter]:
    return {
        "billing_period": JobParameter.string(_period(when)),
        "tenant_id": JobParameter.u64(1000 + serial),
    }


def _email_digest(serial: int, when: datetime) -> dict[str, JobParameter]:
    return {
        "send_date": JobParameter.string(_day(when)),
        "segment": JobParameter.string(("weekly", "daily", "vip")[serial % 3]),
        "dry_run": JobParameter.boolean(serial % 11 == 0),
        "run": JobParameter.u64(serial),
    }


def _fx_rates(serial: int, when: datetime) -> dict[str, JobParameter]:
    return {
        "as_of": JobParameter.string(when.strftime("%Y-%m-%dT%H:00Z")),
        "provider": JobParameter.string(("ecb", "fed", "boe")[serial % 3]),
        "run": JobParameter.u64(serial),
    }


def _vacuum(serial: int, when: datetime) -> dict[str, JobParameter]:
    return {
        "cluster": JobParameter.string(f"dwh-{serial % 3 + 1}"),
        "window_offset_hours": JobParameter.i64(-(serial % 24)),
        "run": JobParameter.u64(serial),
    }


def _cache_warmup(serial: int, when: datetime) -> dict[str, JobParameter]:
    return {
        "region": JobParameter.string(_REGIONS[serial % len(_REGIONS)]),
        "generation": JobParameter.u64(serial),
    }


def _month_end(serial: int, when: datetime) -> dict[str, JobParameter]:
    return {
        "period": JobParameter.string(_period(when)),
        "entity": JobParameter.string(f"entity-{serial % 40:02d}"),
        "sequence": JobParameter.u64(serial),
    }


def _payroll(serial: int, when: datetime) -> dict[str, JobParameter]:
    return {
        "pay_period": JobParameter.string(_day(when)),
        "company_id": JobParameter.u64(70000 + serial),
        "off_cycle": JobParameter.boolean(serial % 9 == 0),
    }


def _erasure(serial: int, when: datetime) -> dict[str, JobParameter]:
    return {
        "request_batch": JobParameter.u64(serial),
        "jurisdiction": JobParameter.string(("EU", "UK", "CA", "BR")[serial % 4]),
    }


def _reindex(serial: int, when: datetime) -> dict[str, JobParameter]:
    return {
        "index": JobParameter.string(("products", "orders", "customers")[serial % 3]),
        "generation": JobParameter.u64(serial),
    }


def _thumbnails(serial: int, when: datetime) -> dict[str, JobParameter]:
    return {
        "bucket": JobParameter.string(f"media-{serial % 5}"),
        "since_day_offset": JobParameter.i64(-(serial % 365) - 1),
        "batch": JobParameter.u64(serial),
    }


def _compaction(serial: int, when: datetime) -> dict[str, JobParameter]:
    return {
        "cluster": JobParameter.string(f"kv-{serial % 4}"),
        "level": JobParameter.i64(serial % 7 - 3),
        "aggressive": JobParameter.boolean(serial % 5 == 0),
        "run": JobParameter.u64(serial),
    }


def _rapports(serial: int, when: datetime) -> dict[str, JobParameter]:
    return {
        "mois": JobParameter.string(_period(when)),
        "département": JobParameter.string(
            ("75", "77", "78", "91", "92", "93")[serial % 6]
        ),
        "édition": JobParameter.u64(serial),
    }


def _inventory(serial: int, when: datetime) -> dict[str, JobParameter]:
    return {
        "warehouse": JobParameter.string(f"WH-{serial % 12:02d}"),
        "snapshot_id": JobParameter.u64(900000 + serial),
        "include_returns": JobParameter.boolean(serial % 2 == 0),
    }


def chain(*steps: str, then: str | None = None) -> tuple[Transition, ...]:
    """
    Return the usual edges of ``steps`` run one after another.

    Each step fails the job on FAILED and stops it on STOPPED; any other
    outcome goes on to the next step, and from the last one to the node
    ``then`` or, without one, completes the job.
    """
    return tuple(
        transition
        for source, target in zip(steps, (*steps[1:], then), strict=True)
        for transition in (
            Transition(source, "FAILED", terminal="fail"),
            Transition(source, "STOPPED", terminal="stop"),
            (
                Transition(source, "*", node=target)
                if target is not None
                else Transition(source, "*", terminal="complete")
            ),
        )
    )


_IMPORT = Node("import", "chunk", chunk_size=10000)
_EXPORT = Node("export", "chunk", chunk_size=2000)
_SEND = Node("send-digests", "chunk", chunk_size=5000)
_FETCH = Node("fetch-rates", "tasklet")
_VACUUM = Node("vacuum", "tasklet")
_WARM = Node("warm", "tasklet")
_RAPPORT = Node("générer-rapport", "tasklet")
_SNAPSHOT = Node("snapshot", "chunk", chunk_size=3000)

CATALOGUE: tuple[JobSpec, ...] = (
    JobSpec(
        "nightly-ledger-import",
        "chunk",
        (_IMPORT,),
        chain(_IMPORT.id),
        _ledger_import,
        revisions=(
            Revision("2026.10.1"),
            Revision("2026.11.0", chunk_scale=2, upgrade_key="ledger-chunk-size"),
        ),
        weight=56,
        failure_rate=0.08,
        volume=(20000, 80000),
        skip_rate=0.002,
        retry_rate=0.05,
    ),
    JobSpec(
        "invoice-export",
        "chunk",
        (_EXPORT,),
        chain(_EXPORT.id),
        _invoice_export,
        revisions=(
            Revision("2026.09"),
            Revision(
                "2026.10",
                renames={"export": "export-invoices"},
                upgrade_key="rename-export-step",
            ),
        ),
        weight=48,
        failure_rate=0.06,
        volume=(500, 8000),
        skip_rate=0.01,
    ),
    JobSpec(
        "customer-email-digest",
        "chunk",
        (_SEND,),
        chain(_SEND.id),
        _email_digest,
        weight=40,
        failure_rate=0.04,
        volume=(2000, 30000),
        skip_rate=0.02,
        retry_rate=0.1,
    ),
    JobSpec(
        "fx-rates-refresh",
        "tasklet",
        (_FETCH,),
        chain(_FETCH.id),
        _fx_rates,
        weight=64,
        failure_rate=0.05,
        step_seconds=(2, 30),
    ),
    JobSpec(
        "warehouse-vacuum",
        "tasklet",
        (_VACUUM,),
        chain(_VACUUM.id),
        _vacuum,
        weight=24,
        failure_rate=0.03,
        step_seconds=(300, 2400),
    ),
    JobSpec(
        "cache-warmup",
        "tasklet",
        (_WARM,),
        chain(_WARM.id),
        _cache_warmup,
        weight=32,
        failure_rate=0.02,
        step_seconds=(5, 60),
    ),
    JobSpec(
        "month-end-close",
        "flow",
        (
            Node("freeze-ledger", "tasklet"),
            Node(
                "balance-check",
                "decision",
                outcomes=(("BALANCED", 6), ("ADJUST", 3), ("HOLD", 1)),
            ),
            Node("post-adjustments", "chunk", chunk_size=250),
            Node("publish-reports", "tasklet"),
        ),
        (
            *chain("freeze-ledger", then="balance-check"),
            Transition("balance-check", "BALANCED", node="publish-reports"),
            Transition("balance-check", "ADJUST*", node="post-adjustments"),
            Transition("balance-check", "*", terminal="stop"),
            *chain("post-adjustments", "publish-reports"),
        ),
        _month_end,
        weight=24,
        failure_rate=0.05,
        volume=(50, 900),
    ),
    JobSpec(
        "payroll-run",
        "flow",
        (
            Node("validate-timesheets", "chunk", chunk_size=1500),
            Node("compute-pay", "chunk", chunk_size=1500),
            Node(
                "approval-gate", "decision", outcomes=(("APPROVED", 9), ("REJECTED", 1))
            ),
            Node("export-bank-file", "tasklet"),
        ),
        (
            *chain("validate-timesheets", "compute-pay", then="approval-gate"),
            Transition("approval-gate", "APPROVED", node="export-bank-file"),
            Transition("approval-gate", "*", terminal="fail"),
            *chain("export-bank-file"),
        ),
        _payroll,
        weight=24,
        failure_rate=0.04,
        volume=(300, 6000),
        skip_rate=0.003,
    ),
    JobSpec(
        "gdpr-erasure",
        "flow",
        (
            Node("collect-subjects", "chunk", chunk_size=500),
            Node("erase-records", "chunk", chunk_size=500),
            Node("write-audit", "tasklet"),
        ),
        chain("collect-subjects", "erase-records", "write-audit"),
        _erasure,
        weight=24,
        failure_rate=0.07,
        volume=(10, 2000),
        retry_rate=0.2,
    ),
    JobSpec(
        "search-reindex",
        "partitioned",
        (
            Node("reindex", "partitioned", partitions=(8, 16)),
            Node("swap-alias", "tasklet"),
        ),
        chain("reindex", "swap-alias"),
        _reindex,
        weight=6,
        failure_rate=0.06,
        volume=(5000, 40000),
    ),
    JobSpec(
        "image-thumbnail-backfill",
        "partitioned",
        (Node("render", "partitioned", partitions=(32, 64)),),
        chain("render"),
        _thumbnails,
        weight=1,
        failure_rate=0.08,
        volume=(2000, 20000),
    ),
    JobSpec(
        "shard-compaction",
        "partitioned",
        (Node("compact", "partitioned", partitions=(4, 8)),),
        chain("compact"),
        _compaction,
        weight=10,
        failure_rate=0.05,
        volume=(100, 1000),
    ),
    JobSpec(
        "Rapports mensuels / Région Île-de-France",
        "tasklet",
        (_RAPPORT,),
        chain(_RAPPORT.id),
        _rapports,
        weight=12,
        failure_rate=0.05,
    ),
    JobSpec(
        "inventory-snapshot",
        "chunk",
        (_SNAPSHOT,),
        chain(_SNAPSHOT.id),
        _inventory,
        weight=32,
        failure_rate=0.03,
        volume=(1000, 12000),
        skip_rate=0.001,
    ),
)


def job(name: str) -> JobSpec:
    """Return the catalogue entry called ``name``."""
    for spec in CATALOGUE:
        if spec.name == name:
            return spec
    raise KeyError(name)
