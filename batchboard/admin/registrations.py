"""
The Django admin over the oxide-batch metadata, read-only but for the
operator actions.

Metadata is written by oxide-batch runtimes and by batchboard's own write
side, never through admin forms: every model is registered without add,
change or delete permission (so ``delete_selected`` is never offered). The
only way the admin changes anything is an operator action: place and release
holds on instances, stop and abandon executions, each offered only to users
holding its authorization class and each calling the same service as the
dashboard (:mod:`batchboard.admin.actions`). Recovery is the dashboard's
workflow; an execution's page links to its proposal. Pages show only what
spec §3.5 calls displayable. Payload columns (contexts, checkpoints, fault
state, partition contexts, component state), manifests, parameter values and
owner tokens are deferred in every query and absent from every page; digests
are shown as hex, parameters as names and types.

Changelists never count the history and never page with a deep ``OFFSET``.
Page numbers exist for the first :data:`FIRST_PAGES` pages only, counted by
fetching at most that many rows' keys; every page also carries a "next" link
with the id of its last row (``?after=<id>``), and a keyset page is one
index-ordered query ``WHERE id < after ORDER BY id DESC LIMIT per_page + 1``,
whatever its depth. Filters come from the fields' choices (no ``SELECT
DISTINCT``), column sorting and facets are off, and each admin names its
``list_select_related``.

``ob_definition_upgrade`` has a composite primary key, which the Django admin
cannot register; its edges are listed on each job definition's page.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Sequence
from typing import Any

from django.contrib import admin
from django.contrib.admin import helpers
from django.contrib.admin.utils import quote
from django.contrib.admin.views.main import ALL_VAR, PAGE_VAR, ChangeList
from django.core.paginator import Paginator
from django.db.models import BooleanField, ExpressionWrapper, Model, Q, QuerySet
from django.http import HttpRequest, HttpResponseBase, QueryDict
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.functional import cached_property
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from batchboard.admin.actions import (
    OperatorActionsAdminMixin,
    abandon_executions,
    place_holds,
    release_holds,
    stop_executions,
)
from batchboard.models import (
    ComponentState,
    DefinitionUpgrade,
    FlowDecision,
    JobDefinition,
    JobExecution,
    JobInstance,
    OperatorRequest,
    RecoveryDecision,
    RetentionAction,
    SchemaVersion,
    StepExecution,
    StepPartition,
)

#: Page numbers are offered for this many pages from the top; deeper pages
#: are reached only by the keyset link, so no query ever skips more than
#: ``FIRST_PAGES * list_per_page`` rows.
FIRST_PAGES = 10

#: The query parameter of a keyset page: the id of the last row seen. The
#: changelist removes it before Django parses filters from the query string.
KEYSET_VAR = "after"

# Identity columns are PostgreSQL bigints: 1 to 2**63 - 1, written plainly.
_KEYSET_PATTERN = re.compile(r"[1-9][0-9]{0,18}")
_MAX_ID = 2**63 - 1


class LookaheadPaginator(Paginator):
    """
    Paginate the first :data:`FIRST_PAGES` pages without ``COUNT(*)``.

    ``count`` fetches at most ``FIRST_PAGES * per_page + 1`` primary keys
    from the top of the list, so its cost is bounded by the window, not by
    the size of the history. When rows follow the window, the count stops at
    the window and :attr:`truncated` is true: the pages past it are reached
    through the keyset link instead of a page number.
    """

    @cached_property
    def _window(self) -> tuple[int, bool]:
        window = self.per_page * FIRST_PAGES
        found = len(self.object_list.values_list("pk", flat=True)[: window + 1])
        return min(found, window), found > window

    @property
    def count(self) -> int:
        """Return the number of rows within the first pages."""
        return self._window[0]

    @property
    def truncated(self) -> bool:
        """Return whether more rows follow the numbered pages."""
        return self._window[1]


class KeysetInvalid(ValueError):
    """The keyset parameter of a changelist is not one plausible row id."""


def keyset_after(query: QueryDict) -> int | None:
    """
    Return the id a keyset page starts after, or None for a numbered page.

    Raise :class:`KeysetInvalid` unless the parameter occurs once, is a
    plain positive bigint and comes without a page number or "show all".
    """
    values = query.getlist(KEYSET_VAR)
    if not values:
        return None
    if len(values) != 1 or not _KEYSET_PATTERN.fullmatch(values[0]):
        raise KeysetInvalid
    after = int(values[0])
    if after > _MAX_ID or PAGE_VAR in query or ALL_VAR in query:
        raise KeysetInvalid
    return after


class KeysetChangeList(ChangeList):
    """
    A changelist ordered by descending primary key that pages deep by keyset.

    Without ``after`` it is Django's changelist over the first pages (with
    :class:`LookaheadPaginator`); with ``after`` it shows the rows whose id
    is below it, filters and search applied, in one query. Either way
    :attr:`next_url` leads on from the page's last row, and every other link
    (filters, page numbers, search) starts again from the newest rows.
    """

    def __init__(self, request: HttpRequest, *args: Any, **kwargs: Any) -> None:
        self.after = keyset_after(request.GET)
        self.next_url: str | None = None
        super().__init__(request, *args, **kwargs)
        # The search form re-posts ``params`` as hidden inputs; a new search
        # starts at the top.
        self.params.pop(KEYSET_VAR, None)
        self.first_url = self.get_query_string()

    def get_filters_params(
        self, params: dict[str, list[str]] | None = None
    ) -> dict[str, list[str]]:
        """Return the filter lookups of the query string, without the keyset."""
        lookups = super().get_filters_params(params)
        lookups.pop(KEYSET_VAR, None)
        return lookups

    def get_query_string(
        self,
        new_params: dict[str, Any] | None = None,
        remove: list[str] | None = None,
    ) -> str:
        """Build a link that drops the keyset unless it sets one."""
        params = {KEYSET_VAR: None, **(new_params or {})}
        return super().get_query_string(params, remove)

    @cached_property
    def _change_url(self) -> tuple[str, str]:
        marker = "0bbpk0"
        url = reverse(
            f"admin:{self.opts.app_label}_{self.opts.model_name}_change",
            args=(marker,),
            current_app=self.model_admin.admin_site.name,
        )
        head, _marker, tail = url.partition(marker)
        return head, tail

    def url_for_result(self, result: Model) -> str:
        """Return a row's change URL from one reversal per page, not per row."""
        head, tail = self._change_url
        return f"{head}{quote(getattr(result, self.pk_attname))}{tail}"

    def get_ordering(self, request: HttpRequest, queryset: QuerySet[Any]) -> list[str]:
        """Order by descending primary key always: the keyset depends on it."""
        return ["-pk"]

    def get_results(self, request: HttpRequest) -> None:
        columns = getattr(self.model_admin, "list_columns", ())
        if columns:
            # The rows load only what they show. Actions select their rows
            # afresh (``get_queryset``), with every displayable column.
            self.queryset = self.queryset.only(*columns)
        if self.after is None:
            super().get_results(request)
            rows = list(self.result_list)
            paginator = self.paginator
            more = (
                self.multi_page
                and not (self.show_all and self.can_show_all)
                and (
                    self.page_num < paginator.num_pages
                    or getattr(paginator, "truncated", False)
                )
            )
        else:
            # One index-ordered query whatever the depth; one row more than
            # the page tells whether a next page exists.
            fetched = list(
                self.queryset.filter(pk__lt=self.after)[: self.list_per_page + 1]
            )
            more = len(fetched) > self.list_per_page
            rows = fetched[: self.list_per_page]
            self.result_count = len(rows)
            self.full_result_count = None
            self.show_full_result_count = False
            self.show_admin_actions = True
            self.can_show_all = False
            self.multi_page = False
            # Never asked for its count: the pagination shows no numbers here.
            self.paginator = self.model_admin.get_paginator(
                request, self.queryset, self.list_per_page
            )
        self.result_list = rows
        if more and rows:
            self.next_url = self.get_query_string(
                {KEYSET_VAR: rows[-1].pk}, remove=[ALL_VAR]
            )


