"""/metrics: the catalog's families and batchboard's own, read from the schema."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client, override_settings
from django.urls import reverse
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)

from batchboard.metrics.budget import OTHER
from batchboard.models import RetentionAction
from tests import factories
from tests.metrics.conftest import TOKEN, labels, scrape, scrape_text, settings_with

pytestmark = pytest.mark.django_db

#: The label keys of each family, in order: the catalog's (spec B.1) for
#: oxide_batch_*, batchboard's own (docs/configuration.md) for the rest.
FAMILIES = {
    "oxide_batch_active_executions": ("gauge", ["status", "job", "step"]),
    "batchboard_unresolved_executions": ("gauge", ["status", "age"]),
    "batchboard_recent_failed_executions": ("gauge", ["category"]),
    "batchboard_recent_operator_requests": (
        "gauge",
        ["action", "authorization", "outcome"],
    ),
    "batchboard_recent_retention_actions": ("gauge", ["action", "outcome"]),
    "batchboard_replica_lag_seconds": ("gauge", ["replica"]),
    "batchboard_replica_up": ("gauge", ["replica"]),
    "batchboard_metrics_window_capped": ("gauge", ["family"]),
    "batchboard_metrics_folded_series": ("gauge", ["family"]),
    "batchboard_http_requests": ("counter", ["view", "status"]),
    "batchboard_http_request_duration_seconds": ("histogram", ["view", "status"]),
}


def _history() -> dict[str, object]:
    """Rows of two jobs, one on the allowlist; return what must never be a label."""
    alpha = factories.instance("alpha")
    beta = factories.instance("beta")
    started = factories.execution(
        alpha,
        "STARTED",
        created_at=factories.ago(seconds=30),
        updated_at=factories.ago(seconds=5),
    )
    factories.execution(
        beta,
        "STARTING",
        created_at=factories.ago(minutes=20),
        updated_at=factories.ago(minutes=10),
    )
    stale = factories.instance("alpha")
    factories.execution(
        stale,
        "UNKNOWN",
        created_at=factories.ago(hours=3),
        updated_at=factories.ago(hours=2),
    )
    failed = factories.instance("beta")
    factories.execution(failed, "FAILED", failure=("TIMEOUT", 7))
    old = factories.instance("beta")
    factories.execution(
        old,
        "FAILED",
        created_at=factories.ago(hours=5),
        duration=timedelta(hours=3),
    )
    request = factories.operator_request(started)
    hold = RetentionAction.objects.create(
        job_instance=alpha,
        action="HOLD",
        operation_id="hold-operation-1",
        actor_ref="keeper@example.org",
        reason_code="AUDIT",
        outcome_class="APPLIED",
        applied_at=factories.now(),
    )
    return {
        "ids": {str(pk) for pk in (alpha.pk, beta.pk, started.pk, request.pk, hold.pk)},
        "secrets": {
            request.operation_id,
            request.actor_ref,
            request.request_digest.hex(),
            hold.operation_id,
            hold.actor_ref,
            hold.reason_code,
            alpha.instance_key.hex(),
        },
    }


@override_settings(BATCHBOARD=settings_with(METRICS_JOBS=["alpha"]))
def test_families_labels_and_values() -> None:
    _history()
    series, families = scrape()
    for name, (kind, keys) in FAMILIES.items():
        assert families[name].type == kind, name
        for sample in families[name].samples:
            # The text format lists labels by name; the keys are the catalog's.
            assert sorted(k for k in sample.labels if k != "le") == sorted(keys), name
    active = series["oxide_batch_active_executions"]
    assert active[labels(status="STARTED", job="alpha", step=OTHER)] == 1
    assert active[labels(status="STARTING", job=OTHER, step=OTHER)] == 1
    assert active[labels(status="STOPPING", job="alpha", step=OTHER)] == 0
    # Active means an owner may still move it: UNKNOWN is not active.
    assert {dict(key)["status"] for key in active} == {
        "STARTING",
        "STARTED",
        "STOPPING",
    }
    assert {dict(key)["job"] for key in active} == {"alpha", OTHER}
    unresolved = series["batchboard_unresolved_executions"]
    assert unresolved[labels(status="STARTED", age="lt_1m")] == 1
    assert unresolved[labels(status="STARTING", age="5m_15m")] == 1
    assert unresolved[labels(status="UNKNOWN", age="1h_6h")] == 1
    assert sum(unresolved.values()) == 3
    failures = series["batchboard_recent_failed_executions"]
    # The failure of two hours ago lies outside the window.
    assert failures[labels(category="TIMEOUT")] == 1
    assert sum(failures.values()) == 1
    assert series["batchboard_recent_operator_requests"] == {
        labels(action="STOP", authorization="LIFECYCLE", outcome="APPLIED"): 1
    }
    assert series["batchboard_recent_retention_actions"] == {
        labels(action="HOLD", outcome="APPLIED"): 1
    }
    assert set(series["batchboard_metrics_window_capped"].values()) == {0}


@override_settings(BATCHBOARD=settings_with(METRICS_JOBS=["alpha", "beta"]))
def test_ids_actors_and_digests_are_never_labels() -> None:
    never = _history()
    series, _families = scrape()
    values = {value for found in series.values() for key in found for _, value in key}
    assert not values & never["ids"]  # type: ignore[operator]
    assert not values & never["secrets"]  # type: ignore[operator]
    keys = {name for found in series.values() for key in found for name, _ in key}
    assert keys <= {
        "status",
        "job",
        "step",
        "age",
        "category",
        "action",
        "authorization",
        "outcome",
        "replica",
        "family",
        "view",
        "le",
    }


@override_settings(BATCHBOARD=settings_with())
def test_without_an_allowlist_every_job_is_other() -> None:
    factories.execution(factories.instance("alpha"), "STARTED")
    series, _families = scrape()
    active = series["oxide_batch_active_executions"]
    assert active[labels(status="STARTED", job=OTHER, step=OTHER)] == 1
    assert {dict(key)["job"] for key in active} == {OTHER}


@override_settings(BATCHBOARD=settings_with())
def test_windows_count_only_recent_audit_rows() -> None:
    execution = factories.execution(factories.instance(), "STARTED")
    factories.operator_request(execution, requested_at=factories.ago(hours=3))
    factories.operator_request(
        execution, "ABANDON", rejection="INVALID_STATE", requested_at=factories.ago()
    )
    series, _families = scrape()
    assert series["batchboard_recent_operator_requests"] == {
        labels(action="ABANDON", authorization="DESTRUCTIVE", outcome="REJECTED"): 1
    }


@override_settings(BATCHBOARD=settings_with())
def test_openmetrics_when_the_scraper_asks() -> None:
    factories.execution(factories.instance(), "STARTED")
    body = scrape_text(Accept="application/openmetrics-text; version=1.0.0")
    assert body.endswith("# EOF\n")
    families = {family.name: family for family in openmetrics_families(body)}
    assert families["oxide_batch_active_executions"].type == "gauge"


@override_settings(BATCHBOARD=settings_with(METRICS_CACHE_SECONDS=60))
def test_a_scrape_within_the_interval_reuses_the_values() -> None:
    factories.execution(factories.instance(), "STARTED")
    first, _families = scrape()
    factories.execution(factories.instance(), "STARTED")
    again, _families = scrape()
    key = labels(status="STARTED", job=OTHER, step=OTHER)
    assert first["oxide_batch_active_executions"][key] == 1
    assert again["oxide_batch_active_executions"][key] == 1


@override_settings(BATCHBOARD=settings_with())
def test_a_scrape_is_get_only() -> None:
    response = Client().post(
        reverse("batchboard:metrics"), headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert response.status_code == 405
