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

Changelists never count the history and never page with a deep ``OFFSET``
(:mod:`batchboard.admin.changelist`). Filters come from the fields' choices
(no ``SELECT DISTINCT``), column sorting and facets are off, and each admin
names its ``list_select_related``.

``ob_definition_upgrade`` has a composite primary key, which the Django admin
cannot register; its edges are listed on each job definition's page.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from django.contrib import admin
from django.db.models import BooleanField, ExpressionWrapper, Model, Q, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _

from batchboard import models
from batchboard.admin.actions import (
    OperatorActionsAdminMixin,
    abandon_executions,
    place_holds,
    release_holds,
    stop_executions,
)
from batchboard.admin.readonly import (
    EMPTY,
    ReadOnlyAdmin,
    descriptor_field,
    exit_column,
    hex_field,
    utc_column,
)
from batchboard.digests import parameter_descriptors
from batchboard.explorer.queries import ParameterKinds
from batchboard.schema import ITEM_COUNTERS

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

__all__ = [
    "ComponentStateAdmin",
    "FlowDecisionAdmin",
    "HeldFilter",
    "JobDefinitionAdmin",
    "JobExecutionAdmin",
    "JobInstanceAdmin",
    "OperatorRequestAdmin",
    "ReadOnlyAdmin",
    "RecoveryDecisionAdmin",
    "RetentionActionAdmin",
    "SchemaVersionAdmin",
    "StepExecutionAdmin",
    "StepPartitionAdmin",
]

_EXECUTION_PAYLOADS = ("parameters", "context_payload", "owner_token")
_STEP_PAYLOADS = ("checkpoint_payload", "context_payload", "fault_state_payload")
#: When a step or an execution started and ended, as changelist columns.
_EXIT_CODE = exit_column(_("exit code"))
_STARTED_ENDED = (
    utc_column("started_at", _("started at")),
    utc_column("ended_at", _("ended at")),
)
#: The counters a step and a partition both keep, three to a line.
_COUNTERS = (ITEM_COUNTERS[:3], ITEM_COUNTERS[3:])


def _audit_record(obj: Model) -> str:
    """
    Return the audit log filtered to ``obj``'s action and operation id: the
    one record (the pair is unique in each audit table), by the unique index.
    """
    assert isinstance(obj, (models.OperatorRequest, models.RetentionAction))
    query = urlencode({"action": obj.action, "operation": obj.operation_id})
    return f"{reverse('batchboard:audit')}?{query}"


@admin.register(models.SchemaVersion)
class SchemaVersionAdmin(ReadOnlyAdmin):
    list_display = ("version", "installed_at")
    fields = ("version", "installed_at")
    ordering = ("-version",)
    # One row keyed by a boolean: nothing to page through.
    keyset = False


