"""
The audit log: operator requests and retention actions, newest first.

The two audit tables are read side by side, each down its primary key
(newest id first), and merged by time (:func:`merge`). A page is two statements, one per
table, whatever the history holds. Its cursor is an oxide-batch token
(:mod:`batchboard.cursors`) whose ``Ordered`` key carries both positions:
the next page reads each table strictly below its own position, so rows
recorded after a traversal started (higher ids) never appear in it and no
row appears twice.

Filters are exact and applied only where schema v4 has an index that serves
them (:func:`support`, read from :mod:`batchboard.schema.v4`): a filter
without one is not applied, and the page says so, rather than scanning the
audit tables. The operation id is the second column of each table's unique
``(action, operation_id)`` index, whose first column holds one of a closed
set of actions: it is looked up once per action (:func:`lookup`), never
scanned for. Rows name their target by id, and their job by the name of
the instance they name (a primary-key lookup per row shown): a row renders
the same after retention purged its target, but for its job, which is then
no longer known. A purge's own row names no job: oxide-batch records it
without an instance (spec 6.3) and nothing else on it names the job.

The first page also lists the newest bulk operations (batchboard's own
records, :func:`bulk_operations`), each linking to its items.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from django.db.models import Model, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils.functional import Promise
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from batchboard import cursors, db
from batchboard.cursors import QuerySpec
from batchboard.explorer.inputs import (
    ChoiceFilterField,
    JobNameField,
    ListForm,
    OperationIdField,
    TextField,
)
from batchboard.explorer.links import job_filter_url, link
from batchboard.explorer.pagination import Page, Row, Window
from batchboard.explorer.presenters import Clock, outcome_tone, status_change
from batchboard.models import (
    BulkOperation,
    JobExecution,
    JobInstance,
    OperatorRequest,
    RetentionAction,
)
from batchboard.schema import v4
from batchboard.vocabulary import OUTCOME_CLASSES

#: The audit log's query: batchboard's own, outside oxide-batch's
#: discriminants (as ``batchboard_recent_executions``, 129).
QUERY_NAME: Final = "batchboard_audit_log"
DISCRIMINANT: Final = 130

#: Every action either table records, in the schema's order.
ACTIONS: Final = tuple(dict.fromkeys(v4.OPERATOR_ACTIONS + v4.RETENTION_ACTIONS))

REQUESTS: Final = "request"
RETENTION: Final = "retention"


def spec(action: str, job: str, operation: str = "") -> QuerySpec:
    """
    Return the audit log's query under the filters that apply.

    The operation id is bound only when given, so the links of the pages
    without it keep the binding they had before it could be filtered.
    """
    return QuerySpec(
        QUERY_NAME, DISCRIMINANT, (action, job, *((operation,) if operation else ()))
    )


# -- which filters an index serves ------------------------------------------------


@dataclass(frozen=True)
class Column:
    """The column a filter reads in one audit table."""

    table: str
    column: str


#: Each filter's column per audit table. A job is reached through the
#: table's execution or instance column (the job's instances and their
#: executions come off their own job-name and instance indexes).
FILTER_COLUMNS: Final[dict[str, tuple[Column, ...]]] = {
    "action": (
        Column("ob_operator_request", "action"),
        Column("ob_retention_action", "action"),
    ),
    "job": (
        Column("ob_operator_request", "job_execution_id"),
        Column("ob_retention_action", "job_instance_id"),
    ),
    "operation": (
        Column("ob_operator_request", "operation_id"),
        Column("ob_retention_action", "operation_id"),
    ),
    "outcome": (
        Column("ob_operator_request", "outcome_class"),
        Column("ob_retention_action", "outcome_class"),
    ),
    "actor": (
        Column("ob_operator_request", "actor_ref"),
        Column("ob_retention_action", "actor_ref"),
    ),
    "time": (
        Column("ob_operator_request", "requested_at"),
        Column("ob_retention_action", "applied_at"),
    ),
}

FILTER_LABELS: Final[dict[str, Promise]] = {
    "action": _("Action"),
    "job": _("Job name"),
    "operation": _("Operation id"),
    "outcome": _("Outcome"),
    "actor": _("Actor"),
    "time": _("Time window"),
}


def _searchable_columns(table: str) -> set[str]:
    """
    Return the columns of ``table`` an index finds rows by, without a scan.

    That is the first column of every index, unique constraint and the
    primary key, and a column that follows only closed-set columns (a
    ``choice`` of schema v4, such as ``action``): it is reached by one
    lookup per value of the set.
    """
    found = next(each for each in v4.TABLES if each.name == table)
    closed = {column.name for column in found.columns if column.choices}
    keys = [
        tuple(part.split()[0] for part in index.columns.split(","))
        for index in found.indexes
    ]
    keys += [columns for _name, columns in found.uniques]
    keys.append(found.primary_key)
    searchable = set()
    for key in keys:
        for column in key:
            searchable.add(column)
            if column not in closed:
                break
    return searchable


def support() -> dict[str, list[Column]]:
    """Return, per filter, the columns no schema v4 index finds (none: served)."""
    return {
        name: [
            column
            for column in columns
            if column.column not in _searchable_columns(column.table)
        ]
        for name, columns in FILTER_COLUMNS.items()
    }


def served(name: str) -> bool:
    """Return whether an index serves the filter ``name`` in both tables."""
    return not support()[name]


# -- the form -----------------------------------------------------------------------


class AuditForm(ListForm):
    """The audit log's filters, each exact; blank leaves a filter out."""

    action = ChoiceFilterField(
        ACTIONS, _("Unknown action filter; use one of %(choices)s.")
    )
    job = JobNameField()
    operation = OperationIdField()
    outcome = ChoiceFilterField(
        OUTCOME_CLASSES, _("Unknown outcome filter; use one of %(choices)s.")
    )
    actor = TextField(required=False, strip=False)
    since = TextField(required=False, strip=False)
    until = TextField(required=False, strip=False)

    def asked(self) -> dict[str, str]:
        """Return the filters given, by name (``time`` for since/until)."""
        data = self.cleaned_data
        given = {
            name: str(data[name])
            for name in ("action", "job", "operation", "outcome", "actor")
            if data[name]
        }
        if data["since"] or data["until"]:
            given["time"] = f"{data['since']}..{data['until']}"
        return given


