"""The watch loop: one process detects and delivers, and stops when told."""

from __future__ import annotations

import threading
import time
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from batchboard.alerts.models import Delivery
from batchboard.alerts.watch import Periodic, Watch
from tests import factories
from tests.alerts.conftest import Receiver, rule, webhook

pytestmark = pytest.mark.django_db


# Committed: the loop closes unusable connections between jobs, as a
# long-running process must, and a test's open transaction would be one.
@pytest.mark.django_db(transaction=True)
def test_one_watch_process_detects_and_delivers(
    owner: User, receiver: Receiver
) -> None:
    rule(owner, "FAILED", webhook(owner, receiver.url))
    call_command("batchboard_watch", cycles=1, stdout=StringIO())
    failed = factories.execution(factories.instance("payroll-run"), "FAILED")
    out = StringIO()
    call_command("batchboard_watch", cycles=1, stdout=out)
    assert "recorded 1" in out.getvalue() and "delivered 1" in out.getvalue()
    assert out.getvalue().rstrip().endswith("stopped")
    assert Delivery.objects.get().state == "SENT"
    assert [item.body["execution_id"] for item in receiver.received] == [failed.pk]


def test_a_stop_ends_the_loop_between_jobs_and_a_failing_job_is_reported() -> None:
    lines: list[str] = []
    ran: list[str] = []

    def broken() -> str:
        raise RuntimeError("boom")

    def counted() -> str:
        ran.append("x")
        return ""

    watch = Watch(
        [Periodic("broken", 0.05, broken), Periodic("counted", 0.05, counted)],
        say=lines.append,
    )
    thread = threading.Thread(target=watch.run)
    thread.start()
    time.sleep(0.3)
    watch.stop()
    thread.join(2)
    assert not thread.is_alive()
    assert "broken failed: RuntimeError" in lines
    assert len(ran) >= 2


def test_a_non_positive_period_is_refused() -> None:
    err = StringIO()
    with pytest.raises(SystemExit):
        call_command("batchboard_watch", every=0, stderr=err)
    assert "--every must be a positive number" in err.getvalue()


def test_the_demo_login_gets_inbox_rules_once(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.contrib.auth.models import User
    from django.core.management.base import CommandError

    from batchboard.alerts.models import RetentionPolicy, Rule, RuleChannel

    with pytest.raises(CommandError, match="BATCHBOARD_DEMO=1"):
        call_command("batchboard_demo_alerts", stdout=StringIO())
    monkeypatch.setenv("BATCHBOARD_DEMO", "1")
    with pytest.raises(CommandError, match="batchboard_demo_login first"):
        call_command("batchboard_demo_alerts", stdout=StringIO())
    demo = User.objects.create_user("demo", password="demo")
    call_command("batchboard_demo_alerts", stdout=StringIO())
    call_command("batchboard_demo_alerts", stdout=StringIO())
    rules = Rule.objects.filter(owner=demo)
    assert sorted(rules.values_list("kind", flat=True)) == [
        "FAILED",
        "OVERDUE",
        "STALE",
    ]
    assert not RuleChannel.objects.exists()
    assert User.objects.get(pk=demo.pk).has_perm("batchboard.manage_alerts")
    # One notifying policy for all jobs: it plans, never applies.
    policy = RetentionPolicy.objects.get(owner=demo)
    assert (policy.job_name, policy.applies, policy.min_age_seconds) == (
        "",
        False,
        30 * 24 * 3600,
    )
