"""
Standing retention policies: a purge planned on a schedule, applied if told.

A policy's run plans exactly as the purge page plans
(:func:`batchboard.actions.plan_purge` with the policy's criteria), so its
plan digest is the one a manual plan with the same criteria shows, and
holds are skipped as always. A policy that applies does so through
:func:`batchboard.actions.apply_purge`, batch after batch, each batch
re-planned and audited by its own APPLY_PURGE row with its plan digest,
under the policy's actor ``retention-policy:<name>``. A run stops after
``RETENTION_MAX_BATCHES`` batches; the policy is then due again at once,
so the next retention cycle carries on. Only these applies write to the
``oxide_batch`` schema; everything recorded here is batchboard's own state.

An all-jobs policy walks the job names with the explorer's bounded
job-names keyset (:func:`batchboard.explorer.queries.job_names`),
:data:`JOBS_PER_RUN` names per run, and keeps the page's continuation token
as its resume position; while the walk is unfinished the policy stays due.

Several watch processes may run the retention job: :func:`claim` takes a
due policy with ``SELECT ... FOR UPDATE SKIP LOCKED`` and moves its next
due time on in the same short transaction, so one process runs each due
policy once; the purges run after that transaction, never inside it. On
SQLite there is no row lock and one process runs the loop.

Each run over one job is a :class:`~.models.RetentionRun`. A run that
planned something (notifying policy), applied something, or whose apply
was stale or failed is reported through :func:`.delivery.enqueue`: to the
policy's channels and to its owner's inbox.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

from django.db import DatabaseError, transaction
from django.utils import timezone

from batchboard import actions, conf, cursors, vocabulary
from batchboard.actions import envelope
from batchboard.alerts import delivery
from batchboard.alerts.models import (
    APPLIED,
    FAILED,
    NOTHING,
    PLANNED,
    RETENTION,
    STALE,
    Alert,
    Channel,
    RetentionPolicy,
    RetentionRun,
)
from batchboard.explorer import queries

#: The job names an all-jobs policy covers in one run.
JOBS_PER_RUN: Final = 10
#: The most policies one retention cycle runs.
POLICIES_PER_CYCLE: Final = 10
#: A policy runs every 1 hour to 366 days.
MIN_PERIOD_HOURS: Final = 1
MAX_PERIOD_HOURS: Final = 366 * 24
#: The reason every policy's APPLY_PURGE records.
REASON: Final = "RETENTION_POLICY"
#: The actor reference's prefix; the policy's name follows.
ACTOR_PREFIX: Final = "retention-policy:"
#: The error code of a run whose database failed outside an action's unit.
DATABASE_ERROR: Final = "DATABASE_ERROR"
#: The outcomes a report goes out for (an empty plan tells nobody).
REPORTED: Final = (PLANNED, APPLIED, STALE, FAILED)


def actor(policy: RetentionPolicy) -> envelope.ServiceActor:
    """Return the actor a policy plans and applies as: Read and Destructive."""
    return envelope.ServiceActor(
        f"{ACTOR_PREFIX}{policy.name}", [vocabulary.READ, vocabulary.DESTRUCTIVE]
    )


def max_batches() -> int:
    """Return ``RETENTION_MAX_BATCHES`` (validated by check E081)."""
    return int(conf.get_config()["RETENTION_MAX_BATCHES"])


@dataclass
class Outcome:
    """What one policy's run did: its runs, and whether it is due again now."""

    runs: list[RetentionRun] = field(default_factory=list)
    unfinished: bool = False


def claim(
    now: datetime,
    skip: set[int] | frozenset[int] = frozenset(),
    *,
    policy_id: int | None = None,
) -> RetentionPolicy | None:
    """
    Take one due enabled policy (not in ``skip``) and move its due time on.

    With ``policy_id``, take that policy whether due or not (run now);
    None when another process holds it.
    """
    alias = conf.state_alias()
    with transaction.atomic(using=alias):
        found = RetentionPolicy.objects.using(alias).select_for_update(skip_locked=True)
        if policy_id is None:
            found = found.filter(enabled=True, next_due__lte=now)
        else:
            found = found.filter(pk=policy_id)
        policy = found.exclude(pk__in=skip).order_by("next_due", "id").first()
        if policy is None:
            return None
        policy.next_due = now + timedelta(hours=policy.period_hours)
        policy.save(using=alias, update_fields=["next_due"])
    return policy


