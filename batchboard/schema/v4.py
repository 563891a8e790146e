"""
The oxide-batch metadata schema, version 4, as data.

One description of the twelve tables yields the DDL for PostgreSQL (schema
``oxide_batch``, ``COLLATE "C"`` text, the constraint and index names of the
reference schema) and for SQLite (the same tables without a schema, with the
checks SQLite can express). The models in :mod:`batchboard.models` are
unmanaged; batchboard's migration 0001 runs this DDL in managed mode only.

The DDL is frozen: databases already migrated ran it, and the suite compares
it byte for byte with what they ran. The code that builds it may be
reorganised; the statements it yields never change. A change to the schema
is a new version, described in a module of its own with a migration of its
own.

Constraint names follow PostgreSQL's own naming of unnamed column checks
(``<table>_<column>_check``, then ``..._check1``) so that a schema created by
batchboard and one created by oxide-batch's migrator are indistinguishable in
the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal, NamedTuple, get_args

SCHEMA_NAME = "oxide_batch"
SUPPORTED_SCHEMA_VERSION = 4
#: The single-row table that records the installed version.
VERSION_TABLE = "ob_schema_version"

STATUSES = (
    "STARTING",
    "STARTED",
    "STOPPING",
    "STOPPED",
    "FAILED",
    "COMPLETED",
    "ABANDONED",
    "UNKNOWN",
)
UNRESOLVED = ("STARTING", "STARTED", "STOPPING", "UNKNOWN")
FINISHED = ("STOPPED", "FAILED", "COMPLETED", "ABANDONED")
FAILURE_CATEGORIES = (
    "INVALID_DEFINITION",
    "DUPLICATE_EXECUTION",
    "ILLEGAL_TRANSITION",
    "TRANSIENT_INFRASTRUCTURE",
    "PERMANENT_INFRASTRUCTURE",
    "USER_COMPONENT",
    "CANCELLED",
    "SERIALIZATION",
    "INVARIANT",
    "OPTIMISTIC_CONFLICT",
    "TIMEOUT",
    "UNSUPPORTED_CAPABILITY",
    "UNKNOWN_COMMIT",
    "SHUTDOWN_INCOMPLETE",
    "STALE_RECOVERED",
)
RECOVERY_RESULTS = ("FAILED", "ABANDONED")
TRANSITION_KINDS = ("STEP_EXIT", "DECIDER", "COMPLETED_STEP_REUSE", "SPLIT_AGGREGATE")
TERMINAL_KINDS = ("COMPLETE", "FAIL", "STOP")
OPERATOR_ACTIONS = ("LAUNCH", "RESTART", "STOP", "ABANDON", "RECOVER")
AUTHORIZATION_CLASSES = ("READ", "LIFECYCLE", "DESTRUCTIVE")
OUTCOME_CLASSES = ("APPLIED", "REJECTED")
#: The rejection codes, as a type; REJECTION_CODES is its values in order.
RejectionCode = Literal[
    "OPTIMISTIC_CONFLICT",
    "INVALID_STATE",
    "INSTANCE_COMPLETED",
    "INSTANCE_ABANDONED",
    "EXECUTION_ALREADY_ACTIVE",
    "INCOMPATIBLE_DEFINITION",
    "RESTART_WITHOUT_PRIOR_ATTEMPT",
    "START_LIMIT_EXCEEDED",
    "UNRESOLVED_RECOVERY_REQUIRED",
    "EXECUTION_NOT_FOUND",
    "INSTANCE_NOT_FOUND",
]
REJECTION_CODES: tuple[str, ...] = get_args(RejectionCode)
RETENTION_ACTIONS = ("HOLD", "RELEASE_HOLD", "APPLY_PURGE")
PAYLOAD_KINDS = ("INLINE", "EXTERNAL")

#: The item counters of a step execution and of a step partition.
ITEM_COUNTERS = tuple(
    f"{name}_count"
    for name in ("read", "processed", "write", "filter", "commit", "rollback")
)
#: A step execution's retry, skip and no-rollback counters.
FAULT_COUNTERS = tuple(
    f"{name}_count"
    for name in (
        "read_retry",
        "process_retry",
        "write_retry",
        "read_skip",
        "process_skip",
        "write_skip",
        "no_rollback",
    )
)
#: The rows an applied purge deleted, per table.
PURGE_COUNTERS = tuple(
    f"deleted_{name}"
    for name in (
        "flow_decisions",
        "recovery_decisions",
        "operator_requests",
        "step_partitions",
        "step_executions",
        "job_executions",
        "job_instances",
    )
)

EMPTY_FAULT_STATE_CHECKSUM = (
    "a491114819e0d3bd8b7ca004dc0636f95b45e2fcb1a67ddb5726beaea12f9922"
)


@dataclass(frozen=True)
class Check:
    """A CHECK constraint with one expression per backend."""

    name: str
    postgresql: str
    sqlite: str


class Default(NamedTuple):
    """A column default with one expression per backend."""

    postgresql: str
    sqlite: str


@dataclass(frozen=True)
class Column:
    """A column's type, nullability and default on each backend."""

    name: str
    pg_type: str
    sqlite_type: str
    null: bool = False
    default: Default | None = None
    identity: bool = False
    collate: bool = False
    #: The closed set a CHECK restricts the column to (empty when none).
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class ForeignKey:
    name: str
    columns: tuple[str, ...]
    table: str
    target: tuple[str, ...]


