"""
SQL expressions the explorer's reads and the actions' surveys share.

A foundation module: it imports nothing of batchboard's.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Func
from django.db.models.sql.compiler import SQLCompiler

__all__ = ["Unindexed"]


class Unindexed(Func):
    """
    A column SQLite must not pick an index for (``+column``); as is elsewhere.

    Where a list is driven from another index (a job's instances), an
    equality on a second column would otherwise tempt SQLite, which has no
    column statistics, to start from that column's index and sort.
    """

    template = "%(expressions)s"

    def as_sqlite(
        self,
        compiler: SQLCompiler,
        connection: BaseDatabaseWrapper,
        **extra_context: Any,
    ) -> Any:
        return self.as_sql(
            compiler, connection, template="+%(expressions)s", **extra_context
        )