# -- the page --------------------------------------------------------------------

_REQUEST_FIELDS = (
    "id",
    "action",
    "operation_id",
    "authorization_class",
    "actor_ref",
    "reason_code",
    "outcome_class",
    "rejection_code",
    "prior_status",
    "result_status",
    "job_instance_id",
    "job_execution_id",
    "requested_at",
)
_RETENTION_FIELDS = (
    "id",
    "action",
    "operation_id",
    "actor_ref",
    "reason_code",
    "outcome_class",
    "job_instance_id",
    "batch_bound",
    *v4.PURGE_COUNTERS,
    "applied_at",
)


#: Each table's job: the name of the instance the row names (an operator
#: request may name only its execution), read by primary key for the rows
#: of the page only. A purge row names no instance (spec 6.3: it is
#: recorded with ``job_instance_id`` NULL, and nothing else of it names the
#: job), nor does a row whose instance a purge removed: their job is None.
#: Each is a scalar subquery, so that the planner looks each row's
#: instance up by primary key rather than joining the instance table whole.
def _job_of_instance() -> Subquery:
    return Subquery(
        JobInstance.objects.filter(id=OuterRef("job_instance_id")).values("job_name")[
            :1
        ]
    )


def _job_of_execution() -> Subquery:
    return Subquery(
        JobExecution.objects.filter(id=OuterRef("job_execution_id")).values(
            "job_instance__job_name"
        )[:1]
    )


def _jobs(model: type[Model], queryset: QuerySet[Any]) -> QuerySet[Any]:
    """Annotate the job name of each row (see the note above)."""
    job: Any = _job_of_instance()
    if model is OperatorRequest:
        job = Coalesce(job, _job_of_execution())
    annotated: QuerySet[Any] = queryset.annotate(job_name=job)
    return annotated