@dataclass(frozen=True)
class Index:
    name: str
    columns: str
    unique: bool = False
    where_postgresql: str | None = None
    where_sqlite: str | None = None


#: A column check as its (PostgreSQL, SQLite) expressions.
ColumnCheck = tuple[str, str]


@dataclass
class Table:
    name: str
    columns: list[Column] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    primary_key: tuple[str, ...] = ("id",)
    uniques: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    foreign_keys: list[ForeignKey] = field(default_factory=list)
    indexes: list[Index] = field(default_factory=list)
    _check_counts: dict[str, int] = field(default_factory=dict)

    # -- column builders -------------------------------------------------

    def _column_check(self, column: str, postgresql: str, sqlite: str) -> None:
        count = self._check_counts.get(column, 0)
        self._check_counts[column] = count + 1
        suffix = "" if count == 0 else str(count)
        self.checks.append(
            Check(f"{self.name}_{column}_check{suffix}", postgresql, sqlite)
        )

    def column(self, column: Column, *checks: ColumnCheck) -> Table:
        """Add ``column`` and its column checks, named as PostgreSQL names them."""
        self.columns.append(column)
        for postgresql, sqlite in checks:
            self._column_check(column.name, postgresql, sqlite)
        return self

    def identity(self) -> Table:
        return self.column(
            Column("id", "bigint", "integer", identity=True), ("id > 0", '"id" > 0')
        )

    def text(
        self,
        name: str,
        length: int,
        *,
        null: bool = False,
        check_name: str | None = None,
        default: Default | None = None,
    ) -> Table:
        """Add ``varchar(length) COLLATE "C"`` with a 1..length byte check."""
        column = _varchar(name, length, null, default)
        bounds = (
            f"octet_length({name}) BETWEEN 1 AND {length}",
            f'length(CAST("{name}" AS BLOB)) BETWEEN 1 AND {length}',
        )
        if check_name is None:
            return self.column(column, bounds)
        self.checks.append(Check(check_name, *bounds))
        return self.column(column)

    def choice(
        self, name: str, length: int, values: tuple[str, ...], *, null: bool = False
    ) -> Table:
        """Add ``varchar(length) COLLATE "C"`` restricted to ``values``."""
        listed = ", ".join(f"'{value}'" for value in values)
        return self.column(
            replace(_varchar(name, length, null), choices=values),
            (f"{name} IN ({listed})", f'"{name}" IN ({listed})'),
        )

    def integer(
        self,
        name: str,
        pg_type: str,
        *,
        null: bool = False,
        minimum: int | None = None,
        maximum: int | None = None,
        default: int | None = None,
    ) -> Table:
        literal = None if default is None else Default(str(default), str(default))
        checks: list[ColumnCheck] = []
        if minimum is not None and maximum is not None:
            expr = f"{name} BETWEEN {minimum} AND {maximum}"
            checks.append((expr, expr.replace(name, f'"{name}"', 1)))
        elif minimum is not None:
            op, bound = (">", 0) if minimum == 1 else (">=", minimum)
            checks.append((f"{name} {op} {bound}", f'"{name}" {op} {bound}'))
        return self.column(Column(name, pg_type, pg_type, null, literal), *checks)

    def counter(self, name: str) -> Table:
        """Add ``bigint NOT NULL DEFAULT 0 CHECK (>= 0)``."""
        return self.integer(name, "bigint", minimum=0, default=0)

    def digest(
        self,
        name: str,
        *,
        size: int = 32,
        null: bool = False,
        default: Default | None = None,
    ) -> Table:
        """Add a ``bytea`` of exactly ``size`` bytes."""
        return self.column(
            Column(name, "bytea", "blob", null, default),
            (f"octet_length({name}) = {size}", f'length("{name}") = {size}'),
        )

    def json_object(
        self,
        name: str,
        limit: int,
        *,
        default: Default | None = None,
    ) -> Table:
        """
        Add a jsonb object column whose stored size is at most ``limit``.

        On SQLite the size bound applies to the JSON text, the nearest
        equivalent of ``pg_column_size``.
        """
        return self.column(
            Column(name, "jsonb", "text", False, default),
            (f"jsonb_typeof({name}) = 'object'", f"json_type(\"{name}\") = 'object'"),
            (
                f"pg_column_size({name}) <= {limit}",
                f'length(CAST("{name}" AS BLOB)) <= {limit}',
            ),
        )

    def timestamp(self, name: str, *, null: bool = False) -> Table:
        return self.column(Column(name, "timestamptz", "datetime", null=null))

    def descriptor(self, prefix: str, payload_limit: int) -> Table:
        """Add the ``<prefix>_format/_schema/_schema_version/_payload`` quartet."""
        self.integer(f"{prefix}_format", "smallint", minimum=1)
        self.text(f"{prefix}_schema", 128)
        self.integer(f"{prefix}_schema_version", "integer", minimum=1)
        return self.json_object(f"{prefix}_payload", payload_limit)

    def counters(self, *names: str) -> Table:
        for name in names:
            self.counter(name)
        return self

    def lifecycle(self) -> Table:
        """Add an execution's failure pair, lifecycle times and row version."""
        return (
            self.choice("failure_category", 32, FAILURE_CATEGORIES, null=True)
            .integer("failure_id", "bigint", null=True, minimum=1)
            .timestamp("created_at")
            .timestamp("started_at", null=True)
            .timestamp("ended_at", null=True)
            .timestamp("updated_at")
            .integer("version", "bigint", minimum=0, default=0)
        )

    def lifecycle_checks(self) -> Table:
        """Add the rules the :meth:`lifecycle` columns obey together."""
        return (
            self.check(
                f"{self.name}_failure_shape",
                _both_or_neither("failure_category", "failure_id"),
            )
            .check(f"{self.name}_timestamp_order", _TIMESTAMP_ORDER)
            .check(f"{self.name}_end_state", _end_state())
        )

    def check(self, name: str, postgresql: str, sqlite: str | None = None) -> Table:
        self.checks.append(Check(name, postgresql, sqlite or postgresql))
        return self

    def unique(self, name: str, *columns: str) -> Table:
        self.uniques.append((name, columns))
        return self

    def references(
        self, name: str, columns: tuple[str, ...], table: str, target: tuple[str, ...]
    ) -> Table:
        self.foreign_keys.append(ForeignKey(name, columns, table, target))
        return self

    def fk(self, column: str, table: str) -> Table:
        return self.references(f"{self.name}_{column}_fkey", (column,), table, ("id",))

    def index(
        self,
        name: str,
        columns: str,
        *,
        unique: bool = False,
        where: str | None = None,
    ) -> Table:
        """Add an index; a partial index's ``where`` reads the same on both backends."""
        self.indexes.append(Index(name, columns, unique, where, where))
        return self

    # -- DDL ---------------------------------------------------------------

    def postgresql(self, schema: str) -> list[str]:
        lines = []
        for column in self.columns:
            parts = [column.name, column.pg_type]
            if column.collate:
                parts.append('COLLATE "C"')
            if column.identity:
                parts.append("GENERATED BY DEFAULT AS IDENTITY")
            if not column.null:
                parts.append("NOT NULL")
            if column.default is not None:
                parts.append(f"DEFAULT {column.default.postgresql}")
            lines.append(" ".join(parts))
        lines.append(
            f"CONSTRAINT {self.name}_pkey PRIMARY KEY ({', '.join(self.primary_key)})"
        )
        lines.extend(
            _constraints(self, "{}", [(c.name, c.postgresql) for c in self.checks])
        )
        table = f"{schema}.{self.name}"
        statements = [_create_table(table, lines)]
        for fk in self.foreign_keys:
            statements.append(
                f"ALTER TABLE {table} ADD CONSTRAINT {fk.name} "
                f"FOREIGN KEY ({', '.join(fk.columns)}) "
                f"REFERENCES {schema}.{fk.table} ({', '.join(fk.target)}) "
                "ON DELETE RESTRICT"
            )
        statements.extend(
            _create_index(index, index.name, table, index.where_postgresql)
            for index in self.indexes
        )
        return statements

    def sqlite(self) -> list[str]:
        lines = []
        for column in self.columns:
            parts = [f'"{column.name}"', column.sqlite_type]
            if column.identity:
                parts.append("NOT NULL PRIMARY KEY AUTOINCREMENT")
            elif not column.null:
                parts.append("NOT NULL")
            if column.default is not None:
                parts.append(f"DEFAULT {column.default.sqlite}")
            lines.append(" ".join(parts))
        if self.primary_key != ("id",):
            lines.append(
                f'CONSTRAINT "{self.name}_pkey" PRIMARY KEY '
                f"({', '.join(self.primary_key)})"
            )
        lines.extend(
            _constraints(self, '"{}"', [(c.name, c.sqlite) for c in self.checks])
        )
        for fk in self.foreign_keys:
            lines.append(
                f'CONSTRAINT "{fk.name}" FOREIGN KEY ({", ".join(fk.columns)}) '
                f'REFERENCES "{fk.table}" ({", ".join(fk.target)}) ON DELETE RESTRICT'
            )
        table = f'"{self.name}"'
        return [_create_table(table, lines)] + [
            _create_index(index, f'"{index.name}"', table, index.where_sqlite)
            for index in self.indexes
        ]


