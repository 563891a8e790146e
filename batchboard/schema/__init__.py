"""
The oxide-batch metadata schema: the frozen version 4 description and the
migration operation that creates it.

:mod:`batchboard.schema.v4` is a snapshot of a released contract and never
changes; a later schema version gets a module of its own beside it, and a
migration of its own. The names below are those of the version batchboard
supports; a migration never uses them but names its version through
:func:`frozen`, so that what an applied migration did stays what it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Protocol

from batchboard.schema import v4
from batchboard.schema.v4 import (
    AUTHORIZATION_CLASSES,
    EMPTY_FAULT_STATE_CHECKSUM,
    FAILURE_CATEGORIES,
    FAULT_COUNTERS,
    FINISHED,
    ITEM_COUNTERS,
    OPERATOR_ACTIONS,
    OUTCOME_CLASSES,
    PAYLOAD_KINDS,
    PURGE_COUNTERS,
    RECOVERY_RESULTS,
    REJECTION_CODES,
    RETENTION_ACTIONS,
    SCHEMA_NAME,
    STATUSES,
    SUPPORTED_SCHEMA_VERSION,
    TABLE_NAMES,
    TABLES,
    TERMINAL_KINDS,
    TRANSITION_KINDS,
    UNRESOLVED,
    VERSION_TABLE,
    Check,
    Column,
    Default,
    ForeignKey,
    Index,
    Table,
    postgresql_ddl,
    postgresql_drop,
    sqlite_ddl,
    sqlite_drop,
)

__all__ = [
    "AUTHORIZATION_CLASSES",
    "EMPTY_FAULT_STATE_CHECKSUM",
    "FAILURE_CATEGORIES",
    "FAULT_COUNTERS",
    "FINISHED",
    "ITEM_COUNTERS",
    "OPERATOR_ACTIONS",
    "OUTCOME_CLASSES",
    "PAYLOAD_KINDS",
    "PURGE_COUNTERS",
    "RECOVERY_RESULTS",
    "REJECTION_CODES",
    "RETENTION_ACTIONS",
    "SCHEMA_NAME",
    "STATUSES",
    "SUPPORTED_SCHEMA_VERSION",
    "TABLES",
    "TABLE_NAMES",
    "TERMINAL_KINDS",
    "TRANSITION_KINDS",
    "UNRESOLVED",
    "VERSION_TABLE",
    "Check",
    "Column",
    "Default",
    "Description",
    "ForeignKey",
    "Index",
    "Table",
    "frozen",
    "postgresql_ddl",
    "postgresql_drop",
    "sqlite_ddl",
    "sqlite_drop",
]


class Description(Protocol):
    """What a frozen schema version module gives the migration that creates it."""

    SCHEMA_NAME: str
    SUPPORTED_SCHEMA_VERSION: int
    VERSION_TABLE: str

    def postgresql_ddl(self, schema: str = ...) -> list[str]: ...

    def postgresql_drop(self, schema: str = ...) -> list[str]: ...

    def sqlite_ddl(self) -> list[str]: ...

    def sqlite_drop(self) -> list[str]: ...


# Every version a migration may create, by number. A version is added here
# with its own module; an entry is never changed or removed.
_FROZEN: Final[Mapping[int, Description]] = {4: v4}


def frozen(version: int) -> Description:
    """Return the frozen description of schema ``version``."""
    try:
        return _FROZEN[version]
    except KeyError:
        raise ValueError(
            f"There is no frozen description of oxide-batch schema version "
            f"{version}; known versions: {', '.join(map(str, sorted(_FROZEN)))}."
        ) from None
