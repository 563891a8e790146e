"""
Create the oxide-batch schema version 4 and declare its twelve models.

The schema comes from :mod:`batchboard.schema.v4`, named by its version so
that what this migration runs never changes (the suite pins the statements).
The models are unmanaged: Django tracks none of their fields in migration
state, only their options, so the state declares no fields.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

from batchboard.schema.operations import CreateMetadataSchema


def unmanaged(
    name: str, table: str, verbose_name: str, **options: Any
) -> migrations.CreateModel:
    """Declare the unmanaged model ``name`` of ``table`` to the migration state."""
    return migrations.CreateModel(
        name=name,
        fields=[],
        options={
            "verbose_name": verbose_name,
            "db_table": table,
            "managed": False,
            **options,
        },
    )


class Migration(migrations.Migration):
    initial = True

    dependencies = []

    operations = [
        CreateMetadataSchema(version=4),
        unmanaged("ComponentState", "ob_component_state", "component state"),
        unmanaged("DefinitionUpgrade", "ob_definition_upgrade", "definition upgrade"),
        unmanaged("FlowDecision", "ob_flow_decision", "flow decision"),
        unmanaged("JobDefinition", "ob_job_definition", "job definition"),
        unmanaged("JobExecution", "ob_job_execution", "job execution"),
        unmanaged(
            "JobInstance",
            "ob_job_instance",
            "job instance",
            permissions=[("view_parameter_values", "Can view job parameter values")],
        ),
        unmanaged("OperatorRequest", "ob_operator_request", "operator request"),
        unmanaged("RecoveryDecision", "ob_recovery_decision", "recovery decision"),
        unmanaged("RetentionAction", "ob_retention_action", "retention action"),
        unmanaged("SchemaVersion", "ob_schema_version", "schema version"),
        unmanaged("StepExecution", "ob_step_execution", "step execution"),
        unmanaged("StepPartition", "ob_step_partition", "step partition"),
    ]