def _varchar(
    name: str, length: int, null: bool, default: Default | None = None
) -> Column:
    kind = f"varchar({length})"
    return Column(name, kind, kind, null, default, collate=True)


def _constraints(table: Table, quoted: str, checks: list[tuple[str, str]]) -> list[str]:
    """Return the CHECK then UNIQUE lines, names quoted by the ``quoted`` pattern."""
    lines = [
        f"CONSTRAINT {quoted.format(name)} CHECK ({expression})"
        for name, expression in checks
    ]
    lines.extend(
        f"CONSTRAINT {quoted.format(name)} UNIQUE ({', '.join(columns)})"
        for name, columns in table.uniques
    )
    return lines


def _create_table(table: str, lines: list[str]) -> str:
    return f"CREATE TABLE {table} (\n    " + ",\n    ".join(lines) + "\n)"


def _create_index(index: Index, name: str, table: str, where: str | None) -> str:
    unique = "UNIQUE " if index.unique else ""
    condition = f" WHERE {where}" if where else ""
    return f"CREATE {unique}INDEX {name} ON {table} ({index.columns}){condition}"


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def _both_or_neither(a: str, b: str) -> str:
    return f"({a} IS NULL AND {b} IS NULL) OR ({a} IS NOT NULL AND {b} IS NOT NULL)"


