from __future__ import annotations

from datetime import timedelta

import pytest

from batchboard.models import JobExecution
from batchboard.repository import (
    TRANSITIONS,
    AbandonedInstance,
    CompletedInstance,
    Definition,
    ExecutionAlreadyActive,
    ExecutionOwned,
    ExecutionOwnershipNotAllowed,
    FailedTransitionMissingFailure,
    Failure,
    IllegalTransition,
    IncompatibleDefinition,
    InvalidArgument,
    InvalidTransitionTime,
    JobExecutionNotFound,
    JobInstanceNotFound,
    JobRepository,
    ManualClock,
    RestartRequiresNewAttempt,
    StaleVersion,
)
from tests.repository.conftest import params
from tests.repository.helpers import FAILURE, PATHS, drive_execution
from tests.repository.test_definitions import manifest

pytestmark = pytest.mark.django_db
TOKEN = bytes(range(16))
OTHER = bytes(range(1, 17))


def test_first_launch_creates_attempt_one_with_defaults(repo: JobRepository) -> None:
    execution = repo.launch("nightly-import", params())
    assert (execution.attempt, execution.status, execution.exit_code) == (
        1,
        "STARTING",
        "UNKNOWN",
    )
    assert execution.version == 0
    assert execution.restart_of_execution_id is None
    assert execution.upgrade_from_definition_id is None
    assert execution.parameters == execution.job_instance.identifying_parameters
    assert (execution.context_format, execution.context_schema) == (
        1,
        "oxide_batch.empty.v1",
    )
    assert (execution.context_schema_version, execution.context_payload) == (1, {})
    assert execution.created_at == execution.updated_at == repo.now()
    assert execution.definition.definition_revision == "__m1_repository_port_v1"


@pytest.mark.parametrize("status", ["STARTING", "STARTED", "STOPPING", "UNKNOWN"])
def test_unresolved_latest_attempt_blocks_a_new_one(
    repo: JobRepository, status: str
) -> None:
    execution = drive_execution(repo, repo.launch("j"), status)
    with pytest.raises(ExecutionAlreadyActive) as caught:
        repo.launch("j")
    assert (caught.value.execution_id, caught.value.status) == (execution.pk, status)


def test_completed_and_abandoned_instances_refuse_attempts(repo: JobRepository) -> None:
    drive_execution(repo, repo.launch("a"), "COMPLETED")
    drive_execution(repo, repo.launch("b"), "ABANDONED")
    with pytest.raises(CompletedInstance):
        repo.launch("a")
    with pytest.raises(AbandonedInstance):
        repo.launch("b")


@pytest.mark.parametrize("status", ["FAILED", "STOPPED"])
def test_failed_or_stopped_instance_restarts(repo: JobRepository, status: str) -> None:
    first = drive_execution(repo, repo.launch("j", params()), status)
    second = repo.create_execution(first.job_instance_id)
    assert second.attempt == 2
    assert second.restart_of_execution_id == first.pk
    assert second.upgrade_from_definition_id is None
    with pytest.raises(ExecutionAlreadyActive):
        repo.launch("j", params())


def test_create_execution_for_a_missing_instance(repo: JobRepository) -> None:
    with pytest.raises(JobInstanceNotFound):
        repo.create_execution(987_654)


def test_definition_change_needs_a_direct_edge(repo: JobRepository) -> None:
    v1 = Definition("v1", manifest("load", job="j"))
    v2 = Definition("v2", manifest("import", job="j"))
    v3 = Definition("v3", manifest("report", job="j"))
    first = drive_execution(repo, repo.launch("j", definition=v1), "FAILED")
    with pytest.raises(IncompatibleDefinition):
        repo.launch("j", definition=v2)
    one = repo.register_definition("j", v1).pk
    two = repo.register_definition("j", v2).pk
    repo.register_upgrade(one, two, upgrade_key="k", step_mapping={"load": "import"})
    second = repo.launch("j", definition=v2)
    assert second.upgrade_from_definition_id == one
    assert second.definition_id == two
    assert second.restart_of_execution_id == first.pk
    second = drive_execution(repo, second, "FAILED")
    # Edges are not transitive: v1 -> v2 -> v3 needs v2 -> v3 itself.
    three = repo.register_definition("j", v3).pk
    repo.register_upgrade(one, three, upgrade_key="k3", step_mapping={"load": "report"})
    with pytest.raises(IncompatibleDefinition):
        repo.launch("j", definition=v3)
    same = repo.launch("j", definition=v2)
    assert same.upgrade_from_definition_id is None


ALL = list(TRANSITIONS)