@admin.register(models.JobDefinition)
class JobDefinitionAdmin(ReadOnlyAdmin):
    def view_on_site(self, obj: Model) -> str | None:
        """Open the job's page (its name is a path of its own)."""
        assert isinstance(obj, models.JobDefinition)
        return reverse("batchboard:job", kwargs={"job_name": obj.job_name})

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
    # Manifests carry transition patterns and are never rendered (spec 3.5).
    deferred = ("manifest",)

    manifest_digest_hex = hex_field("manifest_digest", _("manifest digest"))

    @admin.display(description=_("upgrade edges"))
    def upgrade_edges(self, obj: models.JobDefinition) -> str:
        """List the upgrade edges into and out of this definition."""
        edges = (
            models.DefinitionUpgrade.objects.filter(
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
            return EMPTY
        return format_html(
            "<ul>{}</ul>",
            format_html_join("", "<li>{}: {} → {} ({})</li>", rows),
        )


class HeldFilter(admin.SimpleListFilter):
    """Filter instances by whether a retention hold is placed."""

    title = _("retention hold")
    parameter_name = "held"

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]
    ) -> list[tuple[str, StrOrPromise]]:
        return [("yes", _("Held")), ("no", _("Not held"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.filter(hold_actor__isnull=False)
        if self.value() == "no":
            return queryset.filter(hold_actor__isnull=True)
        return queryset


@admin.register(models.JobInstance)
class JobInstanceAdmin(OperatorActionsAdminMixin, ReadOnlyAdmin):
    site_page = ("instance", "pk")
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
    deferred = ("identifying_parameters",)

    instance_key_hex = hex_field("instance_key", _("instance key"))

    def change_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        """
        Add the parameters' names and types, extracted in the database: the
        envelope (with its values) is never loaded.
        """
        queryset: QuerySet[Any] = super().change_queryset(request)
        annotated: QuerySet[Any] = queryset.annotate(
            parameter_kinds=ParameterKinds("identifying_parameters")
        )
        return annotated

    @admin.display(description=_("identifying parameters"))
    def parameter_names(self, obj: models.JobInstance) -> str:
        """List parameter names and types; values are never shown here."""
        raw = getattr(obj, "parameter_kinds", None)
        if raw is None:
            return EMPTY
        document = {str(name): {"type": kind} for name, kind in json.loads(raw)}
        rows = parameter_descriptors(document)
        if not rows:
            return EMPTY
        return format_html(
            "<ul>{}</ul>", format_html_join("", "<li>{} ({})</li>", rows)
        )


@admin.register(models.JobExecution)
class JobExecutionAdmin(OperatorActionsAdminMixin, ReadOnlyAdmin):
    site_page = ("execution", "pk")
    actions = [stop_executions, abandon_executions]
    list_display = (
        "id",
        "job_name",
        "job_instance_id",
        "attempt",
        "status",
        _EXIT_CODE,
        *_STARTED_ENDED,
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
        "exit_code_shown",
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
    deferred = (
        *_EXECUTION_PAYLOADS,
        "job_instance__identifying_parameters",
    )

    context_descriptor = descriptor_field("context", _("execution context"))
    exit_code_shown = staticmethod(_EXIT_CODE)

    @admin.display(description=_("job name"), ordering="job_instance__job_name")
    def job_name(self, obj: models.JobExecution) -> str:
        return obj.job_instance.job_name

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        """Add whether an owner token is set; its bytes are never loaded."""
        queryset: QuerySet[models.JobExecution] = super().get_queryset(request)
        return queryset.annotate(
            has_owner=ExpressionWrapper(
                Q(owner_token__isnull=False), output_field=BooleanField()
            )
        )

    @admin.display(description=_("owner recorded"), boolean=True)
    def owner_recorded(self, obj: models.JobExecution) -> bool:
        return bool(getattr(obj, "has_owner", False))


@admin.register(models.StepExecution)
class StepExecutionAdmin(ReadOnlyAdmin):
    site_page = ("step", "pk")
    list_display = (
        "id",
        "job_execution_id",
        "step_name",
        "status",
        _EXIT_CODE,
        "read_count",
        "write_count",
        *_STARTED_ENDED,
    )
    list_filter = ("status", "failure_category")
    fields = (
        "id",
        "job_execution",
        "step_name",
        "step_logical_id",
        "status",
        "exit_code_shown",
        *_COUNTERS,
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
    deferred = _STEP_PAYLOADS
    exit_code_shown = staticmethod(_EXIT_CODE)

    checkpoint_descriptor = descriptor_field("checkpoint", _("checkpoint"))
    context_descriptor = descriptor_field("context", _("execution context"))
    fault_state_descriptor = descriptor_field("fault_state", _("fault state"))
    fault_state_checksum_hex = hex_field(
        "fault_state_checksum", _("fault state checksum")
    )


@admin.register(models.RecoveryDecision)
class RecoveryDecisionAdmin(ReadOnlyAdmin):
    site_page = ("recovery_decisions", "job_execution_id")
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

    evidence_digest_hex = hex_field("evidence_digest", _("evidence digest"))


@admin.register(models.FlowDecision)
class FlowDecisionAdmin(ReadOnlyAdmin):
    site_page = ("flow_decisions", "job_execution_id")
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

    plan_fingerprint_hex = hex_field("plan_fingerprint", _("plan fingerprint"))
    input_digest_hex = hex_field("input_digest", _("input digest"))

    @admin.display(description=_("target"))
    def target(self, obj: models.FlowDecision) -> str:
        """Return the target node, or the terminal kind when the flow ended."""
        if obj.target_node_id is not None:
            return obj.target_node_id
        return f"[{obj.terminal_kind}]"


@admin.register(models.OperatorRequest)
class OperatorRequestAdmin(ReadOnlyAdmin):
    def view_on_site(self, obj: Model) -> str | None:
        """Open the audit log at this request: its action and operation id."""
        return _audit_record(obj)

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
    # What was asked and by whom, then what it met and how it ended, each
    # pair on one line.
    fields = (
        "id",
        ("action", "authorization_class"),
        ("operation_id", "actor_ref"),
        "reason_code",
        ("job_instance", "job_execution"),
        "observed_version",
        ("prior_status", "result_status"),
        ("outcome_class", "rejection_code"),
        "request_digest_hex",
        "requested_at",
    )

    request_digest_hex = hex_field("request_digest", _("request digest"))


@admin.register(models.RetentionAction)
class RetentionActionAdmin(ReadOnlyAdmin):
    def view_on_site(self, obj: Model) -> str | None:
        """Open the audit log at this action: its action and operation id."""
        return _audit_record(obj)

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

    plan_digest_hex = hex_field("plan_digest", _("plan digest"))


@admin.register(models.StepPartition)
class StepPartitionAdmin(ReadOnlyAdmin):
    site_page = ("step", "step_execution_id")
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
        *_COUNTERS,
        "context_descriptor",
        "context_checksum_hex",
        "version",
    )
    deferred = ("context_payload",)

    context_descriptor = descriptor_field("context", _("context"))
    context_checksum_hex = hex_field("context_checksum", _("context checksum"))

    @admin.display(description=_("exit code"))
    def exit(self, obj: models.StepPartition) -> str:
        # spec 3.5: a partition that never reported an exit shows UNKNOWN.
        return obj.exit_code if obj.exit_code is not None else "UNKNOWN"


@admin.register(models.ComponentState)
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
    deferred = ("payload",)

    checksum_hex = hex_field("checksum", _("checksum"))
    external_content_id_hex = hex_field("external_content_id", _("external content id"))
