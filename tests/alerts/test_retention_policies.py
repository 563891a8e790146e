"""Standing retention policies: they plan as the purge page does, and apply only when told."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import OperationalError
from django.test import override_settings
from django.utils import timezone

from batchboard import actions, digests
from batchboard.alerts import channels, retention, watch
from batchboard.alerts.models import (
    Alert,
    Delivery,
    InboxItem,
    RetentionPolicy,
    RetentionRun,
)
from batchboard.models import JobExecution, JobInstance, RetentionAction
from tests import factories as rows
from tests.alerts.conftest import webhook
from tests.conftest import held_lock
from tests.factories import actions as factories

pytestmark = pytest.mark.django_db

JOB = "nightly-import"
KEEP = 30 * 24 * 3600


@pytest.fixture
def admin_user(db: None) -> User:
    return factories.administrator()


def _history(job_name: str = JOB, old: int = 5) -> dict[str, Any]:
    """``old`` purgeable executions, a young one and a held old one."""
    definition = factories.definition(job_name)
    made = [
        factories.execution(
            "COMPLETED",
            job_instance=factories.instance(job_name),
            job_definition=definition,
            updated_at=factories.ago(days=40),
        )
        for _ in range(old)
    ]
    young = factories.execution(
        "COMPLETED",
        job_instance=factories.instance(job_name),
        job_definition=definition,
        updated_at=factories.ago(days=2),
    )
    held = factories.execution(
        "FAILED",
        job_instance=factories.instance(job_name, held=True),
        job_definition=definition,
        updated_at=factories.ago(days=40),
    )
    return {"old": made, "young": young, "held": held}


def _policy(owner: User, **fields: Any) -> RetentionPolicy:
    job_name = fields.pop("job_name", JOB)
    values: dict[str, Any] = {
        "name": "keep-30-days",
        "min_age_seconds": KEEP,
        "batch": 2,
        **fields,
    }
    return rows.retention_policy(owner, job_name, **values)


def _manual_plan(admin: User, policy: RetentionPolicy, job_name: str = JOB) -> Any:
    return actions.plan_purge(
        user=admin,
        job_name=job_name,
        statuses=policy.status_list,
        min_age_seconds=policy.min_age_seconds,
        batch=policy.batch,
    )


def test_an_applying_policy_deletes_what_manual_plans_would_batch_by_batch(
    admin_user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = _history()
    policy = _policy(admin_user, applies=True)
    real = retention._plan
    manual: list[Any] = []

    def compared(user: Any, policy: RetentionPolicy, job_name: str) -> Any:
        # At each batch, a manual plan with the same criteria is the same plan.
        manual.append(_manual_plan(admin_user, policy, job_name))
        plan = real(user, policy, job_name)
        assert (plan.candidates, plan.digest) == (
            manual[-1].candidates,
            manual[-1].digest,
        )
        return plan

    monkeypatch.setattr(retention, "_plan", compared)
    (run,) = retention.run_policy(policy).runs

    # Batches of 2, 2 and 1, then an empty plan that ends the run.
    assert [len(plan.candidates) for plan in manual] == [2, 2, 1, 0]
    deleted = {e for plan in manual for _i, e, _v in plan.candidates}
    assert deleted == {execution.pk for execution in history["old"]}
    assert not JobExecution.objects.filter(pk__in=deleted).exists()
    kept = {history["young"].pk, history["held"].pk}
    assert set(JobExecution.objects.values_list("pk", flat=True)) == kept
    audit = list(
        RetentionAction.objects.filter(action="APPLY_PURGE").order_by("id").values()
    )
    assert [bytes(row["plan_digest"]) for row in audit] == [
        plan.digest for plan in manual[:3]
    ]
    assert {row["actor_ref"] for row in audit} == {"retention-policy:keep-30-days"}
    assert {row["reason_code"] for row in audit} == {"RETENTION_POLICY"}
    assert [row["deleted_job_executions"] for row in audit] == [2, 2, 1]
    assert {row["batch_bound"] for row in audit} == {2}
    assert (run.outcome, run.applied_batches, run.deleted_executions) == (
        "APPLIED",
        3,
        5,
    )
    assert (run.plan_digest, run.candidates) == (manual[0].digest_hex, 2)
    assert run.deleted_instances == 5
    assert run.bound_reached is False
    # An applied run is reported to its owner's inbox.
    assert InboxItem.objects.get(user=admin_user).alert.run == run


def test_a_notifying_policy_deletes_nothing_and_reports_the_plan(
    admin_user: User, receiver: Any
) -> None:
    _history()
    # A run whose parameter value must never leave batchboard.
    factories.execution(
        "COMPLETED",
        job_instance=rows.instance(
            JOB,
            {"target": digests.JobParameter.string("s3cr3t-target-path")},
            created_at=factories.ago(days=400),
        ),
        updated_at=factories.ago(days=40),
    )
    policy = _policy(admin_user, batch=1000)
    policy.channels.add(webhook(admin_user, receiver.url))
    expected = _manual_plan(admin_user, policy)
    before = JobExecution.objects.count()

    (run,) = retention.run_policy(policy).runs

    assert JobExecution.objects.count() == before
    assert not RetentionAction.objects.exists()
    assert (run.outcome, run.candidates, run.applied_batches) == ("PLANNED", 6, 0)
    assert run.plan_digest == expected.digest_hex
    alert = Alert.objects.get()
    assert (alert.run, alert.rule, alert.kind, alert.status) == (
        run,
        None,
        "RETENTION",
        "PLANNED",
    )
    assert InboxItem.objects.get().user == admin_user
    delivery = Delivery.objects.select_related("alert__run__policy").get()
    assert delivery.idempotency_key == f"bb-retention-{run.pk}-{delivery.channel_id}"
    body = channels.message(delivery)
    assert body["policy"] == {"id": policy.pk, "name": "keep-30-days", "applies": False}
    assert (body["job_name"], body["outcome"], body["candidates"]) == (
        JOB,
        "PLANNED",
        6,
    )
    assert body["plan_digest"] == expected.digest_hex
    assert body["link"] == f"/retention/policies/{policy.pk}/"
    # Names and counts only: no parameter value ever reaches a channel.
    text = json.dumps(body) + "".join(channels.summary(body))
    assert "s3cr3t" not in text
    # And the delivery machinery sends it as any alert.
    from batchboard.alerts import delivery as outbox

    assert outbox.deliver_due() == 1
    assert receiver.accepted()[0].body["outcome"] == "PLANNED"


def test_an_empty_plan_is_recorded_and_tells_nobody(admin_user: User) -> None:
    factories.definition(JOB)
    policy = _policy(admin_user)
    (run,) = retention.run_policy(policy).runs
    assert (run.outcome, run.candidates) == ("NOTHING", 0)
    assert not Alert.objects.exists()


def test_a_stale_apply_deletes_nothing_and_notifies(
    admin_user: User, monkeypatch: pytest.MonkeyPatch, receiver: Any
) -> None:
    history = _history(old=2)
    policy = _policy(admin_user, applies=True)
    policy.channels.add(webhook(admin_user, receiver.url))
    real = retention._plan

    def then_a_writer_moves(user: Any, policy: RetentionPolicy, job_name: str) -> Any:
        plan = real(user, policy, job_name)
        # A candidate's version moves between the plan and its apply.
        JobExecution.objects.filter(pk=history["old"][0].pk).update(version=99)
        return plan

    monkeypatch.setattr(retention, "_plan", then_a_writer_moves)
    before = JobExecution.objects.count()
    (run,) = retention.run_policy(policy).runs

    assert JobExecution.objects.count() == before
    assert not RetentionAction.objects.filter(action="APPLY_PURGE").exists()
    assert (run.outcome, run.error_code, run.applied_batches) == (
        "STALE",
        "RETENTION_PLAN_STALE",
        0,
    )
    delivery = Delivery.objects.get()
    assert delivery.alert.status == "STALE"
    assert channels.message(delivery)["error_code"] == "RETENTION_PLAN_STALE"


def test_a_failed_run_is_recorded_with_its_code_and_notifies(
    admin_user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    _history(old=1)
    policy = _policy(admin_user, applies=True)

    def unavailable(*args: Any, **kwargs: Any) -> Any:
        raise actions.ActionError("The retention login is not configured.")

    monkeypatch.setattr(actions, "apply_purge", unavailable)
    (run,) = retention.run_policy(policy).runs
    assert (run.outcome, run.error_code) == ("FAILED", "ACTION_ERROR")
    assert Alert.objects.get().status == "FAILED"
    assert JobExecution.objects.count() == 3


def test_a_database_error_while_planning_fails_the_run(
    admin_user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = _policy(admin_user)

    def broken(**kwargs: Any) -> Any:
        raise OperationalError("canceling statement due to statement timeout")

    monkeypatch.setattr(actions, "plan_purge", broken)
    (run,) = retention.run_policy(policy).runs
    assert (run.outcome, run.error_code, run.plan_digest) == (
        "FAILED",
        "DATABASE_ERROR",
        "",
    )
    assert Alert.objects.get().status == "FAILED"


def test_held_instances_are_kept_by_every_run(admin_user: User) -> None:
    history = _history(old=1)
    policy = _policy(admin_user, applies=True, batch=1000)
    retention.run_policy(policy)
    retention.run_policy(policy)
    assert JobExecution.objects.filter(pk=history["held"].pk).exists()
    assert JobInstance.objects.filter(hold_actor__isnull=False).count() == 1


@override_settings(BATCHBOARD={"RETENTION_MAX_BATCHES": 1})
def test_a_run_stops_at_the_batch_bound_and_stays_due(admin_user: User) -> None:
    _history(old=3)
    policy = _policy(admin_user, applies=True)
    claimed = retention.claim(timezone.now())
    assert claimed == policy
    (run,) = retention.run_policy(claimed).runs
    assert (run.applied_batches, run.bound_reached) == (1, True)
    assert RetentionAction.objects.filter(action="APPLY_PURGE").count() == 1
    policy.refresh_from_db()
    assert policy.next_due <= timezone.now()
    # The next cycle carries on where this one stopped.
    runs = retention.cycle()
    assert [run.applied_batches for run in runs] == [1]
    assert RetentionAction.objects.filter(action="APPLY_PURGE").count() == 2


def test_an_all_jobs_policy_walks_the_job_names_a_page_a_run(
    admin_user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retention, "JOBS_PER_RUN", 1)
    _history("alpha-job", old=1)
    _history("beta-job", old=1)
    policy = _policy(admin_user, job_name="", applies=True)

    # Each cycle covers the next page of names; the policy stays due meanwhile.
    assert [run.job_name for run in retention.cycle()] == ["alpha-job"]
    policy.refresh_from_db()
    assert policy.resume_after and policy.next_due <= timezone.now()
    assert [run.job_name for run in retention.cycle()] == ["beta-job"]
    # The walk ends at the first page without names; then it waits its period.
    while policy.resume_after:
        assert retention.cycle() == []
        policy.refresh_from_db()
    assert policy.next_due > timezone.now()
    assert retention.cycle() == []
    assert JobExecution.objects.count() == 4  # the young and held of each


def test_a_damaged_resume_position_starts_the_walk_again(admin_user: User) -> None:
    _history("alpha-job", old=1)
    policy = _policy(admin_user, job_name="", resume_after="00ff")
    (run,) = retention.run_policy(policy).runs
    assert run.job_name == "alpha-job"


def test_a_claimed_policy_is_not_claimed_again_until_due(admin_user: User) -> None:
    policy = _policy(admin_user, period_hours=6)
    now = timezone.now()
    assert retention.claim(now) == policy
    assert retention.claim(now) is None
    policy.refresh_from_db()
    assert policy.next_due == now + timedelta(hours=6)
    # Disabled policies are never due.
    RetentionPolicy.objects.update(enabled=False, next_due=now)
    assert retention.claim(now) is None


def test_the_watch_loop_runs_due_policies(admin_user: User) -> None:
    _history(old=1)
    _policy(admin_user, applies=True)
    with override_settings(BATCHBOARD={"RETENTION_CYCLE_SECONDS": 7200}):
        (job,) = [job for job in watch.default_jobs(1) if job.name == "retention"]
    assert job.every == 7200.0
    assert job.run() == "retention: 1 runs, 1 batches applied"
    assert RetentionRun.objects.get().outcome == "APPLIED"
    # Nothing due: nothing to report.
    assert job.run() == ""


def test_the_policy_actor_holds_read_and_destructive_only(admin_user: User) -> None:
    policy = _policy(admin_user)
    actor = retention.actor(policy)
    assert actor.actor_ref == "retention-policy:keep-30-days"
    assert actor.classes == {"READ", "DESTRUCTIVE"}


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_a_policy_another_process_holds_is_skipped_not_run_twice() -> None:
    owner = factories.administrator()
    held = _policy(owner, name="held")
    free = _policy(owner, name="free")
    with held_lock(
        "SELECT id FROM batchboard_retention_policy WHERE id = %s FOR UPDATE",
        held.pk,
    ):
        # Another watch process is claiming "held": this one takes the next.
        assert retention.claim(timezone.now()) == free
        assert retention.claim(timezone.now()) is None
        assert retention.claim(timezone.now(), policy_id=held.pk) is None
    assert retention.claim(timezone.now()) == held
