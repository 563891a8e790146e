"""
Bulk history for benchmarks: millions of executions, fast.

The seeder records demo history one repository operation at a time, which
is faithful but far too slow for a benchmark-sized database. This loader
plans the same kind of history in memory and writes it in large batches:
binary ``COPY`` through psycopg on PostgreSQL (rows planned in the wire
form, so no value is converted per row), ``executemany`` on SQLite. Nothing
the schema enforces is disabled (checks, unique indexes and foreign keys all
apply), and every row is one the repository could have written:

* mostly finished executions (COMPLETED, FAILED, STOPPED, ABANDONED), with
  the versions, timestamps and exit codes their transitions produce, and
  one instance in :data:`UNRESOLVED_EVERY` executions whose last attempt is
  unresolved (STARTED, STOPPING with its stop request, STARTING, UNKNOWN):
  a share of them heartbeating a moment before ``now``, the rest stale for
  days, so triage pages have real rows;
* forty-two job names: five busy jobs, a long tail of quieter ones and two
  rare ones (:data:`RARE_JOBS`) spread evenly over the load;
* attempts numbered 1, 2, ... per instance, each restart pointing at the
  FAILED or STOPPED attempt before it, nothing after COMPLETED or ABANDONED;
* flows of three steps joined by flow decisions: STEP_EXIT as steps finish,
  COMPLETED_STEP_REUSE for steps a restart skips, restarted steps carrying
  over the counters and checkpoint of the attempt before;
* instance keys computed as spec 7.1 from the stored parameters.

Rows are appended after whatever the tables hold. On PostgreSQL the ids
come from ranges reserved on the identity sequences up front, so other
writers can keep going during a load; on SQLite ``AUTOINCREMENT`` follows
the largest id by itself.
"""

from __future__ import annotations

import hashlib
import json
import queue
import random
import struct
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connections, transaction

from batchboard import conf, digests, schema
from batchboard.demo.catalogue import EMPTY_CONTEXT, JobSpec, Node, Revision, chain
from batchboard.demo.runs import FAILURE_WEIGHTS, input_digest, weighted_names
from batchboard.digests import _lp4
from batchboard.models import JobDefinition
from batchboard.repository import truncate_ms

HISTORY_DAYS = 60
# The planner's clock counts milliseconds from PostgreSQL's epoch, so a
# timestamp is written as the microseconds binary COPY sends for timestamptz.
_PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
_PG_EPOCH_MS = digests.epoch_ms(_PG_EPOCH)
# jsonb values are planned in jsonb's binary wire form: version 1, then text.
_JSONB = b"\x01"
_EMPTY_JSON = _JSONB + b"{}"
_FAULT_JSON = _JSONB + json.dumps(
    digests.EMPTY_FAULT_STATE, separators=(",", ":")
).encode("utf-8")
_FAULT_CHECKSUM = digests.fault_state_checksum(digests.EMPTY_FAULT_STATE)
_EMPTY_DESCRIPTOR = (*EMPTY_CONTEXT, _EMPTY_JSON)


def _bulk_job(name: str, weight: int, *steps: tuple[str, int]) -> JobSpec:
    """
    Return a flow of ``steps`` run in order, each ``(node id, chunk size)``.

    A chunk size of 0 makes the step a tasklet.
    """
    nodes = tuple(
        Node(node_id, "chunk", chunk_size=size) if size else Node(node_id, "tasklet")
        for node_id, size in steps
    )
    return JobSpec(
        name,
        "flow",
        nodes,
        chain(*(node.id for node in nodes)),
        lambda serial, when: {},
        revisions=(Revision("bulk-1"),),
        weight=weight,
    )


BULK_JOBS: tuple[JobSpec, ...] = (
    _bulk_job(
        "orders-etl",
        30,
        ("extract-orders", 500),
        ("transform-orders", 500),
        ("load-warehouse", 0),
    ),
    _bulk_job(
        "clickstream-rollup",
        25,
        ("read-events", 2000),
        ("aggregate-sessions", 1000),
        ("publish-metrics", 0),
    ),
    _bulk_job(
        "billing-usage-aggregate",
        20,
        ("collect-usage", 250),
        ("rate-usage", 250),
        ("post-charges", 100),
    ),
    _bulk_job(
        "partner-feed-export",
        15,
        ("select-items", 1000),
        ("render-feed", 500),
        ("upload-feed", 0),
    ),
    _bulk_job(
        "inventory-reconcile",
        10,
        ("fetch-stock", 500),
        ("compare-ledger", 500),
        ("report-drift", 0),
    ),
)