def utc_column(name: str, description: str) -> Callable[[Any], str]:
    """
    Return a changelist column showing the timestamp ``name`` in UTC.

    The text is the dashboard's (``2026-11-30 08:00:00Z``), so both consoles
    show a moment alike; formatting it directly costs a fraction of the
    admin's localized date format, which on a 50-row page of executions was
    a quarter of the render time.
    """

    @admin.display(description=description)
    def column(obj: Any) -> str:
        moment = getattr(obj, name)
        if moment is None:
            return "—"
        moment = moment.astimezone(dt.UTC)
        # Digits and separators only: nothing here needs escaping.
        return SafeString(
            f'<time datetime="{moment.isoformat()}">'
            f"{moment:%Y-%m-%d}\u00a0{moment:%H:%M:%S}Z</time>"
        )

    column.__name__ = name
    return column


def _hex(value: bytes | memoryview | None) -> str:
    """Return lowercase hex for a digest column, or an em dash for NULL."""
    if value is None:
        return "—"
    return bytes(value).hex()


class ReadOnlyAdmin(admin.ModelAdmin):
    """
    Show a metadata table without any way to change it.

    Subclasses name the payload columns in ``deferred`` so that no admin
    query loads them, and list only displayable columns in ``fields``.
    """

    actions = None
    paginator = LookaheadPaginator
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    list_per_page = 50
    list_max_show_all = 200
    list_select_related: Sequence[str] = ()
    ordering: Sequence[str] = ("-id",)
    # Column sorting would order millions of rows by unindexed columns; the
    # newest-first order by primary key stays an index scan.
    sortable_by: Sequence[str] = ()
    deferred: tuple[str, ...] = ()
    #: When set, the changelist loads only these columns (rows stay models).
    list_columns: tuple[str, ...] = ()
    #: Page deep by keyset on the (integer) primary key.
    keyset = True

    def has_add_permission(
        self, request: HttpRequest, obj: Model | None = None
    ) -> bool:
        return False

    def has_change_permission(
        self, request: HttpRequest, obj: Model | None = None
    ) -> bool:
        return False

    def has_delete_permission(
        self, request: HttpRequest, obj: Model | None = None
    ) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        """Return the admin's rows with every payload column left unloaded."""
        queryset = super().get_queryset(request)
        if self.deferred:
            queryset = queryset.defer(*self.deferred)
        return queryset

    def action_checkbox(self, obj: Model) -> str:
        """
        Render a row's selection box as plain markup.

        Django renders a form widget per row, through the template engine;
        on a 50-row changelist that is a sixth of the page's time, for the
        same input.
        """
        return format_html(
            '<input type="checkbox" name="{}" value="{}" class="action-select" '
            'aria-label="{}">',
            helpers.ACTION_CHECKBOX_NAME,
            obj.pk,
            gettext("Select %(object)s for an action") % {"object": obj},
        )

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return KeysetChangeList if self.keyset else ChangeList

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponseBase:
        """Show the changelist, or say plainly why its keyset link is unusable."""
        try:
            return super().changelist_view(request, extra_context)
        except KeysetInvalid:
            opts = self.model._meta
            context = {
                **self.admin_site.each_context(request),
                "opts": opts,
                "title": _("This link to a page of the list is not valid"),
                "keyset_var": KEYSET_VAR,
                "changelist_url": reverse(
                    f"admin:{opts.app_label}_{opts.model_name}_changelist",
                    current_app=self.admin_site.name,
                ),
            }
            return TemplateResponse(
                request, "admin/batchboard/keyset_invalid.html", context, status=400
            )