def cycle() -> list[RetentionRun]:
    """Run up to :data:`POLICIES_PER_CYCLE` due policies once each."""
    runs: list[RetentionRun] = []
    seen: set[int] = set()
    for _ in range(POLICIES_PER_CYCLE):
        policy = claim(timezone.now(), seen)
        if policy is None:
            break
        seen.add(policy.pk)
        runs += run_policy(policy).runs
    return runs


def _job_names(policy: RetentionPolicy) -> tuple[list[str], str]:
    """Return the job names this run covers and where the next run resumes."""
    if policy.job_name:
        return [policy.job_name], ""
    try:
        page = queries.job_names(JOBS_PER_RUN, policy.resume_after or None)
    except cursors.CursorError:
        # A position of another page size or version: start the walk again.
        page = queries.job_names(JOBS_PER_RUN)
    return [str(row["job_name"]) for row in page.rows], page.next_cursor or ""


def run_policy(policy: RetentionPolicy) -> Outcome:
    """Run ``policy`` now over its job, or the next job names of its walk."""
    alias = conf.state_alias()
    names, resume = _job_names(policy)
    outcome = Outcome()
    for name in names:
        run = run_job(policy, name)
        outcome.runs.append(run)
        outcome.unfinished |= run.bound_reached
    outcome.unfinished |= bool(resume)
    changes: dict[str, object] = {"resume_after": resume}
    if outcome.unfinished:
        changes["next_due"] = timezone.now()
    RetentionPolicy.objects.using(alias).filter(pk=policy.pk).update(**changes)
    return outcome


def _plan(
    user: envelope.ServiceActor, policy: RetentionPolicy, job_name: str
) -> actions.PurgePlan:
    """Plan as the purge page plans, with the policy's criteria."""
    return actions.plan_purge(
        user=user,
        job_name=job_name,
        statuses=policy.status_list,
        min_age_seconds=policy.min_age_seconds,
        batch=policy.batch,
    )


def run_job(policy: RetentionPolicy, job_name: str) -> RetentionRun:
    """Plan (and apply, if the policy applies) over one job; record the run."""
    alias = conf.state_alias()
    run = RetentionRun.objects.using(alias).create(
        policy=policy,
        job_name=job_name,
        applies=policy.applies,
        started_at=timezone.now(),
    )
    user = actor(policy)
    try:
        plan = _plan(user, policy, job_name)
        run.plan_digest = plan.digest_hex
        run.candidates = len(plan.candidates)
        if not plan.candidates:
            run.outcome = NOTHING
        elif not policy.applies:
            run.outcome = PLANNED
        else:
            _apply(run, user, policy, plan)
    except actions.PlanStale as error:
        run.outcome, run.error_code = STALE, error.code
    except actions.ActionError as error:
        run.outcome, run.error_code = FAILED, error.code
    except DatabaseError:
        # A read outside an action's unit (the plan's survey) failed; its
        # message may quote the statement, so only the code is kept.
        run.outcome, run.error_code = FAILED, DATABASE_ERROR
    run.finished_at = timezone.now()
    run.save(using=alias)
    if run.outcome in REPORTED:
        report(run, policy)
    return run


def _apply(
    run: RetentionRun,
    user: envelope.ServiceActor,
    policy: RetentionPolicy,
    plan: actions.PurgePlan,
) -> None:
    """Apply ``plan`` and the plans after it, up to the batch bound."""
    bound = max_batches()
    while plan.candidates:
        result = actions.apply_purge(
            user=user,
            criteria=plan.criteria,
            candidates=plan.candidates,
            plan_digest_hex=plan.digest_hex,
            reason_code=REASON,
            operation_id=envelope.new_operation_id(),
        )
        run.applied_batches += 1
        run.deleted_executions += result.counts.get("deleted_job_executions", 0)
        run.deleted_instances += result.counts.get("deleted_job_instances", 0)
        if run.applied_batches >= bound:
            run.bound_reached = True
            break
        plan = _plan(user, policy, run.job_name)
    run.outcome = APPLIED


def report(run: RetentionRun, policy: RetentionPolicy) -> Alert:
    """Queue ``run``'s report to the policy's enabled channels and owner's inbox."""
    alias = conf.state_alias()
    now = timezone.now()
    chosen = (
        Channel.objects.using(alias)
        .filter(policies=policy, enabled=True)
        .order_by("id")
    )
    with transaction.atomic(using=alias):
        alert = Alert.objects.using(alias).create(
            run=run,
            execution_id=0,
            version=0,
            kind=RETENTION,
            job_name=run.job_name,
            status=run.outcome,
            detected_at=now,
        )
        delivery.enqueue(alert, list(chosen), policy.owner_id, now)
    return alert
