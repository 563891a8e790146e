"""The cardinality budget and the cost of a scrape, whatever the history."""

from __future__ import annotations

import pytest
from django.db import connections
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily

from batchboard import conf
from batchboard.metrics import database
from batchboard.metrics.budget import OTHER, SERIES_BUDGET, within_budget
from batchboard.models import JobDefinition, JobExecution, JobInstance
from tests import factories
from tests.metrics.conftest import labels, scrape, settings_with

#: Job names of the wide history; the allowlist holds the first 50.
JOBS = [f"job-{number:03d}" for number in range(500)]


def _wide_history() -> None:
    """One STARTED and one FAILED execution for each of 500 job names."""
    moment = factories.now()
    template = factories.execution(factories.instance(JOBS[0]), "STARTED")
    definitions = JobDefinition.objects.bulk_create(
        JobDefinition(
            job_name=name,
            definition_revision="v1",
            manifest_format=1,
            manifest_digest=bytes([number % 256, number // 256]) * 16,
            manifest={"job": name},
            registered_at=moment,
        )
        for number, name in enumerate(JOBS[1:], start=1)
    )
    instances = JobInstance.objects.bulk_create(
        JobInstance(
            job_name=name,
            instance_key=bytes([number % 256, number // 256, 1]) + bytes(29),
            identifying_parameters={},
            created_at=moment,
        )
        for number, name in enumerate(JOBS[1:], start=1)
    )
    fields = {
        field.attname: getattr(template, field.attname)
        for field in JobExecution._meta.concrete_fields
        if field.attname not in ("id", "job_instance_id", "definition_id")
    }
    JobExecution.objects.bulk_create(
        JobExecution(**fields, job_instance=instance, definition=definition)
        for instance, definition in zip(instances, definitions, strict=True)
    )
    for name in JOBS[:20]:
        factories.execution(factories.instance(name), "FAILED")


@pytest.mark.django_db
@override_settings(BATCHBOARD=settings_with(METRICS_JOBS=JOBS[:50]))
def test_500_job_names_stay_within_the_series_budget() -> None:
    _wide_history()
    series, families = scrape()
    for family in families.values():
        sets = {
            tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
            for s in family.samples
        }
        assert len(sets) <= SERIES_BUDGET, family.name
    active = series["oxide_batch_active_executions"]
    jobs = {dict(key)["job"] for key, value in active.items()}
    assert jobs == {*JOBS[:50], OTHER}
    assert active[labels(status="STARTED", job=OTHER, step=OTHER)] == 450
    assert sum(active.values()) == 500
    assert sum(series["batchboard_recent_failed_executions"].values()) == 20


def test_a_family_past_the_budget_folds_into_the_reserved_set() -> None:
    family = GaugeMetricFamily("wide", "", labels=["view", "status"])
    for number in range(300):
        family.add_metric([f"view-{number}", "200"], 1)
    assert within_budget(family) == 101
    assert len(family.samples) == SERIES_BUDGET
    assert family.samples[-1].labels == {"view": OTHER, "status": OTHER}
    assert family.samples[-1].value == 101
    assert sum(sample.value for sample in family.samples) == 300


def test_a_histogram_folds_bucket_by_bucket() -> None:
    family = HistogramMetricFamily("latency", "", labels=["view"])
    for number in range(250):
        family.add_metric([f"view-{number}"], [("0.1", 1), ("+Inf", 2)], 0.5)
    assert within_budget(family) == 51
    reserved = [s for s in family.samples if s.labels.get("view") == OTHER]
    assert {(s.name, s.labels.get("le"), s.value) for s in reserved} == {
        ("latency_bucket", "0.1", 51),
        ("latency_bucket", "+Inf", 102),
        ("latency_count", None, 102),
        ("latency_sum", None, 25.5),
    }


def test_a_family_within_the_budget_is_left_alone() -> None:
    family = GaugeMetricFamily("narrow", "", labels=["view"])
    for number in range(SERIES_BUDGET):
        family.add_metric([f"view-{number}"], 1)
    assert within_budget(family) == 0
    assert len(family.samples) == SERIES_BUDGET


def _statements() -> int:
    database.CACHE.clear()
    with CaptureQueriesContext(connections[conf.database_alias()]) as captured:
        database.families()
    return len(captured.captured_queries)


@pytest.mark.django_db
@pytest.mark.parametrize("allowlist", [[], ["alpha"]])
def test_a_scrape_runs_the_same_statements_whatever_the_history(
    allowlist: list[str],
) -> None:
    with override_settings(BATCHBOARD=settings_with(METRICS_JOBS=allowlist)):
        empty = _statements()
        for number in range(30):
            execution = factories.execution(
                factories.instance("alpha" if number % 2 else "beta"),
                ("STARTED", "FAILED", "UNKNOWN")[number % 3],
            )
            factories.operator_request(execution)
        assert _statements() == empty
        # Four reads; on PostgreSQL also the transaction's bounds.
        assert 4 <= empty <= 8


@pytest.mark.django_db
@override_settings(BATCHBOARD=settings_with(METRICS_CACHE_SECONDS=60))
def test_a_cached_scrape_reads_nothing() -> None:
    database.families()
    with CaptureQueriesContext(connections[conf.database_alias()]) as captured:
        database.families()
    assert captured.captured_queries == []
