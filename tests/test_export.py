"""A list's download: cells, lines, the row bound and its last line."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from django.core.checks import Error
from django.db import OperationalError
from django.http import QueryDict
from django.test import override_settings

from batchboard import export
from batchboard.checks import check_settings

COLUMNS = ("id", "job_name", "failure.category")


def _records(count: int) -> list[dict[str, Any]]:
    return [
        {"id": index, "job_name": f"job-{index}", "failure": {"category": None}}
        for index in range(1, count + 1)
    ]


def _text(form: export.Format, records: Any, limit: int) -> str:
    return b"".join(export.encode(records, form, COLUMNS, limit)).decode()


def test_a_formula_start_is_neutralised_in_every_text_cell() -> None:
    for start in ("=", "+", "-", "@", "\t", "\r"):
        assert (
            export.neutralise(f"{start}cmd|' /C calc'!A0")
            == f"'{start}cmd|' /C calc'!A0"
        )
    assert export.neutralise("nightly-import") == "nightly-import"
    records = [{"id": -1, "job_name": "=cmd|' /C calc'!A0", "failure": None}]
    rows = list(csv.reader(io.StringIO(_text("csv", records, 10))))
    # Numbers stay numbers; text that a spreadsheet would evaluate does not.
    assert rows == [list(COLUMNS), ["-1", "'=cmd|' /C calc'!A0", ""]]


def test_nested_fields_are_dotted_columns() -> None:
    records = [{"id": 1, "job_name": "a", "failure": {"category": "timeout"}}]
    rows = list(csv.reader(io.StringIO(_text("csv", records, 10))))
    assert rows[1] == ["1", "a", "timeout"]
    nested = json.loads(_text("ndjson", records, 10))
    assert nested["failure"] == {"category": "timeout"}


def test_a_list_within_the_bound_ends_without_a_last_line() -> None:
    text = _text("csv", _records(3), 3)
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == list(COLUMNS)
    assert [row[0] for row in rows[1:]] == ["1", "2", "3"]
    lines = _text("ndjson", _records(3), 3).splitlines()
    assert [json.loads(line)["id"] for line in lines] == [1, 2, 3]


def test_a_truncated_file_says_so_in_its_last_line() -> None:
    rows = list(csv.reader(io.StringIO(_text("csv", _records(5), 2))))
    assert len(rows) == 4
    assert rows[-1] == ["# truncated: the file stops at 2 rows (EXPORT_MAX_ROWS)"]
    lines = _text("ndjson", _records(5), 2).splitlines()
    assert len(lines) == 3
    assert json.loads(lines[-1]) == {"limit": 2, "rows": 2, "truncated": True}


def test_a_failing_database_ends_the_file_with_a_failed_line() -> None:
    def failing() -> Iterator[dict[str, Any]]:
        yield from _records(2)
        raise OperationalError("secret row value")

    text = _text("ndjson", failing(), 10)
    assert "secret" not in text
    assert json.loads(text.splitlines()[-1]) == {"failed": True, "limit": 10, "rows": 2}


def test_a_value_written_alone_is_written_as_in_a_line() -> None:
    """What a template-written line puts in each place: the writer's text."""
    values = (
        0,
        -7,
        10**20,
        None,
        True,
        False,
        "plain",
        'quote" and \\ back',
        "ünïcødé ✓ 🚀\u2028",
        "\x00\x1f\x7f",
        1.5,
        [1, "a", None],
        {"b": 1, "a": {"d": None, "c": "x"}},
    )
    for value in values:
        written = json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        assert export.json_value(value) == written, value


def test_the_filters_drop_the_paging_parameters() -> None:
    data = QueryDict("status=FAILED&status=STOPPED&job=a&cursor=x&size=5&format=csv")
    assert export.filters_query(data) == "status=FAILED&status=STOPPED&job=a"


def test_export_max_rows_is_checked() -> None:
    for bad in (0, -1, 10_000_001, "100", True, 1.5):
        with override_settings(BATCHBOARD={"EXPORT_MAX_ROWS": bad}):
            errors = [e for e in check_settings() if e.id == "batchboard.E050"]
            assert errors == [
                Error(
                    f"BATCHBOARD['EXPORT_MAX_ROWS'] is {bad!r}.",
                    hint="Use a whole number of rows from 1 to 10000000.",
                    id="batchboard.E050",
                )
            ], bad
    with override_settings(BATCHBOARD={"EXPORT_MAX_ROWS": 10}):
        assert not [e for e in check_settings() if e.id == "batchboard.E050"]
