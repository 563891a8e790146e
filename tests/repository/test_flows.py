from __future__ import annotations

from typing import Any

import pytest

from batchboard.repository import (
    Definition,
    FlowStateCorrupt,
    FlowTarget,
    InvalidArgument,
    JobRepository,
    pattern_matches,
)
from tests.repository.helpers import drive_execution

pytestmark = pytest.mark.django_db

FLOW: dict[str, Any] = {
    "entry": "load",
    "format": 2,
    "job": "flow-job",
    "nodes": [
        {"id": "load", "kind": "step"},
        {"id": "route", "kind": "decision"},
        {"id": "report", "kind": "step"},
        {"id": "merge", "kind": "join"},
    ],
    "transitions": [
        {"pattern": "FAILED", "source": "load", "target": {"terminal": "fail"}},
        {"pattern": "*", "source": "load", "target": {"node": "route"}},
        {"pattern": "LARGE?", "source": "route", "target": {"node": "report"}},
        {"pattern": "*", "source": "route", "target": {"terminal": "complete"}},
        {"pattern": "*", "source": "merge", "target": {"terminal": "complete"}},
    ],
}
INPUT = b"\x07" * 32


def flow_execution(repo: JobRepository):  # type: ignore[no-untyped-def]
    definition = Definition("v1", FLOW)
    execution = drive_execution(
        repo, repo.launch("flow-job", definition=definition), "STARTED"
    )
    step = repo.create_flow_step(execution.pk, "load", "load")
    return execution, step, definition.digest


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        ("*", "", True),
        ("*", "COMPLETED", True),
        ("COMPLETED", "COMPLETED", True),
        ("COMPLETED", "COMPLETED2", False),
        ("C*D", "COMPLETED", True),
        ("C?MPLETED", "COMPLETED", True),
        ("?", "", False),
        ("[A]", "A", False),
        ("*_SKIPS", "COMPLETED_WITH_SKIPS", True),
        ("a*b*c", "aXbYc", True),
        ("a*b*c", "aXbY", False),
    ],
)
def test_pattern_matching(pattern: str, text: str, matches: bool) -> None:
    assert pattern_matches(pattern, text) is matches


def test_step_exit_decision_is_appended(repo: JobRepository) -> None:
    execution, step, fingerprint = flow_execution(repo)
    decision = repo.append_flow_decision(
        execution.pk,
        source_node_id="load",
        observed_outcome="COMPLETED",
        target=FlowTarget(node="route"),
        transition_kind="STEP_EXIT",
        plan_fingerprint=fingerprint,
        input_digest=INPUT,
        source_step_execution_id=step.pk,
    )
    assert (decision.sequence, decision.target_node_id, decision.terminal_kind) == (
        1,
        "route",
        None,
    )
    route = repo.append_flow_decision(
        execution.pk,
        source_node_id="route",
        observed_outcome="SMALL",
        target=FlowTarget(terminal="complete"),
        transition_kind="DECIDER",
        plan_fingerprint=fingerprint,
        input_digest=INPUT,
    )
    assert (route.sequence, route.terminal_kind) == (2, "COMPLETE")
    assert [d.pk for d in repo.flow_decisions(execution.pk)] == [decision.pk, route.pk]
    with pytest.raises(FlowStateCorrupt):
        repo.append_flow_decision(
            execution.pk,
            source_node_id="route",
            observed_outcome="SMALL",
            target=FlowTarget(terminal="complete"),
            transition_kind="DECIDER",
            plan_fingerprint=fingerprint,
            input_digest=INPUT,
        )


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"plan_fingerprint": b"\x00" * 32}, "fingerprint"),
        ({"target": FlowTarget(node="report")}, "elsewhere"),
        ({"observed_outcome": "FAILED"}, "elsewhere"),
        ({"transition_kind": "DECIDER"}, "cannot take"),
        ({"source_node_id": "nowhere"}, "not declared"),
        ({"source_step_execution_id": None}, "needs its step"),
    ],
)
def test_manifest_checks(
    repo: JobRepository, changes: dict[str, Any], reason: str
) -> None:
    execution, step, fingerprint = flow_execution(repo)
    arguments: dict[str, Any] = {
        "source_node_id": "load",
        "observed_outcome": "COMPLETED",
        "target": FlowTarget(node="route"),
        "transition_kind": "STEP_EXIT",
        "plan_fingerprint": fingerprint,
        "input_digest": INPUT,
        "source_step_execution_id": step.pk,
        **changes,
    }
    with pytest.raises(FlowStateCorrupt) as caught:
        repo.append_flow_decision(execution.pk, **arguments)
    assert reason in str(caught.value)