def _read(
    model: type[Model],
    fields: Sequence[str],
    below: int | None,
    where: Q,
    limit: int,
) -> list[Row]:
    queryset: QuerySet[Any] = model._default_manager.using(db.read_alias()).filter(
        where
    )
    if below is not None:
        queryset = queryset.filter(id__lt=below)
    rows = _jobs(model, queryset).order_by("-id").values(*fields, "job_name")
    return list(rows[:limit])


#: The closed set of actions each audit table records (its CHECK's list).
TABLE_ACTIONS: Final[dict[type[Model], tuple[str, ...]]] = {
    OperatorRequest: v4.OPERATOR_ACTIONS,
    RetentionAction: v4.RETENTION_ACTIONS,
}


def lookup(
    model: type[Model],
    fields: Sequence[str],
    below: int | None,
    where: Q,
    operation: str,
    action: str,
    limit: int,
) -> list[Row]:
    """
    Return one table's rows of the operation id ``operation``, newest first.

    ``(action, operation_id)`` is unique, so a table holds at most one row
    per action: one statement whose branches (UNION ALL) each look up one
    action of the table's closed set in that unique index, never a scan.
    ``action`` (a filter) narrows the set; a table that never records it
    is not read. The few rows found are ordered and cut below the cursor
    here: a bound on ``id`` in the statement would let the planner walk the
    primary key instead for an action it believes rare.
    """
    actions = [each for each in TABLE_ACTIONS[model] if action in ("", each)]
    if not actions:
        return []
    manager = model._default_manager.using(db.read_alias())
    first, *rest = (
        _jobs(model, manager.filter(where, action=each, operation_id=operation))
        .order_by()
        .values(*fields, "job_name")
        for each in actions
    )
    rows = [
        row
        for row in first.union(*rest, all=True)
        if below is None or int(row["id"]) < below
    ]
    rows.sort(key=lambda row: int(row["id"]), reverse=True)
    return rows[:limit]


def _filters(applied: dict[str, str]) -> tuple[Q, Q]:
    """Return the (operator request, retention action) conditions of ``applied``."""
    requests, retention = Q(), Q()
    action = applied.get("action")
    if action:
        requests &= Q(action=action)
        retention &= Q(action=action)
    job = applied.get("job")
    if job:
        executions = JobExecution.objects.filter(job_instance__job_name=job).values(
            "id"
        )
        requests &= Q(job_execution_id__in=executions)
        retention &= Q(job_instance__job_name=job)
    return requests, retention


@dataclass
class AuditPage:
    """One page of the audit log and the filters it did not apply."""

    page: Page
    ignored: list[str]


def read(
    form: AuditForm, page_size: int | None = None, token: str | None = None
) -> AuditPage:
    """
    Return one page of the audit log under the form's served filters.

    The page's size and cursor are the form's, unless ``page_size`` is
    given: an export walks the same log at its own size, from ``token``.
    """
    asked = form.asked()
    applied = {name: value for name, value in asked.items() if served(name)}
    ignored = [name for name in asked if name not in applied]
    size = form.page_size if page_size is None else page_size
    if page_size is None:
        token = form.token
    action, operation = applied.get("action", ""), applied.get("operation", "")
    window = Window.open(spec(action, applied.get("job", ""), operation), size, token)
    below: tuple[int | None, int | None] = (None, None)
    if window.after is not None:
        below = cursors.ordered_key(window.after)
        if below[1] == 0:
            raise cursors.CursorInvalid
    where_requests, where_retention = _filters(applied)
    if operation:
        requests = lookup(
            OperatorRequest,
            _REQUEST_FIELDS,
            below[0],
            where_requests,
            operation,
            action,
            size,
        )
        retention = lookup(
            RetentionAction,
            _RETENTION_FIELDS,
            below[1],
            where_retention,
            operation,
            action,
            size,
        )
    else:
        requests = _read(
            OperatorRequest, _REQUEST_FIELDS, below[0], where_requests, size
        )
        retention = _read(
            RetentionAction, _RETENTION_FIELDS, below[1], where_retention, size
        )
    for row in requests:
        row["kind"], row["at"] = REQUESTS, row["requested_at"]
    for row in retention:
        row["kind"], row["at"] = RETENTION, row["applied_at"]
    shown = merge(requests, retention, size)
    page = Page(shown, size, first=window.first)
    more = len(requests) + len(retention) > len(shown) or size in (
        len(requests),
        len(retention),
    )
    if shown and more:
        positions = [
            _position(shown, kind, fetched, below[index])
            for index, (kind, fetched) in enumerate(
                ((REQUESTS, requests), (RETENTION, retention))
            )
        ]
        ceiling = window.ceiling
        if ceiling is None:
            ceiling = max(positions)
        page.next_cursor = window.cursor(cursors.Ordered(*positions), ceiling)
    return AuditPage(page, ignored)


