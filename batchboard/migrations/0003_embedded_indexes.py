"""
Add the indexes batchboard keeps on its embedded SQLite schema only.

See :mod:`batchboard.schema.embedded` for each index and the statement it
bounds. PostgreSQL and attached databases are left exactly as they are.
"""

from __future__ import annotations

from django.db import migrations

from batchboard.schema.operations import CreateEmbeddedIndexes


class Migration(migrations.Migration):
    dependencies = [
        ("batchboard", "0002_authorization_classes"),
    ]

    operations = [
        CreateEmbeddedIndexes(
            names=(
                "bb_execution_status_identity",
                "bb_execution_restart_of",
                "bb_flow_decision_source_step",
                "bb_flow_decision_reused",
                "bb_step_partition_worker",
            )
        )
    ]
