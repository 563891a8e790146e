"""The benchmark command: refuses SQLite, prints a table on PostgreSQL."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command, get_commands
from django.core.management.base import CommandError
from django.db import connection


@pytest.mark.django_db
def test_benchmark_needs_postgresql() -> None:
    if connection.vendor == "postgresql":
        pytest.skip("runs on SQLite only")
    with pytest.raises(CommandError, match="needs the metadata on PostgreSQL"):
        call_command("batchboard_benchmark", executions=200, stdout=io.StringIO())


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_benchmark_seeds_and_prints_every_list_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if "batchboard_seed" not in get_commands():
        pytest.skip("the bulk loader (batchboard_seed) is not installed")
    monkeypatch.setenv("BATCHBOARD_DEMO", "1")  # seeding writes demo history
    out = io.StringIO()
    call_command("batchboard_benchmark", executions=300, repeat=3, stdout=out)
    report = out.getvalue()
    for page in (
        "minimal keyset view (floor)",
        "strict floor",
        "executions ?status=FAILED",
        "rare job",
        "overview (job names)",
        "unresolved (15 min)",
        "execution (steps, decisions)",
        "step (partitions)",
    ):
        assert page in report
    assert "History: 300 executions" in report
    assert "Against the strict floor" in report
    # A second run reuses the history instead of seeding again.
    again = io.StringIO()
    call_command("batchboard_benchmark", executions=300, repeat=3, stdout=again)
    assert "Reusing 300 executions" in again.getvalue()