_EXECUTION_PAYLOADS = ("parameters", "context_payload", "owner_token")
_STEP_PAYLOADS = ("checkpoint_payload", "context_payload", "fault_state_payload")


@admin.register(SchemaVersion)
class SchemaVersionAdmin(ReadOnlyAdmin):
    list_display = ("version", "installed_at")
    fields = ("version", "installed_at")
    ordering = ("-version",)
    # One row keyed by a boolean: nothing to page through.
    keyset = False


@admin.register(JobDefinition)
class JobDefinitionAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "job_name",
        "definition_revision",
        "manifest_format",
        "registered_at",
    )
    fields = (
        "id",
        "job_name",
        "definition_revision",
        "manifest_format",
        "manifest_digest_hex",
        "registered_at",
        "upgrade_edges",
    )
    readonly_fields = ("manifest_digest_hex", "upgrade_edges")
    # Manifests carry transition patterns and are never rendered (spec 3.5).
    deferred = ("manifest",)

    @admin.display(description=_("manifest digest"))
    def manifest_digest_hex(self, obj: JobDefinition) -> str:
        return _hex(obj.manifest_digest)

    @admin.display(description=_("upgrade edges"))
    def upgrade_edges(self, obj: JobDefinition) -> str:
        """List the upgrade edges into and out of this definition."""
        edges = (
            DefinitionUpgrade.objects.filter(
                Q(from_definition=obj) | Q(to_definition=obj)
            )
            .select_related("from_definition", "to_definition")
            .defer(
                "step_mapping", "from_definition__manifest", "to_definition__manifest"
            )
            .order_by("registered_at")
        )
        rows = [
            (
                edge.upgrade_key,
                edge.from_definition.definition_revision,
                edge.to_definition.definition_revision,
                edge.registered_at,
            )
            for edge in edges
        ]
        if not rows:
            return "—"
        return format_html(
            "<ul>{}</ul>",
            format_html_join("", "<li>{}: {} → {} ({})</li>", rows),
        )


