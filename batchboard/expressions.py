"""
SQL expressions the explorer's reads and the actions' surveys share.

A foundation module: it imports nothing of batchboard's.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Exists, Func
from django.db.models.sql.compiler import SQLCompiler

__all__ = ["Probed", "Unindexed"]


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


class Probed(Exists):
    """
    ``EXISTS`` checked for each row as it is read, never joined.

    PostgreSQL turns a plain ``EXISTS`` into a semi-join and plans it with
    the rest of the statement, once per subquery that holds it; ``OFFSET
    0`` keeps it a subplan of its own: one index probe per row, planned
    in a fraction of the time. Only for a condition most rows pass, read
    where the statement already walks the rows in order: the planner no
    longer chooses where to start from.
    """

    template = "EXISTS(%(subquery)s OFFSET 0)"