def _end_state() -> str:
    return (
        f"({_in('status', UNRESOLVED)} AND ended_at IS NULL) "
        f"OR ({_in('status', FINISHED)} AND ended_at IS NOT NULL)"
    )


_TIMESTAMP_ORDER = (
    "(started_at IS NULL OR started_at >= created_at) "
    "AND (ended_at IS NULL OR ended_at >= COALESCE(started_at, created_at)) "
    "AND updated_at >= created_at"
)
_EMPTY_FAULT_STATE = Default(
    '\'{"checkpoint": "' + "0" * 64 + '", "entries": []}\'::jsonb',
    '\'{"checkpoint":"' + "0" * 64 + '","entries":[]}\'',
)


def _tables() -> list[Table]:
    schema_version = (
        Table(VERSION_TABLE, primary_key=("singleton",))
        .column(Column("singleton", "boolean", "boolean", default=Default("true", "1")))
        .check("ob_schema_version_singleton_check", "singleton")
        .integer("version", "integer", minimum=1)
        .timestamp("installed_at")
    )

    definition = (
        Table("ob_job_definition")
        .identity()
        .text("job_name", 128)
        .text("definition_revision", 128)
        .integer("manifest_format", "smallint", minimum=1)
        .digest("manifest_digest")
        .json_object("manifest", 65536)
        .timestamp("registered_at")
        .unique("ob_job_definition_revision_unique", "job_name", "definition_revision")
        .unique("ob_job_definition_manifest_unique", "job_name", "manifest_digest")
    )

    upgrade = (
        Table(
            "ob_definition_upgrade",
            primary_key=("from_definition_id", "to_definition_id"),
        )
        .integer("from_definition_id", "bigint")
        .integer("to_definition_id", "bigint")
        .text("upgrade_key", 128)
        .json_object("step_mapping", 65536)
        .timestamp("registered_at")
        .unique(
            "ob_definition_upgrade_target_key_unique", "to_definition_id", "upgrade_key"
        )
        .check(
            "ob_definition_upgrade_distinct", "from_definition_id <> to_definition_id"
        )
        .fk("from_definition_id", "ob_job_definition")
        .fk("to_definition_id", "ob_job_definition")
    )

    instance = (
        Table("ob_job_instance")
        .identity()
        .text("job_name", 128)
        .digest("instance_key")
        .json_object("identifying_parameters", 1048576)
        .timestamp("created_at")
        .text("hold_actor", 128, null=True)
        .text("hold_reason", 64, null=True)
        .timestamp("hold_placed_at", null=True)
        .unique("ob_job_instance_identity_unique", "job_name", "instance_key")
        .check(
            "ob_job_instance_hold_shape",
            "(hold_actor IS NULL AND hold_reason IS NULL AND hold_placed_at IS NULL) "
            "OR (hold_actor IS NOT NULL AND hold_reason IS NOT NULL "
            "AND hold_placed_at IS NOT NULL)",
        )
        .index("ob_job_instance_name_identity", "job_name, id DESC")
    )

    execution = (
        Table("ob_job_execution")
        .identity()
        .integer("job_instance_id", "bigint")
        .integer("definition_id", "bigint")
        .integer("upgrade_from_definition_id", "bigint", null=True)
        .integer("restart_of_execution_id", "bigint", null=True)
        .integer("attempt", "integer", minimum=1)
        .choice("status", 16, STATUSES)
        .text("exit_code", 64)
        .json_object("parameters", 1048576)
        .descriptor("context", 1048576)
        .lifecycle()
        .digest("owner_token", size=16, null=True)
        .timestamp("stop_requested_at", null=True)
        .text("stop_requested_by", 128, null=True)
        .unique("ob_job_execution_attempt_unique", "job_instance_id", "attempt")
        .check(
            "ob_job_execution_upgrade_shape",
            "(upgrade_from_definition_id IS NULL AND restart_of_execution_id IS NULL) "
            "OR restart_of_execution_id IS NOT NULL",
        )
        .lifecycle_checks()
        .check(
            "ob_job_execution_stop_request_shape",
            _both_or_neither("stop_requested_at", "stop_requested_by"),
        )
        .fk("job_instance_id", "ob_job_instance")
        .fk("definition_id", "ob_job_definition")
        .fk("restart_of_execution_id", "ob_job_execution")
        .references(
            "ob_job_execution_upgrade_fk",
            ("upgrade_from_definition_id", "definition_id"),
            "ob_definition_upgrade",
            ("from_definition_id", "to_definition_id"),
        )
        .index(
            "ob_job_execution_one_unresolved",
            "job_instance_id",
            unique=True,
            where=_in("status", UNRESOLVED),
        )
        .index("ob_job_execution_instance_latest", "job_instance_id, attempt DESC")
        .index("ob_job_execution_status_updated", "status, updated_at, id")
    )

    step = (
        Table("ob_step_execution")
        .identity()
        .integer("job_execution_id", "bigint")
        .text("step_name", 128)
        .choice("status", 16, STATUSES)
        .text("exit_code", 64)
        .counters(*ITEM_COUNTERS)
        .descriptor("checkpoint", 1048576)
        .descriptor("context", 1048576)
        .lifecycle()
        .text("step_logical_id", 128, check_name="ob_step_execution_logical_id_bounds")
        .counters(*FAULT_COUNTERS)
        .integer("fault_state_format", "smallint", minimum=1, default=1)
        .text(
            "fault_state_schema",
            128,
            default=Default(
                "'oxide-batch.fault-state'::character varying",
                "'oxide-batch.fault-state'",
            ),
        )
        .integer("fault_state_schema_version", "integer", minimum=1, default=1)
        .json_object(
            "fault_state_payload",
            65536,
            default=_EMPTY_FAULT_STATE,
        )
        .digest(
            "fault_state_checksum",
            default=Default(
                f"decode('{EMPTY_FAULT_STATE_CHECKSUM}'::text, 'hex'::text)",
                f"X'{EMPTY_FAULT_STATE_CHECKSUM}'",
            ),
        )
        .unique("ob_step_execution_name_unique", "job_execution_id", "step_name")
        .unique(
            "ob_step_execution_logical_id_unique", "job_execution_id", "step_logical_id"
        )
        .lifecycle_checks()
        .fk("job_execution_id", "ob_job_execution")
        .index("ob_step_execution_job_name", "job_execution_id, step_name, id DESC")
        .index(
            "ob_step_execution_logical_history",
            "step_logical_id, job_execution_id, id DESC",
        )
        .index("ob_step_execution_execution_identity", "job_execution_id, id")
    )

    recovery = (
        Table("ob_recovery_decision")
        .identity()
        .integer("job_execution_id", "bigint")
        .integer("execution_version", "bigint", minimum=0)
        .choice("prior_status", 16, UNRESOLVED)
        .choice("resulting_status", 16, RECOVERY_RESULTS)
        .text("reason_code", 64)
        .text("operator_reference", 128)
        .digest("evidence_digest")
        .timestamp("decided_at")
        .unique(
            "ob_recovery_decision_version_unique",
            "job_execution_id",
            "execution_version",
        )
        .fk("job_execution_id", "ob_job_execution")
        .index("ob_recovery_execution_time", "job_execution_id, decided_at, id")
        .index("ob_recovery_decision_execution_identity", "job_execution_id, id")
    )

    flow = (
        Table("ob_flow_decision")
        .identity()
        .integer("job_execution_id", "bigint")
        .integer("source_step_execution_id", "bigint", null=True)
        .integer("reused_decision_id", "bigint", null=True)
        .integer("sequence", "bigint", minimum=1)
        .text("source_node_id", 128)
        .text("observed_outcome", 64)
        .text("target_node_id", 128, null=True)
        .choice("transition_kind", 32, TRANSITION_KINDS)
        .choice("terminal_kind", 16, TERMINAL_KINDS, null=True)
        .digest("plan_fingerprint")
        .digest("input_digest")
        .timestamp("decided_at")
        .unique("ob_flow_decision_sequence_unique", "job_execution_id", "sequence")
        .unique("ob_flow_decision_source_unique", "job_execution_id", "source_node_id")
        .check(
            "ob_flow_decision_target_shape",
            "(target_node_id IS NOT NULL AND terminal_kind IS NULL) "
            "OR (target_node_id IS NULL AND terminal_kind IS NOT NULL)",
        )
        .fk("job_execution_id", "ob_job_execution")
        .fk("source_step_execution_id", "ob_step_execution")
        .fk("reused_decision_id", "ob_flow_decision")
    )

    operator = (
        Table("ob_operator_request")
        .identity()
        .integer("job_instance_id", "bigint", null=True)
        .integer("job_execution_id", "bigint", null=True)
        .choice("action", 16, OPERATOR_ACTIONS)
        .choice("authorization_class", 16, AUTHORIZATION_CLASSES)
        .text("operation_id", 64)
        .text("actor_ref", 128)
        .text("reason_code", 64, null=True)
        .digest("request_digest")
        .integer("observed_version", "bigint", null=True, minimum=0)
        .choice("prior_status", 16, STATUSES, null=True)
        .choice("result_status", 16, STATUSES, null=True)
        .choice("outcome_class", 16, OUTCOME_CLASSES)
        .choice("rejection_code", 32, REJECTION_CODES, null=True)
        .timestamp("requested_at")
        .unique("ob_operator_request_identity_unique", "action", "operation_id")
        .check(
            "ob_operator_request_outcome_shape",
            "(outcome_class = 'APPLIED' AND rejection_code IS NULL) "
            "OR (outcome_class = 'REJECTED' AND rejection_code IS NOT NULL)",
        )
        .fk("job_instance_id", "ob_job_instance")
        .fk("job_execution_id", "ob_job_execution")
        .index("ob_operator_request_execution", "job_execution_id, id")
    )

    retention = (
        Table("ob_retention_action")
        .identity()
        .integer("job_instance_id", "bigint", null=True)
        .choice("action", 16, RETENTION_ACTIONS)
        .text("operation_id", 64)
        .text("actor_ref", 128)
        .text("reason_code", 64)
        .digest("plan_digest", null=True)
        .integer("batch_bound", "integer", null=True, minimum=1, maximum=1000)
        .counters(*PURGE_COUNTERS)
        .choice("outcome_class", 16, OUTCOME_CLASSES)
        .timestamp("applied_at")
        .unique("ob_retention_action_identity_unique", "action", "operation_id")
        .check(
            "ob_retention_action_purge_shape",
            "(action = 'APPLY_PURGE' AND plan_digest IS NOT NULL "
            "AND batch_bound IS NOT NULL) "
            "OR (action <> 'APPLY_PURGE' AND plan_digest IS NULL "
            "AND batch_bound IS NULL)",
        )
        .fk("job_instance_id", "ob_job_instance")
        .index("ob_retention_action_instance", "job_instance_id, id")
    )

    partition = (
        Table("ob_step_partition")
        .identity()
        .integer("step_execution_id", "bigint")
        .integer("worker_step_execution_id", "bigint", null=True)
        .text("partition_key", 128)
        .integer("partition_ordinal", "integer", minimum=1)
        .choice("status", 16, STATUSES)
        .text("exit_code", 64, null=True)
        .counters(*ITEM_COUNTERS)
        .descriptor("context", 4096)
        .digest("context_checksum")
        .integer("version", "bigint", minimum=0, default=0)
        .unique("ob_step_partition_key_unique", "step_execution_id", "partition_key")
        .unique(
            "ob_step_partition_ordinal_unique", "step_execution_id", "partition_ordinal"
        )
        .fk("step_execution_id", "ob_step_execution")
        .fk("worker_step_execution_id", "ob_step_execution")
        .index("ob_step_partition_parent_identity", "step_execution_id, id")
    )

    component = (
        Table("ob_component_state")
        .identity()
        .integer("step_execution_id", "bigint")
        .text("namespace", 128)
        .text("schema_id", 128)
        .integer("schema_version", "integer", minimum=1)
        .text("codec_id", 128)
        .integer("codec_version", "integer", minimum=1)
        .integer("checksum_algorithm", "smallint", minimum=1)
        .integer("checksum_algorithm_version", "smallint", minimum=1)
        .digest("checksum")
        .choice("payload_kind", 16, PAYLOAD_KINDS)
        .column(
            Column("payload", "bytea", "blob", null=True),
            (
                "payload IS NULL OR octet_length(payload) BETWEEN 1 AND 1048576",
                'payload IS NULL OR length("payload") BETWEEN 1 AND 1048576',
            ),
            (
                "payload IS NULL OR "
                "jsonb_typeof(convert_from(payload, 'UTF8')::jsonb) = 'object'",
                "payload IS NULL OR json_type(CAST(\"payload\" AS TEXT)) = 'object'",
            ),
        )
        .column(
            Column("external_content_id", "bytea", "blob", null=True),
            (
                "external_content_id IS NULL OR octet_length(external_content_id) = 32",
                'external_content_id IS NULL OR length("external_content_id") = 32',
            ),
        )
        .column(
            Column("external_encoded_len", "bigint", "bigint", null=True),
            (
                "external_encoded_len IS NULL OR external_encoded_len >= 0",
                "external_encoded_len IS NULL OR external_encoded_len >= 0",
            ),
        )
        .integer("version", "bigint", minimum=0, default=0)
        .timestamp("updated_at")
        .unique("ob_component_state_namespace_unique", "step_execution_id", "namespace")
        .check(
            "ob_component_state_payload_shape",
            "(payload_kind = 'INLINE' AND payload IS NOT NULL "
            "AND external_content_id IS NULL AND external_encoded_len IS NULL) "
            "OR (payload_kind = 'EXTERNAL' AND payload IS NULL "
            "AND external_content_id IS NOT NULL AND external_encoded_len IS NOT NULL)",
        )
        .fk("step_execution_id", "ob_step_execution")
        .index("ob_component_state_step_identity", "step_execution_id, namespace")
    )

    return [
        schema_version,
        definition,
        upgrade,
        instance,
        execution,
        step,
        recovery,
        flow,
        operator,
        retention,
        partition,
        component,
    ]


