"""
The Django admin over the oxide-batch metadata, read-only.

Metadata is written by oxide-batch runtimes and by batchboard's own write
side, never through admin forms: every model is registered without add,
change or delete permission and without actions. Pages show only what spec
§3.5 calls displayable. Payload columns (contexts, checkpoints, fault state,
partition contexts, component state), manifests, parameter values and owner
tokens are deferred in every query and absent from every page; digests are
shown as hex, parameters as names and types.

Changelists never count the history: the paginator looks a few pages ahead
of the requested one instead of running ``COUNT(*)``, filters come from the
fields' choices (no ``SELECT DISTINCT``) and facets are off.

``ob_definition_upgrade`` has a composite primary key, which the Django admin
cannot register; its edges are listed on each job definition's page.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib import admin
from django.contrib.admin.views.main import PAGE_VAR
from django.core.paginator import Paginator
from django.db.models import BooleanField, ExpressionWrapper, Model, Q, QuerySet
from django.http import HttpRequest
from django.utils.functional import cached_property
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _

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

# How many pages past the requested one the paginator looks for rows. The
# count it reports is exact whenever the result ends within that window.
LOOKAHEAD_PAGES = 10


class LookaheadPaginator(Paginator):
    """
    Paginate without ``COUNT(*)``: count rows up to a window past one page.

    ``count`` fetches at most ``(LOOKAHEAD_PAGES * per_page) + 1`` primary
    keys starting at the requested page, so its cost is bounded by the page
    number and the window, not by the size of the history. When more rows
    follow the window the reported count is a lower bound, enough for the
    admin to offer the next pages.
    """

    def __init__(
        self,
        object_list: QuerySet[Any],
        per_page: int,
        orphans: int = 0,
        allow_empty_first_page: bool = True,
        *,
        page_hint: int = 1,
    ) -> None:
        super().__init__(object_list, per_page, orphans, allow_empty_first_page)
        self.page_hint = max(page_hint, 1)

    @cached_property
    def count(self) -> int:
        """Return the number of rows up to the end of the lookahead window."""
        start = (self.page_hint - 1) * self.per_page
        window = self.per_page * LOOKAHEAD_PAGES + 1
        found = len(
            self.object_list.values_list("pk", flat=True)[start : start + window]
        )
        return start + found


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

    def get_paginator(
        self,
        request: HttpRequest,
        queryset: QuerySet[Any],
        per_page: int,
        orphans: int = 0,
        allow_empty_first_page: bool = True,
    ) -> Paginator:
        """Return a :class:`LookaheadPaginator` anchored at the requested page."""
        try:
            page_hint = int(request.GET.get(PAGE_VAR, 1))
        except ValueError:
            page_hint = 1
        return LookaheadPaginator(
            queryset,
            per_page,
            orphans,
            allow_empty_first_page,
            page_hint=page_hint,
        )


_EXECUTION_PAYLOADS = ("parameters", "context_payload", "owner_token")
_STEP_PAYLOADS = ("checkpoint_payload", "context_payload", "fault_state_payload")


@admin.register(SchemaVersion)
class SchemaVersionAdmin(ReadOnlyAdmin):
    list_display = ("version", "installed_at")
    fields = ("version", "installed_at")
    ordering = ("-version",)


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
class JobInstanceAdmin(ReadOnlyAdmin):
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
class JobExecutionAdmin(_DescriptorMixin, ReadOnlyAdmin):
    list_display = (
        "id",
        "job_name",
        "job_instance_id",
        "attempt",
        "status",
        "exit_code",
        "started_at",
        "ended_at",
    )
    list_filter = ("status", "failure_category")
    list_select_related = ("job_instance",)
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
    )
    readonly_fields = ("context_descriptor", "owner_recorded")
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
        "started_at",
        "ended_at",
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
