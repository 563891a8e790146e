"""The migration operation that creates the oxide-batch schema in managed mode."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import router
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.operations.base import Operation
from django.db.migrations.state import ProjectState

from batchboard import conf, schema


class CreateMetadataSchema(Operation):
    """
    Create schema version 4 from :mod:`batchboard.schema` (managed mode only).

    The guard lives here as well as in the router: in attached mode this
    operation issues no statement at all, whatever database it is run
    against, and in managed mode it refuses to run over an existing oxide-batch
    schema rather than failing half-way.
    """

    reversible = True
    reduces_to_sql = True
    atomic = True

    def state_forwards(self, app_label: str, state: ProjectState) -> None:
        """Change no model state: the models are declared by CreateModel."""

    def _applies(self, app_label: str, schema_editor: BaseDatabaseSchemaEditor) -> bool:
        if conf.is_attached():
            return False
        return router.allow_migrate(schema_editor.connection.alias, app_label)

    def database_forwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        if not self._applies(app_label, schema_editor):
            return
        connection = schema_editor.connection
        vendor = connection.vendor
        if vendor == "postgresql":
            statements = schema.postgresql_ddl()
            probe = "SELECT to_regclass(%s) IS NOT NULL"
            name = f"{schema.SCHEMA_NAME}.ob_schema_version"
        elif vendor == "sqlite":
            statements = schema.sqlite_ddl()
            probe = (
                "SELECT EXISTS (SELECT 1 FROM sqlite_master "
                "WHERE type = 'table' AND name = %s)"
            )
            name = "ob_schema_version"
        else:
            raise ImproperlyConfigured(
                f"batchboard's metadata schema supports PostgreSQL and SQLite, "
                f"not {vendor}."
            )
        # Refuse before the first statement, rather than failing half-way on
        # a table that oxide-batch (or an earlier run) already created.
        with connection.cursor() as cursor:
            cursor.execute(probe, [name])
            (exists,) = cursor.fetchone()
        if exists:
            raise ImproperlyConfigured(
                f"The database behind BATCHBOARD['DATABASE'] "
                f"({connection.alias!r}) already has the oxide-batch schema. "
                "Set BATCHBOARD_SCHEMA=attached to use it as it is; batchboard "
                "will not create it again."
            )
        for statement in statements:
            schema_editor.execute(statement, params=None)

    def database_backwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        if not self._applies(app_label, schema_editor):
            return
        if schema_editor.connection.vendor == "postgresql":
            statements = schema.postgresql_drop()
        else:
            statements = schema.sqlite_drop()
        for statement in statements:
            schema_editor.execute(statement, params=None)

    def describe(self) -> str:
        return (
            f"Create the oxide-batch metadata schema version "
            f"{schema.SUPPORTED_SCHEMA_VERSION} (managed mode only)"
        )

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        return (self.__class__.__qualname__, [], {})
