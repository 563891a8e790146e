"""
The explorer lists' downloads: the executions list and the audit log.

Each reads its list's filters through the page's own form and its rows
through the page's own query, at the export's page size
(:mod:`batchboard.export`), under the page's permissions. Rows are the
API's projections with ISO-8601 UTC times.
"""

from __future__ import annotations

from typing import Final

from django.http import HttpRequest, StreamingHttpResponse

from batchboard import export
from batchboard.api import projections
from batchboard.explorer import audit as audit_log
from batchboard.explorer import inputs
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


@reader(*VIEW_EXECUTIONS)
def executions_export(request: HttpRequest) -> StreamingHttpResponse:
    """Download the executions list under the page's filters."""
    form = inputs.ExecutionsForm(export.filters(request.GET))
    if not form.is_valid():
        raise form.bad_input()

    def read(token: str | None) -> export.Chunk:
        page = listed_executions(form, export.PAGE_SIZE, token)
        extras = projections.execution_extras([int(row["id"]) for row in page.rows])
        rows = [
            projections.execution(row, extras.get(int(row["id"])), projections.iso)
            for row in page.rows
        ]
        return rows, page.next_cursor

    return export.download(request, "executions", EXECUTION_COLUMNS, read)


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
