"""
The explorer lists' downloads: the executions list and the audit log.

Each reads its list's filters through the page's own form and its rows
through the page's own query, at the export's page size
(:mod:`batchboard.export`), under the page's permissions. Rows are the
API's projections with ISO-8601 UTC times.

The executions list's rows are read flat
(:data:`~batchboard.explorer.queries.EXPORT_EXECUTION_FIELDS`: the
definition and context descriptor joined, the times written by
PostgreSQL) and written by :class:`ExecutionLayout` without building
each row's projection.
"""

from __future__ import annotations

from typing import Any, Final

from django.http import HttpRequest, StreamingHttpResponse

from batchboard import export
from batchboard.api import projections
from batchboard.explorer import audit as audit_log
from batchboard.explorer import inputs, queries
from batchboard.explorer.access import VIEW_AUDIT, VIEW_EXECUTIONS
from batchboard.explorer.views import listed_executions
from batchboard.web import reader

#: An execution's fields as CSV columns (the projection, flattened).
EXECUTION_COLUMNS: Final = (
    "execution_id",
    "instance_id",
    "job_name",
    "attempt",
    "status",
    "exit_code",
    "failure.category",
    "failure.failure_id",
    "timestamps.created_at",
    "timestamps.started_at",
    "timestamps.ended_at",
    "updated_at",
    "stop_requested_at",
    "version",
    "owner_recorded",
    "definition.revision",
    "definition.manifest_format",
    "definition.manifest_digest",
    "context.kind",
    "context.format_version",
    "context.schema_id",
    "context.schema_version",
    "context.encoded_len",
    "counts.read",
    "counts.written",
    "counts.filtered",
    "counts.processed",
    "counts.committed",
)

#: An execution's counts, as oxide-batch reports them (always zero): as
#: CSV cells and as the NDJSON object's ``counts``.
_COUNT_CELLS: Final = tuple(
    projections.ZERO_COUNTS[column.split(".")[1]]
    for column in EXECUTION_COLUMNS
    if column.startswith("counts.")
)
_COUNTS_JSON: Final = export.json_value(projections.ZERO_COUNTS)


def _text(value: str | None) -> str | None:
    return None if value is None else export.neutralise(value)


def _hex(digest: Any) -> str | None:
    return None if digest is None else bytes(digest).hex()


