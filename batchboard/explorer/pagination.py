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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connections
from django.db.models import QuerySet

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
    #: Where the page starts: the cursor's position, empty on a first page.
    position: tuple[Any, ...] = ()

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

# Compiling a page's ORM query costs more than running it. On PostgreSQL
# each shape of query is compiled once, with stand-in values, and later
# reads run the kept text with their own values bound in the stand-ins'
# places. A shape whose stand-ins do not come back as parameters one for
# one is kept as None and always goes through the ORM.


@dataclass
class Statement:
    """
    Compiled SQL and, per parameter, the argument it takes (or a constant).

    ``names`` are the rows' keys, read from the first run's cursor: Django
    (5.2 on) selects a values query's columns in the order and under the
    aliases ``values()`` names them.
    """

    sql: str
    slots: tuple[int | None, ...]
    constants: tuple[Any, ...]
    names: tuple[str, ...] | None = None

    def parameters(self, args: Sequence[Any]) -> list[Any]:
        return [
            constant if slot is None else args[slot]
            for slot, constant in zip(self.slots, self.constants, strict=True)
        ]


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
    sql, params = build(stand_ins).query.get_compiler(using).as_sql()
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
    return Statement(sql, tuple(slots), tuple(params))


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
    rows' keys, as the ORM gives them. SQLite, whose values need the ORM's
    converters, always goes through the ORM.
    """
    connection = connections[using]
    if connection.vendor != "postgresql":
        return list(build(args))
    key = (using, *shape)
    if key not in STATEMENTS:
        stand_ins = [_stand_in(index, value) for index, value in enumerate(args)]
        STATEMENTS[key] = _compile(using, build, stand_ins)
    statement = STATEMENTS[key]
    if statement is None:
        return list(build(args))
    with connection.cursor() as cursor:
        cursor.execute(statement.sql, statement.parameters(args))
        names = statement.names
        if names is None:
            names = statement.names = tuple(
                column.name for column in cursor.description or ()
            )
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
