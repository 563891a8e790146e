from __future__ import annotations

import pytest
from django.db import connections

from batchboard import conf, schema
from batchboard.models import SchemaVersion


@pytest.mark.django_db
def test_migration_records_schema_version_4() -> None:
    """The managed migration writes the single schema version row."""
    row = SchemaVersion.objects.get()
    assert row.singleton is True
    assert row.version == schema.SUPPORTED_SCHEMA_VERSION


@pytest.mark.django_db
def test_every_table_exists() -> None:
    """All twelve tables of schema version 4 are created."""
    connection = connections[conf.database_alias()]
    with connection.cursor() as cursor:
        existing = set(connection.introspection.table_names(cursor))
    assert set(schema.TABLE_NAMES) <= existing
    assert len(schema.TABLE_NAMES) == 12