@pytest.mark.parametrize("source", ALL)
@pytest.mark.parametrize("target", ALL)
def test_transition_table(repo: JobRepository, source: str, target: str) -> None:
    """Every pair of statuses follows the table of spec 2.1."""
    execution = drive_execution(repo, repo.launch("j"), source)
    repo.clock.advance(milliseconds=5)  # type: ignore[attr-defined]
    failure = FAILURE if target == "FAILED" else None
    if target in TRANSITIONS[source]:
        moved = repo.transition_execution(
            execution.pk, execution.version, target, failure=failure
        )
        stored = JobExecution.objects.get(pk=execution.pk)
        assert (stored.status, stored.version) == (target, execution.version + 1)
        assert moved.status == target
    else:
        expected = (
            RestartRequiresNewAttempt
            if source in ("STOPPED", "FAILED") and target == "STARTING"
            else IllegalTransition
        )
        with pytest.raises(expected):
            repo.transition_execution(
                execution.pk, execution.version, target, failure=failure
            )
        assert JobExecution.objects.get(pk=execution.pk).version == execution.version


def test_illegal_transition_names_both_statuses(repo: JobRepository) -> None:
    execution = repo.launch("j")
    with pytest.raises(IllegalTransition) as caught:
        repo.transition_execution(execution.pk, 0, "COMPLETED")
    assert (caught.value.from_status, caught.value.to) == ("STARTING", "COMPLETED")


def test_failed_needs_a_failure(repo: JobRepository) -> None:
    execution = repo.launch("j")
    with pytest.raises(FailedTransitionMissingFailure):
        repo.transition_execution(execution.pk, 0, "FAILED")


def test_stale_version_and_missing_execution(repo: JobRepository) -> None:
    execution = repo.launch("j")
    repo.transition_execution(execution.pk, 0, "STARTED")
    with pytest.raises(StaleVersion) as caught:
        repo.transition_execution(execution.pk, 0, "COMPLETED")
    assert (caught.value.expected, caught.value.actual) == (0, 1)
    with pytest.raises(JobExecutionNotFound):
        repo.transition_execution(123_456, 0, "STARTED")


def test_timestamps_follow_the_transition(
    repo: JobRepository, clock: ManualClock
) -> None:
    execution = repo.launch("j")
    created = execution.created_at
    started_at = clock.advance(seconds=1)
    execution = repo.transition_execution(execution.pk, 0, "STARTED")
    assert execution.started_at == started_at and execution.ended_at is None
    ended = clock.advance(seconds=1)
    execution = repo.transition_execution(execution.pk, 1, "FAILED", failure=FAILURE)
    assert execution.ended_at == ended
    assert (execution.failure_category, execution.failure_id) == (
        "TRANSIENT_INFRASTRUCTURE",
        7,
    )
    later = clock.advance(seconds=5)
    execution = repo.transition_execution(execution.pk, 2, "ABANDONED")
    stored = JobExecution.objects.get(pk=execution.pk)
    # FAILED -> ABANDONED keeps the original end and the failure.
    assert stored.ended_at == ended and stored.updated_at == later
    assert stored.failure_category == "TRANSIENT_INFRASTRUCTURE"
    assert stored.created_at == created and stored.exit_code == "UNKNOWN"


def test_transition_before_start_or_end_is_refused(
    repo: JobRepository, clock: ManualClock
) -> None:
    execution = repo.launch("j")
    with pytest.raises(InvalidTransitionTime):
        repo.transition_execution(
            execution.pk,
            0,
            "STARTED",
            at=execution.created_at - timedelta(milliseconds=1),
        )
    clock.advance(seconds=1)
    execution = repo.transition_execution(execution.pk, 0, "STARTED")
    with pytest.raises(InvalidTransitionTime):
        repo.transition_execution(
            execution.pk, 1, "STOPPING", at=execution.started_at - timedelta(seconds=1)
        )


def test_transition_time_is_truncated_to_milliseconds(repo: JobRepository) -> None:
    execution = repo.launch("j")
    at = execution.created_at + timedelta(microseconds=1999)
    execution = repo.transition_execution(execution.pk, 0, "STARTED", at=at)
    assert JobExecution.objects.get(pk=execution.pk).started_at.microsecond % 1000 == 0


def test_new_failure_replaces_the_old_one(repo: JobRepository) -> None:
    execution = drive_execution(repo, repo.launch("j"), "UNKNOWN")
    execution = repo.transition_execution(
        execution.pk,
        execution.version,
        "FAILED",
        failure=Failure("stale_recovered", 9001),
    )
    assert (execution.failure_category, execution.failure_id) == (
        "STALE_RECOVERED",
        9001,
    )


def test_failure_validation() -> None:
    with pytest.raises(InvalidArgument):
        Failure("NOT_A_CATEGORY", 1)
    with pytest.raises(InvalidArgument):
        Failure("TIMEOUT", 0)