def merge(first: Sequence[Row], second: Sequence[Row], limit: int) -> list[Row]:
    """
    Merge two tables' rows (each newest id first) by time, at most ``limit``.

    Each step takes the newer of the two heads, so what is taken from either
    table is always a prefix of its id order: the next page continues each
    table right below the last row it showed, and nothing is skipped even
    where a table's times do not follow its ids.
    """
    merged: list[Row] = []
    i = j = 0
    while len(merged) < limit and (i < len(first) or j < len(second)):
        if j >= len(second) or (i < len(first) and first[i]["at"] >= second[j]["at"]):
            merged.append(first[i])
            i += 1
        else:
            merged.append(second[j])
            j += 1
    return merged


def _position(
    shown: Sequence[Row], kind: str, fetched: Sequence[Row], below: int | None
) -> int:
    """Return where the next page reads one table: below the last row shown."""
    taken = [int(row["id"]) for row in shown if row["kind"] == kind]
    if taken:
        return min(taken)
    if below is not None:
        return below
    # A first page that showed none of this table's rows: start above them.
    return int(fetched[0]["id"]) + 1 if fetched else 1


# -- what each row shows ------------------------------------------------------------


def present(rows: list[Row], clock: Clock) -> list[Row]:
    """Add each row's target link, job link, tone and time (no payload)."""
    for row in rows:
        if row["job_name"] is not None:
            row["job_url"] = job_filter_url("batchboard:audit", row["job_name"])
        row["tone"] = outcome_tone(row["outcome_class"])
        row["change"] = status_change(row)
        row["when"] = clock.moment(row["at"])
        execution, instance = row.get("job_execution_id"), row["job_instance_id"]
        if execution is not None:
            row["target_url"] = link("batchboard:execution", execution)
            row["target_label"] = SafeString(f"#{int(execution)}")
            row["target_kind"] = "execution"
        elif instance is not None:
            row["target_url"] = link("batchboard:instance", instance)
            row["target_label"] = SafeString(f"#{int(instance)}")
            row["target_kind"] = "instance"
        if row["kind"] == RETENTION and row["action"] == "APPLY_PURGE":
            row["purged"] = sum(int(row[name]) for name in v4.PURGE_COUNTERS)
    return rows


# -- bulk operations -------------------------------------------------------------

#: The bulk operations the audit log's first page lists, newest first.
BULK_OPERATIONS_SHOWN: Final = 20


def bulk_operations(limit: int = BULK_OPERATIONS_SHOWN) -> list[BulkOperation]:
    """
    Return the newest bulk operations (batchboard's own state), newest first.

    One statement on ``(started_at DESC, id DESC)``; each operation links to
    its page, which lists its items and their audit rows.
    """
    return list(BulkOperation.objects.order_by("-started_at", "-id")[:limit])


def is_bulk(operation: str) -> bool:
    """Return whether ``operation`` is a bulk operation's id (one unique lookup)."""
    return BulkOperation.objects.filter(bulk_id=operation).exists()
