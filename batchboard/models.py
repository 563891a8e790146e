"""
The oxide-batch metadata schema version 4, table for table.

Every model is unmanaged (indexes are declared in :mod:`batchboard.schema`,
whose names exceed what Django's ``Meta.indexes`` accepts): the tables belong to oxide-batch's schema, created
by batchboard's migration in managed mode (from :mod:`batchboard.schema`) or
by oxide-batch itself in attached mode. Payload columns (contexts,
checkpoints, fault state, partition contexts, component state, manifests and
parameter values) are mapped so that the write side can record them; no view,
template or log may render them.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from batchboard import schema


class Status(models.TextChoices):
    STARTING = "STARTING", _("Starting")
    STARTED = "STARTED", _("Started")
    STOPPING = "STOPPING", _("Stopping")
    STOPPED = "STOPPED", _("Stopped")
    FAILED = "FAILED", _("Failed")
    COMPLETED = "COMPLETED", _("Completed")
    ABANDONED = "ABANDONED", _("Abandoned")
    UNKNOWN = "UNKNOWN", _("Unknown")

    @classmethod
    def unresolved(cls) -> tuple[str, ...]:
        return schema.UNRESOLVED

    @classmethod
    def finished(cls) -> tuple[str, ...]:
        return schema.FINISHED


FailureCategory = models.TextChoices(  # type: ignore[misc]
    "FailureCategory", [(value, value) for value in schema.FAILURE_CATEGORIES]
)


class RecoveryPriorStatus(models.TextChoices):
    STARTING = "STARTING", _("Starting")
    STARTED = "STARTED", _("Started")
    STOPPING = "STOPPING", _("Stopping")
    UNKNOWN = "UNKNOWN", _("Unknown")


class RecoveryResult(models.TextChoices):
    FAILED = "FAILED", _("Failed")
    ABANDONED = "ABANDONED", _("Abandoned")


class TransitionKind(models.TextChoices):
    STEP_EXIT = "STEP_EXIT", _("Step exit")
    DECIDER = "DECIDER", _("Decider")
    COMPLETED_STEP_REUSE = "COMPLETED_STEP_REUSE", _("Completed step reuse")
    SPLIT_AGGREGATE = "SPLIT_AGGREGATE", _("Split aggregate")


class TerminalKind(models.TextChoices):
    COMPLETE = "COMPLETE", _("Complete")
    FAIL = "FAIL", _("Fail")
    STOP = "STOP", _("Stop")


class OperatorAction(models.TextChoices):
    LAUNCH = "LAUNCH", _("Launch")
    RESTART = "RESTART", _("Restart")
    STOP = "STOP", _("Stop")
    ABANDON = "ABANDON", _("Abandon")
    RECOVER = "RECOVER", _("Recover")


class AuthorizationClass(models.TextChoices):
    READ = "READ", _("Read")
    LIFECYCLE = "LIFECYCLE", _("Lifecycle")
    DESTRUCTIVE = "DESTRUCTIVE", _("Destructive")


class OutcomeClass(models.TextChoices):
    APPLIED = "APPLIED", _("Applied")
    REJECTED = "REJECTED", _("Rejected")


RejectionCode = models.TextChoices(  # type: ignore[misc]
    "RejectionCode", [(value, value) for value in schema.REJECTION_CODES]
)


class RetentionActionKind(models.TextChoices):
    HOLD = "HOLD", _("Hold")
    RELEASE_HOLD = "RELEASE_HOLD", _("Release hold")
    APPLY_PURGE = "APPLY_PURGE", _("Apply purge")


class PayloadKind(models.TextChoices):
    INLINE = "INLINE", _("Inline")
    EXTERNAL = "EXTERNAL", _("External")


UNRESOLVED_Q = Q(status__in=schema.UNRESOLVED)


class SchemaVersion(models.Model):
    singleton = models.BooleanField(primary_key=True, default=True)
    version = models.IntegerField()
    installed_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "ob_schema_version"
        verbose_name = _("schema version")

    def __str__(self) -> str:
        return f"oxide-batch schema {self.version}"


class JobDefinition(models.Model):
    id = models.BigAutoField(primary_key=True)
    job_name = models.CharField(max_length=128)
    definition_revision = models.CharField(max_length=128)
    manifest_format = models.SmallIntegerField()
    manifest_digest = models.BinaryField()
    # Never rendered: manifests carry transition patterns (spec 3.5).
    manifest = models.JSONField()
    registered_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "ob_job_definition"
        verbose_name = _("job definition")
        constraints = [
            models.UniqueConstraint(
                fields=["job_name", "definition_revision"],
                name="ob_job_definition_revision_unique",
            ),
            models.UniqueConstraint(
                fields=["job_name", "manifest_digest"],
                name="ob_job_definition_manifest_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.job_name} @ {self.definition_revision}"


class DefinitionUpgrade(models.Model):
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

    class Meta:
        managed = False
        db_table = "ob_definition_upgrade"
        verbose_name = _("definition upgrade")
        constraints = [
            models.UniqueConstraint(
                fields=["to_definition", "upgrade_key"],
                name="ob_definition_upgrade_target_key_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.from_definition_id} -> {self.to_definition_id}"


class JobInstance(models.Model):
    id = models.BigAutoField(primary_key=True)
    job_name = models.CharField(max_length=128)
    instance_key = models.BinaryField()
    # Values are redacted everywhere unless the viewer holds
    # batchboard.view_parameter_values; names and types are displayable.
    identifying_parameters = models.JSONField()
    created_at = models.DateTimeField()
    hold_actor = models.CharField(max_length=128, null=True, blank=True)
    hold_reason = models.CharField(max_length=64, null=True, blank=True)
    hold_placed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        managed = False
        db_table = "ob_job_instance"
        verbose_name = _("job instance")
        constraints = [
            models.UniqueConstraint(
                fields=["job_name", "instance_key"],
                name="ob_job_instance_identity_unique",
            ),
        ]
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


class JobExecution(models.Model):
    id = models.BigAutoField(primary_key=True)
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
    status = models.CharField(max_length=16, choices=Status.choices)
    exit_code = models.CharField(max_length=64)
    parameters = models.JSONField()
    context_format = models.SmallIntegerField()
    context_schema = models.CharField(max_length=128)
    context_schema_version = models.IntegerField()
    context_payload = models.JSONField()
    failure_category = models.CharField(
        max_length=32, choices=FailureCategory.choices, null=True, blank=True
    )
    failure_id = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField()
    version = models.BigIntegerField(default=0)
    owner_token = models.BinaryField(null=True, blank=True)
    stop_requested_at = models.DateTimeField(null=True, blank=True)
    stop_requested_by = models.CharField(max_length=128, null=True, blank=True)

    class Meta:
        managed = False
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
            models.UniqueConstraint(
                fields=["job_instance", "attempt"],
                name="ob_job_execution_attempt_unique",
            ),
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
        return self.status in schema.UNRESOLVED

    @property
    def owner_recorded(self) -> bool:
        return self.owner_token is not None


class StepExecution(models.Model):
    id = models.BigAutoField(primary_key=True)
    job_execution = models.ForeignKey(
        JobExecution, models.PROTECT, related_name="steps"
    )
    step_name = models.CharField(max_length=128)
    status = models.CharField(max_length=16, choices=Status.choices)
    exit_code = models.CharField(max_length=64)
    read_count = models.BigIntegerField(default=0)
    processed_count = models.BigIntegerField(default=0)
    write_count = models.BigIntegerField(default=0)
    filter_count = models.BigIntegerField(default=0)
    commit_count = models.BigIntegerField(default=0)
    rollback_count = models.BigIntegerField(default=0)
    checkpoint_format = models.SmallIntegerField()
    checkpoint_schema = models.CharField(max_length=128)
    checkpoint_schema_version = models.IntegerField()
    checkpoint_payload = models.JSONField()
    context_format = models.SmallIntegerField()
    context_schema = models.CharField(max_length=128)
    context_schema_version = models.IntegerField()
    context_payload = models.JSONField()
    failure_category = models.CharField(
        max_length=32, choices=FailureCategory.choices, null=True, blank=True
    )
    failure_id = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField()
    version = models.BigIntegerField(default=0)
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

    class Meta:
        managed = False
        db_table = "ob_step_execution"
        verbose_name = _("step execution")
        constraints = [
            models.UniqueConstraint(
                fields=["job_execution", "step_name"],
                name="ob_step_execution_name_unique",
            ),
            models.UniqueConstraint(
                fields=["job_execution", "step_logical_id"],
                name="ob_step_execution_logical_id_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"step #{self.pk} {self.step_name} ({self.status})"


class RecoveryDecision(models.Model):
    id = models.BigAutoField(primary_key=True)
    job_execution = models.ForeignKey(
        JobExecution, models.PROTECT, related_name="recovery_decisions"
    )
    execution_version = models.BigIntegerField()
    prior_status = models.CharField(max_length=16, choices=RecoveryPriorStatus.choices)
    resulting_status = models.CharField(max_length=16, choices=RecoveryResult.choices)
    reason_code = models.CharField(max_length=64)
    operator_reference = models.CharField(max_length=128)
    evidence_digest = models.BinaryField()
    decided_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "ob_recovery_decision"
        verbose_name = _("recovery decision")
        constraints = [
            models.UniqueConstraint(
                fields=["job_execution", "execution_version"],
                name="ob_recovery_decision_version_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"recovery #{self.pk} {self.prior_status} -> {self.resulting_status}"


class FlowDecision(models.Model):
    id = models.BigAutoField(primary_key=True)
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
    transition_kind = models.CharField(max_length=32, choices=TransitionKind.choices)
    terminal_kind = models.CharField(
        max_length=16, choices=TerminalKind.choices, null=True, blank=True
    )
    plan_fingerprint = models.BinaryField()
    input_digest = models.BinaryField()
    decided_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "ob_flow_decision"
        verbose_name = _("flow decision")
        constraints = [
            models.UniqueConstraint(
                fields=["job_execution", "sequence"],
                name="ob_flow_decision_sequence_unique",
            ),
            models.UniqueConstraint(
                fields=["job_execution", "source_node_id"],
                name="ob_flow_decision_source_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"decision #{self.pk} {self.source_node_id}"


class OperatorRequest(models.Model):
    id = models.BigAutoField(primary_key=True)
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
    action = models.CharField(max_length=16, choices=OperatorAction.choices)
    authorization_class = models.CharField(
        max_length=16, choices=AuthorizationClass.choices
    )
    operation_id = models.CharField(max_length=64)
    actor_ref = models.CharField(max_length=128)
    reason_code = models.CharField(max_length=64, null=True, blank=True)
    request_digest = models.BinaryField()
    observed_version = models.BigIntegerField(null=True, blank=True)
    prior_status = models.CharField(
        max_length=16, choices=Status.choices, null=True, blank=True
    )
    result_status = models.CharField(
        max_length=16, choices=Status.choices, null=True, blank=True
    )
    outcome_class = models.CharField(max_length=16, choices=OutcomeClass.choices)
    rejection_code = models.CharField(
        max_length=32, choices=RejectionCode.choices, null=True, blank=True
    )
    requested_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "ob_operator_request"
        verbose_name = _("operator request")
        constraints = [
            models.UniqueConstraint(
                fields=["action", "operation_id"],
                name="ob_operator_request_identity_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.operation_id} ({self.outcome_class})"


class RetentionAction(models.Model):
    id = models.BigAutoField(primary_key=True)
    job_instance = models.ForeignKey(
        JobInstance,
        models.PROTECT,
        null=True,
        blank=True,
        related_name="retention_actions",
    )
    action = models.CharField(max_length=16, choices=RetentionActionKind.choices)
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
    outcome_class = models.CharField(max_length=16, choices=OutcomeClass.choices)
    applied_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "ob_retention_action"
        verbose_name = _("retention action")
        constraints = [
            models.UniqueConstraint(
                fields=["action", "operation_id"],
                name="ob_retention_action_identity_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.operation_id}"


class StepPartition(models.Model):
    id = models.BigAutoField(primary_key=True)
    step_execution = models.ForeignKey(
        StepExecution, models.PROTECT, related_name="partitions"
    )
    worker_step_execution = models.ForeignKey(
        StepExecution, models.PROTECT, null=True, blank=True, related_name="+"
    )
    partition_key = models.CharField(max_length=128)
    partition_ordinal = models.IntegerField()
    status = models.CharField(max_length=16, choices=Status.choices)
    exit_code = models.CharField(max_length=64, null=True, blank=True)
    read_count = models.BigIntegerField(default=0)
    processed_count = models.BigIntegerField(default=0)
    write_count = models.BigIntegerField(default=0)
    filter_count = models.BigIntegerField(default=0)
    commit_count = models.BigIntegerField(default=0)
    rollback_count = models.BigIntegerField(default=0)
    context_format = models.SmallIntegerField()
    context_schema = models.CharField(max_length=128)
    context_schema_version = models.IntegerField()
    context_payload = models.JSONField()
    context_checksum = models.BinaryField()
    version = models.BigIntegerField(default=0)

    class Meta:
        managed = False
        db_table = "ob_step_partition"
        verbose_name = _("step partition")
        constraints = [
            models.UniqueConstraint(
                fields=["step_execution", "partition_key"],
                name="ob_step_partition_key_unique",
            ),
            models.UniqueConstraint(
                fields=["step_execution", "partition_ordinal"],
                name="ob_step_partition_ordinal_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"partition #{self.pk} {self.partition_key}"


class ComponentState(models.Model):
    id = models.BigAutoField(primary_key=True)
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
    payload_kind = models.CharField(max_length=16, choices=PayloadKind.choices)
    payload = models.BinaryField(null=True, blank=True)
    external_content_id = models.BinaryField(null=True, blank=True)
    external_encoded_len = models.BigIntegerField(null=True, blank=True)
    version = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "ob_component_state"
        verbose_name = _("component state")
        constraints = [
            models.UniqueConstraint(
                fields=["step_execution", "namespace"],
                name="ob_component_state_namespace_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"component state #{self.pk} {self.namespace}"