def _quiet_job(name: str, weight: int, first: str, second: str) -> JobSpec:
    """Return one of the many smaller jobs: a chunk step, a chunk, a tasklet."""
    return _bulk_job(name, weight, (first, 500), (second, 250), ("notify", 0))


#: The long tail of a real deployment: dozens of jobs that run far less often
#: than the five above, so the overview and the job filter meet many names.
QUIET_JOBS: tuple[JobSpec, ...] = tuple(
    _quiet_job(name, weight, first, second)
    for name, weight, first, second in (
        ("customer-dedupe", 3, "load-customers", "merge-duplicates"),
        ("email-bounce-sync", 3, "fetch-bounces", "flag-addresses"),
        ("fx-rates-import", 3, "fetch-rates", "store-rates"),
        ("invoice-pdf-render", 3, "select-invoices", "render-pdfs"),
        ("ledger-close-daily", 3, "collect-entries", "post-balances"),
        ("loyalty-points-accrual", 3, "read-purchases", "accrue-points"),
        ("marketing-audience-build", 3, "select-contacts", "write-segments"),
        ("payment-settlement-match", 3, "read-settlements", "match-payments"),
        ("price-index-refresh", 3, "read-prices", "rebuild-index"),
        ("refund-reconcile", 3, "read-refunds", "match-refunds"),
        ("search-index-rebuild", 2, "read-catalog", "write-index"),
        ("shipment-tracking-poll", 2, "select-shipments", "update-tracking"),
        ("supplier-catalog-import", 2, "fetch-catalogs", "upsert-items"),
        ("tax-rate-sync", 2, "fetch-rates", "store-rates"),
        ("user-activity-digest", 2, "read-activity", "compose-digests"),
        ("warehouse-slotting", 2, "read-stock", "assign-slots"),
        ("ad-spend-import", 2, "fetch-spend", "store-spend"),
        ("churn-score-update", 2, "read-features", "score-accounts"),
        ("coupon-expiry-sweep", 2, "select-coupons", "expire-coupons"),
        ("crm-contact-export", 2, "select-contacts", "export-contacts"),
        ("data-quality-audit", 2, "sample-tables", "check-rules"),
        ("fraud-rule-backtest", 2, "replay-orders", "evaluate-rules"),
        ("gdpr-erasure-requests", 1, "read-requests", "erase-records"),
        ("gift-card-ledger", 1, "read-cards", "post-ledger"),
        ("image-thumbnail-backfill", 1, "select-images", "render-thumbnails"),
        ("log-archive-compact", 1, "list-segments", "compact-segments"),
        ("ml-feature-export", 1, "read-features", "write-parquet"),
        ("newsletter-send", 1, "select-recipients", "send-batch"),
        ("payroll-export", 1, "read-timesheets", "export-payroll"),
        ("product-review-moderation", 1, "read-reviews", "classify-reviews"),
        ("returns-restock", 1, "read-returns", "restock-items"),
        ("sales-forecast-train", 1, "read-sales", "fit-models"),
        ("sitemap-generate", 1, "read-pages", "write-sitemaps"),
        ("vendor-invoice-ocr", 1, "read-scans", "extract-fields"),
        ("currency-revaluation", 1, "read-balances", "revalue-accounts"),
    )
)

#: The job a benchmark pages deeply: a few hundred instances spread evenly.
RARE_JOB = _bulk_job(
    "annual-tax-archive",
    0,
    ("gather-filings", 100),
    ("seal-archive", 0),
    ("ship-archive", 0),
)
#: A rarer one still: a few dozen instances over the whole load.
RARER_JOB = _bulk_job(
    "regulator-audit-seal",
    0,
    ("collect-evidence", 100),
    ("seal-evidence", 0),
    ("file-seal", 0),
)
#: Each rare job with the instances it gets over a whole load.
RARE_JOBS: tuple[tuple[JobSpec, int], ...] = ((RARE_JOB, 300), (RARER_JOB, 30))

#: One instance in this many executions is left unresolved (at least one in
#: :data:`MIN_UNRESOLVED_SHARE` for small loads): 400 at 2,000,000.
UNRESOLVED_EVERY = 5000
MIN_UNRESOLVED_SHARE = 8
#: The unresolved statuses a load leaves, weighted: most are running, some
#: are being stopped, some starting, and a quarter lost their owner.
UNRESOLVED_WEIGHTS = (
    ("STARTED", 50),
    ("STOPPING", 15),
    ("STARTING", 10),
    ("UNKNOWN", 25),
)
#: Share of running executions whose owner still heartbeats (updated within
#: the last two minutes before ``now``); the others went stale long ago.
FRESH_SHARE = 0.3


