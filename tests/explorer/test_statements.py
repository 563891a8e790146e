"""Pages run from statements compiled once return what the ORM returns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from batchboard import queries
from tests.explorer.conftest import History


class _NothingKept(dict[Any, Any]):
    """A statement cache that keeps nothing, so every page goes through the ORM."""

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, None)


def _pages(fetch: Callable[[str | None], queries.Page]) -> list[list[dict[str, Any]]]:
    pages, token = [], None
    for _ in range(4):
        page = fetch(token)
        pages.append(page.rows)
        token = page.next_cursor
        if token is None:
            break
    return pages


@pytest.mark.parametrize(
    "fetch",
    [
        lambda token: queries.recent_executions("", "", 2, token),
        lambda token: queries.recent_executions("FAILED", "", 1, token),
        lambda token: queries.recent_executions("", "nightly-import", 2, token),
        lambda token: queries.instances("nightly-import", 1, token),
    ],
    ids=["all", "status", "job", "instances"],
)
def test_compiled_statements_match_the_orm(
    history: History,
    monkeypatch: pytest.MonkeyPatch,
    fetch: Callable[[str | None], queries.Page],
) -> None:
    monkeypatch.setattr(queries, "_STATEMENTS", {})
    compiled = _pages(fetch)
    again = _pages(fetch)
    monkeypatch.setattr(queries, "_STATEMENTS", _NothingKept())
    through_orm = _pages(fetch)
    assert compiled == again == through_orm
    assert compiled[0]


@pytest.mark.postgresql
def test_each_page_shape_is_compiled_once(
    history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(queries, "_STATEMENTS", {})
    first = queries.recent_executions("", "", 1)
    queries.recent_executions("", "", 1, first.next_cursor)
    queries.recent_executions("", "", 1, first.next_cursor)
    shapes = queries._STATEMENTS
    assert len(shapes) == 2
    assert all(statement is not None for statement in shapes.values())
