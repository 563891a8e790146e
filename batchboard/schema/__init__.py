"""
The oxide-batch metadata schema: the frozen version 4 description and the
migration operation that creates it.

:mod:`batchboard.schema.v4` is a snapshot of a released contract and never
changes; a later schema version gets a module of its own beside it.
"""

from __future__ import annotations

from batchboard.schema.v4 import (
    AUTHORIZATION_CLASSES,
    EMPTY_FAULT_STATE_CHECKSUM,
    FAILURE_CATEGORIES,
    FINISHED,
    OPERATOR_ACTIONS,
    OUTCOME_CLASSES,
    PAYLOAD_KINDS,
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
    Check,
    Column,
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
    "FINISHED",
    "OPERATOR_ACTIONS",
    "OUTCOME_CLASSES",
    "PAYLOAD_KINDS",
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
    "Check",
    "Column",
    "ForeignKey",
    "Index",
    "Table",
    "postgresql_ddl",
    "postgresql_drop",
    "sqlite_ddl",
    "sqlite_drop",
]