@dataclass
class BulkReport:
    """Rows written by one bulk load and how long it took."""

    instances: int = 0
    executions: int = 0
    steps: int = 0
    flow_decisions: int = 0
    seconds: float = 0.0

    @property
    def rows(self) -> int:
        return self.instances + self.executions + self.steps + self.flow_decisions

    @property
    def rate(self) -> float:
        """Executions (with their steps) per second."""
        return self.executions / self.seconds if self.seconds > 0 else 0.0


@dataclass
class _Ids:
    instance: int
    execution: int
    step: int
    decision: int
    failure: int = 0


@dataclass
class _Batch:
    instances: list[tuple[Any, ...]] = field(default_factory=list)
    executions: list[tuple[Any, ...]] = field(default_factory=list)
    steps: list[tuple[Any, ...]] = field(default_factory=list)
    decisions: list[tuple[Any, ...]] = field(default_factory=list)

    def filled(self) -> Iterator[tuple[_BulkTable, list[tuple[Any, ...]]]]:
        """Yield each table the loader writes with its planned rows, if any."""
        for table in _TABLES:
            rows: list[tuple[Any, ...]] = getattr(self, table.attribute)
            if rows:
                yield table, rows


@dataclass(frozen=True)
class _Definition:
    spec: JobSpec
    id: int
    digest: bytes
    # (node id, step outcome) -> (target node, terminal kind)
    routes: dict[tuple[str, str], tuple[str | None, str | None]] = field(
        default_factory=dict
    )

    @property
    def prefix(self) -> bytes:
        """Return the job-name part of the instance key pre-image."""
        return digests.instance_key_preimage(self.spec.name, {})

    @classmethod
    def of(cls, spec: JobSpec, definition_id: int, digest: bytes) -> _Definition:
        routes = {}
        for node in spec.nodes:
            for outcome in ("COMPLETED", "FAILED", "STOPPED"):
                transition = spec.next_target(node.id, outcome)
                terminal = transition.terminal.upper() if transition.terminal else None
                routes[node.id, outcome] = (transition.node, terminal)
        return cls(spec, definition_id, digest, routes)


_I8, _I4, _I2, _TEXT, _BYTES = "int8", "int4", "int2", "text", "bytea"
_JSON, _STAMP = "jsonb", "timestamptz"
_INTEGERS = {"bigint": _I8, "integer": _I4, "smallint": _I2}


def _copy_type(pg_type: str) -> str:
    """Return the binary COPY type of a column type of the schema."""
    if pg_type.startswith("varchar"):
        return _TEXT
    return _INTEGERS.get(pg_type, pg_type)


@dataclass(frozen=True)
class _BulkTable:
    """
    A table the loader writes: the ``_Batch`` list of its rows, the most
    rows one execution adds to it, and its columns with their COPY types.
    """

    name: str
    attribute: str
    per_execution: int
    columns: tuple[str, ...]
    types: tuple[str, ...]

    @classmethod
    def of(
        cls, name: str, attribute: str, per_execution: int, *left_out: str
    ) -> _BulkTable:
        """
        Describe table ``name`` from the schema, without the ``left_out``
        columns (left NULL or at their default by every planned row).
        """
        (table,) = (table for table in schema.TABLES if table.name == name)
        columns = [column for column in table.columns if column.name not in left_out]
        return cls(
            name,
            attribute,
            per_execution,
            tuple(column.name for column in columns),
            tuple(_copy_type(column.pg_type) for column in columns),
        )

    @property
    def wire_types(self) -> list[str]:
        """
        Return the types the planned values are sent as.

        Planned rows already hold the binary COPY wire form of every value:
        a timestamptz is int8 microseconds since 2000-01-01 UTC and a jsonb
        value is bytes (version byte, then the text), so each is sent with
        the dumper of its wire type and no value is converted per row.
        PostgreSQL still receives and checks a timestamptz and a jsonb value
        for those columns.
        """
        wire = {_STAMP: _I8, _JSON: _BYTES}
        return [wire.get(kind, kind) for kind in self.types]


# Each planned row holds these columns, in this order.
_TABLES = (
    _BulkTable.of(
        "ob_job_instance",
        "instances",
        1,
        "hold_actor",
        "hold_reason",
        "hold_placed_at",
    ),
    _BulkTable.of(
        "ob_job_execution",
        "executions",
        1,
        "upgrade_from_definition_id",
    ),
    _BulkTable.of(
        "ob_step_execution",
        "steps",
        3,
        "fault_state_format",
        "fault_state_schema",
        "fault_state_schema_version",
    ),
    _BulkTable.of("ob_flow_decision", "decisions", 3),
)

