"""
The explorer's reads: keyset pages over immutable keys, one statement each.

Every list is a :class:`Listing` (what it reads, under which filter, in
which order, keyed how) read by one builder, :meth:`Listing.page`: the
first page captures an identity ceiling (the query's ``max(id)``) inside the
statement that reads the rows, later pages take ceiling and position from
the cursor, so rows created after a traversal started are never returned
and no row is returned twice (spec 3.1-3.2, :mod:`.pagination`). There is
no OFFSET and no COUNT over history anywhere; a list only knows whether a
next page may exist.

Redaction by construction: every read names its columns. Payload columns
(parameter values, contexts, checkpoints, fault state, partition contexts,
component state, manifests) are never selected; their descriptors are, with
the stored size computed by the database (:class:`StoredSize`). Parameter
names and types are extracted by the database so values never leave it,
except through :func:`parameter_values` for viewers allowed to see them.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, Final, Literal

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import (
    BooleanField,
    Count,
    DateTimeField,
    ExpressionWrapper,
    F,
    Func,
    IntegerField,
    Model,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    TextField,
    Value,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce
from django.db.models.sql.compiler import SQLCompiler

from batchboard import cursors, db
from batchboard.cursors import Key, QuerySpec
from batchboard.explorer import pagination
from batchboard.explorer.pagination import CEILING, Page, Row, assemble, values_rows
from batchboard.explorer.relations import PARTITION_PLACE
from batchboard.expressions import Probed, Unindexed
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
from batchboard.schema import FAULT_COUNTERS, ITEM_COUNTERS
from batchboard.vocabulary import (
    ATTENTION_LIMIT,
    BUSY_JOB_KEPT_JOBS,
    BUSY_JOB_KEPT_SECONDS,
    BUSY_JOB_SAMPLE,
    BUSY_JOB_SPAN,
    FINISHED,
    MAX_RESPONSE_BYTES,
    RARE_JOB_INSTANCES,
    STATUSES,
    SUGGESTED_NAMES,
    UNRESOLVED,
    WINDOW_SCAN,
)

__all__ = [
    "Page",
    "execution",
    "flow_decisions",
    "instance",
    "instance_executions",
    "instances",
    "job_exists",
    "job_names",
    "job_names_starting",
    "operator_requests",
    "parameter_values",
    "parameter_values_of",
    "partition",
    "partitions",
    "recent_executions",
    "recent_failures",
    "recovery_decisions",
    "step",
    "steps",
    "unresolved",
    "windowed_executions",
    "windowed_instances",
]


def _using() -> str:
    return db.read_alias()


def _len(value: str | None) -> int:
    return len(value.encode("utf-8")) if value else 0


# -- expressions the database computes ---------------------------------------------


class StoredSize(Func):
    """The stored size in bytes of a payload column, without reading it."""

    output_field = IntegerField()
    template = "length(CAST(%(expressions)s AS BLOB))"

    def as_postgresql(
        self,
        compiler: SQLCompiler,
        connection: BaseDatabaseWrapper,
        **extra: Any,
    ) -> tuple[str, Sequence[Any]]:
        return self.as_sql(
            compiler, connection, template="pg_column_size(%(expressions)s)", **extra
        )


#: ``to_char``'s pattern of :func:`batchboard.api.projections.iso`'s text;
#: ``MS`` cuts the microseconds, as Python's ``timespec`` does.
_TO_CHAR_ISO = 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'


class IsoTime(Func):
    """
    A time as a download writes it, ISO-8601 UTC to the millisecond.

    PostgreSQL writes the text itself (``2026-03-01T12:00:00.000Z``, the
    microseconds cut as :func:`batchboard.api.projections.iso` cuts them,
    ``NULL`` for none), so a row's times are not loaded as datetimes only
    to be written back. SQLite gives the time as the ORM reads it, which
    :func:`~batchboard.api.projections.iso` writes: its stored text need
    not be in one form, and its own formatting rounds where Python cuts.
    """

    # SQLite's value goes through the ORM's datetime converter; PostgreSQL
    # has no converter for a datetime, so its text comes back as it is.
    output_field = DateTimeField()
    template = "%(expressions)s"

    def as_postgresql(
        self,
        compiler: SQLCompiler,
        connection: BaseDatabaseWrapper,
        **extra: Any,
    ) -> tuple[str, Sequence[Any]]:
        template = f"to_char(%(expressions)s AT TIME ZONE 'UTC', '{_TO_CHAR_ISO}')"
        return self.as_sql(compiler, connection, template=template, **extra)


class ParameterKinds(Func):
    """``[[name, type], ...]`` of a parameter envelope, as JSON text (no values)."""

    output_field = TextField()
    template = (
        "(SELECT coalesce(json_group_array(json_array(key, "
        "json_extract(value, '$.type'))), '[]') FROM json_each(%(expressions)s))"
    )

    def as_postgresql(
        self,
        compiler: SQLCompiler,
        connection: BaseDatabaseWrapper,
        **extra: Any,
    ) -> tuple[str, Sequence[Any]]:
        template = (
            "(SELECT coalesce(jsonb_agg(jsonb_build_array(e.k, e.v->>'type')), "
            "'[]'::jsonb)::text FROM jsonb_each(%(expressions)s) AS e(k, v))"
        )
        return self.as_sql(compiler, connection, template=template, **extra)


def _older_than(age_seconds: int) -> RawSQL:
    """
    Return ``now - age`` in database server time, whole seconds.

    The age is the statement's parameter as given (SQLite spells the
    modifier itself), so a kept statement binds it (:mod:`.pagination`).
    """
    if connections[_using()].vendor == "postgresql":
        return RawSQL("CURRENT_TIMESTAMP - make_interval(secs => %s)", (age_seconds,))
    return RawSQL(
        "strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now', printf('-%%d seconds', %s))",
        (age_seconds,),
    )


def _database_now() -> RawSQL:
    """
    Return the clock of the database the page reads, as :func:`_older_than`
    reads it (on PostgreSQL the transaction's start).
    """
    if connections[_using()].vendor == "postgresql":
        return RawSQL("CURRENT_TIMESTAMP", (), output_field=DateTimeField())
    return RawSQL(
        "strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now')", (), output_field=DateTimeField()
    )


def _descriptors(raw: str | None) -> list[tuple[str, str]]:
    """Turn the extracted ``[[name, type]]`` JSON into sorted display pairs."""
    pairs = [
        (str(name), str(kind or "?").upper()) for name, kind in json.loads(raw or "[]")
    ]
    return sorted(pairs, key=lambda pair: pair[0].encode("utf-8"))


class Greatest(Func):
    """
    ``max()`` of a column as a plain function, so no GROUP BY is added.

    Over a subquery it reads one index entry on both backends: PostgreSQL
    turns it into an index scan with LIMIT 1, SQLite into its min/max
    search (a ``SEARCH``, where ``ORDER BY id DESC LIMIT 1`` shows as a
    ``SCAN`` that EXPLAIN cannot tell from a full one).
    """

    function = "MAX"
    output_field = IntegerField()


def _max_id(queryset: QuerySet[Any]) -> Coalesce:
    """Return ``coalesce(max(id), 0)`` of a queryset as a scalar subquery."""
    return Coalesce(
        Subquery(queryset.order_by().annotate(bb_max=Greatest("id")).values("bb_max")),
        Value(0),
        output_field=IntegerField(),
    )


# -- what each record shows ---------------------------------------------------------

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
    "job_name",
    "owner_recorded",
)


def _execution_columns() -> dict[str, Any]:
    """Return the computed columns every execution row shows (never the token)."""
    return {
        "job_name": F("job_instance__job_name"),
        "owner_recorded": ExpressionWrapper(
            Q(owner_token__isnull=False), output_field=BooleanField()
        ),
    }


def _execution_values(
    queryset: QuerySet[JobExecution], given: Collection[str] = ()
) -> QuerySet[Any]:
    """Annotate the computed columns, but the ``given`` ones (a filter's)."""
    columns = _execution_columns()
    return queryset.annotate(
        **{name: column for name, column in columns.items() if name not in given}
    )


def _given(listing: Listing) -> tuple[str, ...]:
    """Return the fields ``listing``'s probe filters give each row."""
    return tuple(narrow.lookup for narrow in listing.filters if narrow.probe)


def _without_given(listing: Listing, values: Callable[..., QuerySet[Any]]) -> Listing:
    """
    Return ``listing`` projected by ``values`` (an executions projection),
    reading none of the fields its probe filters give.
    """
    given = _given(listing)
    return replace(
        listing,
        fields=tuple(name for name in listing.fields if name not in given),
        project=functools.partial(values, given=given),
    )


def _execution_estimate(row: Row) -> int:
    return _len(row["job_name"]) + _len(row["exit_code"]) + 256


#: The times of an execution a download writes, by the projection's names;
#: a downloaded row carries each as ``iso_<name>`` (:class:`IsoTime`).
EXPORT_TIMES = (
    "created_at",
    "started_at",
    "ended_at",
    "updated_at",
    "stop_requested_at",
)

#: An execution's row as its list's download reads it
#: (:mod:`batchboard.explorer.exports`): the list's columns, the times as
#: text, then the definition and the context's descriptor, joined in the
#: page's own statement. Never a payload, a parameter or the owner token.
EXPORT_EXECUTION_FIELDS = (
    "id",
    "job_instance_id",
    "job_name",
    "attempt",
    "status",
    "exit_code",
    "failure_category",
    "failure_id",
    *(f"iso_{name}" for name in EXPORT_TIMES),
    "version",
    "owner_recorded",
    "definition_revision",
    "manifest_format",
    "manifest_digest",
    "context_format",
    "context_schema",
    "context_schema_version",
    "context_size",
)


def _execution_export_values(
    queryset: QuerySet[JobExecution], given: Collection[str] = ()
) -> QuerySet[Any]:
    columns = _execution_columns()
    return queryset.annotate(
        **{name: column for name, column in columns.items() if name not in given},
        **{f"iso_{name}": IsoTime(name) for name in EXPORT_TIMES},
        definition_revision=F("definition__definition_revision"),
        manifest_format=F("definition__manifest_format"),
        manifest_digest=F("definition__manifest_digest"),
        context_size=StoredSize("context_payload"),
    )


STEP_FIELDS = (
    "id",
    "job_execution_id",
    "step_name",
    "step_logical_id",
    "status",
    "exit_code",
    *ITEM_COUNTERS,
    *FAULT_COUNTERS,
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
    "partitions_total",
    "partitions_done",
    "checkpoint_size",
    "context_size",
)


def _partition_count(**conditions: Any) -> Coalesce:
    """Return how many partitions of the outer step meet ``conditions``."""
    return Coalesce(
        Subquery(
            StepPartition.objects.filter(step_execution_id=OuterRef("id"), **conditions)
            .order_by()
            .values("step_execution_id")
            .annotate(n=Count("id"))
            .values("n")
        ),
        Value(0),
    )


def _step_columns() -> dict[str, Any]:
    """Return the computed columns every step row shows."""
    return {
        "partitions_total": _partition_count(),
        "partitions_done": _partition_count(status__in=FINISHED),
        "checkpoint_size": StoredSize("checkpoint_payload"),
        "context_size": StoredSize("context_payload"),
    }


def _step_values(queryset: QuerySet[StepExecution]) -> QuerySet[Any]:
    return queryset.annotate(**_step_columns())


def _step_values_alone(queryset: QuerySet[StepExecution]) -> QuerySet[Any]:
    """Annotate the computed columns but count no partition (none is read)."""
    return queryset.annotate(
        **{
            **_step_columns(),
            "partitions_total": Value(0),
            "partitions_done": Value(0),
        }
    )


PARTITION_FIELDS = (
    *PARTITION_PLACE,
    "exit_code",
    *ITEM_COUNTERS,
    "version",
    "context_format",
    "context_schema",
    "context_schema_version",
    "context_size",
)


def _partition_values(queryset: QuerySet[StepPartition]) -> QuerySet[Any]:
    return queryset.annotate(context_size=StoredSize("context_payload"))


INSTANCE_FIELDS = (
    "id",
    "job_name",
    "created_at",
    "hold_actor",
    "hold_reason",
    "hold_placed_at",
    "parameter_kinds",
)


def _instance_values(queryset: QuerySet[JobInstance]) -> QuerySet[Any]:
    return queryset.annotate(parameter_kinds=ParameterKinds("identifying_parameters"))


def _with_parameters(row: Row) -> None:
    row["parameters"] = _descriptors(row.pop("parameter_kinds"))


def _latest_attempt(queryset: QuerySet[JobInstance]) -> QuerySet[Any]:
    latest = JobExecution.objects.filter(job_instance_id=OuterRef("id")).order_by(
        "-attempt"
    )
    return queryset.annotate(
        parameter_kinds=ParameterKinds("identifying_parameters"),
        latest_id=Subquery(latest.values("id")[:1]),
        latest_attempt=Subquery(latest.values("attempt")[:1]),
        latest_status=Subquery(latest.values("status")[:1]),
    )


def _instance_first(queryset: QuerySet[JobExecution]) -> QuerySet[Any]:
    """
    Let a job's executions be read from its instances, newest first.

    The status is compared unindexed (see :class:`Unindexed`), and the page
    is sorted by the joined instance's id rather than the execution's copy
    of it (:func:`_instance_order`): the same order, but one a nested loop
    over the ``(job_name, id DESC)`` instance index and each instance's
    ``(job_instance_id, attempt DESC)`` index yields without a sort.
    """
    return queryset.alias(bb_status=Unindexed("status", output_field=TextField()))


def _instance_order() -> tuple[Any, ...]:
    table = JobInstance._meta.db_table
    joined = RawSQL(f'"{table}"."id"', (), output_field=IntegerField())
    return (joined.desc(), F("attempt").desc())


def _joined_instance_bound(
    queryset: QuerySet[JobExecution], position: Sequence[Any]
) -> QuerySet[Any]:
    """
    Restate a job-filtered page's instance bound on both sides of the join.

    The planner uses neither the keyset's OR nor inequalities carried across
    the join as index conditions, and would otherwise filter every newer
    execution of every job on a deep page; plain inequalities on the
    instance's id and the execution's instance column let both index scans
    start at the position. (Django would rewrite a lookup on the joined
    instance's id to the execution's own column, hence the column by name.)
    """
    instance_id = position[0]
    table = JobInstance._meta.db_table
    return queryset.alias(
        bb_instance_id=RawSQL(f'"{table}"."id"', (), output_field=IntegerField())
    ).filter(bb_instance_id__lte=instance_id, job_instance_id__lte=instance_id)


def _directed(order: Sequence[str], named: Callable[[str], str]) -> str:
    """Return a list's ``order`` as ORDER BY terms, each column as ``named``."""
    return ", ".join(
        f"{named(column.lstrip('-'))} " + ("DESC" if column.startswith("-") else "ASC")
        for column in order
    )


def _merged(
    queryset: QuerySet[Any],
    branches: Sequence[Q],
    order: Sequence[str],
    limit: int,
    ceiling: Any = None,
    each: tuple[str, Sequence[Any]] | None = None,
    *,
    probed: bool = False,
) -> QuerySet[Any]:
    """
    Return the rows of ``queryset`` among each branch's first ``limit``.

    Each branch walks its own index range in the list's order under all of
    the page's conditions and stops at ``limit`` rows, so the page's rows
    are among the few ids the walks return: a statement bounded by
    ``len(branches) * limit`` rows however many match, where one range over
    every branch at once must read them all and sort them. The ids are an
    ``IN`` list on the primary key, which SQLite visits in id order: a list
    by id needs no sort either (PostgreSQL sorts those few ids). Rows,
    cursor and ceiling are unchanged. A list's own ``branches`` are read
    so on SQLite only; a filter's ``walks`` on both backends.

    ``ceiling`` (a first page's identity ceiling, an expression) bounds
    every walk on SQLite. On PostgreSQL the walks leave it out: the
    statement reads the ceiling and the rows in one snapshot, so every row
    it reads has an id at most the ceiling, and the bound filters nothing.
    As a subquery in each walk it would be planned once per walk, and
    those plans cost more than the walks run; without it the planner
    merges the walks in order, reading only as far into each as the page
    needs. The page's ceiling is still read once, beside its rows.

    ``each`` (a lookup and its values, one branch per value) says the
    branches are ranges of one index, led by the lookup's column and
    ordered as the list: on PostgreSQL a walk that reads that table alone
    is then planned once and run for each value (a lateral join over the
    values), where eight walks planned one by one cost more than they
    read. A walk that joins another table, or is ``probed`` (a
    :attr:`Filter.probe` checks each row it reads), keeps its own plan
    per value, merged in order as above: it would otherwise read a full
    ``limit`` from every value's range. On SQLite such ranges are one compound
    statement ordered and limited as the page, with no limit of each
    branch's own: each branch is read off its index already in order, so
    SQLite merges them as they come and stops at the page (a branch
    limited on its own is a subquery, which SQLite reads whole and sorts
    again before merging).
    """
    walks: list[str] = []
    # PostgreSQL names every subquery in FROM; SQLite's plans show an
    # unnamed one as the walk it is.
    named = connections[queryset.db].vendor == "postgresql"
    # PostgreSQL joins the ids as a set and sorts after projecting, so its
    # walks also return the order's columns (read off the walks' indexes)
    # and only the page's ids of their rows are kept: the projection (the
    # instance's join, the columns) then reads the page's rows alone, not
    # every walk's. SQLite visits the IN list in the index's order and
    # stops at the page.
    columns = [column.lstrip("-") for column in order]
    keyed = named or each is not None
    returned = list(dict.fromkeys([*columns, "id"])) if keyed else ["id"]
    params: list[Any] = []
    if ceiling is not None and not named:
        queryset = queryset.filter(id__lte=ceiling)
    merged: QuerySet[Any] = queryset.model._default_manager.using(queryset.db)
    alone = len(queryset.query.alias_map) <= 1 and not probed
    if named and each is not None and alone:
        lookup, values = each
        value = RawSQL("bb_each.value", ())
        walk = (queryset.filter(**{lookup: value}).order_by(*order).values(*returned))[
            :limit
        ]
        sql, walk_params = walk.query.get_compiler(queryset.db).as_sql()
        listed = ", ".join(["(%s)"] * len(values))
        source = f"(VALUES {listed}) AS bb_each(value) CROSS JOIN LATERAL ({sql})"
        params += [*values, *walk_params]
    elif not named and each is not None:
        # SQLite: the ranges merged as they are read, in the page's order.
        positions = _directed(order, lambda name: str(returned.index(name) + 1))
        for condition in branches:
            walk = queryset.filter(condition).order_by().values(*returned)
            sql, walk_params = walk.query.get_compiler(queryset.db).as_sql()
            walks.append(sql)
            params.extend(walk_params)
        union = " UNION ALL ".join(walks)
        return merged.filter(
            id__in=RawSQL(
                f"SELECT id FROM ({union} ORDER BY {positions} LIMIT {int(limit)})",
                params,
            )
        )
    else:
        for index, condition in enumerate(branches):
            walk = queryset.filter(condition).order_by(*order).values(*returned)
            sql, walk_params = walk[:limit].query.get_compiler(queryset.db).as_sql()
            # SQLite takes LIMIT in a compound's member only inside a subquery.
            walks.append(
                f"SELECT * FROM ({sql})" + (f" AS bb_walk_{index}" if named else "")
            )
            params.extend(walk_params)
        union = " UNION ALL ".join(walks)
        if not named:
            return merged.filter(id__in=RawSQL(union, params))
        source = f"({union})"
    keys = _directed(order, lambda name: f"bb_ids.{name}")
    ids = RawSQL(
        f"SELECT bb_ids.id FROM {source} AS bb_ids ORDER BY {keys} LIMIT {int(limit)}",
        params,
    )
    return merged.filter(id__in=ids)


# -- the keyset builder ---------------------------------------------------------------


def _unchanged(queryset: QuerySet[Any]) -> QuerySet[Any]:
    return queryset


def _identity_position(key: Key) -> tuple[int, ...]:
    return (cursors.identity_key(key),)


def _ordered_position(key: Key) -> tuple[int, ...]:
    return cursors.ordered_key(key)


def _identity(row: Row) -> Key:
    return cursors.Identity(row["id"])


@dataclass(frozen=True)
class Filter:
    """
    A lookup a list is narrowed by; ``wrap`` turns its value into an expression.

    A filter may be given several values at once (a tuple): the rows match
    any of them. Under ``walks`` (a column with an index in the list's
    order for each value) each value is read as its own limited walk, the
    walks merged by the list's key (:func:`_merged`), on both backends:
    one range over several values would read every row of them all, or
    every row of the others, to find the page. Otherwise the values are an
    ``IN`` list.
    """

    lookup: str
    wrap: Callable[[Any], Any] | None = None
    walks: bool = False
    #: Each value's walk is one range of an index led by this column and
    #: continued in the list's order (:func:`_merged`'s ``each``).
    ranges: bool = False
    #: The rows match where this condition of the value holds, checked for
    #: each row as it is read (:class:`~batchboard.expressions.Probed`);
    #: ``lookup`` then names the row's field that holds the value on every
    #: row matched: each row read is given it, and the list need not read it.
    probe: Callable[[Any], Q] | None = None


@dataclass(frozen=True)
class Listing:
    """
    One keyset list: a model's rows under a filter, in one immutable order.

    ``filters`` take a page's filter values (``where`` is a fixed
    condition). ``order`` names the sort columns (``-`` for descending); a
    cursor's position (``position`` reads it from the key) holds one value
    per column and the page continues strictly after it, with ``continued``
    adding conditions a continued page needs for its index scans. ``key``
    makes the key a row's cursor carries. ``fields`` are the columns shown,
    ``project`` annotates the computed ones, ``prepare`` finishes a row read
    and ``estimate`` sizes it for the response bound. The identity ceiling
    is the model's ``max(id)``, or under ``scoped_ceiling`` that of the
    filtered rows. On SQLite a list with ``branches`` (conditions that
    split its rows, each with an index in the list's order) is read as one
    limited walk per branch, merged (:func:`_merged`). ``at`` turns the
    position's bound arguments into what its columns compare with (a time
    given as text, :func:`_stamp`).
    """

    name: str
    model: type[Model]
    order: tuple[str, ...]
    fields: tuple[str, ...]
    key: Callable[[Row], Key]
    estimate: Callable[[Row], int]
    filters: tuple[Filter, ...] = ()
    where: Q | None = None
    position: Callable[[Key], tuple[Any, ...]] = _identity_position
    project: Callable[[QuerySet[Any]], QuerySet[Any]] = _unchanged
    prepare: Callable[[Row], None] | None = None
    scoped_ceiling: bool = False
    distinct: bool = False
    continued: Callable[[QuerySet[Any], Sequence[Any]], QuerySet[Any]] | None = None
    prefilter: Callable[[QuerySet[Any]], QuerySet[Any]] = _unchanged
    sort: Callable[[], tuple[Any, ...]] | None = None
    branches: tuple[Q, ...] = ()
    #: On PostgreSQL, read the page's ids first and project only those: for
    #: a list whose rows come off a small index in another order, sorted
    #: after the join otherwise.
    ids_first: bool = False
    at: Callable[[Sequence[Any]], list[Any]] | None = None

    def after(self, position: Sequence[Any]) -> Q:
        """Return the rows strictly after ``position`` in this list's order."""
        condition = Q()
        for index, column in enumerate(self.order):
            name = column.lstrip("-")
            operator = "lt" if column.startswith("-") else "gt"
            equal = {
                earlier.lstrip("-"): value
                for earlier, value in zip(self.order[:index], position, strict=False)
            }
            condition |= Q(**equal, **{f"{name}__{operator}": position[index]})
        return condition

    def page(
        self,
        spec: QuerySpec,
        page_size: int,
        token: str | None,
        *values: Any,
    ) -> Page:
        """
        Return one page of this list under the filter ``values``.

        ``values`` go to :attr:`filters` in order; a ``None`` or empty value
        leaves its filter out. One statement reads the page.
        """
        window = pagination.Window.open(spec, page_size, token)
        applied = tuple(
            (narrow, value)
            for narrow, value in zip(self.filters, values, strict=True)
            if value not in (None, "", ())
        )
        position = self.position(window.after) if window.after is not None else ()
        args: list[Any] = []
        for _, value in applied:
            args.extend(value if isinstance(value, tuple) else (value,))
        args += list(position)
        if window.ceiling is not None:
            args.append(window.ceiling)
        fields = self.fields + ((CEILING,) if window.first else ())

        def build(given_values: Sequence[Any]) -> QuerySet[Any]:
            given = iter(given_values)
            queryset = self.prefilter(self.model._default_manager.using(_using()))
            if self.where is not None:
                queryset = queryset.filter(self.where)
            scope: dict[str, Any] = {}
            probed = False
            walks: list[Q] = []
            each: tuple[str, list[Any]] | None = None
            for narrow, value in applied:
                if isinstance(value, tuple):
                    several = [next(given) for _ in value]
                    if narrow.walks:
                        walks += [Q(**{narrow.lookup: one}) for one in several]
                        if narrow.ranges:
                            each = (narrow.lookup, several)
                        continue
                    scope[f"{narrow.lookup}__in"] = several
                    queryset = queryset.filter(**{f"{narrow.lookup}__in": several})
                    continue
                value = next(given)
                if narrow.probe is not None:
                    queryset = queryset.filter(narrow.probe(value))
                    probed = True
                    continue
                scope[narrow.lookup] = narrow.wrap(value) if narrow.wrap else value
                queryset = queryset.filter(**{narrow.lookup: scope[narrow.lookup]})
            if window.after is not None:
                at = [next(given) for _ in position]
                if self.at is not None:
                    at = self.at(at)
                queryset = queryset.filter(self.after(at))
                if self.continued is not None:
                    queryset = self.continued(queryset, at)
            ceiling: dict[str, Any] = {}
            if window.ceiling is None:
                source = self.model._default_manager.all()
                if self.scoped_ceiling:
                    source = source.filter(**scope)
                ceiling[CEILING] = _max_id(source)
            else:
                queryset = queryset.filter(id__lte=next(given))
            vendor = connections[_using()].vendor
            if not walks and vendor == "sqlite":
                walks = list(self.branches)
            if not walks and vendor == "postgresql" and self.ids_first:
                walks = [Q()]
            if walks:
                queryset = _merged(
                    queryset,
                    walks,
                    self.order,
                    page_size,
                    ceiling.get(CEILING),
                    each,
                    probed=probed,
                )
                # The page's own ceiling, beside the rows it bounded.
                queryset = queryset.annotate(**ceiling)
            elif ceiling:
                queryset = queryset.annotate(**ceiling).filter(id__lte=F(CEILING))
            order = self.sort() if self.sort is not None else self.order
            rows = self.project(queryset).order_by(*order).values(*fields)
            if self.distinct:
                rows = rows.distinct()
            return rows[:page_size]

        # What changes the statement's text apart from its arguments.
        lookups = tuple(
            (narrow.lookup, len(value)) if isinstance(value, tuple) else narrow.lookup
            for narrow, value in applied
        )
        shape = (self.name, lookups, window.first, page_size)
        rows = values_rows(_using(), shape, build, args)
        for narrow, value in applied:
            if narrow.probe is not None:
                for row in rows:
                    row[narrow.lookup] = value
        if self.prepare is not None:
            for row in rows:
                self.prepare(row)
        return assemble(rows, window, self.key, self.estimate)


@dataclass(frozen=True)
class Record:
    """One record's page head: the columns shown of a model's row, by id."""

    name: str
    model: type[Model]
    fields: tuple[str, ...]
    project: Callable[[QuerySet[Any]], QuerySet[Any]] = _unchanged

    def get(self, pk: int) -> Row | None:
        """Return the record's projection, or ``None``; one statement."""

        def build(values: Sequence[Any]) -> QuerySet[Any]:
            queryset = self.model._default_manager.using(_using()).filter(id=values[0])
            return self.project(queryset).values(*self.fields).order_by("id")[:1]

        rows = values_rows(_using(), (self.name,), build, [pk])
        return rows[0] if rows else None


# -- time windows -----------------------------------------------------------------------


def _stamp_text(count: int) -> str:
    """
    Return a time (microseconds since the epoch) as the read's database
    compares it: ISO-8601 for PostgreSQL, and on SQLite the very text the
    ORM stores, so that a stored time and its cursor's copy compare equal.
    """
    at = cursors.moment(count)
    connection = connections[_using()]
    if connection.vendor == "postgresql":
        return at.isoformat()
    return str(connection.ops.adapt_datetimefield_value(at))


def _stamp(text: str) -> RawSQL:
    """Return a time given as :func:`_stamp_text` as an expression to compare with."""
    if connections[_using()].vendor == "postgresql":
        return RawSQL("%s::timestamptz", (text,), output_field=DateTimeField())
    return RawSQL("%s", (text,), output_field=DateTimeField())


def _stamped_position(key: Key) -> tuple[Any, ...]:
    at, pk = cursors.windowed_key(key)
    return (_stamp_text(at), pk)


def _stamped_at(position: Sequence[Any]) -> list[Any]:
    return [_stamp(position[0]), *position[1:]]


def _updated_no_later(
    queryset: QuerySet[Any], position: Sequence[Any]
) -> QuerySet[Any]:
    """
    Restate a continued page's bound as a plain inequality on the time, so
    each walk's index range starts at the position (the planners take no
    index bound from the keyset's OR).
    """
    return queryset.filter(updated_at__lte=position[0])


# -- the lists -------------------------------------------------------------------------

JOB_NAMES = Listing(
    "job_names",
    JobDefinition,
    order=("job_name",),
    fields=("job_name",),
    key=lambda row: cursors.Name(row["job_name"]),
    position=lambda key: (cursors.name_key(key),),
    estimate=lambda row: _len(row["job_name"]) + 8,
    # A job has a definition per revision; its name is listed once.
    distinct=True,
)

INSTANCES = Listing(
    "instances",
    JobInstance,
    filters=(Filter("job_name"),),
    order=("-id",),
    fields=(*INSTANCE_FIELDS, "latest_id", "latest_attempt", "latest_status"),
    key=_identity,
    project=_latest_attempt,
    prepare=_with_parameters,
    estimate=lambda row: (
        _len(row["job_name"])
        + 160
        + sum(_len(name) + 24 for name, _ in row["parameters"])
    ),
    # The (job_name, id DESC) index answers the job's own max(id).
    scoped_ceiling=True,
)

INSTANCE_EXECUTIONS = Listing(
    "instance_executions",
    JobExecution,
    filters=(Filter("job_instance_id"),),
    order=("-attempt", "-id"),
    fields=EXECUTION_FIELDS,
    key=lambda row: cursors.Ordered(row["attempt"], row["id"]),
    position=_ordered_position,
    project=_execution_values,
    estimate=_execution_estimate,
)

RECENT_EXECUTIONS = Listing(
    "recent_executions",
    JobExecution,
    # Several statuses: one walk by id per status (on SQLite off the
    # embedded (status, id) index), so "all finished" costs what one
    # common status costs and "all active" what a rare one does.
    filters=(Filter("status", walks=True),),
    order=("-id",),
    fields=EXECUTION_FIELDS,
    key=_identity,
    project=_execution_values,
    estimate=_execution_estimate,
)

# Newest instance first, then latest attempt: the order the (job_name, id
# DESC) instance index and each instance's (job_instance_id, attempt DESC)
# index yield, so a page costs the same for a busy job, a rare one and a
# page deep in history. Both key parts are immutable.
JOB_EXECUTIONS = Listing(
    "job_executions",
    JobExecution,
    filters=(Filter("bb_status"), Filter("job_instance__job_name")),
    order=("-job_instance_id", "-attempt"),
    fields=EXECUTION_FIELDS,
    key=lambda row: cursors.Ordered(row["job_instance_id"], row["attempt"]),
    position=_ordered_position,
    project=_execution_values,
    estimate=_execution_estimate,
    continued=_joined_instance_bound,
    prefilter=_instance_first,
    sort=_instance_order,
)

# Executions updated within a time window, last updated first, then by id.
# The time is not immutable: a row updated while the list is paged moves
# past the window's end (resolved when the first page was read) and leaves
# the list, and the identity ceiling keeps out rows created since. Every
# status is its own walk down the (status, updated_at, id) index, merged
# by the key: one status is one range, no status is one walk per status.
WINDOWED_EXECUTIONS = Listing(
    "windowed_executions",
    JobExecution,
    filters=(
        Filter("status", walks=True, ranges=True),
        Filter("job_instance__job_name"),
        Filter("updated_at__gte", wrap=_stamp),
        Filter("updated_at__lt", wrap=_stamp),
    ),
    order=("-updated_at", "-id"),
    fields=EXECUTION_FIELDS,
    # Replaced per read by one that carries the window's bounds.
    key=_identity,
    position=_stamped_position,
    at=_stamped_at,
    continued=_updated_no_later,
    project=_execution_values,
    estimate=_execution_estimate,
)


# A rare job's window on SQLite: the job's instances on (job_name, id DESC),
# each one's executions on (job_instance_id, attempt DESC), the status
# compared unindexed so that no range of (status, updated_at, id) is read
# instead; the job's few runs in the window are sorted. Same rows, order
# and keyset as WINDOWED_EXECUTIONS.
RARE_JOB_WINDOWED_EXECUTIONS = replace(
    WINDOWED_EXECUTIONS,
    name="rare_job_windowed_executions",
    filters=(
        Filter("bb_status"),
        *WINDOWED_EXECUTIONS.filters[1:],
    ),
    prefilter=_instance_first,
)


def _job_probe(value: Any) -> Q:
    """Return "the execution's instance is of job ``value``", probed per row."""
    instances = JobInstance._default_manager.filter(
        id=OuterRef("job_instance_id"), job_name=value
    )
    return Q(Probed(instances))


# A busy job's window on PostgreSQL: each status's walk down (status,
# updated_at, id) probes each row's instance for the job (its primary key)
# instead of joining the instances. A join is planned with the instances'
# indexes and the job's statistics once per walk, which costs more than a
# busy job's walks read; the probe is planned once and is what the planner
# chooses for such a job anyway (most rows of the window are the job's).
# Same rows, order and keyset as WINDOWED_EXECUTIONS.
# Every row's job is the one probed for: no join reads its name again.
BUSY_JOB_WINDOWED_EXECUTIONS = _without_given(
    replace(
        WINDOWED_EXECUTIONS,
        name="busy_job_windowed_executions",
        filters=(
            WINDOWED_EXECUTIONS.filters[0],
            Filter("job_name", probe=_job_probe),
            *WINDOWED_EXECUTIONS.filters[2:],
        ),
    ),
    _execution_values,
)


#: What each process found of a job's busyness, per database alias and job
#: name, and until when (monotonic seconds) it holds it.
_BUSY_JOBS: dict[tuple[str, str], tuple[bool, float]] = {}


def _is_busy_job(job_name: str) -> bool:
    """
    Return whether ``job_name`` has at least one instance in every
    :data:`BUSY_JOB_SPAN` of late (its newest :data:`BUSY_JOB_SAMPLE`
    instances among the last ``SPAN * SAMPLE`` ids).

    The look is one bounded read of its name index and the instances'
    greatest id, one round trip more than the page's own; its answer is
    kept :data:`BUSY_JOB_KEPT_SECONDS`, as a plan is kept: it chooses the
    shape of the read, never its rows, and a job's rate changes slowly.
    """
    key = (_using(), job_name)
    now = time.monotonic()
    kept = _BUSY_JOBS.get(key)
    if kept is not None and kept[1] > now:
        return kept[0]
    busy = _looks_busy(job_name)
    if len(_BUSY_JOBS) >= BUSY_JOB_KEPT_JOBS:
        _BUSY_JOBS.clear()
    _BUSY_JOBS[key] = (busy, now + BUSY_JOB_KEPT_SECONDS)
    return busy


def _looks_busy(job_name: str) -> bool:
    """Look at ``job_name``'s newest instances (:func:`_is_busy_job`)."""
    table = JobInstance._meta.db_table
    with connections[_using()].cursor() as cursor:
        cursor.execute(
            f'SELECT COUNT(*), MIN(bb_sample.id), (SELECT MAX(id) FROM "{table}") '
            f'FROM (SELECT id FROM "{table}" WHERE job_name = %s '
            "ORDER BY id DESC LIMIT %s) AS bb_sample",
            [job_name, BUSY_JOB_SAMPLE],
        )
        count, oldest, newest = cursor.fetchone()
    if int(count) < BUSY_JOB_SAMPLE:
        return False
    return int(newest) - int(oldest) < BUSY_JOB_SPAN * BUSY_JOB_SAMPLE


def _is_rare_job(job_name: str) -> bool:
    """
    Return whether ``job_name`` has at most :data:`RARE_JOB_INSTANCES`
    instances, counting no further than one more on its name index.
    """
    table = JobInstance._meta.db_table
    with connections[_using()].cursor() as cursor:
        cursor.execute(
            # SQLite's own statement (PostgreSQL before 16 names every
            # subquery in FROM); its plan shows the subquery unnamed.
            f'SELECT COUNT(*) FROM (SELECT 1 FROM "{table}" '
            "WHERE job_name = %s LIMIT %s)",
            [job_name, RARE_JOB_INSTANCES + 1],
        )
        (count,) = cursor.fetchone()
    return int(count) <= RARE_JOB_INSTANCES


def _exported(listing: Listing, *keyed: str) -> Listing:
    """
    Return an executions list as its download reads it.

    The same filters, order, keyset and ceiling, so the same rows in the
    same pages; each row is :data:`EXPORT_EXECUTION_FIELDS`, with the
    ``keyed`` columns the list's key reads, from a statement of its own.
    """
    exported = replace(
        listing,
        name=f"{listing.name}_export",
        fields=(*EXPORT_EXECUTION_FIELDS, *keyed),
    )
    return _without_given(exported, _execution_export_values)


UNRESOLVED_EXECUTIONS = Listing(
    "unresolved",
    JobExecution,
    filters=(Filter("updated_at__lt", wrap=_older_than),),
    where=Q(status__in=UNRESOLVED),
    order=("id",),
    fields=(*EXECUTION_FIELDS, "stop_requested_by"),
    # oxide-batch keys these rows Ordered(attempt, id); the order is by id.
    key=lambda row: cursors.Ordered(row["attempt"], row["id"]),
    position=lambda key: (cursors.unresolved_key(key),),
    project=_execution_values,
    estimate=_execution_estimate,
    # Each status's rows by id off the embedded (status, id) index: a page
    # reads at most 4 x its size, never every unresolved row.
    branches=tuple(Q(status=status) for status in UNRESOLVED),
    # PostgreSQL reads them off the partial unresolved index, then sorts:
    # only the page's rows are joined to their instances.
    ids_first=True,
)

#: What a run's duration and links need, with the lists' keys: the
#: alerts' overdue page reads no more (every field of its 75 rows, their
#: five timestamps most, cost it about 1 ms more to read).
RUN_TIME_FIELDS = (
    "id",
    "job_instance_id",
    "attempt",
    "status",
    "started_at",
    "ended_at",
    "job_name",
)


def _run_time_estimate(row: Row) -> int:
    return _len(row["job_name"]) + 256


def _times_only(listing: Listing) -> Listing:
    """Return an executions list reading :data:`RUN_TIME_FIELDS` only."""
    return replace(
        listing,
        name=f"{listing.name}_times",
        fields=RUN_TIME_FIELDS,
        estimate=_run_time_estimate,
    )


#: How an executions list's rows are read: as its page shows them, with
#: what a run's time needs only (:data:`RUN_TIME_FIELDS`), or as its
#: download writes them (:data:`EXPORT_EXECUTION_FIELDS`). Each shape reads
#: the same rows in the same pages.
Shape = Literal["page", "times", "export"]
PAGE: Final[Shape] = "page"
TIMES: Final[Shape] = "times"
EXPORT: Final[Shape] = "export"

_SHAPED: Final[dict[tuple[str, Shape], Listing]] = {
    **{
        (listing.name, TIMES): _times_only(listing)
        for listing in (RECENT_EXECUTIONS, JOB_EXECUTIONS, UNRESOLVED_EXECUTIONS)
    },
    (RECENT_EXECUTIONS.name, EXPORT): _exported(RECENT_EXECUTIONS),
    (JOB_EXECUTIONS.name, EXPORT): _exported(JOB_EXECUTIONS),
    # The key is the last update's exact time, which the text cuts.
    (WINDOWED_EXECUTIONS.name, EXPORT): _exported(WINDOWED_EXECUTIONS, "updated_at"),
    (RARE_JOB_WINDOWED_EXECUTIONS.name, EXPORT): _exported(
        RARE_JOB_WINDOWED_EXECUTIONS, "updated_at"
    ),
    (BUSY_JOB_WINDOWED_EXECUTIONS.name, EXPORT): _exported(
        BUSY_JOB_WINDOWED_EXECUTIONS, "updated_at"
    ),
}


def _shaped(listing: Listing, shape: Shape) -> Listing:
    """Return ``listing`` reading its rows in ``shape``."""
    return listing if shape == PAGE else _SHAPED[listing.name, shape]


STEPS = Listing(
    "steps",
    StepExecution,
    filters=(Filter("job_execution_id"),),
    order=("id",),
    fields=STEP_FIELDS,
    key=_identity,
    project=_step_values,
    estimate=lambda row: _len(row["step_name"]) + _len(row["exit_code"]) + 256,
)

#: The same steps for a reader who may not view partitions: the statement
#: reads no partition, and each step counts none.
STEPS_ALONE = replace(STEPS, name="steps_alone", project=_step_values_alone)

PARTITIONS = Listing(
    "partitions",
    StepPartition,
    filters=(Filter("step_execution_id"),),
    order=("id",),
    fields=PARTITION_FIELDS,
    key=_identity,
    project=_partition_values,
    estimate=lambda row: _len(row["partition_key"]) + 192,
)

FLOW_DECISIONS = Listing(
    "flow_decisions",
    FlowDecision,
    filters=(Filter("job_execution_id"),),
    order=("sequence", "id"),
    fields=(
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
    ),
    key=lambda row: cursors.Ordered(row["sequence"], row["id"]),
    position=_ordered_position,
    estimate=lambda row: (
        _len(row["source_node_id"]) + _len(row["observed_outcome"]) + 224
    ),
)

RECOVERY_DECISIONS = Listing(
    "recovery_decisions",
    RecoveryDecision,
    filters=(Filter("job_execution_id"),),
    order=("id",),
    fields=(
        "id",
        "execution_version",
        "prior_status",
        "resulting_status",
        "reason_code",
        "operator_reference",
        "evidence_digest",
        "decided_at",
    ),
    key=_identity,
    estimate=lambda row: (
        _len(row["reason_code"]) + _len(row["operator_reference"]) + 160
    ),
)

OPERATOR_REQUESTS = Listing(
    "operator_requests",
    OperatorRequest,
    filters=(Filter("job_execution_id"),),
    order=("id",),
    fields=(
        "id",
        "job_execution_id",
        "job_instance_id",
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
    ),
    key=_identity,
    estimate=lambda row: (
        _len(row["operation_id"])
        + _len(row["actor_ref"])
        + _len(row["reason_code"])
        + 192
    ),
)


def job_names(page_size: int, token: str | None = None) -> Page:
    """Return job names in byte order (keyset by name, definitions' ceiling)."""
    return JOB_NAMES.page(cursors.job_names(), page_size, token)


def job_names_starting(prefix: str, limit: int = SUGGESTED_NAMES) -> list[str]:
    """
    Return up to ``limit`` job names that start with ``prefix``, in byte order.

    Read from the definitions' ``(job_name, ...)`` unique index as a range
    from the prefix on, stopped at ``limit`` names: never a scan of the
    instances or executions. The match is by prefix only, case included
    (names compare byte for byte); the names past the prefix's range that
    the limited range may return are dropped here.
    """

    def build(values: Sequence[Any]) -> QuerySet[Any]:
        return (
            JobDefinition.objects.using(_using())
            .filter(job_name__gte=values[0])
            .order_by("job_name")
            .values("job_name")
            .distinct()[:limit]
        )

    rows = values_rows(_using(), ("job_names_starting", limit), build, [prefix])
    return [
        str(row["job_name"]) for row in rows if str(row["job_name"]).startswith(prefix)
    ]


def instances(job_name: str, page_size: int, token: str | None = None) -> Page:
    """Return a job's instances, newest first, with their latest attempt."""
    return INSTANCES.page(cursors.instances(job_name), page_size, token, job_name)


def instance_executions(
    instance_id: int, page_size: int, token: str | None = None
) -> Page:
    """Return an instance's executions, latest attempt first."""
    return INSTANCE_EXECUTIONS.page(
        cursors.executions(instance_id), page_size, token, instance_id
    )


def recent_executions(
    status: str | Sequence[str],
    job_name: str,
    page_size: int,
    token: str | None = None,
    *,
    shape: Shape = PAGE,
) -> Page:
    """
    Return executions across all jobs, newest first.

    ``status`` is one status, several (any of them; in the schema's order,
    as :class:`~batchboard.explorer.inputs.StatusesField` gives them), or
    none. Unfiltered or by status, the order is the execution id
    (descending), served by the primary key or, for a rare status, by
    ``(status, updated_at, id)``; several statuses are one walk each,
    merged by id. With a job filter the order is the instance (newest
    first), then the attempt (latest first); see :data:`JOB_EXECUTIONS`.
    ``shape`` says which columns of the rows are read (:data:`Shape`).
    """
    statuses = (status,) if isinstance(status, str) else tuple(status)
    statuses = tuple(each for each in statuses if each)
    spec = cursors.recent_executions(statuses, job_name)
    # One status is the single-valued filter, with the statement it has
    # always had; several are a tuple.
    value: str | tuple[str, ...] = statuses if len(statuses) > 1 else "".join(statuses)
    listing = _shaped(JOB_EXECUTIONS if job_name else RECENT_EXECUTIONS, shape)
    if job_name:
        return listing.page(spec, page_size, token, value, job_name)
    return listing.page(spec, page_size, token, value)


def windowed_executions(
    statuses: Sequence[str],
    job_name: str,
    window: cursors.TimeWindow,
    page_size: int,
    token: str | None = None,
    *,
    shape: Shape = PAGE,
) -> Page:
    """
    Return executions updated within ``window``, last updated first.

    ``statuses`` are any of them (none is every status), in the schema's
    order; ``job_name`` narrows to one job. The order is ``updated_at``
    descending, then id. A later page reads the bounds its cursor carries,
    so a relative window (``2h``) stays the one the first page resolved.
    ``shape`` says which columns of the rows are read (:data:`Shape`).
    """
    spec = cursors.windowed_executions(statuses, job_name, window)
    if token:
        carried, _ceiling = cursors.decode(token, spec, page_size)
        window = window.carried(carried)
        if not window.lower <= cursors.windowed_key(carried)[0] < window.upper:
            # The last row shown lay inside the window.
            raise cursors.CursorInvalid
    lower, upper = window.lower, window.upper

    def key(row: Row) -> Key:
        return cursors.Windowed(
            cursors.micros(row["updated_at"]), int(row["id"]), lower, upper
        )

    value: str | tuple[str, ...] = (
        tuple(statuses) if len(statuses) > 1 else "".join(statuses)
    )
    listing = WINDOWED_EXECUTIONS
    sqlite = connections[_using()].vendor == "sqlite"
    if job_name and sqlite and _is_rare_job(job_name):
        listing = RARE_JOB_WINDOWED_EXECUTIONS
    elif job_name and not sqlite and len(statuses) != 1 and _is_busy_job(job_name):
        # One walk per status, each joined to the instances: the probe.
        listing = BUSY_JOB_WINDOWED_EXECUTIONS
    if not statuses and listing is not RARE_JOB_WINDOWED_EXECUTIONS:
        # No status is every status: one walk each, as several are.
        value = STATUSES
    return replace(_shaped(listing, shape), key=key).page(
        spec,
        page_size,
        token,
        value,
        job_name,
        _stamp_text(lower) if window.since else None,
        # A later page ends at its position, inside the window: one upper
        # bound, which SQLite then takes as its index range's end.
        None if token else _stamp_text(upper),
    )


def windowed_instances(
    job_name: str,
    window: cursors.TimeWindow,
    page_size: int,
    token: str | None = None,
) -> Page:
    """
    Return a job's instances created within ``window``, newest first (by id).

    The schema indexes no instance's creation time, so a page examines at
    most :data:`~batchboard.vocabulary.WINDOW_SCAN` of the job's instances
    down its ``(job_name, id DESC)`` index and shows those created in the
    window: one statement finds the examined range (its lowest and highest
    id, and how many), one reads the page's rows within it. A page may show
    fewer rows than its size, or none, and still continue below the range
    it examined; it never reads more than the range. The identity ceiling
    and the carried bounds keep paging exact, as elsewhere.
    """
    spec = cursors.windowed_instances(job_name, window)
    ceiling: int | None = None
    below: int | None = None
    if token:
        carried, ceiling = cursors.decode(token, spec, page_size)
        window = window.carried(carried)
        below = cursors.windowed_key(carried)[1]
    lower, upper = window.lower, window.upper
    using = _using()

    head = [job_name] + ([below, ceiling] if below is not None else [])
    scan = _examined_range(using, head, below is not None)
    if scan is None:
        return Page([], page_size, first=token is None)
    low, high, count = scan
    if ceiling is None:
        ceiling = high

    def build(values: Sequence[Any]) -> QuerySet[Any]:
        queryset = JobInstance.objects.using(using).filter(
            job_name=values[0], id__gte=values[1], id__lte=values[2]
        )
        queryset = queryset.filter(created_at__lt=_stamp(values[3]))
        if window.since:
            queryset = queryset.filter(created_at__gte=_stamp(values[4]))
        return (
            _latest_attempt(queryset)
            .order_by("-id")
            .values(*INSTANCES.fields)[:page_size]
        )

    args: list[Any] = [job_name, low, high, _stamp_text(upper)]
    if window.since:
        args.append(_stamp_text(lower))
    shape = ("windowed_instances", bool(window.since), page_size)
    rows = values_rows(using, shape, build, args)
    for row in rows:
        _with_parameters(row)
    page = Page([], page_size, first=token is None)
    total = 0
    for row in rows:
        total += INSTANCES.estimate(row)
        if page.rows and total > MAX_RESPONSE_BYTES:
            page.truncated = True
            break
        page.rows.append(row)
    if page.rows and (len(rows) == page_size or page.truncated):
        last = int(page.rows[-1]["id"])
    elif count == WINDOW_SCAN:
        # None more in the examined range: continue below it.
        last = low
    else:
        return page
    key = cursors.Windowed(0, last, lower, upper)
    page.next_cursor = cursors.encode(spec, page_size, key, ceiling)
    return page


def _examined_range(
    using: str, head: Sequence[Any], continued: bool
) -> tuple[int, int, int] | None:
    """
    Return the lowest and highest id and the number of the job's instances
    a created-between page examines (at most WINDOW_SCAN, newest first
    below the position), or ``None`` where there are none.
    """

    def build(values: Sequence[Any]) -> QuerySet[Any]:
        walk = JobInstance.objects.using(using).filter(job_name=values[0])
        if continued:
            walk = walk.filter(id__lt=values[1], id__lte=values[2])
        # The ids alone, off the name index: a few kilobytes at most.
        return walk.order_by("-id").values("id")[:WINDOW_SCAN]

    shape = ("windowed_instances_examined", continued, WINDOW_SCAN)
    rows = values_rows(using, shape, build, head)
    if not rows:
        return None
    return int(rows[-1]["id"]), int(rows[0]["id"]), len(rows)


def unresolved(
    age_seconds: int,
    page_size: int,
    token: str | None = None,
    *,
    shape: Shape = PAGE,
) -> Page:
    """
    Return unresolved executions not updated for ``age_seconds``, by id.

    The age is measured against the database server's clock, strictly.
    ``shape`` says which columns of the rows are read (:data:`Shape`).
    """
    return _shaped(UNRESOLVED_EXECUTIONS, shape).page(
        cursors.unresolved_executions(age_seconds), page_size, token, age_seconds
    )


def inactive_longer_than(found: Row, threshold_seconds: int) -> bool:
    """
    Return whether execution ``found`` (:func:`execution`'s row) was last
    updated over ``threshold_seconds`` ago.

    Measured, strictly, against the clock of the database the page reads
    (its ``read_at``, read with the row), as the recovery proposal measures
    it on the primary: no statement of its own.
    """
    updated_at = found["updated_at"]
    if updated_at is None:
        return False
    return bool(updated_at < found["read_at"] - timedelta(seconds=threshold_seconds))


def steps(
    execution_id: int,
    page_size: int,
    token: str | None = None,
    *,
    partitions: bool = True,
) -> Page:
    """
    Return an execution's steps in creation order.

    Without ``partitions`` (a reader who may not view them) the statement
    counts no partition: ``partitions_total`` and ``partitions_done`` are 0.
    """
    listing = STEPS if partitions else STEPS_ALONE
    return listing.page(
        cursors.step_executions(execution_id), page_size, token, execution_id
    )


def partitions(step_id: int, page_size: int, token: str | None = None) -> Page:
    """Return a step's partitions in creation order."""
    return PARTITIONS.page(cursors.step_partitions(step_id), page_size, token, step_id)


def flow_decisions(execution_id: int, page_size: int, token: str | None = None) -> Page:
    """Return an execution's flow decisions by (sequence, id)."""
    return FLOW_DECISIONS.page(
        cursors.flow_decisions(execution_id), page_size, token, execution_id
    )


def recovery_decisions(
    execution_id: int, page_size: int, token: str | None = None
) -> Page:
    """Return an execution's recovery decisions by id."""
    return RECOVERY_DECISIONS.page(
        cursors.recovery_decisions(execution_id), page_size, token, execution_id
    )


def operator_requests(
    execution_id: int, page_size: int, token: str | None = None
) -> Page:
    """Return the audited operator requests on an execution by id."""
    return OPERATOR_REQUESTS.page(
        cursors.operator_requests(execution_id), page_size, token, execution_id
    )


# -- single records ------------------------------------------------------------------


def _execution_page_values(queryset: QuerySet[JobExecution]) -> QuerySet[Any]:
    return queryset.annotate(
        **_execution_columns(),
        definition_revision=F("definition__definition_revision"),
        manifest_format=F("definition__manifest_format"),
        manifest_digest=F("definition__manifest_digest"),
        upgrade_from_revision=F("upgrade_from_definition__definition_revision"),
        context_size=StoredSize("context_payload"),
        # The database's clock, so the page judges staleness in this read.
        read_at=_database_now(),
    )


EXECUTION = Record(
    "execution",
    JobExecution,
    fields=(
        *EXECUTION_FIELDS,
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
        "read_at",
    ),
    project=_execution_page_values,
)
INSTANCE = Record(
    "instance",
    JobInstance,
    fields=(*INSTANCE_FIELDS, "instance_key"),
    project=_instance_values,
)


def execution(execution_id: int) -> Row | None:
    """Return one execution's displayable projection (spec 3.5), or ``None``."""
    return EXECUTION.get(execution_id)


def instance(instance_id: int) -> Row | None:
    """Return one instance's displayable projection, or ``None``."""
    row = INSTANCE.get(instance_id)
    if row is not None:
        row["instance_key_hex"] = bytes(row.pop("instance_key")).hex()
        _with_parameters(row)
    return row


def _step_page_values(queryset: QuerySet[StepExecution]) -> QuerySet[Any]:
    return queryset.annotate(
        **_step_columns(),
        job_name=F("job_execution__job_instance__job_name"),
        job_instance_id=F("job_execution__job_instance_id"),
        execution_status=F("job_execution__status"),
        execution_attempt=F("job_execution__attempt"),
    )


STEP = Record(
    "step",
    StepExecution,
    fields=(
        *STEP_FIELDS,
        "job_name",
        "job_instance_id",
        "execution_status",
        "execution_attempt",
    ),
    project=_step_page_values,
)


def step(step_id: int) -> Row | None:
    """Return one step's displayable projection with its job context, or ``None``."""
    return STEP.get(step_id)


def _partition_row_values(queryset: QuerySet[StepPartition]) -> QuerySet[Any]:
    return queryset.annotate(
        context_size=StoredSize("context_payload"),
        parent_status=F("step_execution__status"),
    )


PARTITION = Record(
    "partition",
    StepPartition,
    fields=(*PARTITION_FIELDS, "parent_status"),
    project=_partition_row_values,
)


def partition(partition_id: int) -> Row | None:
    """Return one partition's projection, or ``None``."""
    return PARTITION.get(partition_id)


def job_exists(job_name: str) -> bool:
    """Return whether any definition or instance carries this job name."""
    return (
        JobDefinition.objects.using(_using()).filter(job_name=job_name).exists()
        or JobInstance.objects.using(_using()).filter(job_name=job_name).exists()
    )


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
    return _display_values(document)


def _display_values(document: Any) -> dict[str, str]:
    """Return a parameter envelope's values as display strings."""
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


def parameter_values_of(instance_ids: Sequence[int]) -> dict[int, dict[str, str]]:
    """
    Return the parameter values of several instances (one statement).

    Only for viewers holding ``batchboard.view_parameter_values``; the view
    checks the permission before calling this.
    """
    if not instance_ids:
        return {}

    def build(values: Sequence[Any]) -> QuerySet[Any]:
        return (
            JobInstance.objects.using(_using())
            .filter(id__in=list(values))
            .values("id", "identifying_parameters")
        )

    ids = [int(pk) for pk in instance_ids]
    rows = values_rows(_using(), ("parameter_values_of", len(ids)), build, ids)
    return {
        int(row["id"]): _display_values(row["identifying_parameters"]) for row in rows
    }


# -- the attention panel's failures -----------------------------------------------


def recent_failures(limit: int = ATTENTION_LIMIT) -> list[Row]:
    """Return the latest FAILED executions by update time (status index)."""

    def build(values: Sequence[Any]) -> QuerySet[Any]:
        queryset = JobExecution.objects.using(_using()).filter(status="FAILED")
        return (
            _execution_values(queryset)
            .order_by("-updated_at", "-id")
            .values(*EXECUTION_FIELDS)[:limit]
        )

    return values_rows(_using(), ("recent_failures", limit), build, [])
