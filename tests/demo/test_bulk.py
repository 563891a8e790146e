"""The bulk loader writes only history the repository could have written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connections

from batchboard import conf, schema, vocabulary
from batchboard.demo import bulk
from batchboard.demo.verify import check_history
from batchboard.models import FlowDecision, JobExecution, JobInstance, StepExecution
from tests.demo.conftest import wipe

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)

pytestmark = pytest.mark.django_db(transaction=True)


def test_bulk_load_satisfies_every_invariant() -> None:
    report = bulk.bulk_load(600, seed=7, now=NOW, batch_executions=250)
    assert report.executions == 600
    assert JobExecution.objects.count() == 600
    assert StepExecution.objects.count() == report.steps
    assert FlowDecision.objects.count() == report.flow_decisions
    assert JobInstance.objects.count() == report.instances
    assert 2.5 <= report.steps / report.executions <= 3.2
    assert check_history() == []
    statuses = set(JobExecution.objects.values_list("status", flat=True))
    assert {"COMPLETED", "FAILED", "STOPPED", "ABANDONED"} <= statuses
    assert statuses - set(vocabulary.FINISHED) <= set(vocabulary.UNRESOLVED)
    assert JobExecution.objects.filter(attempt__gt=1).exists()
    rare = JobInstance.objects.filter(job_name=bulk.RARE_JOB.name).count()
    assert 1 <= rare <= report.instances // 40


def test_bulk_load_appends_and_moves_the_sequences() -> None:
    first = bulk.bulk_load(120, seed=1, now=NOW)
    second = bulk.bulk_load(80, seed=2, now=NOW)
    assert JobExecution.objects.count() == first.executions + second.executions == 200
    assert check_history() == []
    # Ids handed out after the load continue past the explicit ones.
    connection = connections[conf.database_alias()]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence('oxide_batch.ob_job_instance', 'id'))"
            )
            (next_id,) = cursor.fetchone()
        assert (
            next_id
            > JobInstance.objects.order_by("-id").values_list("id", flat=True)[0]
        )


def test_bulk_load_is_deterministic() -> None:
    bulk.bulk_load(150, seed=3, now=NOW)
    first = list(
        JobExecution.objects.order_by("id").values_list(
            "id", "status", "attempt", "created_at", "ended_at", "failure_category"
        )
    )
    wipe()
    bulk.bulk_load(150, seed=3, now=NOW)
    second = list(
        JobExecution.objects.order_by("id").values_list(
            "id", "status", "attempt", "created_at", "ended_at", "failure_category"
        )
    )
    offset = second[0][0] - first[0][0]
    assert [row[1:] for row in first] == [row[1:] for row in second]
    assert offset >= 0


def test_bulk_command_prints_rows_and_rate() -> None:
    out = StringIO()
    call_command("batchboard_seed", "--bulk", "--executions", "50", stdout=out)
    assert "50 executions" in out.getvalue()
    assert "executions/s" in out.getvalue()


def test_bulk_load_can_leave_out_flow_decisions() -> None:
    report = bulk.bulk_load(200, seed=5, now=NOW, workers=3, flow_decisions=False)
    assert report.flow_decisions == 0
    assert not FlowDecision.objects.exists()
    assert StepExecution.objects.count() == report.steps > 0
    assert check_history() == []


def test_bulk_load_refuses_bad_arguments() -> None:
    with pytest.raises(ValueError, match="at least one"):
        bulk.bulk_load(0, now=NOW)
    with pytest.raises(ValueError, match="workers"):
        bulk.bulk_load(10, now=NOW, workers=0)


def test_bulk_types_match_the_tables() -> None:
    """Each planned value is sent as its column's type (binary COPY relies on it)."""
    wire = {"varchar": "text", "int8": "int8", "int4": "int4", "int2": "int2"}
    connection = connections[conf.database_alias()]
    for table in bulk._TABLES:
        assert len(table.types) == len(table.columns)
        if connection.vendor != "postgresql":
            continue
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT column_name, udt_name FROM information_schema.columns "
                "WHERE table_schema = %s AND table_name = %s",
                [schema.SCHEMA_NAME, table.name],
            )
            actual = dict(cursor.fetchall())
        assert [wire.get(actual[c], actual[c]) for c in table.columns] == list(
            table.types
        )


