"""
Keyset pages: the page, the cursor binding and the statement cache.

A list is read one page per statement (spec 3.1-3.2). The first page
captures an identity ceiling inside the statement that reads its rows;
later pages take the ceiling and their position from the cursor, which is
bound to the query, its filter and the page size (:mod:`batchboard.cursors`).
A page keeps rows while their estimated size fits the response bound and
only knows whether a next page may exist: there is no OFFSET and no COUNT.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from threading import local
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import QuerySet
from django.db.models.sql import Query
from django.db.models.sql.compiler import SQLCompiler

from batchboard import cursors
from batchboard.cursors import Key, QuerySpec
from batchboard.vocabulary import MAX_RESPONSE_BYTES

Row = dict[str, Any]

#: The column a first page reads its identity ceiling into.
CEILING = "bb_ceiling"


@dataclass
class Page:
    """One page of a list: its rows and the token of the next page, if any."""

    rows: list[Row]
    page_size: int
    next_cursor: str | None = None
    truncated: bool = False
    first: bool = True

    @property
    def has_more(self) -> bool:
        return self.next_cursor is not None


@dataclass(frozen=True)
class Window:
    """
    Where a page starts: its query, size, position and identity ceiling.

    A first page has neither position nor ceiling; a later page has both,
    read from the cursor the previous page issued.
    """

    spec: QuerySpec
    page_size: int
    after: Key | None = None
    ceiling: int | None = None

    @classmethod
    def open(cls, spec: QuerySpec, page_size: int, token: str | None) -> Window:
        """
        Return the window a cursor continues, or the first page's.

        Raise :class:`batchboard.cursors.CursorError` for a damaged token or
        one of another query, filter or page size.
        """
        if not token:
            return cls(spec, page_size)
        key, ceiling = cursors.decode(token, spec, page_size)
        return cls(spec, page_size, key, ceiling)

    @property
    def first(self) -> bool:
        return self.after is None

    def cursor(self, key: Key, ceiling: int) -> str:
        """Return the token that continues this query after ``key``."""
        return cursors.encode(self.spec, self.page_size, key, ceiling)


def assemble(
    rows: Sequence[Row],
    window: Window,
    key: Callable[[Row], Key],
    estimate: Callable[[Row], int],
) -> Page:
    """
    Keep rows while the size estimate fits the response bound (spec 3.2).

    A next cursor is issued when the page is full or was truncated and at
    least one row is kept, so a final full page leads to an empty page.
    oxide-batch answers ``ResponseTooLarge`` when the first row alone is
    over the bound; a page here always keeps its first row instead, so such
    a row is shown (and paged past) rather than hiding the rest of the list.
    """
    kept: list[Row] = []
    total = 0
    truncated = False
    for row in rows:
        total += estimate(row)
        if total > MAX_RESPONSE_BYTES and kept:
            truncated = True
            break
        kept.append(row)
    page = Page(kept, window.page_size, truncated=truncated, first=window.first)
    if kept and (len(rows) == window.page_size or truncated):
        ceiling = window.ceiling
        if ceiling is None:
            ceiling = int(kept[0][CEILING])
        page.next_cursor = window.cursor(key(kept[-1]), ceiling)
    return page


# -- statements compiled once ----------------------------------------------------

# Compiling a page's ORM query costs more than running it. Each shape of
# query is compiled once, with stand-in values, and later reads run the kept
# text with their own values bound in the stand-ins' places. A shape whose
# stand-ins do not come back as parameters one for one is kept as None and
# always goes through the ORM. On SQLite, which hands back text (timestamps)
# and integers (booleans) where the ORM gives Python values, the rows go
# through the ORM's own converters for the compiled columns, so they are the
# ORM's rows; psycopg converts every value itself.


@dataclass
class Statement:
    """
    Compiled SQL and, per parameter, the argument it takes (or a constant).

    ``names`` are the rows' keys, as the ORM's values query names them.
    ``query`` and ``columns`` (its selected expressions) are kept where the
    rows go through the ORM's converters; ``query`` is ``None`` where the
    driver's values are the ORM's (PostgreSQL).
    """

    sql: str
    slots: tuple[int | None, ...]
    constants: tuple[Any, ...]
    names: tuple[str, ...] = ()
    query: Query | None = None
    columns: tuple[Any, ...] = ()
    #: This thread's compiler of ``query`` and the columns' converters.
    converters: local = field(default_factory=local, compare=False, repr=False)

    def parameters(self, args: Sequence[Any]) -> list[Any]:
        return [
            constant if slot is None else args[slot]
            for slot, constant in zip(self.slots, self.constants, strict=True)
        ]

    def rows(self, connection: BaseDatabaseWrapper, args: Sequence[Any]) -> list[Row]:
        """Run the statement with ``args``; return its rows as the ORM would."""
        with connection.cursor() as cursor:
            cursor.execute(self.sql, self.parameters(args))
            fetched: Iterable[Sequence[Any]] = cursor.fetchall()
        if self.query is not None:
            compiler, converters = self._converters(self.query, connection)
            if converters:
                fetched = compiler.apply_converters(fetched, converters)
        names = self.names
        return [dict(zip(names, row, strict=False)) for row in fetched]

    def _converters(
        self, query: Query, connection: BaseDatabaseWrapper
    ) -> tuple[SQLCompiler, dict[int, Any]]:
        """
        Return a compiler of the query on ``connection`` and its converters.

        Both are bound to the connection (the converters are its backend's
        operations) and a connection to its thread: they are kept per thread,
        found again while the thread's connection is the same object.
        """
        kept = getattr(self.converters, "kept", None)
        if kept is None or kept[0].connection is not connection:
            compiler = query.get_compiler(connection=connection)
            kept = self.converters.kept = (
                compiler,
                compiler.get_converters(self.columns),
            )
        return kept


STATEMENTS: dict[tuple[Any, ...], Statement | None] = {}

# Within every integer column's range: Django drops a comparison with a
# value its column cannot hold, and the stand-in would not come back.
_STAND_IN = 2_000_000_011


def _stand_in(index: int, value: Any) -> Any:
    if isinstance(value, str):
        return f"\x1fbatchboard-stand-in-{index}\x1f"
    return _STAND_IN + index


def _compile(
    using: str, build: Callable[[Sequence[Any]], QuerySet[Any]], stand_ins: list[Any]
) -> Statement | None:
    """Compile ``build`` with stand-ins and find where each argument goes."""
    query = build(stand_ins).query
    compiler = query.get_compiler(using)
    sql, params = compiler.as_sql()
    slots: list[int | None] = []
    for param in params:
        # Integer lookups may come back wrapped (psycopg's Int4, an int).
        found = [
            index
            for index, stand_in in enumerate(stand_ins)
            if isinstance(param, type(stand_in))
            and not isinstance(param, bool)
            and param == stand_in
        ]
        slots.append(found[0] if found else None)
    if {slot for slot in slots if slot is not None} != set(range(len(stand_ins))):
        return None
    # The keys ValuesIterable gives the rows, in the selected columns' order.
    if query.selected:
        names = tuple(query.selected)
    else:
        names = (*query.extra_select, *query.values_select, *query.annotation_select)
    statement = Statement(sql, tuple(slots), tuple(params), names)
    if compiler.connection.vendor != "postgresql":
        statement.query = query
        statement.columns = tuple(
            column[0] for column in compiler.select[: compiler.col_count]
        )
    return statement


def values_rows(
    using: str,
    shape: tuple[Any, ...],
    build: Callable[[Sequence[Any]], QuerySet[Any]],
    args: Sequence[Any],
) -> list[Row]:
    """
    Return the rows of the values query ``build(args)``.

    ``shape`` must name everything that changes the statement's text apart
    from ``args`` (which filters apply, the page size); ``args`` are ints
    and strings bound as parameters. The query's ``values()`` names are the
    rows' keys, and its values are the ORM's, as the ORM gives them.
    """
    key = (using, *shape)
    if key not in STATEMENTS:
        stand_ins = [_stand_in(index, value) for index, value in enumerate(args)]
        STATEMENTS[key] = _compile(using, build, stand_ins)
    statement = STATEMENTS[key]
    if statement is None:
        return list(build(args))
    return statement.rows(connections[using], args)
