"""``batchboard_benchmark_export``: the executions list's download, measured."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests import factories


def _run(*args: str) -> str:
    out = StringIO()
    call_command("batchboard_benchmark_export", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.mark.django_db
def test_it_streams_the_rows_and_reports_rate_and_memory() -> None:
    instance = factories.instance("nightly-import")
    for _ in range(5):
        factories.execution(instance, "COMPLETED")
    report = _run("--rows", "3", "--format", "ndjson")
    assert re.search(
        r"^export ndjson: 3 rows, .* rows/s \(stopped at --rows\)$", report, re.M
    )
    assert "peak resident set growth: " in report
    whole = _run("--rows", "10")
    assert re.search(r"^export csv: 5 rows, ", whole, re.M)
    assert "stopped" not in whole


def test_the_row_bound_is_checked() -> None:
    with pytest.raises(CommandError, match="--rows"):
        _run("--rows", "0")
