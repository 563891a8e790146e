"""Pages, the cursor binding and the statement cache, without the views."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connections

from batchboard import conf, cursors
from batchboard.explorer import pagination, queries
from batchboard.explorer.pagination import CEILING, Statement, Window, assemble
from batchboard.models import JobExecution
from batchboard.vocabulary import MAX_RESPONSE_BYTES
from tests.explorer.conftest import History

SPEC = cursors.step_executions(42)


def _rows(*ids: int) -> list[dict[str, Any]]:
    return [{"id": pk, CEILING: 99} for pk in ids]


def _identity(row: dict[str, Any]) -> cursors.Key:
    return cursors.Identity(row["id"])


def test_a_first_page_has_no_position_and_a_cursor_continues_it() -> None:
    first = Window.open(SPEC, 2, None)
    assert first.first and first.after is None and first.ceiling is None
    page = assemble(_rows(1, 2), first, _identity, lambda row: 10)
    assert page.next_cursor
    later = Window.open(SPEC, 2, page.next_cursor)
    assert later.after == cursors.Identity(2) and later.ceiling == 99
    assert not later.first


def test_a_cursor_is_bound_to_its_query_and_page_size() -> None:
    token = Window(SPEC, 2).cursor(cursors.Identity(5), 9)
    with pytest.raises(cursors.CursorQueryMismatch):
        Window.open(SPEC, 3, token)
    with pytest.raises(cursors.CursorQueryMismatch):
        Window.open(cursors.step_executions(43), 2, token)


def test_a_short_page_is_the_last() -> None:
    page = assemble(_rows(1), Window(SPEC, 2), _identity, lambda row: 10)
    assert page.rows == _rows(1) and page.next_cursor is None and not page.has_more


def test_the_response_bound_truncates_but_keeps_the_first_row() -> None:
    huge = MAX_RESPONSE_BYTES
    page = assemble(_rows(1, 2, 3), Window(SPEC, 3), _identity, lambda row: huge)
    assert [row["id"] for row in page.rows] == [1]
    assert page.truncated and page.next_cursor


def test_a_statement_binds_arguments_in_their_slots() -> None:
    statement = Statement("SELECT %s, %s, %s", (1, None, 0), ("a", 7, "b"))
    assert statement.parameters(["x", "y"]) == ["y", 7, "x"]


@pytest.mark.django_db
def test_a_shape_whose_stand_ins_do_not_come_back_is_not_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pagination, "STATEMENTS", {})
    alias = conf.database_alias()

    def build(values: Any) -> Any:
        # The argument never reaches the SQL, so it cannot be bound later.
        return JobExecution.objects.filter(id__gt=0).values("id")[:1]

    assert pagination.values_rows(alias, ("probe",), build, [5]) == []
    assert pagination.STATEMENTS[(alias, "probe")] is None


def test_kept_statements_name_their_columns_once(
    history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pagination, "STATEMENTS", {})
    first = queries.recent_executions("", "", 1)
    again = queries.recent_executions("", "", 1)
    (statement,) = pagination.STATEMENTS.values()
    assert statement is not None and statement.names is not None
    assert list(statement.names) == list(first.rows[0])
    assert again.rows == first.rows


@pytest.mark.django_db(transaction=True)
def test_a_kept_statement_reads_through_each_thread_s_connection(
    history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The converters found on one thread's connection are not another's."""
    monkeypatch.setattr(pagination, "STATEMENTS", {})
    here = queries.recent_executions("", "", 2).rows
    there: list[Any] = []

    def read() -> None:
        try:
            there.append(queries.recent_executions("", "", 2).rows)
        finally:
            connections.close_all()

    reader = threading.Thread(target=read)
    reader.start()
    reader.join()
    (statement,) = pagination.STATEMENTS.values()
    assert statement is not None
    assert there == [here]
    assert here
