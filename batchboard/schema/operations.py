"""The migration operation that creates the oxide-batch schema in managed mode."""

from __future__ import annotations

import abc
import functools
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.operations.base import Operation
from django.db.migrations.state import ProjectState

from batchboard import conf, schema
from batchboard.schema import embedded


class SchemaOperation(Operation, metaclass=abc.ABCMeta):
    """
    Run batchboard's statements forwards and their drops backwards.

    The models are unmanaged, so no model state changes. No statement runs
    in attached mode, whatever database the operation is run against, nor
    on a database the router keeps the app off; elsewhere a subclass's
    :meth:`statements_on` says which run.
    """

    reversible = True
    reduces_to_sql = True
    atomic = True

    @abc.abstractmethod
    def statements_on(
        self, connection: BaseDatabaseWrapper, *, drop: bool
    ) -> list[str]:
        """Return the statements to run on ``connection`` (none to leave it)."""

    def state_forwards(self, app_label: str, state: ProjectState) -> None:
        """Change no model state: the models and their indexes are not managed."""

    def database_forwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
        *,
        drop: bool = False,
    ) -> None:
        if conf.is_attached():
            return
        connection = schema_editor.connection
        if not router.allow_migrate(connection.alias, app_label):
            return
        for statement in self.statements_on(connection, drop=drop):
            schema_editor.execute(statement, params=None)

    #: Backwards, the same guards drop what forwards created.
    database_backwards = functools.partialmethod(database_forwards, drop=True)


class CreateMetadataSchema(SchemaOperation):
    """
    Create one frozen version of the oxide-batch schema (managed mode only).

    ``version`` names the description whose DDL runs (``4``:
    :mod:`batchboard.schema.v4`). A migration always names it, never "the
    current schema", so the statements an applied migration ran stay the
    statements it runs on a new database.

    The guard lives here as well as in the router: in attached mode this
    operation issues no statement at all, whatever database it is run
    against, and in managed mode it refuses to run over an existing oxide-batch
    schema rather than failing half-way.
    """

    def __init__(self, *, version: int) -> None:
        # Resolved here so that a migration naming an unknown version fails
        # as soon as it is loaded.
        self.description = schema.frozen(version)
        self.version = version

    def statements(self, vendor: str, *, drop: bool = False) -> list[str]:
        """Return the statements that create (or drop) the schema on ``vendor``."""
        described = self.description
        if vendor == "postgresql":
            return described.postgresql_drop() if drop else described.postgresql_ddl()
        if vendor == "sqlite":
            return described.sqlite_drop() if drop else described.sqlite_ddl()
        raise ImproperlyConfigured(
            f"batchboard's metadata schema supports PostgreSQL and SQLite, "
            f"not {vendor}."
        )

    def statements_on(
        self, connection: BaseDatabaseWrapper, *, drop: bool
    ) -> list[str]:
        statements = self.statements(connection.vendor, drop=drop)
        if not drop and self._exists(connection):
            raise ImproperlyConfigured(
                f"The database behind BATCHBOARD['DATABASE'] "
                f"({connection.alias!r}) already has the oxide-batch schema. "
                "Set BATCHBOARD_SCHEMA=attached to use it as it is; batchboard "
                "will not create it again."
            )
        return statements

    def _exists(self, connection: BaseDatabaseWrapper) -> bool:
        """
        Tell whether the schema's version table is already there.

        Asked before the first statement, rather than failing half-way on a
        table that oxide-batch (or an earlier run) already created.
        """
        table = self.description.VERSION_TABLE
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(
                    "SELECT to_regclass(%s) IS NOT NULL",
                    [f"{self.description.SCHEMA_NAME}.{table}"],
                )
            else:
                cursor.execute(
                    "SELECT EXISTS (SELECT 1 FROM sqlite_master "
                    "WHERE type = 'table' AND name = %s)",
                    [table],
                )
            (exists,) = cursor.fetchone()
        return bool(exists)

    def describe(self) -> str:
        return (
            f"Create the oxide-batch metadata schema version {self.version} "
            "(managed mode only)"
        )

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        return (self.__class__.__qualname__, [], {"version": self.version})


class CreateEmbeddedIndexes(SchemaOperation):
    """
    Add :mod:`batchboard.schema.embedded`'s indexes to a managed SQLite schema.

    No statement runs on PostgreSQL, whose schema stays exactly
    oxide-batch's, nor in attached mode, nor on a database the router keeps
    the app off. ``names`` are the indexes this migration adds; each
    migration names its own, so reversing one drops only those.
    """

    def __init__(self, names: tuple[str, ...] | None = None) -> None:
        self.names = names
        # Resolved here so that a migration naming an unknown index fails
        # as soon as it is loaded.
        embedded.sqlite_statements(names=names)

    def statements_on(
        self, connection: BaseDatabaseWrapper, *, drop: bool
    ) -> list[str]:
        if connection.vendor != "sqlite":
            return []
        return embedded.sqlite_statements(drop=drop, names=self.names)

    def describe(self) -> str:
        return "Add batchboard's embedded-only indexes (managed SQLite only)"

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        named = {} if self.names is None else {"names": self.names}
        return (self.__class__.__qualname__, [], named)