def test_bulk_leaves_out_only_columns_with_a_default() -> None:
    """The loader writes a table's columns in order but those NULL or defaulted."""
    connection = connections[conf.database_alias()]
    for table in bulk._TABLES:
        with connection.cursor() as cursor:
            stored = connection.introspection.get_table_description(cursor, table.name)
        names = [column.name for column in stored]
        assert [name for name in names if name in table.columns] == list(table.columns)
        for column in stored:
            if column.name not in table.columns:
                assert column.null_ok or column.default is not None, column.name


def test_bulk_timestamps_and_documents_read_back() -> None:
    bulk.bulk_load(40, seed=9, now=NOW)
    end = NOW - timedelta(hours=6)
    start = end - timedelta(days=bulk.HISTORY_DAYS)
    first = JobExecution.objects.order_by("id").first()
    assert first is not None
    assert first.started_at is not None and first.ended_at is not None
    assert start <= first.created_at < first.started_at < first.ended_at
    assert first.created_at.microsecond % 1000 == 0
    instance = JobInstance.objects.get(id=first.job_instance_id)
    assert instance.created_at == first.created_at
    assert set(instance.identifying_parameters) == {
        "backfill",
        "business_date",
        "run_id",
        "shard",
    }
    assert instance.identifying_parameters["run_id"]["value"] == instance.id
    assert first.context_payload == {}


def test_bulk_load_leaves_unresolved_and_stale_executions() -> None:
    report = bulk.bulk_load(6000, seed=11, now=NOW, batch_executions=1000)
    assert check_history() == []
    unresolved = JobExecution.objects.filter(status__in=vocabulary.UNRESOLVED)
    # One in UNRESOLVED_EVERY executions, at least a few, across batches.
    share = max(
        report.executions // bulk.UNRESOLVED_EVERY,
        min(bulk.MIN_UNRESOLVED_SHARE, report.executions // 50),
    )
    assert unresolved.count() == pytest.approx(share, abs=1)
    statuses = set(unresolved.values_list("status", flat=True))
    assert {"STARTED", "UNKNOWN"} <= statuses <= set(vocabulary.UNRESOLVED)
    # Each is its instance's latest attempt, and unfinished.
    for row in unresolved:
        assert row.ended_at is None and row.exit_code == "UNKNOWN"
        assert not JobExecution.objects.filter(
            job_instance_id=row.job_instance_id, attempt__gt=row.attempt
        ).exists()
    stale = unresolved.filter(updated_at__lt=NOW - timedelta(days=1))
    fresh = unresolved.filter(updated_at__gte=NOW - timedelta(minutes=3))
    assert stale.count() > fresh.count() > 0
    assert not fresh.filter(status="UNKNOWN").exists()
    stopping = unresolved.filter(status="STOPPING")
    assert not stopping.filter(stop_requested_at__isnull=True).exists()
    assert not unresolved.filter(status="STARTING", started_at__isnull=False).exists()
    running_steps = StepExecution.objects.filter(
        job_execution__status="STARTED", status="STARTED", ended_at__isnull=True
    )
    assert running_steps.exists()


def test_bulk_load_spreads_over_many_jobs_with_rare_ones() -> None:
    bulk.bulk_load(4000, seed=13, now=NOW)
    names = set(JobInstance.objects.values_list("job_name", flat=True))
    assert len(names) >= 40
    for spec, _ in bulk.RARE_JOBS:
        rare = JobInstance.objects.filter(job_name=spec.name)
        assert 1 <= rare.count() < JobInstance.objects.count() // 40
    assert check_history() == []


def test_small_loads_still_leave_an_unresolved_execution() -> None:
    bulk.bulk_load(60, seed=17, now=NOW)
    assert JobExecution.objects.filter(status__in=vocabulary.UNRESOLVED).exists()
    assert check_history() == []