_FAILURE_NAMES = weighted_names(FAILURE_WEIGHTS)
#: The version each unresolved status leaves an execution at: created v0,
#: STARTED v1, then STOPPING or UNKNOWN v2.
_UNRESOLVED = {"STARTING": 0, "STARTED": 1, "STOPPING": 2, "UNKNOWN": 2}
#: The status a failing or running attempt leaves on the step it stopped at.
_STEP_STATUS = {
    "STOPPED": "STOPPED",
    "STARTED": "STARTED",
    "STOPPING": "STOPPING",
    "UNKNOWN": "UNKNOWN",
}


class _Step:
    """A step's running counters while an instance's history is planned."""

    __slots__ = (
        "read",
        "processed",
        "write",
        "filter",
        "commit",
        "rollback",
        "retry",
        "skip",
        "offset",
    )

    def __init__(self) -> None:
        self.read = self.processed = self.write = self.filter = 0
        self.commit = self.rollback = self.retry = self.skip = self.offset = 0

    def copy(self) -> _Step:
        other = _Step()
        for name in self.__slots__:
            setattr(other, name, getattr(self, name))
        return other


class _Planner:
    """
    Plan instances, attempts, steps and decisions as row tuples.

    ``start_ms`` and ``end_ms`` count milliseconds since 2000-01-01 UTC, the
    clock every planned timestamp is written in (as microseconds).
    """

    def __init__(
        self,
        definitions: Sequence[_Definition],
        rare: Sequence[tuple[_Definition, int]],
        *,
        executions: int,
        start_ms: int,
        end_ms: int,
        now_ms: int,
        ids: _Ids,
        rng: random.Random,
    ) -> None:
        self.definitions = definitions
        self.total = executions
        self.start_ms = start_ms
        self.span_ms = end_ms - start_ms
        self.now_ms = now_ms
        self.ids = ids
        self.rng = rng
        weights = [definition.spec.weight for definition in definitions]
        self._choices = [
            d for d, w in zip(definitions, weights, strict=True) for _ in range(w)
        ]
        estimated_instances = max(1, int(executions / 1.12))
        # Each rare job takes one instance in every ``every``, at its own
        # offset, so its instances are spread evenly over the whole load.
        self.rare = [
            (definition, max(50, estimated_instances // instances), offset)
            for offset, (definition, instances) in enumerate(rare, start=1)
        ]
        unresolved = max(
            executions // UNRESOLVED_EVERY,
            min(MIN_UNRESOLVED_SHARE, executions // 50),
        )
        self.unresolved_every = (
            max(1, estimated_instances // unresolved) if unresolved else 0
        )
        self._unresolved = weighted_names(UNRESOLVED_WEIGHTS)
        self.planned = 0
        self.instance_index = 0
        self.common_index = 0

    def _attempt_outcomes(self) -> list[tuple[str, int]]:
        """Return ``(final status, failing node index)`` per attempt."""
        roll = self.rng.random()
        k = self.rng.randrange(3)
        if roll < 0.86:
            return [("COMPLETED", 3)]
        if roll < 0.92:
            return [("FAILED", k), ("COMPLETED", 3)]
        if roll < 0.94:
            return [("STOPPED", k), ("COMPLETED", 3)]
        if roll < 0.97:
            return [("FAILED", k)]
        if roll < 0.98:
            return [("ABANDONED", k)]
        if roll < 0.99:
            return [("STOPPED", k)]
        later = self.rng.randrange(k, 3)
        return [("FAILED", k), ("FAILED", later), ("COMPLETED", 3)]

    def plan(self, budget: int, batch: _Batch) -> int:
        """Append whole instances to ``batch`` until ``budget`` executions; return the count."""
        written = 0
        while written < budget and self.planned < self.total:
            outcomes = self._attempt_outcomes()
            remaining = min(budget - written, self.total - self.planned)
            if len(outcomes) > remaining:
                outcomes = [("COMPLETED", 3)]
            index = self.instance_index
            rare = next(
                (
                    rare
                    for rare, every, offset in self.rare
                    if index % every == every * offset // (len(self.rare) + 1)
                ),
                None,
            )
            every = self.unresolved_every
            if rare is None:
                # Counted over the other jobs' instances only, so the rare
                # jobs' slots never line up with these: their histories stay
                # purgeable.
                if every and self.common_index % every == every // 3:
                    # The last attempt is still running (or lost its owner);
                    # the step it runs is chosen when the attempt is planned.
                    status = self._unresolved[
                        int(self.rng.random() * len(self._unresolved))
                    ]
                    outcomes[-1] = (status, -1)
                self.common_index += 1
            definition = rare or self.rng.choice(self._choices)
            at_ms = self.start_ms + self.span_ms * self.planned // self.total
            self._instance(definition, outcomes, at_ms, batch)
            self.instance_index += 1
            self.planned += len(outcomes)
            written += len(outcomes)
        return written

    def _instance(
        self,
        definition: _Definition,
        outcomes: list[tuple[str, int]],
        at_ms: int,
        batch: _Batch,
    ) -> None:
        rng = self.rng
        draw = rng.random
        ids = self.ids
        ids.instance += 1
        instance_id = ids.instance
        business_date = (_PG_EPOCH + timedelta(milliseconds=at_ms)).date().isoformat()
        shard = int(draw() * 16) - 8
        backfill = draw() < 0.1
        key = _fast_instance_key(
            definition.prefix, business_date, shard, instance_id, backfill
        )
        envelope = _JSONB + (
            '{"backfill": {"type": "bool", "identifying": true, "value": '
            + ("true" if backfill else "false")
            + '}, "business_date": {"type": "string", "identifying": true, '
            + f'"value": "{business_date}"}}, "run_id": {{"type": "u64", '
            + f'"identifying": true, "value": {instance_id}}}, "shard": '
            + f'{{"type": "i64", "identifying": true, "value": {shard}}}}}'
        ).encode("ascii")
        batch.instances.append(
            (instance_id, definition.spec.name, key, envelope, at_ms * 1000)
        )
        nodes = definition.spec.nodes
        routes = definition.routes
        digest = definition.digest
        inputs = [input_digest(key, node.id) for node in nodes]
        # Latest step state per node index, and the STEP_EXIT decision (id,
        # step id, target) that completed each node, for carry-over and reuse.
        carried: dict[int, _Step] = {}
        completed: dict[int, tuple[int, int, str]] = {}
        previous_execution: int | None = None
        clock = at_ms
        for attempt, (final, failing) in enumerate(outcomes, start=1):
            ids.execution += 1
            execution_id = ids.execution
            created = clock
            started = created + 20 + int(draw() * 380)
            t = started
            sequence = 0
            failure: tuple[str, int] | None = None
            running = final in _UNRESOLVED
            if running:
                # The running step is the first one no earlier attempt
                # completed, or a later one; a STARTING attempt has none.
                failing = len(completed) + int(draw() * (len(nodes) - len(completed)))
                if final == "STARTING":
                    failing = -1
            for index, node in enumerate(nodes if final != "STARTING" else ()):
                if index in completed:
                    # A restart does not re-run a completed step: the flow
                    # records the reuse of the earlier decision.
                    decision_id, step_id, reused_target = completed[index]
                    sequence += 1
                    ids.decision += 1
                    t += 1 + int(draw() * 4)
                    batch.decisions.append(
                        (
                            ids.decision,
                            execution_id,
                            step_id,
                            decision_id,
                            sequence,
                            node.id,
                            "COMPLETED",
                            reused_target,
                            "COMPLETED_STEP_REUSE",
                            None,
                            digest,
                            inputs[index],
                            t * 1000,
                        )
                    )
                    continue
                step_status = "COMPLETED"
                if index == failing:
                    step_status = _STEP_STATUS.get(final, "FAILED")
                ids.step += 1
                step_id = ids.step
                state = carried[index].copy() if index in carried else _Step()
                step_created = t + 1 + int(draw() * 9)
                step_started = step_created + 1 + int(draw() * 19)
                duration = 5_000 + int(draw() * 595_000)
                commits_before = state.commit
                retries_before = state.rollback
                if node.kind == "chunk":
                    goal = 2_000 + int(draw() * 58_000)
                    items = max(goal - state.read, node.chunk_size)
                    if step_status != "COMPLETED":
                        items = items * (1 + int(draw() * 89)) // 100
                    filtered = items // 50
                    skipped = items // 997
                    retries = int(draw() * 3) if draw() < 0.1 else 0
                    state.read += items
                    state.processed += items - skipped
                    state.filter += filtered
                    state.write += items - skipped - filtered
                    state.skip += skipped
                    state.commit += -(-items // node.chunk_size)
                    state.retry += retries
                    state.rollback += retries
                    checkpoint: tuple[Any, ...] = (
                        1,
                        node.checkpoint_schema,
                        1,
                        b'\x01{"offset": %d}' % state.read,
                    )
                else:
                    checkpoint = _EMPTY_DESCRIPTOR
                step_ended = step_started + duration
                # created v0, STARTED v1, one per commit and retry, the
                # finishing transition (STOPPING first for a stop), the
                # exit-status enrichment.
                version = (
                    3
                    + (state.commit - commits_before)
                    + (state.rollback - retries_before)
                    + (1 if step_status == "STOPPED" else 0)
                )
                ended_at: int | None = step_ended * 1000
                step_exit = step_status
                if running and index == failing:
                    # Still running: no end, no exit code yet; STARTED v1 and
                    # a version per commit and retry, plus the move to
                    # STOPPING or UNKNOWN.
                    version -= 2 if step_status == "STARTED" else 1
                    ended_at = None
                    step_exit = "UNKNOWN"
                category = failure_id = None
                if step_status == "FAILED":
                    category = _FAILURE_NAMES[int(draw() * len(_FAILURE_NAMES))]
                    failure_id = execution_id * 8 + index + 1
                    failure = (category, failure_id)
                batch.steps.append(
                    (
                        step_id,
                        execution_id,
                        node.name,
                        step_status,
                        step_exit,
                        state.read,
                        state.processed,
                        state.write,
                        state.filter,
                        state.commit,
                        state.rollback,
                        *checkpoint,
                        *_EMPTY_DESCRIPTOR,
                        category,
                        failure_id,
                        step_created * 1000,
                        step_started * 1000,
                        ended_at,
                        (step_ended + 1) * 1000,
                        version,
                        node.id,
                        state.retry,
                        0,
                        0,
                        0,
                        state.skip,
                        0,
                        0,
                        _FAULT_JSON,
                        _FAULT_CHECKSUM,
                    )
                )
                carried[index] = state
                if ended_at is None:
                    t = step_ended
                    break
                target, terminal = routes[node.id, step_status]
                sequence += 1
                ids.decision += 1
                t = step_ended + 2 + int(draw() * 28)
                batch.decisions.append(
                    (
                        ids.decision,
                        execution_id,
                        step_id,
                        None,
                        sequence,
                        node.id,
                        step_status,
                        target,
                        "STEP_EXIT",
                        terminal,
                        digest,
                        inputs[index],
                        t * 1000,
                    )
                )
                if step_status != "COMPLETED":
                    break
                if target is not None:
                    completed[index] = (ids.decision, step_id, target)
            finished_at = t + 5 + int(draw() * 45)
            ended: int | None = finished_at
            # Abandoning keeps the exit code the FAILED attempt was given.
            exit_code = "FAILED" if final == "ABANDONED" else final
            # created v0, STARTED v1, (STOPPING), the finishing transition,
            # the exit-status enrichment, (ABANDONED by an operator).
            version = 4 if final in ("STOPPED", "ABANDONED") else 3
            updated = finished_at + 1
            if final == "ABANDONED":
                updated += 600_000 + int(draw() * 6_600_000)
            stop: tuple[int | None, str | None] = (None, None)
            if running:
                ended = None
                exit_code = "UNKNOWN"
                version = _UNRESOLVED[final]
                if final == "STARTING":
                    started = updated = created
                elif draw() < FRESH_SHARE and final != "UNKNOWN":
                    # The owner still heartbeats: updated a moment ago.
                    updated = max(t, self.now_ms - int(draw() * 120_000))
                else:
                    updated = t + int(draw() * 1_800_000)
                if final == "STOPPING":
                    stop = (updated * 1000, "user:operator")
            batch.executions.append(
                (
                    execution_id,
                    instance_id,
                    definition.id,
                    previous_execution,
                    attempt,
                    final,
                    exit_code,
                    envelope,
                    *_EMPTY_DESCRIPTOR,
                    failure[0] if failure else None,
                    failure[1] if failure else None,
                    created * 1000,
                    started * 1000 if final != "STARTING" else None,
                    ended * 1000 if ended is not None else None,
                    updated * 1000,
                    version,
                    rng.randbytes(16),
                    *stop,
                )
            )
            previous_execution = execution_id
            clock = updated + 60_000 + int(draw() * 3_540_000)


_KEY_BACKFILL = _lp4(b"backfill") + b"\x04"
_KEY_DATE = _lp4(b"business_date") + b"\x01"
_KEY_RUN = _lp4(b"run_id") + b"\x03"
_KEY_SHARD = _lp4(b"shard") + b"\x02"


def _fast_instance_key(
    prefix: bytes, business_date: str, shard: int, run_id: int, backfill: bool
) -> bytes:
    """
    Return :func:`batchboard.digests.instance_key` for the bulk parameters.

    The parameter names are fixed, so the pre-image is assembled directly
    (names already in byte order); the invariant checks recompute every
    stored key the slow way.
    """
    return hashlib.sha256(
        prefix
        + _KEY_BACKFILL
        + (b"\x01" if backfill else b"\x00")
        + _KEY_DATE
        + _lp4(business_date.encode("ascii"))
        + _KEY_RUN
        + struct.pack(">Q", run_id)
        + _KEY_SHARD
        + struct.pack(">q", shard)
    ).digest()


def _ensure_definitions(
    specs: Iterable[JobSpec], alias: str, registered_at: datetime
) -> list[_Definition]:
    """Register each bulk job's definition (idempotently) and return them."""
    from batchboard.repository.clock import ManualClock
    from batchboard.repository.definitions import Definition, DefinitionsMixin

    repository = DefinitionsMixin(using=alias, clock=ManualClock(registered_at))
    out = []
    for spec in specs:
        revision = spec.revisions[0]
        row: JobDefinition = repository.register_definition(
            spec.name, Definition(revision.name, spec.manifest(revision))
        )
        out.append(_Definition.of(spec, row.id, bytes(row.manifest_digest)))
    return out


def _max_ids(alias: str) -> _Ids:
    with connections[alias].cursor() as cursor:
        values = []
        for table in _TABLES:
            cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table.name}")
            values.append(int(cursor.fetchone()[0]))
    return _Ids(*values)


def _sqlite_value(kind: str, value: Any) -> Any:
    """Return a planned wire value as Django's SQLite backend stores it."""
    if value is None:
        return None
    if kind == _STAMP:
        # Naive UTC text, microseconds included.
        moment = _PG_EPOCH + timedelta(microseconds=value)
        return moment.replace(tzinfo=None).isoformat(sep=" ")
    if kind == _JSON:
        return bytes(value[1:]).decode("utf-8")
    return value


def _write_postgresql(alias: str, batch: _Batch) -> None:
    raw = connections[alias].cursor().connection
    with raw.cursor() as cursor:
        for table, rows in batch.filled():
            statement = (
                f"COPY {table.name} ({', '.join(table.columns)}) "
                "FROM STDIN (FORMAT BINARY)"
            )
            with cursor.copy(statement) as copy:
                copy.set_types(table.wire_types)
                write = copy.write_row
                for row in rows:
                    write(row)


def _write_sqlite(alias: str, batch: _Batch) -> None:
    with connections[alias].cursor() as cursor:
        for table, rows in batch.filled():
            converted = [
                [
                    _sqlite_value(kind, value)
                    for kind, value in zip(table.types, row, strict=True)
                ]
                for row in rows
            ]
            marks = ", ".join(["%s"] * len(table.columns))
            cursor.executemany(
                f'INSERT INTO "{table.name}" ({", ".join(table.columns)}) '
                f"VALUES ({marks})",
                converted,
            )


def bulk_load(
    executions: int,
    *,
    seed: int = 0,
    now: datetime | None = None,
    using: str | None = None,
    batch_executions: int = 20_000,
    workers: int = 2,
    flow_decisions: bool = True,
    progress: Callable[[BulkReport], None] | None = None,
) -> BulkReport:
    """
    Append ``executions`` executions with their instances, steps and flow
    decisions, spread over the 60 days before ``now``; a few are left
    unresolved (see the module docstring).

    On PostgreSQL ``workers`` connections ``COPY`` batches in parallel, each
    in its own transaction; a batch holds whole instances, so if a load
    fails, what committed is still complete, lawful history. On SQLite one
    transaction writes everything. Deterministic for a given ``seed``,
    ``now`` and starting database.

    ``flow_decisions=False`` leaves out the flow decisions (about 40% of
    the rows) for benchmarks of executions and steps alone: every row
    written is still one the repository writes, which does not require a
    decision after a step.
    """
    if executions < 1:
        raise ValueError("load at least one execution")
    if not 1 <= workers <= 8:
        raise ValueError("use 1 to 8 workers")
    alias = using or conf.database_alias()
    connection = connections[alias]
    now = truncate_ms(now or datetime.now(UTC))
    end = now - timedelta(hours=6)
    start = end - timedelta(days=HISTORY_DAYS)
    registered = start - timedelta(days=1)
    definitions = _ensure_definitions((*BULK_JOBS, *QUIET_JOBS), alias, registered)
    rare = list(
        zip(
            _ensure_definitions((spec for spec, _ in RARE_JOBS), alias, registered),
            (instances for _, instances in RARE_JOBS),
            strict=True,
        )
    )
    report = BulkReport()
    began = time.perf_counter()

    def planner_from(ids: _Ids) -> _Planner:
        return _Planner(
            definitions,
            rare,
            executions=executions,
            start_ms=digests.epoch_ms(start) - _PG_EPOCH_MS,
            end_ms=digests.epoch_ms(end) - _PG_EPOCH_MS,
            now_ms=digests.epoch_ms(now) - _PG_EPOCH_MS,
            ids=ids,
            rng=random.Random(seed),
        )

    def planned(planner: _Planner) -> _Batch:
        batch = _Batch()
        planner.plan(batch_executions, batch)
        if not flow_decisions:
            batch.decisions.clear()
        return batch

    def account(batch: _Batch) -> None:
        report.instances += len(batch.instances)
        report.executions += len(batch.executions)
        report.steps += len(batch.steps)
        report.flow_decisions += len(batch.decisions)
        report.seconds = time.perf_counter() - began
        if progress is not None:
            progress(report)

    if connection.vendor == "postgresql":
        planner = planner_from(_reserve_ids(alias, executions))
        _load_parallel(alias, planner, planned, workers, account)
    else:
        with transaction.atomic(using=alias):
            planner = planner_from(_max_ids(alias))
            while planner.planned < executions:
                batch = planned(planner)
                _write_sqlite(alias, batch)
                account(batch)
    report.seconds = time.perf_counter() - began
    return report


def _reserve_ids(alias: str, executions: int) -> _Ids:
    """
    Reserve id ranges for the load and return the last id before each.

    Each identity sequence is moved past the most rows the load can write
    (one instance and execution, three steps and three decisions per
    execution), under a brief table lock so no concurrent insert takes an
    id inside the range. Other writers carry on during the load with ids
    after it; unused reserved ids are gaps, as rolled-back inserts leave.
    """
    connection = connections[alias]
    bases = []
    with transaction.atomic(using=alias), connection.cursor() as cursor:
        for table in _TABLES:
            cursor.execute(f"LOCK TABLE {table.name} IN SHARE ROW EXCLUSIVE MODE")
            cursor.execute(
                "SELECT pg_get_serial_sequence(%s, 'id')",
                [f"{schema.SCHEMA_NAME}.{table.name}"],
            )
            (sequence,) = cursor.fetchone()
            cursor.execute(
                "SELECT GREATEST(nextval(%s) - 1, "
                f"(SELECT COALESCE(MAX(id), 0) FROM {table.name}))",
                [sequence],
            )
            (base,) = cursor.fetchone()
            cursor.execute(
                "SELECT setval(%s, %s, true)",
                [sequence, base + table.per_execution * executions],
            )
            bases.append(int(base))
    return _Ids(*bases)


def _load_parallel(
    alias: str,
    planner: _Planner,
    planned: Callable[[_Planner], _Batch],
    workers: int,
    account: Callable[[_Batch], None],
) -> None:
    """Plan batches here while ``workers`` threads ``COPY`` them."""
    work: queue.Queue[_Batch | None] = queue.Queue(maxsize=workers * 2)
    errors: list[BaseException] = []
    lock = threading.Lock()

    def write() -> None:
        try:
            # Each thread has its own connection, hence its own transaction.
            with transaction.atomic(using=alias):
                # A benchmark load need not wait for its WAL to reach disk.
                with connections[alias].cursor() as cursor:
                    cursor.execute("SET LOCAL synchronous_commit = off")
                while (batch := work.get()) is not None:
                    if errors:
                        continue
                    _write_postgresql(alias, batch)
                    with lock:
                        account(batch)
                if errors:
                    raise _Abandoned
        except _Abandoned:
            pass
        except BaseException as error:  # re-raised in the planning thread
            errors.append(error)
            while work.get() is not None:
                pass
        finally:
            connections[alias].close()

    threads = [
        threading.Thread(target=write, name=f"batchboard-bulk-{index}", daemon=True)
        for index in range(workers)
    ]
    for thread in threads:
        thread.start()
    try:
        while planner.planned < planner.total and not errors:
            work.put(planned(planner))
    finally:
        for _ in threads:
            work.put(None)
        for thread in threads:
            thread.join()
    if errors:
        raise errors[0]


class _Abandoned(Exception):
    """Another writer failed: roll this writer's transaction back too."""