def test_first_matching_transition_wins(repo: JobRepository) -> None:
    execution, _, fingerprint = flow_execution(repo)
    with pytest.raises(FlowStateCorrupt):
        repo.append_flow_decision(
            execution.pk,
            source_node_id="route",
            observed_outcome="LARGE1",
            target=FlowTarget(terminal="COMPLETE"),
            transition_kind="DECIDER",
            plan_fingerprint=fingerprint,
            input_digest=INPUT,
        )
    decision = repo.append_flow_decision(
        execution.pk,
        source_node_id="route",
        observed_outcome="LARGE1",
        target=FlowTarget(node="report"),
        transition_kind="DECIDER",
        plan_fingerprint=fingerprint,
        input_digest=INPUT,
    )
    assert decision.target_node_id == "report"


def test_one_step_manifest_takes_no_flow_decisions(repo: JobRepository) -> None:
    execution = drive_execution(repo, repo.launch("plain"), "STARTED")
    with pytest.raises(FlowStateCorrupt):
        repo.append_flow_decision(
            execution.pk,
            source_node_id="load",
            observed_outcome="COMPLETED",
            target=FlowTarget(node="route"),
            transition_kind="STEP_EXIT",
            plan_fingerprint=bytes(execution.definition.manifest_digest),
            input_digest=INPUT,
        )


def test_reuse_lookup_and_reused_decision_checks(repo: JobRepository) -> None:
    execution, step, fingerprint = flow_execution(repo)
    first = repo.append_flow_decision(
        execution.pk,
        source_node_id="load",
        observed_outcome="COMPLETED",
        target=FlowTarget(node="route"),
        transition_kind="STEP_EXIT",
        plan_fingerprint=fingerprint,
        input_digest=INPUT,
        source_step_execution_id=step.pk,
    )
    step = repo.transition_step(step.pk, 0, "STARTED")
    repo.transition_step(step.pk, step.version, "COMPLETED")
    repo.transition_execution(execution.pk, execution.version, "STOPPING")
    repo.transition_execution(execution.pk, execution.version + 1, "STOPPED")
    second = drive_execution(
        repo, repo.launch("flow-job", definition=Definition("v1", FLOW)), "STARTED"
    )
    found = repo.find_reusable_flow_decision(
        second.pk,
        source_node_id="load",
        plan_fingerprint=fingerprint,
        input_digest=INPUT,
        transition_kind="STEP_EXIT",
    )
    assert found is not None and found.pk == first.pk
    assert (
        repo.find_reusable_flow_decision(
            second.pk,
            source_node_id="load",
            plan_fingerprint=fingerprint,
            input_digest=b"\x08" * 32,
            transition_kind="STEP_EXIT",
        )
        is None
    )
    with pytest.raises(FlowStateCorrupt):
        repo.append_flow_decision(
            second.pk,
            source_node_id="load",
            observed_outcome="COMPLETED",
            target=FlowTarget(node="route"),
            transition_kind="COMPLETED_STEP_REUSE",
            plan_fingerprint=fingerprint,
            input_digest=b"\x08" * 32,
            source_step_execution_id=step.pk,
            reused_decision_id=first.pk,
        )
    reused = repo.append_flow_decision(
        second.pk,
        source_node_id="load",
        observed_outcome="COMPLETED",
        target=FlowTarget(node="route"),
        transition_kind="COMPLETED_STEP_REUSE",
        plan_fingerprint=fingerprint,
        input_digest=INPUT,
        source_step_execution_id=step.pk,
        reused_decision_id=first.pk,
    )
    assert reused.reused_decision_id == first.pk and reused.sequence == 1


def test_flow_target_validation() -> None:
    with pytest.raises(InvalidArgument):
        FlowTarget()
    with pytest.raises(InvalidArgument):
        FlowTarget(node="a", terminal="fail")
    with pytest.raises(InvalidArgument):
        FlowTarget(terminal="explode")
    assert FlowTarget(terminal="stop").terminal == "STOP"
