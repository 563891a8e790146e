"""The benchmark command: on either backend, refuses thin histories, prints a table."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command, get_commands
from django.core.management.base import CommandError

from batchboard import vocabulary
from batchboard.demo import bulk
from batchboard.demo.management.commands import batchboard_benchmark
from batchboard.models import FlowDecision, JobExecution, StepExecution
from tests import factories


def test_unresolved_needed_scales_with_the_history() -> None:
    assert batchboard_benchmark.unresolved_needed(2_000_000) == 300
    assert batchboard_benchmark.unresolved_needed(4_000_000) == 300
    assert batchboard_benchmark.unresolved_needed(1_000_000) == 150
    assert batchboard_benchmark.unresolved_needed(300) == 1


@pytest.mark.django_db
def test_a_history_of_few_job_names_is_refused() -> None:
    for index in range(100):
        status = "STARTED" if index % 10 == 0 else "COMPLETED"
        factories.execution(factories.instance(f"job-{index % 3}"), status)
    with pytest.raises(CommandError, match="3 job names and 10 unresolved"):
        call_command(
            "batchboard_benchmark", executions=100, repeat=3, stdout=io.StringIO()
        )


@pytest.mark.django_db(transaction=True)
def test_a_history_with_few_unresolved_rows_is_refused() -> None:
    bulk.bulk_load(3000, seed=3, workers=1)
    running = JobExecution.objects.filter(status__in=vocabulary.UNRESOLVED)
    FlowDecision.objects.filter(job_execution__in=running).delete()
    StepExecution.objects.filter(job_execution__in=running).delete()
    running.delete()
    with pytest.raises(CommandError, match="42 job names and 0 unresolved"):
        call_command(
            "batchboard_benchmark", executions=2000, repeat=3, stdout=io.StringIO()
        )


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_benchmark_seeds_and_prints_every_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if "batchboard_seed" not in get_commands():
        pytest.skip("the bulk loader (batchboard_seed) is not installed")
    monkeypatch.setenv("BATCHBOARD_DEMO", "1")  # seeding writes demo history
    out = io.StringIO()
    call_command(
        "batchboard_benchmark", executions=3000, repeat=3, depth=500, stdout=out
    )
    report = out.getvalue()
    for page in (
        "minimal keyset view (floor)",
        "strict floor",
        "overview (20 of 42 jobs)",
        "overview's attention panel (fragment)",
        "job orders-etl history (fragment)",
        "executions ?status=FAILED",
        "executions ?status=UNKNOWN",
        "executions ?status=STARTING",
        "executions ?status=active (several)",
        "executions ?status=finished (several)",
        "executions ?job=orders-etl",
        "(rare)",
        "rare job",
        "unresolved (15 min)",
        "admin changelist",
        "execution (steps, decisions)",
        "step (partitions)",
        "purge plan orders-etl",
        "bulk plan ABANDON, 1,000 FAILED items",
    ):
        assert page in report
    assert "executions, " in report and "History (" in report
    assert "Job names: 42" in report
    assert "Against the strict floor" in report
    assert "the minimal keyset view" in report
    assert "Purge plan:" in report
    assert "Bulk plan:" in report
    assert re.search(r"Apply ABANDON to [\d,]+ executions: one bulk apply", report)
    # A second run reuses the history instead of seeding again.
    again = io.StringIO()
    call_command(
        "batchboard_benchmark", executions=3000, repeat=3, depth=500, stdout=again
    )
    assert "Reusing 3,000 executions" in again.getvalue()
