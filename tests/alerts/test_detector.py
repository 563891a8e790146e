"""The detector records each matching event once, with its deliveries and inbox."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import override_settings
from django.utils import timezone

from batchboard.alerts import detector
from batchboard.alerts.models import Alert, Delivery, InboxItem, Watermark
from tests import factories
from tests.alerts.conftest import rule, webhook

pytestmark = pytest.mark.django_db


def _history(job: str, count: int = 5, minutes: float = 3, days_ago: float = 0) -> None:
    for _ in range(count):
        factories.execution(
            factories.instance(job),
            "COMPLETED",
            duration=timedelta(minutes=minutes),
            created_at=factories.ago(days=days_ago, minutes=minutes + 1)
            if days_ago
            else None,
        )


def test_a_failed_execution_is_delivered_to_each_matching_channel(owner: User) -> None:
    first = webhook(owner, "http://127.0.0.1:9/a", "a")
    second = webhook(owner, "http://127.0.0.1:9/b", "b")
    rule(owner, "FAILED", first, second, job_name="payroll-run")
    rule(owner, "FAILED", first, job_name="other-job", name="elsewhere")
    detector.cycle()
    failed = factories.execution(factories.instance("payroll-run"), "FAILED")
    report = detector.cycle()
    assert report.recorded == 1
    alert = Alert.objects.get()
    assert (alert.execution_id, alert.version, alert.job_name) == (
        failed.pk,
        detector.ONCE,
        "payroll-run",
    )
    assert alert.failure_category == "USER_COMPONENT"
    assert sorted(Delivery.objects.values_list("channel__name", flat=True)) == [
        "a",
        "b",
    ]
    assert list(InboxItem.objects.values_list("user", "read_at")) == [(owner.pk, None)]
    # Read again, the same event records nothing more.
    assert detector.cycle().recorded == 0
    assert Alert.objects.count() == 1


def test_history_before_the_first_cycle_is_not_alerted(owner: User) -> None:
    factories.execution(factories.instance("payroll-run"), "FAILED")
    rule(owner, "FAILED")
    assert detector.cycle().recorded == 0
    assert detector.cycle().recorded == 0
    assert Watermark.objects.filter(stream="FAILED").exists()


def test_failure_categories_narrow_a_rule(owner: User) -> None:
    rule(owner, "FAILED", failure_categories="TIMEOUT")
    detector.cycle()
    factories.execution(factories.instance("a"), "FAILED")
    wanted = factories.execution(
        factories.instance("b"), "FAILED", failure=("TIMEOUT", 7)
    )
    detector.cycle()
    assert list(Alert.objects.values_list("execution_id", flat=True)) == [wanted.pk]


def test_unknown_executions_match_unknown_rules(owner: User) -> None:
    rule(owner, "UNKNOWN")
    detector.cycle()
    unknown = factories.execution(factories.instance("a"), "UNKNOWN")
    detector.cycle()
    assert list(Alert.objects.values_list("execution_id", "status")) == [
        (unknown.pk, "UNKNOWN")
    ]


def test_a_stale_execution_alerts_once_per_version(owner: User) -> None:
    rule(owner, "STALE", minutes=10)
    quiet = factories.execution(
        factories.instance("a"),
        "STARTED",
        created_at=factories.ago(minutes=30),
        updated_at=factories.ago(minutes=20),
    )
    factories.execution(factories.instance("b"), "STARTED")
    detector.cycle()
    detector.cycle()
    alert = Alert.objects.get()
    assert (alert.execution_id, alert.kind) == (quiet.pk, "STALE")
    assert alert.seconds is not None and alert.seconds > 600


def test_an_overdue_run_is_measured_against_its_jobs_p95(owner: User) -> None:
    _history("etl", minutes=3)
    rule(owner, "OVERDUE", job_name="etl", factor=2.0, window=10)
    rule(owner, "OVERDUE", job_name="etl", limit_minutes=60, name="hour")
    late = factories.execution(
        factories.instance("etl"), "STARTED", created_at=factories.ago(minutes=20)
    )
    factories.execution(
        factories.instance("etl"), "STARTED", created_at=factories.ago(minutes=4)
    )
    detector.cycle()
    alert = Alert.objects.get()
    assert (alert.execution_id, alert.rule.name) == (late.pk, "overdue rule")
    assert alert.threshold_seconds == pytest.approx(360.0)


def test_a_fixed_limit_calls_a_run_overdue_without_history(owner: User) -> None:
    rule(owner, "OVERDUE", limit_minutes=10)
    late = factories.execution(
        factories.instance("new-job"), "STARTED", created_at=factories.ago(minutes=15)
    )
    # UNKNOWN is unresolved but not running: stale rules watch it.
    factories.execution(
        factories.instance("lost-job"), "UNKNOWN", created_at=factories.ago(minutes=15)
    )
    detector.cycle()
    assert list(Alert.objects.values_list("execution_id", flat=True)) == [late.pk]


def test_a_slow_finish_is_alerted(owner: User) -> None:
    _history("etl", minutes=3)
    rule(owner, "SLOW", job_name="etl", window=10)
    detector.cycle()
    slow = factories.execution(
        factories.instance("etl"), "COMPLETED", duration=timedelta(minutes=9)
    )
    factories.execution(
        factories.instance("etl"), "COMPLETED", duration=timedelta(minutes=2)
    )
    detector.cycle()
    assert list(Alert.objects.values_list("execution_id", "kind")) == [
        (slow.pk, "SLOW")
    ]


def test_freshness_fires_once_per_miss_and_stays_quiet_while_fresh(
    owner: User,
) -> None:
    rule(owner, "FRESHNESS", job_name="payroll-run", hours=2)
    old = factories.execution(
        factories.instance("payroll-run"),
        "COMPLETED",
        created_at=factories.ago(hours=5),
    )
    detector.cycle()
    detector.cycle()
    alert = Alert.objects.get()
    assert (alert.kind, alert.job_name, alert.execution_id) == (
        "FRESHNESS",
        "payroll-run",
        old.pk,
    )
    factories.execution(factories.instance("payroll-run"), "COMPLETED")
    detector.cycle()
    assert Alert.objects.count() == 1


def test_a_disabled_rule_matches_nothing(owner: User) -> None:
    rule(owner, "FAILED", enabled=False)
    detector.cycle()
    factories.execution(factories.instance("a"), "FAILED")
    assert detector.cycle().matched == 0
    assert not Alert.objects.exists()


def test_the_watermark_advances_only_past_settled_rows(owner: User) -> None:
    rule(owner, "FAILED")
    detector.cycle()
    mark = Watermark.objects.get(stream="FAILED")
    settled = factories.execution(
        factories.instance("a"), "FAILED", created_at=factories.ago(minutes=10)
    )
    fresh = factories.execution(factories.instance("b"), "FAILED")
    # The settled row is older than the first watermark: make it newer.
    mark.updated_at = settled.updated_at - timedelta(seconds=1)
    mark.save()
    detector.cycle()
    mark.refresh_from_db()
    assert (mark.updated_at, mark.last_id) == (settled.updated_at, settled.pk)
    assert fresh.updated_at > timezone.now() - detector.LAG
    assert Alert.objects.count() == 2


def test_the_streams_walk_the_status_index_from_the_watermark(owner: User) -> None:
    rule(owner, "FAILED")
    detector.cycle()
    mark = Watermark.objects.get(stream="FAILED")
    plan = detector.after("FAILED", mark).explain()
    assert "ob_job_execution_status_updated" in plan


def test_a_cycles_statements_do_not_grow_with_the_history(owner: User) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for kind, values in [
        ("FAILED", {}),
        ("STALE", {"minutes": 10}),
        ("OVERDUE", {"factor": 2.0}),
        ("SLOW", {}),
        ("FRESHNESS", {"hours": 1, "job_name": "etl"}),
    ]:
        rule(owner, kind, name=kind, **values)
    _history("etl", count=3)
    detector.cycle()
    detector.cycle()

    def statements() -> int:
        with CaptureQueriesContext(connection) as captured:
            detector.cycle()
        return len(captured.captured_queries)

    small = statements()
    # History: older than the watermarks, as everything before a cycle is.
    _history("other-etl", count=30, days_ago=2)
    _history("other", count=30, days_ago=2)
    for _ in range(20):
        factories.execution(
            factories.instance("old"), "FAILED", created_at=factories.ago(days=3)
        )
    detector.cycle()
    assert statements() == small


def test_every_alert_table_is_routed_to_the_state_database() -> None:
    from django.apps import apps

    from batchboard.routers import BatchboardRouter, is_own_state

    router = BatchboardRouter()
    tables = [
        model
        for model in apps.get_app_config("batchboard").get_models(
            include_auto_created=True
        )
        if model._meta.db_table.startswith("batchboard_alert")
    ]
    assert len(tables) == 8
    for model in tables:
        assert is_own_state(model), model
        with override_settings(BATCHBOARD={"STATE_DATABASE": "state"}):
            assert router.allow_migrate("state", "batchboard", model._meta.model_name)
            assert not router.allow_migrate(
                "default", "batchboard", model._meta.model_name
            )
