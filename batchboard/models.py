"""
The oxide-batch metadata schema version 4, table for table.

Every model is unmanaged: the tables belong to oxide-batch's schema, created
by batchboard's migration in managed mode (from :mod:`batchboard.schema`) or
by oxide-batch itself in attached mode, and the suite checks each model
against that description column for column. Indexes are declared only
there (their names exceed what Django's ``Meta.indexes`` accepts); unique
constraints are read from it. Payload columns (contexts, checkpoints, fault
state, partition contexts, component state, manifests and parameter values)
are mapped so that the write side can record them; no view, template or log
may render them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from batchboard import schema
from batchboard.vocabulary import (
    AUTHORIZATION_CLASSES,
    FAILURE_CATEGORIES,
    OUTCOME_CLASSES,
    REJECTION_CODES,
    STATUSES,
    UNRESOLVED,
)

if TYPE_CHECKING:
    from django.utils.functional import _StrPromise

#: The label of each word of the schema's closed sets that batchboard shows
#: in words (flow and payload kinds in the admin); the sets come from the
#: schema. Statuses, actions, outcomes and codes are shown as printed.
LABELS: Final[dict[str, _StrPromise]] = {
    "STEP_EXIT": _("Step exit"),
    "DECIDER": _("Decider"),
    "COMPLETED_STEP_REUSE": _("Completed step reuse"),
    "SPLIT_AGGREGATE": _("Split aggregate"),
    "COMPLETE": _("Complete"),
    "FAIL": _("Fail"),
    "STOP": _("Stop"),
    "INLINE": _("Inline"),
    "EXTERNAL": _("External"),
}


def labelled(values: tuple[str, ...]) -> list[tuple[str, _StrPromise]]:
    """Return the choices for the closed set ``values``, labelled in words."""
    return [(value, LABELS[value]) for value in values]


def as_printed(values: tuple[str, ...]) -> list[tuple[str, str]]:
    """
    Return the choices for a set of values shown as oxide-batch prints them.

    Statuses, failure categories, outcomes, actions, authorization classes
    and rejection codes read the same in the admin as on the dashboard and
    in the CLI: ``STARTED``, not "Started".
    """
    return [(value, value) for value in values]


STATUS_CHOICES: Final = as_printed(STATUSES)
FAILURE_CATEGORY_CHOICES: Final = as_printed(FAILURE_CATEGORIES)
OUTCOME_CHOICES: Final = as_printed(OUTCOME_CLASSES)

UNRESOLVED_Q = Q(status__in=UNRESOLVED)

_TABLES: Final = {table.name: table for table in schema.TABLES}


def unique_constraints(table: str) -> list[models.BaseConstraint]:
    """
    Return the unique constraints the schema declares on ``table``.

    They name columns, which Django accepts for a foreign key's field, and
    keep the schema's constraint names.
    """
    return [
        models.UniqueConstraint(fields=list(columns), name=name)
        for name, columns in _TABLES[table].uniques
    ]


class MetadataModel(models.Model):
    """A table of the oxide-batch schema, which batchboard never alters."""

    class Meta:
        abstract = True
        managed = False


class Identified(MetadataModel):
    """A table keyed by an identity column, ``id``."""

    id = models.BigAutoField(primary_key=True)

    class Meta(MetadataModel.Meta):
        abstract = True


class ContextDescriptor(models.Model):
    """A context descriptor: format, schema, schema version and payload."""

    context_format = models.SmallIntegerField()
    context_schema = models.CharField(max_length=128)
    context_schema_version = models.IntegerField()
    context_payload = models.JSONField()

    class Meta:
        abstract = True


class ItemCounts(models.Model):
    """The item counters of a step execution and of a step partition."""

    read_count = models.BigIntegerField(default=0)
    processed_count = models.BigIntegerField(default=0)
    write_count = models.BigIntegerField(default=0)
    filter_count = models.BigIntegerField(default=0)
    commit_count = models.BigIntegerField(default=0)
    rollback_count = models.BigIntegerField(default=0)

    class Meta:
        abstract = True


class Execution(ContextDescriptor):
    """
    What job and step executions record alike: status, exit code, context,
    failure, lifecycle times and the row version.
    """

    status = models.CharField(max_length=16, choices=STATUS_CHOICES)
    exit_code = models.CharField(max_length=64)
    failure_category = models.CharField(
        max_length=32, choices=FAILURE_CATEGORY_CHOICES, null=True, blank=True
    )
    failure_id = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField()
    version = models.BigIntegerField(default=0)

    class Meta:
        abstract = True


class SchemaVersion(MetadataModel):
    singleton = models.BooleanField(primary_key=True, default=True)
    version = models.IntegerField()
    installed_at = models.DateTimeField()

    class Meta(MetadataModel.Meta):
        db_table = schema.VERSION_TABLE
        verbose_name = _("schema version")

    def __str__(self) -> str:
        return f"oxide-batch schema {self.version}"


class JobDefinition(Identified):
    job_name = models.CharField(max_length=128)
    definition_revision = models.CharField(max_length=128)
    manifest_format = models.SmallIntegerField()
    manifest_digest = models.BinaryField()
    # Never rendered: manifests carry transition patterns (spec 3.5).
    manifest = models.JSONField()
    registered_at = models.DateTimeField()

    class Meta(MetadataModel.Meta):
        db_table = "ob_job_definition"
        verbose_name = _("job definition")
        constraints = unique_constraints(db_table)

    def __str__(self) -> str:
        return f"{self.job_name} @ {self.definition_revision}"


class DefinitionUpgrade(MetadataModel):
    pk = models.CompositePrimaryKey("from_definition", "to_definition")
    from_definition = models.ForeignKey(
        JobDefinition, models.PROTECT, db_column="from_definition_id", related_name="+"
    )
    to_definition = models.ForeignKey(
        JobDefinition, models.PROTECT, db_column="to_definition_id", related_name="+"
    )
    upgrade_key = models.CharField(max_length=128)
    step_mapping = models.JSONField()
    registered_at = models.DateTimeField()

    class Meta(MetadataModel.Meta):
        db_table = "ob_definition_upgrade"
        verbose_name = _("definition upgrade")
        constraints = unique_constraints(db_table)

    def __str__(self) -> str:
        return f"{self.from_definition_id} -> {self.to_definition_id}"


class JobInstance(Identified):
    job_name = models.CharField(max_length=128)
    instance_key = models.BinaryField()
    # Values are redacted everywhere unless the viewer holds
    # batchboard.view_parameter_values; names and types are displayable.
    identifying_parameters = models.JSONField()
    created_at = models.DateTimeField()
    hold_actor = models.CharField(max_length=128, null=True, blank=True)
    hold_reason = models.CharField(max_length=64, null=True, blank=True)
    hold_placed_at = models.DateTimeField(null=True, blank=True)

    class Meta(MetadataModel.Meta):
        db_table = "ob_job_instance"
        verbose_name = _("job instance")
        constraints = unique_constraints(db_table)
        permissions = [
            ("view_parameter_values", _("Can view job parameter values")),
        ]

    def __str__(self) -> str:
        return f"{self.job_name} #{self.pk}"

    @property
    def held(self) -> bool:
        return self.hold_actor is not None

    @property
    def instance_key_hex(self) -> str:
        return bytes(self.instance_key).hex()


class JobExecution(Execution, Identified):
    job_instance = models.ForeignKey(
        JobInstance, models.PROTECT, related_name="executions"
    )
    definition = models.ForeignKey(
        JobDefinition, models.PROTECT, related_name="executions"
    )
    # Part of the composite foreign key ob_job_execution_upgrade_fk.
    upgrade_from_definition = models.ForeignKey(
        JobDefinition,
        models.PROTECT,
        null=True,
        blank=True,
        db_constraint=False,
        related_name="+",
    )
    restart_of_execution = models.ForeignKey(
        "self", models.PROTECT, null=True, blank=True, related_name="restarts"
    )
    attempt = models.IntegerField()
    parameters = models.JSONField()
    owner_token = models.BinaryField(null=True, blank=True)
    stop_requested_at = models.DateTimeField(null=True, blank=True)
    stop_requested_by = models.CharField(max_length=128, null=True, blank=True)

    class Meta(MetadataModel.Meta):
        db_table = "ob_job_execution"
        verbose_name = _("job execution")
        # The authorization classes of operator actions (Read is the view
        # permissions): Lifecycle stops executions; Destructive abandons,
        # recovers, holds, releases and purges.
        permissions = [
            ("operate_lifecycle", _("Can use Lifecycle operator actions (stop)")),
            (
                "operate_destructive",
                _(
                    "Can use Destructive operator actions "
                    "(abandon, recover, hold, release, purge)"
                ),
            ),
        ]
        constraints = [
            *unique_constraints(db_table),
            # A partial unique index in the schema.
            models.UniqueConstraint(
                fields=["job_instance"],
                condition=UNRESOLVED_Q,
                name="ob_job_execution_one_unresolved",
            ),
        ]

    def __str__(self) -> str:
        return f"execution #{self.pk} ({self.status})"

    @property
    def unresolved(self) -> bool:
        return self.status in UNRESOLVED

    @property
    def owner_recorded(self) -> bool:
        return self.owner_token is not None


class StepExecution(Execution, ItemCounts, Identified):
    job_execution = models.ForeignKey(
        JobExecution, models.PROTECT, related_name="steps"
    )
    step_name = models.CharField(max_length=128)
    checkpoint_format = models.SmallIntegerField()
    checkpoint_schema = models.CharField(max_length=128)
    checkpoint_schema_version = models.IntegerField()
    checkpoint_payload = models.JSONField()
    step_logical_id = models.CharField(max_length=128)
    read_retry_count = models.BigIntegerField(default=0)
    process_retry_count = models.BigIntegerField(default=0)
    write_retry_count = models.BigIntegerField(default=0)
    read_skip_count = models.BigIntegerField(default=0)
    process_skip_count = models.BigIntegerField(default=0)
    write_skip_count = models.BigIntegerField(default=0)
    no_rollback_count = models.BigIntegerField(default=0)
    fault_state_format = models.SmallIntegerField(default=1)
    fault_state_schema = models.CharField(
        max_length=128, default="oxide-batch.fault-state"
    )
    fault_state_schema_version = models.IntegerField(default=1)
    fault_state_payload = models.JSONField()
    fault_state_checksum = models.BinaryField()

    class Meta(MetadataModel.Meta):
        db_table = "ob_step_execution"
        verbose_name = _("step execution")
        constraints = unique_constraints(db_table)

    def __str__(self) -> str:
        return f"step #{self.pk} {self.step_name} ({self.status})"


class RecoveryDecision(Identified):
    job_execution = models.ForeignKey(
        JobExecution, models.PROTECT, related_name="recovery_decisions"
    )
    execution_version = models.BigIntegerField()
    prior_status = models.CharField(max_length=16, choices=as_printed(UNRESOLVED))
    resulting_status = models.CharField(
        max_length=16, choices=as_printed(schema.RECOVERY_RESULTS)
    )
    reason_code = models.CharField(max_length=64)
    operator_reference = models.CharField(max_length=128)
    evidence_digest = models.BinaryField()
    decided_at = models.DateTimeField()

    class Meta(MetadataModel.Meta):
        db_table = "ob_recovery_decision"
        verbose_name = _("recovery decision")
        constraints = unique_constraints(db_table)

    def __str__(self) -> str:
        return f"recovery #{self.pk} {self.prior_status} -> {self.resulting_status}"


class FlowDecision(Identified):
    job_execution = models.ForeignKey(
        JobExecution, models.PROTECT, related_name="flow_decisions"
    )
    source_step_execution = models.ForeignKey(
        StepExecution, models.PROTECT, null=True, blank=True, related_name="+"
    )
    reused_decision = models.ForeignKey(
        "self", models.PROTECT, null=True, blank=True, related_name="+"
    )
    sequence = models.BigIntegerField()
    source_node_id = models.CharField(max_length=128)
    observed_outcome = models.CharField(max_length=64)
    target_node_id = models.CharField(max_length=128, null=True, blank=True)
    transition_kind = models.CharField(
        max_length=32, choices=labelled(schema.TRANSITION_KINDS)
    )
    terminal_kind = models.CharField(
        max_length=16,
        choices=labelled(schema.TERMINAL_KINDS),
        null=True,
        blank=True,
    )
    plan_fingerprint = models.BinaryField()
    input_digest = models.BinaryField()
    decided_at = models.DateTimeField()

    class Meta(MetadataModel.Meta):
        db_table = "ob_flow_decision"
        verbose_name = _("flow decision")
        constraints = unique_constraints(db_table)

    def __str__(self) -> str:
        return f"decision #{self.pk} {self.source_node_id}"


class OperatorRequest(Identified):
    job_instance = models.ForeignKey(
        JobInstance,
        models.PROTECT,
        null=True,
        blank=True,
        related_name="operator_requests",
    )
    job_execution = models.ForeignKey(
        JobExecution,
        models.PROTECT,
        null=True,
        blank=True,
        related_name="operator_requests",
    )
    action = models.CharField(
        max_length=16, choices=as_printed(schema.OPERATOR_ACTIONS)
    )
    authorization_class = models.CharField(
        max_length=16, choices=as_printed(AUTHORIZATION_CLASSES)
    )
    operation_id = models.CharField(max_length=64)
    actor_ref = models.CharField(max_length=128)
    reason_code = models.CharField(max_length=64, null=True, blank=True)
    request_digest = models.BinaryField()
    observed_version = models.BigIntegerField(null=True, blank=True)
    prior_status = models.CharField(
        max_length=16, choices=STATUS_CHOICES, null=True, blank=True
    )
    result_status = models.CharField(
        max_length=16, choices=STATUS_CHOICES, null=True, blank=True
    )
    outcome_class = models.CharField(max_length=16, choices=OUTCOME_CHOICES)
    rejection_code = models.CharField(
        max_length=32, choices=as_printed(REJECTION_CODES), null=True, blank=True
    )
    requested_at = models.DateTimeField()

    class Meta(MetadataModel.Meta):
        db_table = "ob_operator_request"
        verbose_name = _("operator request")
        constraints = unique_constraints(db_table)

    def __str__(self) -> str:
        return f"{self.action} {self.operation_id} ({self.outcome_class})"


class RetentionAction(Identified):
    job_instance = models.ForeignKey(
        JobInstance,
        models.PROTECT,
        null=True,
        blank=True,
        related_name="retention_actions",
    )
    action = models.CharField(
        max_length=16, choices=as_printed(schema.RETENTION_ACTIONS)
    )
    operation_id = models.CharField(max_length=64)
    actor_ref = models.CharField(max_length=128)
    reason_code = models.CharField(max_length=64)
    plan_digest = models.BinaryField(null=True, blank=True)
    batch_bound = models.IntegerField(null=True, blank=True)
    deleted_flow_decisions = models.BigIntegerField(default=0)
    deleted_recovery_decisions = models.BigIntegerField(default=0)
    deleted_operator_requests = models.BigIntegerField(default=0)
    deleted_step_partitions = models.BigIntegerField(default=0)
    deleted_step_executions = models.BigIntegerField(default=0)
    deleted_job_executions = models.BigIntegerField(default=0)
    deleted_job_instances = models.BigIntegerField(default=0)
    outcome_class = models.CharField(max_length=16, choices=OUTCOME_CHOICES)
    applied_at = models.DateTimeField()

    class Meta(MetadataModel.Meta):
        db_table = "ob_retention_action"
        verbose_name = _("retention action")
        constraints = unique_constraints(db_table)

    def __str__(self) -> str:
        return f"{self.action} {self.operation_id}"


class StepPartition(ItemCounts, ContextDescriptor, Identified):
    step_execution = models.ForeignKey(
        StepExecution, models.PROTECT, related_name="partitions"
    )
    worker_step_execution = models.ForeignKey(
        StepExecution, models.PROTECT, null=True, blank=True, related_name="+"
    )
    partition_key = models.CharField(max_length=128)
    partition_ordinal = models.IntegerField()
    status = models.CharField(max_length=16, choices=STATUS_CHOICES)
    exit_code = models.CharField(max_length=64, null=True, blank=True)
    context_checksum = models.BinaryField()
    version = models.BigIntegerField(default=0)

    class Meta(MetadataModel.Meta):
        db_table = "ob_step_partition"
        verbose_name = _("step partition")
        constraints = unique_constraints(db_table)

    def __str__(self) -> str:
        return f"partition #{self.pk} {self.partition_key}"


class ComponentState(Identified):
    step_execution = models.ForeignKey(
        StepExecution, models.PROTECT, related_name="component_states"
    )
    namespace = models.CharField(max_length=128)
    schema_id = models.CharField(max_length=128)
    schema_version = models.IntegerField()
    codec_id = models.CharField(max_length=128)
    codec_version = models.IntegerField()
    checksum_algorithm = models.SmallIntegerField()
    checksum_algorithm_version = models.SmallIntegerField()
    checksum = models.BinaryField()
    payload_kind = models.CharField(
        max_length=16, choices=labelled(schema.PAYLOAD_KINDS)
    )
    payload = models.BinaryField(null=True, blank=True)
    external_content_id = models.BinaryField(null=True, blank=True)
    external_encoded_len = models.BigIntegerField(null=True, blank=True)
    version = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField()

    class Meta(MetadataModel.Meta):
        db_table = "ob_component_state"
        verbose_name = _("component state")
        constraints = unique_constraints(db_table)

    def __str__(self) -> str:
        return f"component state #{self.pk} {self.namespace}"


# batchboard's own state, routed to the site's database (batchboard.state).
# API tokens, also batchboard's own state (batchboard.api.tokens).
# batchboard's own state, routed to the site's database (batchboard.state,
# batchboard.alerts.models).
from batchboard.alerts.models import Alert as Alert  # noqa: E402
from batchboard.alerts.models import Channel as Channel  # noqa: E402
from batchboard.alerts.models import Delivery as Delivery  # noqa: E402
from batchboard.alerts.models import DeliveryAttempt as DeliveryAttempt  # noqa: E402
from batchboard.alerts.models import InboxItem as InboxItem  # noqa: E402
from batchboard.alerts.models import PolicyChannel as PolicyChannel  # noqa: E402
from batchboard.alerts.models import RetentionPolicy as RetentionPolicy  # noqa: E402
from batchboard.alerts.models import RetentionRun as RetentionRun  # noqa: E402
from batchboard.alerts.models import Rule as Rule  # noqa: E402
from batchboard.alerts.models import RuleChannel as RuleChannel  # noqa: E402
from batchboard.alerts.models import Watermark as Watermark  # noqa: E402
from batchboard.api.tokens import ApiToken as ApiToken  # noqa: E402
from batchboard.personal.models import SavedView as SavedView  # noqa: E402
from batchboard.personal.models import UserPreference as UserPreference  # noqa: E402
from batchboard.state import BulkItem as BulkItem  # noqa: E402
from batchboard.state import BulkOperation as BulkOperation  # noqa: E402
from batchboard.state import OwnState as OwnState  # noqa: E402
