"""Seeded demo history: realistic, complete in coverage, lawful, repeatable."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Count

from batchboard.actions import REASON_CODES
from batchboard.demo import seed
from batchboard.demo.catalogue import CATALOGUE
from batchboard.demo.verify import check_history
from batchboard.models import (
    FlowDecision,
    JobDefinition,
    JobExecution,
    JobInstance,
    OperatorRequest,
    RecoveryDecision,
    RetentionAction,
    StepExecution,
    StepPartition,
)
from tests.demo.conftest import wipe

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)

pytestmark = pytest.mark.django_db(transaction=True)


def test_seeded_history_is_lawful_and_covers_every_scenario() -> None:
    seed.seed(instances=60, seed=5, now=NOW)
    assert check_history() == []

    statuses = set(JobExecution.objects.values_list("status", flat=True))
    assert {"COMPLETED", "FAILED", "STARTING", "STARTED", "STOPPING"} <= statuses
    assert statuses & {"STOPPED", "ABANDONED", "UNKNOWN"}
    assert JobExecution.objects.filter(
        attempt__gt=1, restart_of_execution__isnull=False
    ).exists()
    assert JobExecution.objects.filter(upgrade_from_definition__isnull=False).exists()
    assert JobExecution.objects.filter(stop_requested_at__isnull=False).exists()
    assert JobExecution.objects.filter(owner_token__isnull=False).exists()

    names = set(JobDefinition.objects.values_list("job_name", flat=True))
    assert names == {spec.name for spec in CATALOGUE}
    assert len(names) >= 12
    assert any("/" in name and " " in name and not name.isascii() for name in names)

    kinds = {
        entry["type"]
        for parameters in JobInstance.objects.values_list(
            "identifying_parameters", flat=True
        )
        for entry in parameters.values()
    }
    assert kinds == {"string", "i64", "u64", "bool"}

    partition_counts = set(
        StepPartition.objects.values("step_execution")
        .annotate(n=Count("id"))
        .values_list("n", flat=True)
    )
    assert (
        partition_counts and min(partition_counts) >= 4 and max(partition_counts) <= 64
    )
    assert FlowDecision.objects.filter(transition_kind="DECIDER").exists()
    assert FlowDecision.objects.filter(transition_kind="STEP_EXIT").exists()
    assert StepExecution.objects.filter(commit_count__gt=1).exists()

    assert RecoveryDecision.objects.exists()
    outcomes = set(OperatorRequest.objects.values_list("outcome_class", flat=True))
    assert outcomes == {"APPLIED", "REJECTED"}
    # The console service wrote them: only the reasons it offers appear.
    offered = {reason.code for reason in REASON_CODES}
    for model in (OperatorRequest, RetentionAction):
        reasons = set(model.objects.values_list("reason_code", flat=True))
        assert reasons - {None} <= offered
    actions = set(RetentionAction.objects.values_list("action", flat=True))
    assert {"HOLD", "APPLY_PURGE"} <= actions
    assert (
        JobInstance.objects.filter(hold_actor__isnull=False).exists()
        or "RELEASE_HOLD" in actions
    )


def _fingerprint() -> str:
    """Digest the key columns of every table the seeder writes."""
    digest = hashlib.sha256()

    def add(rows: object) -> None:
        for row in rows:  # type: ignore[attr-defined]
            digest.update(
                repr(
                    tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)
                ).encode()
            )

    add(
        JobInstance.objects.order_by("id").values_list(
            "id", "job_name", "instance_key", "created_at", "hold_actor"
        )
    )
    add(
        JobExecution.objects.order_by("id").values_list(
            "id",
            "job_instance_id",
            "definition_id",
            "restart_of_execution_id",
            "attempt",
            "status",
            "exit_code",
            "created_at",
            "started_at",
            "ended_at",
            "updated_at",
            "version",
            "failure_category",
            "failure_id",
            "owner_token",
            "stop_requested_at",
        )
    )
    add(
        StepExecution.objects.order_by("id").values_list(
            "id",
            "job_execution_id",
            "step_name",
            "status",
            "read_count",
            "write_count",
            "commit_count",
            "version",
            "updated_at",
        )
    )
    add(
        StepPartition.objects.order_by("id").values_list(
            "id", "worker_step_execution_id", "status", "context_checksum"
        )
    )
    add(
        FlowDecision.objects.order_by("id").values_list(
            "id",
            "sequence",
            "source_node_id",
            "observed_outcome",
            "input_digest",
            "decided_at",
        )
    )
    add(
        OperatorRequest.objects.order_by("id").values_list(
            "action",
            "operation_id",
            "request_digest",
            "outcome_class",
            "rejection_code",
        )
    )
    add(RecoveryDecision.objects.order_by("id").values_list("id", "evidence_digest"))
    return digest.hexdigest()


def test_the_same_seed_and_clock_write_the_same_rows() -> None:
    wipe(restart_ids=True)
    seed.seed(instances=15, seed=9, now=NOW)
    first = _fingerprint()
    wipe(restart_ids=True)
    seed.seed(instances=15, seed=9, now=NOW)
    assert _fingerprint() == first
    wipe(restart_ids=True)
    seed.seed(instances=15, seed=10, now=NOW)
    assert _fingerprint() != first


def test_the_command_refuses_a_database_with_history_unless_forced() -> None:
    out = StringIO()
    call_command("batchboard_seed", "--instances", "12", "--seed", "3", stdout=out)
    assert "Seeded 14 jobs" in out.getvalue()
    before = JobInstance.objects.count()
    with pytest.raises(CommandError, match="--force"):
        call_command("batchboard_seed", "--instances", "12", stdout=StringIO())
    call_command("batchboard_seed", "--instances", "12", "--force", stdout=StringIO())
    assert JobInstance.objects.count() > before
    assert check_history() == []


def test_the_command_rejects_mixed_options() -> None:
    with pytest.raises(CommandError, match="--bulk"):
        call_command("batchboard_seed", "--executions", "10", stdout=StringIO())
    with pytest.raises(CommandError, match="--instances"):
        call_command(
            "batchboard_seed", "--bulk", "--instances", "10", stdout=StringIO()
        )