class ExecutionLayout(export.Layout):
    """
    An execution row as the list's download reads it
    (:data:`~batchboard.explorer.queries.EXPORT_EXECUTION_FIELDS`), written
    as the API's projection (:func:`batchboard.api.projections.execution`)
    with ISO-8601 UTC times would be, without building the projection.

    Each format restates the projection's rules: a failure, a definition
    or a context descriptor is absent when its first column is; the
    failure's category is in lower case; the digest is lowercase hex; the
    owner token only says whether one is recorded. The NDJSON line has
    the projection's keys in sorted order, as the writer sorts them. A
    field the projection gains must be added here too: the tests compare
    both files with the projection's, written by the default
    :class:`~batchboard.export.Layout`, on generated histories.
    """

    def __init__(self) -> None:
        super().__init__(EXECUTION_COLUMNS)

    def cells(self, record: export.Record) -> tuple[Any, ...]:
        row, iso = record, projections.iso
        failure: tuple[Any, ...] = (None, None)
        if row["failure_category"] is not None:
            category = str(row["failure_category"]).lower()
            failure = (export.neutralise(category), row["failure_id"])
        definition: tuple[Any, ...] = (None, None, None)
        if row["definition_revision"] is not None:
            definition = (
                export.neutralise(row["definition_revision"]),
                row["manifest_format"],
                _hex(row["manifest_digest"]),
            )
        context: tuple[Any, ...] = (None, None, None, None, None)
        if row["context_format"] is not None:
            context = (
                "execution_context",
                row["context_format"],
                _text(row["context_schema"]),
                row["context_schema_version"],
                int(row["context_size"] or 0),
            )
        return (
            row["id"],
            row["job_instance_id"],
            _text(row["job_name"]),
            row["attempt"],
            _text(row["status"]),
            _text(row["exit_code"]),
            *failure,
            iso(row["iso_created_at"]),
            iso(row["iso_started_at"]),
            iso(row["iso_ended_at"]),
            iso(row["iso_updated_at"]),
            iso(row["iso_stop_requested_at"]),
            row["version"],
            "true" if row["owner_recorded"] else "false",
            *definition,
            *context,
            *_COUNT_CELLS,
        )

    def line(self, record: export.Record) -> str:
        row, json, iso = record, export.json_value, projections.iso
        failure = "null"
        if row["failure_category"] is not None:
            category = str(row["failure_category"]).lower()
            failure = (
                f'{{"category":{json(category)},'
                f'"failure_id":{json(row["failure_id"])}}}'
            )
        definition = "null"
        if row["definition_revision"] is not None:
            definition = (
                f'{{"manifest_digest":{json(_hex(row["manifest_digest"]))},'
                f'"manifest_format":{json(row["manifest_format"])},'
                f'"revision":{json(row["definition_revision"])}}}'
            )
        context = "null"
        if row["context_format"] is not None:
            context = (
                f'{{"encoded_len":{int(row["context_size"] or 0)},'
                f'"format_version":{json(row["context_format"])},'
                '"kind":"execution_context",'
                f'"schema_id":{json(row["context_schema"])},'
                f'"schema_version":{json(row["context_schema_version"])}}}'
            )
        return (
            f'{{"attempt":{json(row["attempt"])},'
            f'"context":{context},'
            f'"counts":{_COUNTS_JSON},'
            f'"definition":{definition},'
            f'"execution_id":{json(row["id"])},'
            f'"exit_code":{json(row["exit_code"])},'
            f'"failure":{failure},'
            f'"instance_id":{json(row["job_instance_id"])},'
            f'"job_name":{json(row["job_name"])},'
            f'"owner_recorded":{"true" if row["owner_recorded"] else "false"},'
            f'"status":{json(row["status"])},'
            f'"stop_requested_at":{json(iso(row["iso_stop_requested_at"]))},'
            f'"timestamps":{{"created_at":{json(iso(row["iso_created_at"]))},'
            f'"ended_at":{json(iso(row["iso_ended_at"]))},'
            f'"started_at":{json(iso(row["iso_started_at"]))}}},'
            f'"updated_at":{json(iso(row["iso_updated_at"]))},'
            f'"version":{json(row["version"])}}}\n'
        )


#: An audit row's fields as CSV columns: both tables' (blank where a
#: record has no such field).
AUDIT_COLUMNS: Final = (
    "record",
    "request_id",
    "action_id",
    "action",
    "operation_id",
    "actor",
    "reason",
    "outcome",
    "rejection",
    "prior_status",
    "result_status",
    "instance_id",
    "execution_id",
    "requested_at",
    "applied_at",
    "batch_bound",
    *(f"counts.{name}" for name in projections.PURGE_COUNT_NAMES),
)


#: How the executions list's download writes its rows.
EXECUTIONS: Final = ExecutionLayout()


@reader(*VIEW_EXECUTIONS)
def executions_export(request: HttpRequest) -> StreamingHttpResponse:
    """Download the executions list under the page's filters."""
    form = inputs.ExecutionsForm(export.filters(request.GET))
    if not form.is_valid():
        raise form.bad_input()

    def read(token: str | None) -> export.Chunk:
        page = listed_executions(form, export.PAGE_SIZE, token, shape=queries.EXPORT)
        return page.rows, page.next_cursor

    return export.download(request, "executions", EXECUTIONS, read)


@reader(*VIEW_AUDIT)
def audit_export(request: HttpRequest) -> StreamingHttpResponse:
    """Download the audit log under the page's filters."""
    form = audit_log.AuditForm(export.filters(request.GET))
    if not form.is_valid():
        raise form.bad_input()

    def read(token: str | None) -> export.Chunk:
        page = audit_log.read(form, export.PAGE_SIZE, token).page
        rows = [projections.audit_row(row, projections.iso) for row in page.rows]
        return rows, page.next_cursor

    return export.download(request, "audit", AUDIT_COLUMNS, read)
