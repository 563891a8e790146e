"""
Add the embedded SQLite index of the operator requests' instance.

Deleting a job instance checks the foreign key of
``ob_operator_request.job_instance_id``; see
:mod:`batchboard.schema.embedded`. PostgreSQL and attached databases are
left exactly as they are.
"""

from __future__ import annotations

from django.db import migrations

from batchboard.schema.operations import CreateEmbeddedIndexes


class Migration(migrations.Migration):
    dependencies = [
        ("batchboard", "0003_embedded_indexes"),
    ]

    operations = [CreateEmbeddedIndexes(names=("bb_operator_request_instance",))]
