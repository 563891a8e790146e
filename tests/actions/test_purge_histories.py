"""
Purge plan then apply over generated histories, checked against an oracle.

Each seed builds a history of two jobs the way oxide-batch's writers link
rows: restarts of earlier attempts, steps, partitions whose workers are
steps of other executions of the instance, flow decisions whose source is
a step of another execution, decisions reusing earlier decisions of the
same instance and of other instances, recovery decisions, operator
requests with and without an execution, retention rows and holds. A plan
over random criteria is then applied. It must not raise, must delete what
the plan names and nothing else (computed here from the rows, not by the
product's statements), must count what it deleted, and must leave no row
pointing at a row that is gone.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User

from batchboard import actions, db, schema, vocabulary
from batchboard.models import (
    ComponentState,
    FlowDecision,
    JobDefinition,
    JobExecution,
    JobInstance,
    RetentionAction,
    StepExecution,
)
from tests.factories import actions as factories

pytestmark = pytest.mark.django_db

SEEDS = range(40)
JOB = "nightly-import"

#: Each table with a single-column id: its id and every foreign-key column.
TRACKED = {
    table.name: [column for fk in table.foreign_keys for column in fk.columns]
    for table in schema.TABLES
    if table.primary_key == ("id",)
}

Rows = dict[str, dict[int, dict[str, Any]]]


def _snapshot() -> Rows:
    rows: Rows = {}
    with db.connection().cursor() as cursor:
        for table, columns in TRACKED.items():
            names = ["id", *dict.fromkeys(columns)]
            cursor.execute(f"SELECT {', '.join(names)} FROM {table}")
            rows[table] = {
                int(row[0]): dict(zip(names[1:], row[1:], strict=True))
                for row in cursor.fetchall()
            }
    return rows


def _dangling() -> list[str]:
    """Return every foreign key whose value names no row, as text."""
    found = []
    with db.connection().cursor() as cursor:
        for table in schema.TABLES:
            for fk in table.foreign_keys:
                joined = " AND ".join(
                    f"p.{target} = c.{column}"
                    for column, target in zip(fk.columns, fk.target, strict=True)
                )
                present = " AND ".join(
                    f"c.{column} IS NOT NULL" for column in fk.columns
                )
                cursor.execute(
                    f"SELECT COUNT(*) FROM {table.name} c WHERE {present}"
                    f" AND NOT EXISTS (SELECT 1 FROM {fk.table} p WHERE {joined})"
                )
                (count,) = cursor.fetchone()
                if count:
                    found.append(f"{table.name}.{','.join(fk.columns)}: {count}")
    return found


def _expected(before: Rows, executions: set[int]) -> tuple[Rows, dict[str, int]]:
    """Return the rows a purge of ``executions`` leaves, and its counts."""
    instances = {before["ob_job_execution"][e]["job_instance_id"] for e in executions}
    left = {
        row["job_instance_id"]
        for ident, row in before["ob_job_execution"].items()
        if ident not in executions
    }
    emptied = instances - left
    steps = {
        ident
        for ident, row in before["ob_step_execution"].items()
        if row["job_execution_id"] in executions
    }
    gone: dict[str, set[int]] = {
        "ob_job_execution": executions,
        "ob_job_instance": emptied,
        "ob_step_execution": steps,
    }
    for table in ("ob_flow_decision", "ob_recovery_decision"):
        gone[table] = {
            ident
            for ident, row in before[table].items()
            if row["job_execution_id"] in executions
        }
    for table in ("ob_step_partition", "ob_component_state"):
        gone[table] = {
            ident
            for ident, row in before[table].items()
            if row["step_execution_id"] in steps
        }
    gone["ob_operator_request"] = {
        ident
        for ident, row in before["ob_operator_request"].items()
        if row["job_execution_id"] in executions
        or (row["job_execution_id"] is None and row["job_instance_id"] in emptied)
    }
    after: Rows = {}
    for table, rows in before.items():
        removed = gone.get(table, set())
        after[table] = {
            ident: dict(row) for ident, row in rows.items() if ident not in removed
        }
    for row in after["ob_flow_decision"].values():
        if row["reused_decision_id"] in gone["ob_flow_decision"]:
            row["reused_decision_id"] = None
    for row in after["ob_retention_action"].values():
        if row["job_instance_id"] in emptied:
            row["job_instance_id"] = None
    counts = {
        "deleted_flow_decisions": len(gone["ob_flow_decision"]),
        "deleted_recovery_decisions": len(gone["ob_recovery_decision"]),
        "deleted_operator_requests": len(gone["ob_operator_request"]),
        "deleted_step_partitions": len(gone["ob_step_partition"]),
        "deleted_step_executions": len(steps),
        "deleted_job_executions": len(executions),
        "deleted_job_instances": len(emptied),
    }
    return after, counts


class History:
    """One generated history; ``rng`` decides every choice."""

    AGES = (
        timedelta(days=70),
        timedelta(days=50),
        timedelta(days=45),
        timedelta(days=35),
        timedelta(days=2),
    )

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        #: Every decision's id and its instance's.
        self.decisions: dict[int, int] = {}
        self.operations = 0
        self.definitions: dict[str, JobDefinition] = {}

    def build(self) -> None:
        for _ in range(self.rng.randint(3, 7)):
            job = JOB if self.rng.random() < 0.8 else "other-job"
            self.instance(job)
        # Later decisions citing earlier ones anywhere, including decisions
        # of older instances citing younger ones.
        executions = list(JobExecution.objects.all())
        for _ in range(self.rng.randint(0, 4)):
            if self.decisions:
                self.decision(self.rng.choice(executions), [], reuse_anywhere=True)

    def instance(self, job: str) -> None:
        rng = self.rng
        job_instance = factories.instance(job, held=rng.random() < 0.15)
        attempts = rng.randint(1, 4)
        ages = sorted((rng.choice(self.AGES) for _ in range(attempts)), reverse=True)
        executions: list[JobExecution] = []
        steps: list[StepExecution] = []
        for attempt, age in enumerate(ages, start=1):
            unresolved = attempt == attempts and rng.random() < 0.15
            status = (
                rng.choice(("STARTED", "UNKNOWN"))
                if unresolved
                else rng.choice(vocabulary.FINISHED)
            )
            restart_of = (
                rng.choice(executions) if executions and rng.random() < 0.6 else None
            )
            if job not in self.definitions:
                self.definitions[job] = factories.definition(job)
            execution = factories.execution(
                status,
                job_instance=job_instance,
                job_definition=self.definitions[job],
                attempt=attempt,
                updated_at=factories.ago() - age,
                restart_of=restart_of,
            )
            own = [
                factories.step(execution, rng.choice(("COMPLETED", "FAILED")))
                for _ in range(rng.randint(0, 3))
            ]
            for parent in own:
                for _ in range(rng.randint(0, 2)):
                    # A worker of this execution or of another one of the
                    # instance, earlier or (below) later.
                    worker = rng.choice([*steps, *own])
                    factories.partition(parent, worker=worker)
            if own and rng.random() < 0.3:
                self.component_state(rng.choice(own))
            steps += own
            executions.append(execution)
            for _ in range(rng.randint(0, 3)):
                self.decision(execution, steps)
            if rng.random() < 0.3:
                factories.recovery_decision(execution)
            if rng.random() < 0.4:
                factories.operator_request(job_execution=execution)
        # Partitions of earlier steps whose workers ran in later attempts.
        for _ in range(rng.randint(0, 2)):
            if steps:
                factories.partition(rng.choice(steps), worker=rng.choice(steps))
        if rng.random() < 0.4:
            factories.operator_request(job_instance=job_instance)
        for _ in range(rng.randint(0, 2)):
            self.retention_row(job_instance)

    def decision(
        self,
        execution: JobExecution,
        steps: list[StepExecution],
        *,
        reuse_anywhere: bool = False,
    ) -> None:
        rng = self.rng
        chance = 0.0 if reuse_anywhere else rng.random()
        if chance < 0.15:
            pool = list(self.decisions)
        elif chance < 0.45:
            pool = [
                ident
                for ident, owner in self.decisions.items()
                if owner == execution.job_instance_id
            ]
        else:
            pool = []
        reused = FlowDecision(pk=rng.choice(pool)) if pool else None
        source = rng.choice(steps) if steps and rng.random() < 0.5 else None
        decision = factories.flow_decision(execution, source=source, reused=reused)
        self.decisions[decision.pk] = execution.job_instance_id

    def component_state(self, step: StepExecution) -> None:
        ComponentState.objects.create(
            step_execution=step,
            namespace=f"reader-{step.pk}",
            schema_id="s",
            schema_version=1,
            codec_id="json",
            codec_version=1,
            checksum_algorithm=1,
            checksum_algorithm_version=1,
            checksum=b"\x00" * 32,
            payload_kind="INLINE",
            payload=b"{}",
            updated_at=step.updated_at,
        )

    def retention_row(self, job_instance: JobInstance) -> None:
        self.operations += 1
        RetentionAction.objects.create(
            job_instance=job_instance,
            action=self.rng.choice(("HOLD", "RELEASE_HOLD")),
            operation_id=f"history-{self.operations}",
            actor_ref="user:keeper",
            reason_code="AUDIT",
            outcome_class="APPLIED",
            applied_at=factories.ago(days=80),
        )


@pytest.mark.parametrize("seed", SEEDS)
def test_plan_then_apply_deletes_exactly_the_plan(seed: int) -> None:
    rng = random.Random(seed)
    History(rng).build()
    user: User = factories.administrator()
    statuses = rng.sample(vocabulary.FINISHED, rng.randint(1, len(vocabulary.FINISHED)))
    plan = actions.plan_purge(
        user=user,
        job_name=JOB,
        statuses=statuses,
        min_age_seconds=rng.choice((3 * 86400, 30 * 86400, 40 * 86400)),
        batch=rng.randint(1, 25),
    )
    before = _snapshot()
    executions = {e for _i, e, _v in plan.candidates}
    expected, counts = _expected(before, executions)
    assert plan.counts == counts
    result = actions.apply_purge(
        user=user,
        criteria=plan.criteria,
        candidates=plan.candidates,
        plan_digest_hex=plan.digest_hex,
        reason_code="RETENTION_POLICY",
        operation_id=f"op-{seed}",
    )
    assert (result.outcome, result.counts) == ("APPLIED", counts)
    after = _snapshot()
    # The purge's own audit row is the one row it adds.
    (audit,) = set(after["ob_retention_action"]) - set(before["ob_retention_action"])
    assert audit == result.audit_id
    del after["ob_retention_action"][audit]
    assert after == expected
    assert _dangling() == []