class HeldFilter(admin.SimpleListFilter):
    """Filter instances by whether a retention hold is placed."""

    title = _("retention hold")
    parameter_name = "held"

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin
    ) -> list[tuple[str, str]]:
        return [("yes", _("Held")), ("no", _("Not held"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.filter(hold_actor__isnull=False)
        if self.value() == "no":
            return queryset.filter(hold_actor__isnull=True)
        return queryset


@admin.register(JobInstance)
class JobInstanceAdmin(OperatorActionsAdminMixin, ReadOnlyAdmin):
    actions = [place_holds, release_holds]
    list_display = ("id", "job_name", "created_at", "hold_reason")
    list_filter = (HeldFilter,)
    fields = (
        "id",
        "job_name",
        "instance_key_hex",
        "parameter_names",
        "created_at",
        "hold_actor",
        "hold_reason",
        "hold_placed_at",
    )
    readonly_fields = ("instance_key_hex", "parameter_names")
    deferred = ("identifying_parameters",)

    @admin.display(description=_("instance key"))
    def instance_key_hex(self, obj: JobInstance) -> str:
        return _hex(obj.instance_key)

    @admin.display(description=_("identifying parameters"))
    def parameter_names(self, obj: JobInstance) -> str:
        """List parameter names and types; values are never shown here."""
        parameters = obj.identifying_parameters
        if not isinstance(parameters, dict) or not parameters:
            return "—"
        rows = []
        for name in sorted(parameters, key=lambda key: str(key).encode()):
            spec = parameters[name]
            kind = spec.get("type") if isinstance(spec, dict) else None
            rows.append((name, str(kind).upper() if kind else "?"))
        return format_html(
            "<ul>{}</ul>", format_html_join("", "<li>{} ({})</li>", rows)
        )


class _DescriptorMixin:
    """Describe a payload by format, schema id and version, never by content."""

    @staticmethod
    def describe(obj: Model, prefix: str) -> str:
        return (
            f"{getattr(obj, f'{prefix}_schema')} "
            f"v{getattr(obj, f'{prefix}_schema_version')} "
            f"(format {getattr(obj, f'{prefix}_format')})"
        )


@admin.register(JobExecution)
class JobExecutionAdmin(OperatorActionsAdminMixin, _DescriptorMixin, ReadOnlyAdmin):
    actions = [stop_executions, abandon_executions]
    list_display = (
        "id",
        "job_name",
        "job_instance_id",
        "attempt",
        "status",
        "exit_code",
        utc_column("started_at", _("started at")),
        utc_column("ended_at", _("ended at")),
    )
    list_filter = ("status", "failure_category")
    list_select_related = ("job_instance",)
    # What the rows show, and nothing else: fewer columns to fetch and decode.
    list_columns = (
        "id",
        "job_instance__job_name",
        "attempt",
        "status",
        "exit_code",
        "started_at",
        "ended_at",
    )
    fields = (
        "id",
        "job_instance",
        "definition",
        "upgrade_from_definition",
        "restart_of_execution",
        "attempt",
        "status",
        "exit_code",
        "failure_category",
        "failure_id",
        "context_descriptor",
        "created_at",
        "started_at",
        "ended_at",
        "updated_at",
        "version",
        "owner_recorded",
        "stop_requested_at",
        "stop_requested_by",
        "recovery_proposal_link",
    )
    readonly_fields = ("context_descriptor", "owner_recorded", "recovery_proposal_link")
    deferred = (
        *_EXECUTION_PAYLOADS,
        "job_instance__identifying_parameters",
    )

    @admin.display(description=_("job name"), ordering="job_instance__job_name")
    def job_name(self, obj: JobExecution) -> str:
        return obj.job_instance.job_name

    @admin.display(description=_("execution context"))
    def context_descriptor(self, obj: JobExecution) -> str:
        return self.describe(obj, "context")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        """Add whether an owner token is set; its bytes are never loaded."""
        return (
            super()
            .get_queryset(request)
            .annotate(
                has_owner=ExpressionWrapper(
                    Q(owner_token__isnull=False), output_field=BooleanField()
                )
            )
        )

    @admin.display(description=_("owner recorded"), boolean=True)
    def owner_recorded(self, obj: JobExecution) -> bool:
        return bool(getattr(obj, "has_owner", False))


@admin.register(StepExecution)
class StepExecutionAdmin(_DescriptorMixin, ReadOnlyAdmin):
    list_display = (
        "id",
        "job_execution_id",
        "step_name",
        "status",
        "exit_code",
        "read_count",
        "write_count",
        utc_column("started_at", _("started at")),
        utc_column("ended_at", _("ended at")),
    )
    list_filter = ("status", "failure_category")
    fields = (
        "id",
        "job_execution",
        "step_name",
        "step_logical_id",
        "status",
        "exit_code",
        ("read_count", "processed_count", "write_count"),
        ("filter_count", "commit_count", "rollback_count"),
        ("read_retry_count", "process_retry_count", "write_retry_count"),
        ("read_skip_count", "process_skip_count", "write_skip_count"),
        "no_rollback_count",
        "failure_category",
        "failure_id",
        "checkpoint_descriptor",
        "context_descriptor",
        "fault_state_descriptor",
        "fault_state_checksum_hex",
        "created_at",
        "started_at",
        "ended_at",
        "updated_at",
        "version",
    )
    readonly_fields = (
        "checkpoint_descriptor",
        "context_descriptor",
        "fault_state_descriptor",
        "fault_state_checksum_hex",
    )
    deferred = _STEP_PAYLOADS

    @admin.display(description=_("checkpoint"))
    def checkpoint_descriptor(self, obj: StepExecution) -> str:
        return self.describe(obj, "checkpoint")

    @admin.display(description=_("execution context"))
    def context_descriptor(self, obj: StepExecution) -> str:
        return self.describe(obj, "context")

    @admin.display(description=_("fault state"))
    def fault_state_descriptor(self, obj: StepExecution) -> str:
        return self.describe(obj, "fault_state")

    @admin.display(description=_("fault state checksum"))
    def fault_state_checksum_hex(self, obj: StepExecution) -> str:
        return _hex(obj.fault_state_checksum)


@admin.register(RecoveryDecision)
class RecoveryDecisionAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "job_execution_id",
        "prior_status",
        "resulting_status",
        "reason_code",
        "operator_reference",
        "decided_at",
    )
    list_filter = ("prior_status", "resulting_status")
    fields = (
        "id",
        "job_execution",
        "execution_version",
        "prior_status",
        "resulting_status",
        "reason_code",
        "operator_reference",
        "evidence_digest_hex",
        "decided_at",
    )
    readonly_fields = ("evidence_digest_hex",)

    @admin.display(description=_("evidence digest"))
    def evidence_digest_hex(self, obj: RecoveryDecision) -> str:
        return _hex(obj.evidence_digest)


@admin.register(FlowDecision)
class FlowDecisionAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "job_execution_id",
        "sequence",
        "source_node_id",
        "observed_outcome",
        "target",
        "transition_kind",
        "decided_at",
    )
    list_filter = ("transition_kind", "terminal_kind")
    fields = (
        "id",
        "job_execution",
        "sequence",
        "source_step_execution",
        "source_node_id",
        "observed_outcome",
        "target",
        "transition_kind",
        "reused_decision",
        "plan_fingerprint_hex",
        "input_digest_hex",
        "decided_at",
    )
    readonly_fields = ("target", "plan_fingerprint_hex", "input_digest_hex")

    @admin.display(description=_("target"))
    def target(self, obj: FlowDecision) -> str:
        """Return the target node, or the terminal kind when the flow ended."""
        if obj.target_node_id is not None:
            return obj.target_node_id
        return f"[{obj.terminal_kind}]"

    @admin.display(description=_("plan fingerprint"))
    def plan_fingerprint_hex(self, obj: FlowDecision) -> str:
        return _hex(obj.plan_fingerprint)

    @admin.display(description=_("input digest"))
    def input_digest_hex(self, obj: FlowDecision) -> str:
        return _hex(obj.input_digest)


@admin.register(OperatorRequest)
class OperatorRequestAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "action",
        "outcome_class",
        "rejection_code",
        "actor_ref",
        "job_execution_id",
        "requested_at",
    )
    list_filter = ("action", "authorization_class", "outcome_class", "rejection_code")
    fields = (
        "id",
        "action",
        "authorization_class",
        "operation_id",
        "actor_ref",
        "reason_code",
        "job_instance",
        "job_execution",
        "observed_version",
        "prior_status",
        "result_status",
        "outcome_class",
        "rejection_code",
        "request_digest_hex",
        "requested_at",
    )
    readonly_fields = ("request_digest_hex",)

    @admin.display(description=_("request digest"))
    def request_digest_hex(self, obj: OperatorRequest) -> str:
        return _hex(obj.request_digest)


