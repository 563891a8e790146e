"""
The explorer's reads: keyset pages over immutable keys, one statement each.

Every list follows spec 3.1-3.2: the first page captures an identity
ceiling (the query's ``max(id)``) inside the same statement that reads the
rows, later pages take ceiling and position from the cursor, so rows created
after a traversal started are never returned and no row is returned twice.
There is no OFFSET and no COUNT over history anywhere; a list only knows
whether a next page may exist.

Redaction by construction: every read names its columns. Payload columns
(parameter values, contexts, checkpoints, fault state, partition contexts,
component state, manifests) are never selected; their descriptors are, with
the stored size computed by the database (``pg_column_size`` on PostgreSQL).
Parameter names and types are extracted by the database so values never
leave it, except through :func:`parameter_values` for viewers allowed to see
them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connections
from django.db.models import (
    BooleanField,
    Count,
    ExpressionWrapper,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    TextField,
    Value,
    Window,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce, RowNumber

from batchboard import conf, cursors, schema
from batchboard.cursors import QuerySpec
from batchboard.models import (
    FlowDecision,
    JobDefinition,
    JobExecution,
    JobInstance,
    OperatorRequest,
    RecoveryDecision,
    StepExecution,
    StepPartition,
)
from batchboard.vocabulary import (
    ATTENTION_LIMIT,
    MAX_PAGE_SIZE,
    MAX_RESPONSE_BYTES,
    MAX_UNRESOLVED_AGE,
    MIN_PAGE_SIZE,
    MIN_UNRESOLVED_AGE,
    RUNNING_LIMIT,
    STRIP_LENGTH,
)


class ExplorerInputError(ValueError):
    """A request parameter is out of range; ``str(error)`` is safe to show."""


class PageSizeOutOfRange(ExplorerInputError):
    pass


class FilterInvalid(ExplorerInputError):
    """A filter value is outside its closed set or range; ``param`` names it."""

    def __init__(self, message: str, param: str = "") -> None:
        super().__init__(message)
        self.param = param


@dataclass
class Page:
    """One page of a list: its rows and the token of the next page, if any."""

    rows: list[dict[str, Any]]
    page_size: int
    next_cursor: str | None = None
    truncated: bool = False
    first: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def has_more(self) -> bool:
        return self.next_cursor is not None


def parse_page_size(raw: str | None) -> int:
    """Return the requested page size, the configured default when absent."""
    if raw is None or raw == "":
        return int(conf.get_config()["PAGE_SIZE"])
    try:
        size = int(raw)
    except ValueError:
        raise PageSizeOutOfRange(
            f"The page size must be a whole number from {MIN_PAGE_SIZE} to "
            f"{MAX_PAGE_SIZE}."
        ) from None
    if not MIN_PAGE_SIZE <= size <= MAX_PAGE_SIZE:
        raise PageSizeOutOfRange(
            f"The page size {size} is out of range: use {MIN_PAGE_SIZE} to "
            f"{MAX_PAGE_SIZE}."
        )
    return size


def parse_status(raw: str | None) -> str:
    """Return a status filter value ("" for none) from the closed set."""
    if not raw:
        return ""
    if raw not in schema.STATUSES:
        raise FilterInvalid(
            "Unknown status filter; use one of " + ", ".join(schema.STATUSES) + ".",
            "status",
        )
    return raw


def parse_age(raw: str | None, default: int) -> int:
    """Return an unresolved age bound in whole seconds (60 s to 30 days)."""
    if raw is None or raw == "":
        return default
    try:
        age = int(raw)
    except ValueError:
        raise FilterInvalid(
            "The age bound must be a whole number of seconds.", "age"
        ) from None
    if not MIN_UNRESOLVED_AGE <= age <= MAX_UNRESOLVED_AGE:
        raise FilterInvalid(
            f"The age bound must be at least {MIN_UNRESOLVED_AGE} seconds and at "
            f"most {MAX_UNRESOLVED_AGE // 86400} days.",
            "age",
        )
    return age


def parse_job_filter(raw: str | None) -> str:
    """Return a job-name filter ("" for none), bounded like a job name."""
    if not raw:
        return ""
    if len(raw.encode("utf-8")) > 128:
        raise FilterInvalid("A job name holds at most 128 bytes.", "job")
    return raw


def _vendor() -> str:
    return connections[conf.database_alias()].vendor


def _using() -> str:
    return conf.database_alias()


def _stored_size(column: str, table: str) -> RawSQL:
    """Return the stored size of a payload column without reading it."""
    qualified = f'"{table}"."{column}"'
    if _vendor() == "postgresql":
        return RawSQL(f"pg_column_size({qualified})", (), output_field=IntegerField())
    return RawSQL(f"length(CAST({qualified} AS BLOB))", (), output_field=IntegerField())


def _parameter_kinds(table: str, column: str) -> RawSQL:
    """Return ``[[name, type], ...]`` of a parameter envelope, as JSON text."""
    qualified = f'"{table}"."{column}"'
    if _vendor() == "postgresql":
        sql = (
            "(SELECT coalesce(jsonb_agg(jsonb_build_array(e.k, e.v->>'type')), "
            f"'[]'::jsonb)::text FROM jsonb_each({qualified}) AS e(k, v))"
        )
    else:
        sql = (
            "(SELECT coalesce(json_group_array(json_array(key, "
            f"json_extract(value, '$.type'))), '[]') FROM json_each({qualified}))"
        )
    return RawSQL(sql, (), output_field=TextField())


def _descriptors(raw: str | None) -> list[tuple[str, str]]:
    """Turn the extracted ``[[name, type]]`` JSON into sorted display pairs."""
    pairs = []
    for name, kind in json.loads(raw or "[]"):
        pairs.append((str(name), str(kind or "?").upper()))
    return sorted(pairs, key=lambda pair: pair[0].encode("utf-8"))


def _max_id(queryset: QuerySet[Any]) -> Coalesce:
    """Return ``coalesce(max(id), 0)`` of a queryset as a scalar subquery."""
    return Coalesce(
        Subquery(queryset.order_by("-id").values("id")[:1]),
        Value(0),
        output_field=IntegerField(),
    )


# -- statements compiled once -------------------------------------------------------

# Compiling a page's ORM query cost more than running it; on PostgreSQL each
# shape of query is compiled once, with stand-in values, and later pages run
# the cached text with their own values bound in the stand-ins' places.
_Statement = tuple[str, list[int | None], list[Any], list[str]]
_STATEMENTS: dict[tuple[Any, ...], _Statement | None] = {}
# Within every integer column's range: Django drops a comparison with a
# value its column cannot hold, and the stand-in would not come back.
_STAND_IN = 2_000_000_011


def _stand_in(index: int, value: Any) -> Any:
    if isinstance(value, str):
        return f"\x1fbatchboard-stand-in-{index}\x1f"
    return _STAND_IN + index


def _values_rows(
    shape: tuple[Any, ...],
    build: Callable[[Sequence[Any]], QuerySet[Any]],
    args: Sequence[Any],
) -> list[dict[str, Any]]:
    """
    Return the rows of the values query ``build(args)``.

    ``shape`` must name everything that changes the statement's text apart
    from ``args`` (which filters apply, the page size). ``args`` are ints
    and strings bound as parameters. SQLite, whose values need the ORM's
    converters, always goes through the ORM, as does any shape whose
    stand-ins do not come back as parameters one for one.
    """
    using = _using()
    if _vendor() != "postgresql":
        return list(build(args))
    key = (using, *shape)
    if key not in _STATEMENTS:
        stand_ins = [_stand_in(index, value) for index, value in enumerate(args)]
        query = build(stand_ins).query
        sql, params = query.get_compiler(using).as_sql()
        # The names a values query gives its columns, in select order.
        names = (
            list(query.selected)
            if getattr(query, "selected", None)
            else [*query.extra_select, *query.values_select, *query.annotation_select]
        )
        slots: list[int | None] = []
        for param in params:
            # Integer lookups may come back wrapped (psycopg's Int4, an int).
            found = [
                index
                for index, stand_in in enumerate(stand_ins)
                if isinstance(param, type(stand_in))
                and not isinstance(param, bool)
                and param == stand_in
            ]
            slots.append(found[0] if found else None)
        complete = {slot for slot in slots if slot is not None} == set(range(len(args)))
        _STATEMENTS[key] = (sql, slots, list(params), names) if complete else None
    statement = _STATEMENTS[key]
    if statement is None:
        return list(build(args))
    sql, slots, constants, names = statement
    bound = [
        constant if slot is None else args[slot]
        for slot, constant in zip(slots, constants, strict=True)
    ]
    with connections[using].cursor() as cursor:
        cursor.execute(sql, bound)
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


# -- page assembly --------------------------------------------------------------


@dataclass(frozen=True)
class _Window:
    spec: QuerySpec
    page_size: int
    after: cursors.Key | None
    ceiling: int | None

    @property
    def first(self) -> bool:
        return self.after is None


def _window(spec: QuerySpec, page_size: int, token: str | None) -> _Window:
    if not token:
        return _Window(spec, page_size, None, None)
    key, ceiling = cursors.decode(token, spec, page_size)
    return _Window(spec, page_size, key, ceiling)


def _bounded(
    queryset: QuerySet[Any],
    window: _Window,
    ceiling_source: Any,
    ceiling: int | None = None,
) -> QuerySet[Any]:
    """
    Apply the identity ceiling: captured here on page one, else the cursor's.

    ``ceiling`` stands in for the cursor's ceiling when given.
    """
    if window.ceiling is None:
        return queryset.annotate(bb_ceiling=ceiling_source).filter(
            id__lte=F("bb_ceiling")
        )
    return queryset.filter(id__lte=window.ceiling if ceiling is None else ceiling)


def _assemble(
    rows: Sequence[dict[str, Any]],
    window: _Window,
    key: Callable[[dict[str, Any]], cursors.Key],
    estimate: Callable[[dict[str, Any]], int],
) -> Page:
    """
    Keep rows while the size estimate fits the response bound (spec 3.2).

    A next cursor is issued when the page is full or was truncated and at
    least one row is kept, so a final full page leads to an empty page.
    oxide-batch answers ``ResponseTooLarge`` when the first row alone is
    over the bound; a page here always keeps its first row instead, so such
    a row is shown (and paged past) rather than hiding the rest of the list.
    """
    kept: list[dict[str, Any]] = []
    total = 0
    truncated = False
    for row in rows:
        total += estimate(row)
        if total > MAX_RESPONSE_BYTES and kept:
            truncated = True
            break
        kept.append(row)
    page = Page(kept, window.page_size, truncated=truncated, first=window.first)
    if kept and (len(rows) == window.page_size or truncated):
        ceiling = window.ceiling
        if ceiling is None:
            ceiling = int(kept[0]["bb_ceiling"])
        page.next_cursor = cursors.encode(
            window.spec, window.page_size, key(kept[-1]), ceiling
        )
    return page


def _len(value: str | None) -> int:
    return len(value.encode("utf-8")) if value else 0


# -- shared projections -----------------------------------------------------------

EXECUTION_FIELDS = (
    "id",
    "job_instance_id",
    "attempt",
    "status",
    "exit_code",
    "failure_category",
    "failure_id",
    "created_at",
    "started_at",
    "ended_at",
    "updated_at",
    "version",
    "stop_requested_at",
    "restart_of_execution_id",
)


def _execution_values(queryset: QuerySet[JobExecution]) -> QuerySet[Any]:
    return queryset.annotate(
        job_name=F("job_instance__job_name"),
        owner_recorded=ExpressionWrapper(
            Q(owner_token__isnull=False), output_field=BooleanField()
        ),
    )


def _execution_estimate(row: dict[str, Any]) -> int:
    return _len(row["job_name"]) + _len(row["exit_code"]) + 256


STEP_FIELDS = (
    "id",
    "job_execution_id",
    "step_name",
    "step_logical_id",
    "status",
    "exit_code",
    "read_count",
    "processed_count",
    "write_count",
    "filter_count",
    "commit_count",
    "rollback_count",
    "read_retry_count",
    "process_retry_count",
    "write_retry_count",
    "read_skip_count",
    "process_skip_count",
    "write_skip_count",
    "no_rollback_count",
    "failure_category",
    "failure_id",
    "created_at",
    "started_at",
    "ended_at",
    "updated_at",
    "version",
    "checkpoint_format",
    "checkpoint_schema",
    "checkpoint_schema_version",
    "context_format",
    "context_schema",
    "context_schema_version",
)


def _step_values(queryset: QuerySet[StepExecution]) -> QuerySet[Any]:
    partitions = StepPartition.objects.filter(step_execution_id=OuterRef("id"))
    return queryset.annotate(
        partitions_total=Coalesce(
            Subquery(
                partitions.order_by()
                .values("step_execution_id")
                .annotate(n=Count("id"))
                .values("n")
            ),
            Value(0),
        ),
        partitions_done=Coalesce(
            Subquery(
                partitions.filter(status__in=schema.FINISHED)
                .order_by()
                .values("step_execution_id")
                .annotate(n=Count("id"))
                .values("n")
            ),
            Value(0),
        ),
        checkpoint_size=_stored_size("checkpoint_payload", "ob_step_execution"),
        context_size=_stored_size("context_payload", "ob_step_execution"),
    )


def _step_estimate(row: dict[str, Any]) -> int:
    return _len(row["step_name"]) + _len(row["exit_code"]) + 256


PARTITION_FIELDS = (
    "id",
    "step_execution_id",
    "worker_step_execution_id",
    "partition_key",
    "partition_ordinal",
    "status",
    "exit_code",
    "read_count",
    "processed_count",
    "write_count",
    "filter_count",
    "commit_count",
    "rollback_count",
    "version",
    "context_format",
    "context_schema",
    "context_schema_version",
)


# -- list_job_names -------------------------------------------------------------


def job_names(page_size: int, token: str | None = None) -> Page:
    """Return job names in byte order (keyset by name, definitions' ceiling)."""
    window = _window(cursors.job_names(), page_size, token)
    fields = ["job_name"] + (["bb_ceiling"] if window.first else [])
    args: list[Any] = []
    if window.after is not None:
        args.append(cursors.name_key(window.after))
    if window.ceiling is not None:
        args.append(window.ceiling)

    def build(values: Sequence[Any]) -> QuerySet[Any]:
        given = iter(values)
        queryset = JobDefinition.objects.using(_using()).all()
        if window.after is not None:
            queryset = queryset.filter(job_name__gt=next(given))
        queryset = _bounded(
            queryset,
            window,
            _max_id(JobDefinition.objects.all()),
            next(given) if window.ceiling is not None else None,
        )
        return (queryset.order_by("job_name").values(*fields).distinct())[
            : window.page_size
        ]

    shape = (
        "job_names",
        window.after is None,
        window.ceiling is None,
        window.page_size,
    )
    rows = _values_rows(shape, build, args)
    return _assemble(
        rows,
        window,
        key=lambda row: cursors.Name(row["job_name"]),
        estimate=lambda row: _len(row["job_name"]) + 8,
    )


def job_exists(job_name: str) -> bool:
    """Return whether any definition or instance carries this job name."""
    return (
        JobDefinition.objects.using(_using()).filter(job_name=job_name).exists()
        or JobInstance.objects.using(_using()).filter(job_name=job_name).exists()
    )


def job_strips(
    names: Sequence[str], length: int = STRIP_LENGTH
) -> dict[str, list[dict[str, Any]]]:
    """
    Return each job's latest executions (newest instance first, then attempt).

    On PostgreSQL one LATERAL statement walks the ``(job_name, id DESC)``
    instance index and each instance's ``(job_instance_id, attempt DESC)``
    index, so the cost is bounded by ``len(names) * length`` whatever the
    history. SQLite has no LATERAL; a window function over the named jobs
    serves the small databases it is used for.
    """
    strips: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    if not names:
        return strips
    # What the overview shows of a run: its chip and, for the latest, when
    # it was created (timestamps cost the most to read).
    columns = ("id", "status", "attempt", "job_instance_id", "created_at")
    if _vendor() == "postgresql":
        # One branch per job with the name as a literal, so the planner uses
        # that name's statistics: a rare job's newest instances come off the
        # (job_name, id DESC) index instead of a walk down all instances
        # (the generic estimate of a LATERAL parameter chose that walk).
        # Each instance's latest attempts come off (job_instance_id,
        # attempt DESC).
        branch = (
            "(SELECT %s::text AS job_name, e.id, e.status, e.attempt, "
            "e.job_instance_id, e.created_at FROM ("
            "  SELECT i.id FROM ob_job_instance i WHERE i.job_name = %s "
            "  ORDER BY i.id DESC LIMIT %s"
            ") AS newest CROSS JOIN LATERAL ("
            "  SELECT x.id, x.status, x.attempt, x.job_instance_id, x.created_at "
            "  FROM ob_job_execution x "
            "  WHERE x.job_instance_id = newest.id ORDER BY x.attempt DESC LIMIT %s"
            ") AS e ORDER BY e.job_instance_id DESC, e.attempt DESC LIMIT %s)"
        )
        sql = " UNION ALL ".join([branch] * len(names))
        params: list[Any] = []
        for name in names:
            params += [name, name, length, length, length]
        with connections[_using()].cursor() as cursor:
            cursor.execute(sql, params)
            for job_name, *values in cursor.fetchall():
                strips[job_name].append(dict(zip(columns, values, strict=True)))
        for strip in strips.values():
            strip.sort(key=lambda run: (-run["job_instance_id"], -run["attempt"]))
        return strips
    ranked = (
        JobExecution.objects.using(_using())
        .filter(job_instance__job_name__in=list(names))
        .annotate(
            job_name=F("job_instance__job_name"),
            bb_rank=Window(
                RowNumber(),
                partition_by=[F("job_instance__job_name")],
                order_by=[F("job_instance_id").desc(), F("attempt").desc()],
            ),
        )
        .filter(bb_rank__lte=length)
        .order_by("job_name", "-job_instance_id", "-attempt")
        .values("job_name", *columns)
    )
    for row in ranked:
        strips[row.pop("job_name")].append(row)
    return strips


def running_counts(names: Iterable[str]) -> dict[str, int]:
    """Return how many unresolved executions each named job has now."""
    named = list(names)
    if not named:
        return {}

    def build(values: Sequence[Any]) -> QuerySet[Any]:
        return (
            JobExecution.objects.using(_using())
            .filter(
                status__in=schema.UNRESOLVED, job_instance__job_name__in=list(values)
            )
            .order_by()
            .values("job_instance__job_name")
            .annotate(n=Count("id"))
        )[:RUNNING_LIMIT]

    rows = _values_rows(("running_counts", len(named)), build, named)
    return {row["job_instance__job_name"]: row["n"] for row in rows}


def recent_failures(limit: int = ATTENTION_LIMIT) -> list[dict[str, Any]]:
    """Return the latest FAILED executions by update time (status index)."""

    def build(values: Sequence[Any]) -> QuerySet[Any]:
        queryset = JobExecution.objects.using(_using()).filter(status="FAILED")
        return (
            _execution_values(queryset)
            .order_by("-updated_at", "-id")
            .values(*EXECUTION_FIELDS, "job_name", "owner_recorded")[:limit]
        )

    return _values_rows(("recent_failures", limit), build, [])


# -- list_instances ---------------------------------------------------------------


def instances(job_name: str, page_size: int, token: str | None = None) -> Page:
    """Return a job's instances, newest first, with their latest attempt."""
    window = _window(cursors.instances(job_name), page_size, token)
    args: list[Any] = [job_name]
    if window.after is not None:
        args.append(cursors.identity_key(window.after))
    if window.ceiling is not None:
        args.append(window.ceiling)
    fields = [
        "id",
        "job_name",
        "created_at",
        "hold_actor",
        "hold_reason",
        "hold_placed_at",
        "parameter_kinds",
        "latest_id",
        "latest_attempt",
        "latest_status",
    ] + (["bb_ceiling"] if window.first else [])

    def build(values: Sequence[Any]) -> QuerySet[Any]:
        given = iter(values)
        name = next(given)
        queryset = JobInstance.objects.using(_using()).filter(job_name=name)
        if window.after is not None:
            queryset = queryset.filter(id__lt=next(given))
        queryset = _bounded(
            queryset,
            window,
            _max_id(JobInstance.objects.filter(job_name=name)),
            next(given) if window.ceiling is not None else None,
        )
        latest = JobExecution.objects.filter(job_instance_id=OuterRef("id")).order_by(
            "-attempt"
        )
        queryset = queryset.annotate(
            parameter_kinds=_parameter_kinds(
                "ob_job_instance", "identifying_parameters"
            ),
            latest_id=Subquery(latest.values("id")[:1]),
            latest_attempt=Subquery(latest.values("attempt")[:1]),
            latest_status=Subquery(latest.values("status")[:1]),
        )
        return queryset.order_by("-id").values(*fields)[: window.page_size]

    shape = (
        "instances",
        window.after is None,
        window.ceiling is None,
        window.page_size,
    )
    rows = _values_rows(shape, build, args)
    for row in rows:
        row["parameters"] = _descriptors(row.pop("parameter_kinds"))
    return _assemble(
        rows,
        window,
        key=lambda row: cursors.Identity(row["id"]),
        estimate=lambda row: (
            _len(row["job_name"])
            + 160
            + sum(_len(name) + 24 for name, _ in row["parameters"])
        ),
    )


def instance(instance_id: int) -> dict[str, Any] | None:
    """Return one instance's displayable projection, or ``None``."""

    def build(values: Sequence[Any]) -> QuerySet[Any]:
        return (
            JobInstance.objects.using(_using())
            .filter(id=values[0])
            .annotate(
                parameter_kinds=_parameter_kinds(
                    "ob_job_instance", "identifying_parameters"
                )
            )
            .values(
                "id",
                "job_name",
                "instance_key",
                "created_at",
                "hold_actor",
                "hold_reason",
                "hold_placed_at",
                "parameter_kinds",
            )
            .order_by("id")[:1]
        )

    rows = _values_rows(("instance",), build, [instance_id])
    if not rows:
        return None
    (row,) = rows
    row["instance_key_hex"] = bytes(row.pop("instance_key")).hex()
    row["parameters"] = _descriptors(row.pop("parameter_kinds"))
    return row


def parameter_values(instance_id: int) -> dict[str, str]:
    """
    Return an instance's parameter values as display strings.

    Only for viewers holding ``batchboard.view_parameter_values``; the view
    checks the permission before calling this.
    """
    document = (
        JobInstance.objects.using(_using())
        .filter(id=instance_id)
        .values_list("identifying_parameters", flat=True)
        .first()
    )
    values: dict[str, str] = {}
    if isinstance(document, str):
        document = json.loads(document)
    for name, entry in (document or {}).items():
        value = entry.get("value") if isinstance(entry, dict) else None
        if isinstance(value, bool):
            values[name] = "true" if value else "false"
        else:
            values[name] = str(value)
    return values


# -- list_executions (of one instance) -----------------------------------------


def instance_executions(
    instance_id: int, page_size: int, token: str | None = None
) -> Page:
    """Return an instance's executions, latest attempt first."""
    window = _window(cursors.executions(instance_id), page_size, token)
    fields = [*EXECUTION_FIELDS, "job_name", "owner_recorded"] + (
        ["bb_ceiling"] if window.first else []
    )

    def build(queryset: QuerySet[Any], given: Iterable[Any]) -> QuerySet[Any]:
        values = iter(given)
        if window.after is not None:
            attempt, after_id = next(values), next(values)
            queryset = queryset.filter(
                Q(attempt__lt=attempt) | Q(attempt=attempt, id__lt=after_id)
            )
        queryset = _bounded(
            queryset,
            window,
            _max_id(JobExecution.objects.all()),
            next(values) if window.ceiling is not None else None,
        )
        return (
            _execution_values(queryset)
            .order_by("-attempt", "-id")
            .values(*fields)[: window.page_size]
        )

    after = cursors.ordered_key(window.after) if window.after is not None else ()
    rows = _child_rows(
        "instance_executions",
        window,
        ("job_instance_id", instance_id),
        build,
        JobExecution,
        after,
    )
    return _assemble(
        rows,
        window,
        key=lambda row: cursors.Ordered(row["attempt"], row["id"]),
        estimate=_execution_estimate,
    )


# -- batchboard_recent_executions -------------------------------------------------


def recent_executions(
    status: str, job_name: str, page_size: int, token: str | None = None
) -> Page:
    """
    Return executions across all jobs, newest first.

    Unfiltered or by status, the order is the execution id (descending),
    served by the primary key or, for a rare status, by
    ``(status, updated_at, id)``. With a job filter the order is the
    instance (newest first), then the attempt (latest first): that order is
    what the ``(job_name, id DESC)`` instance index and each instance's
    ``(job_instance_id, attempt DESC)`` index yield, so a page costs the
    same for a busy job, a rare one and a page deep in history. Its key is
    ``Ordered(instance id, attempt)``, both immutable.
    """
    window = _window(cursors.recent_executions(status, job_name), page_size, token)
    after = window.after
    args: list[Any] = [status] if status else []
    if job_name:
        args.append(job_name)
        order: tuple[str, ...] = ("-job_instance_id", "-attempt")
        if after is not None:
            args.extend(cursors.ordered_key(after))
    else:
        order = ("-id",)
        if after is not None:
            args.append(cursors.identity_key(after))
    if window.ceiling is not None:
        args.append(window.ceiling)
    fields = [*EXECUTION_FIELDS, "job_name", "owner_recorded"] + (
        ["bb_ceiling"] if window.first else []
    )

    def build(values: Sequence[Any]) -> QuerySet[Any]:
        given = iter(values)
        queryset = JobExecution.objects.using(_using()).all()
        if status:
            queryset = queryset.filter(status=next(given))
        if job_name:
            queryset = queryset.filter(job_instance__job_name=next(given))
            if after is not None:
                instance_id, attempt = next(given), next(given)
                queryset = queryset.filter(
                    Q(job_instance_id__lt=instance_id)
                    | Q(job_instance_id=instance_id, attempt__lt=attempt)
                ).extra(
                    # The same bound as plain inequalities on both sides of
                    # the join, where the planner can start its index scans:
                    # it uses neither the OR above nor inequalities carried
                    # across the join as index conditions, and would
                    # otherwise filter every newer execution of every job on
                    # a deep page.
                    where=[
                        '"ob_job_instance"."id" <= %s',
                        '"ob_job_execution"."job_instance_id" <= %s',
                    ],
                    params=[instance_id, instance_id],
                )
        elif after is not None:
            queryset = queryset.filter(id__lt=next(given))
        queryset = _bounded(
            queryset,
            window,
            _max_id(JobExecution.objects.all()),
            next(given) if window.ceiling is not None else None,
        )
        return (
            _execution_values(queryset)
            .order_by(*order)
            .values(*fields)[: window.page_size]
        )

    shape = (
        "recent_executions",
        bool(status),
        bool(job_name),
        after is None,
        window.ceiling is None,
        window.page_size,
    )
    rows = _values_rows(shape, build, args)

    def key(row: dict[str, Any]) -> cursors.Key:
        if job_name:
            return cursors.Ordered(row["job_instance_id"], row["attempt"])
        return cursors.Identity(row["id"])

    return _assemble(rows, window, key=key, estimate=_execution_estimate)


# -- list_unresolved_executions ---------------------------------------------------


def _older_than(age_seconds: int) -> RawSQL:
    """Return ``now - age`` in database server time, whole seconds."""
    if _vendor() == "postgresql":
        return RawSQL("CURRENT_TIMESTAMP - make_interval(secs => %s)", (age_seconds,))
    return RawSQL(
        "strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now', %s)", (f"-{age_seconds} seconds",)
    )


def unresolved(age_seconds: int, page_size: int, token: str | None = None) -> Page:
    """
    Return unresolved executions not updated for ``age_seconds``, by id.

    The age is measured against the database server's clock, strictly.
    """
    if age_seconds < MIN_UNRESOLVED_AGE:
        raise FilterInvalid(
            f"The age bound must be at least {MIN_UNRESOLVED_AGE} seconds.", "age"
        )
    window = _window(cursors.unresolved_executions(age_seconds), page_size, token)
    fields = [*EXECUTION_FIELDS, "job_name", "owner_recorded", "stop_requested_by"] + (
        ["bb_ceiling"] if window.first else []
    )
    args = [age_seconds]
    if window.after is not None:
        args.append(cursors.unresolved_key(window.after))
    if window.ceiling is not None:
        args.append(window.ceiling)

    def build(values: Sequence[Any]) -> QuerySet[Any]:
        given = iter(values)
        queryset = JobExecution.objects.using(_using()).filter(
            status__in=schema.UNRESOLVED, updated_at__lt=_older_than(next(given))
        )
        if window.after is not None:
            queryset = queryset.filter(id__gt=next(given))
        queryset = _bounded(
            queryset,
            window,
            _max_id(JobExecution.objects.all()),
            next(given) if window.ceiling is not None else None,
        )
        return (
            _execution_values(queryset)
            .order_by("id")
            .values(*fields)[: window.page_size]
        )

    shape = (
        "unresolved",
        window.after is None,
        window.ceiling is None,
        window.page_size,
    )
    rows = _values_rows(shape, build, args)
    return _assemble(
        rows,
        window,
        key=lambda row: cursors.Ordered(row["attempt"], row["id"]),
        estimate=_execution_estimate,
    )


# -- single execution and its lists ------------------------------------------------


def execution(execution_id: int) -> dict[str, Any] | None:
    """Return one execution's displayable projection (spec 3.5), or ``None``."""

    def build(values: Sequence[Any]) -> QuerySet[Any]:
        queryset = JobExecution.objects.using(_using()).filter(id=values[0])
        return (
            _execution_values(queryset)
            .annotate(
                definition_revision=F("definition__definition_revision"),
                manifest_format=F("definition__manifest_format"),
                manifest_digest=F("definition__manifest_digest"),
                upgrade_from_revision=F("upgrade_from_definition__definition_revision"),
                context_size=_stored_size("context_payload", "ob_job_execution"),
            )
            .values(
                *EXECUTION_FIELDS,
                "job_name",
                "owner_recorded",
                "stop_requested_by",
                "definition_id",
                "upgrade_from_definition_id",
                "definition_revision",
                "manifest_format",
                "manifest_digest",
                "upgrade_from_revision",
                "context_format",
                "context_schema",
                "context_schema_version",
                "context_size",
            )
            .order_by("id")[:1]
        )

    rows = _values_rows(("execution",), build, [execution_id])
    return rows[0] if rows else None


def steps(execution_id: int, page_size: int, token: str | None = None) -> Page:
    """Return an execution's steps in creation order."""
    window = _window(cursors.step_executions(execution_id), page_size, token)
    page = _identity_children(
        "steps",
        StepExecution,
        ("job_execution_id", execution_id),
        window,
        [
            *STEP_FIELDS,
            "partitions_total",
            "partitions_done",
            "checkpoint_size",
            "context_size",
        ],
        _step_estimate,
        _step_values,
    )
    page.extra["after_id"] = (
        cursors.identity_key(window.after) if window.after is not None else 0
    )
    return page


def steps_after(execution_id: int, after_id: int, limit: int) -> list[dict[str, Any]]:
    """
    Return steps created after ``after_id`` (a live view watching for new steps).

    This is a fresh read from the position, not a continuation of a
    traversal: steps that appear while an execution runs are what it is for.
    """
    queryset = StepExecution.objects.using(_using()).filter(
        job_execution_id=execution_id, id__gt=after_id
    )
    fields = [
        *STEP_FIELDS,
        "partitions_total",
        "partitions_done",
        "checkpoint_size",
        "context_size",
    ]
    return list(_step_values(queryset).order_by("id").values(*fields)[:limit])


def execution_status(execution_id: int) -> str | None:
    """Return an execution's status, or ``None`` when there is no such execution."""
    return (
        JobExecution.objects.using(_using())
        .filter(id=execution_id)
        .values_list("status", flat=True)
        .first()
    )


def step(step_id: int) -> dict[str, Any] | None:
    """Return one step's displayable projection with its job context, or ``None``."""

    def build(values: Sequence[Any]) -> QuerySet[Any]:
        return (
            _step_values(StepExecution.objects.using(_using()).filter(id=values[0]))
            .annotate(
                job_name=F("job_execution__job_instance__job_name"),
                job_instance_id=F("job_execution__job_instance_id"),
                execution_status=F("job_execution__status"),
                execution_attempt=F("job_execution__attempt"),
            )
            .values(
                *STEP_FIELDS,
                "partitions_total",
                "partitions_done",
                "checkpoint_size",
                "context_size",
                "job_name",
                "job_instance_id",
                "execution_status",
                "execution_attempt",
            )
            .order_by("id")[:1]
        )

    rows = _values_rows(("step",), build, [step_id])
    return rows[0] if rows else None


def partition_totals(step_id: int) -> dict[str, int]:
    """Return the summed counters of a step's partitions (at most 1024 rows)."""
    from django.db.models import Sum

    totals = (
        StepPartition.objects.using(_using())
        .filter(step_execution_id=step_id)
        .aggregate(
            read=Coalesce(Sum("read_count"), 0),
            write=Coalesce(Sum("write_count"), 0),
            processed=Coalesce(Sum("processed_count"), 0),
            skipped=Coalesce(Sum("filter_count"), 0),
        )
    )
    return {key: int(value) for key, value in totals.items()}


def partitions(step_id: int, page_size: int, token: str | None = None) -> Page:
    """Return a step's partitions in creation order."""

    def with_size(queryset: QuerySet[Any]) -> QuerySet[Any]:
        return queryset.annotate(
            context_size=_stored_size("context_payload", "ob_step_partition")
        )

    return _identity_children(
        "partitions",
        StepPartition,
        ("step_execution_id", step_id),
        _window(cursors.step_partitions(step_id), page_size, token),
        [*PARTITION_FIELDS, "context_size"],
        lambda row: _len(row["partition_key"]) + 192,
        with_size,
    )


def partition(partition_id: int) -> dict[str, Any] | None:
    """Return one partition's projection, or ``None``."""
    return (
        StepPartition.objects.using(_using())
        .filter(id=partition_id)
        .annotate(
            context_size=_stored_size("context_payload", "ob_step_partition"),
            parent_status=F("step_execution__status"),
        )
        .values(*PARTITION_FIELDS, "context_size", "parent_status")
        .first()
    )


def _identity_after(window: _Window) -> tuple[int, ...]:
    return () if window.after is None else (cursors.identity_key(window.after),)


def _ascending_ids(
    model: Any,
    window: _Window,
    fields: Sequence[str],
    values_of: Callable[[QuerySet[Any]], QuerySet[Any]] = lambda queryset: queryset,
) -> Callable[[QuerySet[Any], Iterable[Any]], QuerySet[Any]]:
    """Return a page builder for records in id order after an identity key."""

    def build(queryset: QuerySet[Any], given: Iterable[Any]) -> QuerySet[Any]:
        values = iter(given)
        if window.after is not None:
            queryset = queryset.filter(id__gt=next(values))
        queryset = _bounded(
            queryset,
            window,
            _max_id(model.objects.all()),
            next(values) if window.ceiling is not None else None,
        )
        return values_of(queryset).order_by("id").values(*fields)[: window.page_size]

    return build


def _child_rows(
    name: str,
    window: _Window,
    parent: tuple[str, int],
    build: Callable[[QuerySet[Any], Iterable[Any]], QuerySet[Any]],
    model: Any,
    after: Sequence[int],
) -> list[dict[str, Any]]:
    """
    Return the rows of one page of a parent's records.

    ``build`` narrows the parent's records to the page: it takes the
    filtered queryset and the values (the position ``after``, then the
    cursor's ceiling) in order.
    """
    column, parent_id = parent
    args: list[Any] = [parent_id, *after]
    if window.ceiling is not None:
        args.append(window.ceiling)

    def query(values: Sequence[Any]) -> QuerySet[Any]:
        given = iter(values)
        queryset = model.objects.using(_using()).filter(**{column: next(given)})
        return build(queryset, given)

    shape = (name, window.after is None, window.ceiling is None, window.page_size)
    return _values_rows(shape, query, args)


def _identity_children(
    name: str,
    model: Any,
    parent: tuple[str, int],
    window: _Window,
    fields: Sequence[str],
    estimate: Callable[[dict[str, Any]], int],
    values_of: Callable[[QuerySet[Any]], QuerySet[Any]] = lambda queryset: queryset,
) -> Page:
    """Return one page of a parent's records keyed by identity, in id order."""
    selected = [*fields] + (["bb_ceiling"] if window.first else [])
    rows = _child_rows(
        name,
        window,
        parent,
        _ascending_ids(model, window, selected, values_of),
        model,
        _identity_after(window),
    )
    return _assemble(
        rows,
        window,
        key=lambda row: cursors.Identity(row["id"]),
        estimate=estimate,
    )


def flow_decisions(execution_id: int, page_size: int, token: str | None = None) -> Page:
    """Return an execution's flow decisions by (sequence, id)."""
    window = _window(cursors.flow_decisions(execution_id), page_size, token)
    fields = [
        "id",
        "sequence",
        "source_node_id",
        "source_step_execution_id",
        "observed_outcome",
        "target_node_id",
        "terminal_kind",
        "transition_kind",
        "reused_decision_id",
        "plan_fingerprint",
        "input_digest",
        "decided_at",
    ] + (["bb_ceiling"] if window.first else [])

    def build(queryset: QuerySet[Any], given: Iterable[Any]) -> QuerySet[Any]:
        values = iter(given)
        if window.after is not None:
            sequence, after_id = next(values), next(values)
            queryset = queryset.filter(
                Q(sequence__gt=sequence) | Q(sequence=sequence, id__gt=after_id)
            )
        queryset = _bounded(
            queryset,
            window,
            _max_id(FlowDecision.objects.all()),
            next(values) if window.ceiling is not None else None,
        )
        return queryset.order_by("sequence", "id").values(*fields)[: window.page_size]

    after = cursors.ordered_key(window.after) if window.after is not None else ()
    rows = _child_rows(
        "flow_decisions",
        window,
        ("job_execution_id", execution_id),
        build,
        FlowDecision,
        after,
    )
    return _assemble(
        rows,
        window,
        key=lambda row: cursors.Ordered(row["sequence"], row["id"]),
        estimate=lambda row: (
            _len(row["source_node_id"]) + _len(row["observed_outcome"]) + 224
        ),
    )


def recovery_decisions(
    execution_id: int, page_size: int, token: str | None = None
) -> Page:
    """Return an execution's recovery decisions by id."""
    return _identity_children(
        "recovery_decisions",
        RecoveryDecision,
        ("job_execution_id", execution_id),
        _window(cursors.recovery_decisions(execution_id), page_size, token),
        [
            "id",
            "execution_version",
            "prior_status",
            "resulting_status",
            "reason_code",
            "operator_reference",
            "evidence_digest",
            "decided_at",
        ],
        lambda row: _len(row["reason_code"]) + _len(row["operator_reference"]) + 160,
    )


def operator_requests(
    execution_id: int, page_size: int, token: str | None = None
) -> Page:
    """Return the audited operator requests on an execution by id."""
    return _identity_children(
        "operator_requests",
        OperatorRequest,
        ("job_execution_id", execution_id),
        _window(cursors.operator_requests(execution_id), page_size, token),
        [
            "id",
            "action",
            "authorization_class",
            "operation_id",
            "actor_ref",
            "reason_code",
            "request_digest",
            "observed_version",
            "prior_status",
            "result_status",
            "outcome_class",
            "rejection_code",
            "requested_at",
        ],
        lambda row: (
            _len(row["operation_id"])
            + _len(row["actor_ref"])
            + _len(row["reason_code"])
            + 192
        ),
    )