TABLES: list[Table] = _tables()
TABLE_NAMES: tuple[str, ...] = tuple(table.name for table in TABLES)


def postgresql_ddl(schema: str = SCHEMA_NAME) -> list[str]:
    """Return the statements that create schema version 4 on PostgreSQL."""
    statements = [f"CREATE SCHEMA IF NOT EXISTS {schema}"]
    constraints: list[str] = []
    for table in TABLES:
        created = table.postgresql(schema)
        statements.append(created[0])
        constraints.extend(created[1:])
    statements.extend(constraints)
    statements.append(
        f"INSERT INTO {schema}.{VERSION_TABLE} (singleton, version, installed_at) "
        f"VALUES (true, {SUPPORTED_SCHEMA_VERSION}, CURRENT_TIMESTAMP)"
    )
    return statements


def postgresql_drop(schema: str = SCHEMA_NAME) -> list[str]:
    return [
        f"DROP TABLE IF EXISTS {schema}.{table.name} CASCADE"
        for table in reversed(TABLES)
    ]


def sqlite_ddl() -> list[str]:
    """Return the statements that create schema version 4 on SQLite."""
    statements: list[str] = []
    for table in TABLES:
        statements.extend(table.sqlite())
    statements.append(
        f'INSERT INTO "{VERSION_TABLE}" (singleton, version, installed_at) '
        f"VALUES (1, {SUPPORTED_SCHEMA_VERSION}, "
        "strftime('%Y-%m-%d %H:%M:%f', 'now'))"
    )
    return statements


def sqlite_drop() -> list[str]:
    return [f'DROP TABLE IF EXISTS "{table.name}"' for table in reversed(TABLES)]