@admin.register(RetentionAction)
class RetentionActionAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "action",
        "outcome_class",
        "job_instance_id",
        "actor_ref",
        "reason_code",
        "applied_at",
    )
    list_filter = ("action", "outcome_class")
    fields = (
        "id",
        "action",
        "operation_id",
        "actor_ref",
        "reason_code",
        "job_instance",
        "plan_digest_hex",
        "batch_bound",
        (
            "deleted_job_instances",
            "deleted_job_executions",
            "deleted_step_executions",
        ),
        (
            "deleted_step_partitions",
            "deleted_flow_decisions",
            "deleted_recovery_decisions",
            "deleted_operator_requests",
        ),
        "outcome_class",
        "applied_at",
    )
    readonly_fields = ("plan_digest_hex",)

    @admin.display(description=_("plan digest"))
    def plan_digest_hex(self, obj: RetentionAction) -> str:
        return _hex(obj.plan_digest)


@admin.register(StepPartition)
class StepPartitionAdmin(_DescriptorMixin, ReadOnlyAdmin):
    list_display = (
        "id",
        "step_execution_id",
        "partition_ordinal",
        "partition_key",
        "status",
        "exit",
        "worker_step_execution_id",
    )
    list_filter = ("status",)
    fields = (
        "id",
        "step_execution",
        "worker_step_execution",
        "partition_key",
        "partition_ordinal",
        "status",
        "exit",
        ("read_count", "processed_count", "write_count"),
        ("filter_count", "commit_count", "rollback_count"),
        "context_descriptor",
        "context_checksum_hex",
        "version",
    )
    readonly_fields = ("exit", "context_descriptor", "context_checksum_hex")
    deferred = ("context_payload",)

    @admin.display(description=_("exit code"))
    def exit(self, obj: StepPartition) -> str:
        # spec 3.5: a partition that never reported an exit shows UNKNOWN.
        return obj.exit_code if obj.exit_code is not None else "UNKNOWN"

    @admin.display(description=_("context"))
    def context_descriptor(self, obj: StepPartition) -> str:
        return self.describe(obj, "context")

    @admin.display(description=_("context checksum"))
    def context_checksum_hex(self, obj: StepPartition) -> str:
        return _hex(obj.context_checksum)


@admin.register(ComponentState)
class ComponentStateAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "step_execution_id",
        "namespace",
        "schema_id",
        "payload_kind",
        "version",
        "updated_at",
    )
    list_filter = ("payload_kind",)
    fields = (
        "id",
        "step_execution",
        "namespace",
        ("schema_id", "schema_version"),
        ("codec_id", "codec_version"),
        ("checksum_algorithm", "checksum_algorithm_version"),
        "checksum_hex",
        "payload_kind",
        "external_content_id_hex",
        "external_encoded_len",
        "version",
        "updated_at",
    )
    readonly_fields = ("checksum_hex", "external_content_id_hex")
    deferred = ("payload",)

    @admin.display(description=_("checksum"))
    def checksum_hex(self, obj: ComponentState) -> str:
        return _hex(obj.checksum)

    @admin.display(description=_("external content id"))
    def external_content_id_hex(self, obj: ComponentState) -> str:
        return _hex(obj.external_content_id)