def test_enrich_exit_status_changes_only_exit_code(
    repo: JobRepository, clock: ManualClock
) -> None:
    execution = drive_execution(repo, repo.launch("j"), "COMPLETED")
    now = clock.advance(seconds=3)
    enriched = repo.enrich_execution_exit_status(
        execution.pk, execution.version, "COMPLETED_WITH_SKIPS"
    )
    assert (enriched.exit_code, enriched.status) == (
        "COMPLETED_WITH_SKIPS",
        "COMPLETED",
    )
    assert (enriched.version, enriched.updated_at) == (execution.version + 1, now)
    assert enriched.ended_at == execution.ended_at
    with pytest.raises(StaleVersion):
        repo.enrich_execution_exit_status(execution.pk, execution.version, "X")
    with pytest.raises(InvalidArgument):
        repo.enrich_execution_exit_status(execution.pk, enriched.version, "x" * 65)


def test_claim_records_the_owner_without_a_version_bump(
    repo: JobRepository, clock: ManualClock
) -> None:
    execution = repo.launch("j")
    now = clock.advance(seconds=1)
    claimed = repo.claim_execution(execution.pk, 0, TOKEN)
    assert bytes(claimed.owner_token) == TOKEN
    assert (claimed.version, claimed.updated_at) == (0, now)
    assert repo.claim_execution(execution.pk, 0, TOKEN).version == 0
    with pytest.raises(ExecutionOwned):
        repo.claim_execution(execution.pk, 0, OTHER)
    with pytest.raises(StaleVersion):
        repo.claim_execution(execution.pk, 5, TOKEN)
    started = repo.transition_execution(execution.pk, 0, "STARTED")
    with pytest.raises(ExecutionOwnershipNotAllowed):
        repo.claim_execution(execution.pk, started.version, TOKEN)
    with pytest.raises(JobExecutionNotFound):
        repo.claim_execution(10**9, 0, TOKEN)
    with pytest.raises(InvalidArgument):
        repo.claim_execution(execution.pk, 0, b"short")


def test_claim_never_moves_updated_at_backwards(
    repo: JobRepository, clock: ManualClock
) -> None:
    execution = repo.launch("j")
    clock.set(execution.created_at - timedelta(hours=1))
    claimed = repo.claim_execution(execution.pk, 0, TOKEN)
    assert claimed.updated_at == execution.updated_at


def test_stop_request_is_observed_by_the_owner(
    repo: JobRepository, clock: ManualClock
) -> None:
    execution = repo.launch("j")
    repo.claim_execution(execution.pk, 0, TOKEN)
    execution = repo.transition_execution(execution.pk, 0, "STARTED")
    quiet = repo.observe_control(execution.pk, TOKEN)
    assert (quiet.owner_matches, quiet.stop_requested, quiet.should_stop) == (
        True,
        False,
        False,
    )
    requested_at = clock.advance(seconds=1)
    stopped = repo.request_stop(
        execution.pk, execution.version, actor="ops@example.org"
    )
    assert (stopped.stop_requested_at, stopped.stop_requested_by) == (
        requested_at,
        "ops@example.org",
    )
    assert (stopped.status, stopped.version, stopped.updated_at) == (
        "STARTED",
        1,
        requested_at,
    )
    # Someone else's token sees the request but cannot act on it.
    other = repo.observe_control(execution.pk, OTHER)
    assert (other.owner_matches, other.stop_requested, other.execution.status) == (
        False,
        True,
        "STARTED",
    )
    clock.advance(seconds=1)
    control = repo.observe_control(execution.pk, TOKEN)
    assert control.should_stop and control.execution.version == 2
    assert JobExecution.objects.get(pk=execution.pk).status == "STOPPING"
    # Observing again is harmless.
    assert repo.observe_control(execution.pk, TOKEN).execution.version == 2


def test_stop_request_checks_the_version(repo: JobRepository) -> None:
    execution = repo.launch("j")
    with pytest.raises(StaleVersion):
        repo.request_stop(execution.pk, 3, actor="ops")
    with pytest.raises(JobExecutionNotFound):
        repo.request_stop(10**9, 0, actor="ops")
    with pytest.raises(JobExecutionNotFound):
        repo.observe_control(10**9, TOKEN)


def test_unowned_execution_never_stops(repo: JobRepository) -> None:
    execution = repo.launch("j")
    repo.request_stop(execution.pk, 0, actor="ops")
    control = repo.observe_control(execution.pk, TOKEN)
    assert not control.owner_matches and control.execution.status == "STARTING"


def test_paths_cover_every_status() -> None:
    assert set(PATHS) == set(TRANSITIONS)
