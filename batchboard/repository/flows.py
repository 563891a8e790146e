"""
Flow decisions: the durable record of which way a flow went (spec 7.5).

Each decision names the node it left, the outcome it observed and the node
or terminal it chose. Before appending, the repository re-derives that
choice from the execution's own manifest, so a decision can only record a
transition the definition actually declares.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from batchboard import schema
from batchboard.models import FlowDecision, JobDefinition, JobExecution, StepExecution
from batchboard.repository.errors import (
    FlowStateCorrupt,
    InvalidArgument,
)
from batchboard.repository.partitions import PartitionsMixin
from batchboard.repository.validation import check_bytes, check_code, check_name
from batchboard.vocabulary import MAX_BIGINT

FLOW_FORMATS = (2, 3)
# The manifest node kinds each transition kind may leave from.
SOURCE_KINDS = {
    "DECIDER": ("decision",),
    "SPLIT_AGGREGATE": ("join",),
    "STEP_EXIT": ("step", "partitioned_step"),
    "COMPLETED_STEP_REUSE": ("step", "partitioned_step"),
}


def pattern_matches(pattern: str, text: str) -> bool:
    """
    Match an exit-status pattern: ``*`` any run, ``?`` one character.

    Every other character is literal (no character classes, unlike fnmatch).
    """
    # Iterative wildcard matching with backtracking to the last star.
    p = t = 0
    star = -1
    mark = 0
    while t < len(text):
        if p < len(pattern) and (pattern[p] == "?" or pattern[p] == text[t]):
            p += 1
            t += 1
        elif p < len(pattern) and pattern[p] == "*":
            star, mark = p, t
            p += 1
        elif star != -1:
            p = star + 1
            mark += 1
            t = mark
        else:
            return False
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)


@dataclass(frozen=True)
class FlowTarget:
    """Where a decision leads: a node id, or a terminal (COMPLETE, FAIL, STOP)."""

    node: str | None = None
    terminal: str | None = None

    def __post_init__(self) -> None:
        if (self.node is None) == (self.terminal is None):
            raise InvalidArgument("a flow target is either a node or a terminal")
        if self.terminal is not None:
            terminal = self.terminal.upper()
            if terminal not in schema.TERMINAL_KINDS:
                raise InvalidArgument(f"unknown terminal {self.terminal!r}")
            object.__setattr__(self, "terminal", terminal)
        else:
            check_name(self.node, "target node id")

    @classmethod
    def from_manifest(cls, target: Any) -> FlowTarget | None:
        if not isinstance(target, dict):
            return None
        if isinstance(target.get("node"), str) and "terminal" not in target:
            return cls(node=target["node"])
        terminal = target.get("terminal")
        if isinstance(terminal, str) and "node" not in target:
            try:
                return cls(terminal=terminal)
            except InvalidArgument:
                return None
        return None


def declared_target(
    manifest: dict[str, Any], transition_kind: str, source_node_id: str, outcome: str
) -> FlowTarget:
    """Return the manifest's target for ``outcome`` leaving ``source_node_id``."""
    if manifest.get("format") not in FLOW_FORMATS:
        raise FlowStateCorrupt("the execution's manifest is not a flow manifest")
    nodes = manifest.get("nodes")
    if not isinstance(nodes, list):
        nodes = []
    kinds = [
        node.get("kind")
        for node in nodes
        if isinstance(node, dict) and node.get("id") == source_node_id
    ]
    if len(kinds) != 1:
        raise FlowStateCorrupt(f"node {source_node_id!r} is not declared once")
    if kinds[0] not in SOURCE_KINDS[transition_kind]:
        raise FlowStateCorrupt(
            f"node {source_node_id!r} cannot take a {transition_kind} transition"
        )
    transitions = manifest.get("transitions")
    for transition in transitions if isinstance(transitions, list) else []:
        if (
            isinstance(transition, dict)
            and transition.get("source") == source_node_id
            and isinstance(transition.get("pattern"), str)
            and pattern_matches(transition["pattern"], outcome)
        ):
            target = FlowTarget.from_manifest(transition.get("target"))
            if target is None:
                raise FlowStateCorrupt("the matching transition has a malformed target")
            return target
    raise FlowStateCorrupt(f"no transition of {source_node_id!r} matches the outcome")


class FlowsMixin(PartitionsMixin):
    def append_flow_decision(
        self,
        job_execution_id: int,
        *,
        source_node_id: str,
        observed_outcome: str,
        target: FlowTarget,
        transition_kind: str,
        plan_fingerprint: bytes,
        input_digest: bytes,
        source_step_execution_id: int | None = None,
        reused_decision_id: int | None = None,
        sequence: int | None = None,
    ) -> FlowDecision:
        """
        Append one flow decision after checking it against the manifest.

        ``plan_fingerprint`` must be the execution's manifest digest, the
        manifest a flow (format 2 or 3), the source node declared with a
        kind that fits ``transition_kind``, and the first manifest transition
        from that node whose pattern matches ``observed_outcome`` must lead
        to ``target``. A source step must be a step of the same instance
        for this node (only DECIDER and SPLIT_AGGREGATE may omit it); a
        reused decision must be of the same instance and agree in node,
        fingerprint, input digest, outcome and target. Any violation raises
        :class:`FlowStateCorrupt`. ``sequence`` defaults to the number of
        the execution's decisions plus one.
        """
        if transition_kind not in SOURCE_KINDS:
            raise InvalidArgument(f"unknown transition kind {transition_kind!r}")
        check_name(source_node_id, "source node id")
        check_code(observed_outcome, "observed outcome")
        for digest in (plan_fingerprint, input_digest):
            check_bytes(digest, 32, "fingerprints and input digests are 32 bytes")
        with self.unit():
            execution = self._row(JobExecution, job_execution_id, lock=True)
            definition = JobDefinition.objects.using(self.alias).get(
                pk=execution.definition_id
            )
            if bytes(definition.manifest_digest) != plan_fingerprint:
                raise FlowStateCorrupt("the plan fingerprint is not the execution's")
            declared = declared_target(
                definition.manifest, transition_kind, source_node_id, observed_outcome
            )
            if declared != target:
                raise FlowStateCorrupt("the manifest leads elsewhere for this outcome")
            instance_id = execution.job_instance_id
            if source_step_execution_id is None:
                if transition_kind not in ("DECIDER", "SPLIT_AGGREGATE"):
                    raise FlowStateCorrupt(
                        f"a {transition_kind} decision needs its step"
                    )
            elif (
                not StepExecution.objects.using(self.alias)
                .filter(
                    pk=source_step_execution_id,
                    job_execution__job_instance_id=instance_id,
                    step_logical_id=source_node_id,
                )
                .exists()
            ):
                raise FlowStateCorrupt(
                    "the source step is not this node's in this instance"
                )
            if reused_decision_id is not None:
                reused = (
                    FlowDecision.objects.using(self.alias)
                    .filter(
                        pk=reused_decision_id,
                        job_execution__job_instance_id=instance_id,
                    )
                    .first()
                )
                if reused is None or (
                    reused.source_node_id != source_node_id
                    or bytes(reused.plan_fingerprint) != plan_fingerprint
                    or bytes(reused.input_digest) != input_digest
                    or reused.observed_outcome != observed_outcome
                    or reused.target_node_id != target.node
                    or reused.terminal_kind != target.terminal
                ):
                    raise FlowStateCorrupt("the reused decision does not match")
            decisions = FlowDecision.objects.using(self.alias)
            if sequence is None:
                sequence = (
                    decisions.filter(job_execution_id=job_execution_id).count() + 1
                )
            elif isinstance(sequence, bool) or not 1 <= sequence <= MAX_BIGINT:
                raise InvalidArgument("a decision sequence is a positive integer")
            decision = self._insert(
                FlowDecision,
                job_execution_id=job_execution_id,
                source_step_execution_id=source_step_execution_id,
                reused_decision_id=reused_decision_id,
                sequence=sequence,
                source_node_id=source_node_id,
                observed_outcome=observed_outcome,
                target_node_id=target.node,
                terminal_kind=target.terminal,
                transition_kind=transition_kind,
                plan_fingerprint=plan_fingerprint,
                input_digest=input_digest,
                decided_at=self.now(),
            )
            if decision is None:
                raise FlowStateCorrupt(
                    "this execution already decided that sequence or source node"
                )
            return decision

    def find_reusable_flow_decision(
        self,
        job_execution_id: int,
        *,
        source_node_id: str,
        plan_fingerprint: bytes,
        input_digest: bytes,
        transition_kind: str,
    ) -> FlowDecision | None:
        """
        Return the instance's latest decision a restart may reuse, or ``None``.

        Latest means highest attempt, then highest sequence, among decisions
        of any attempt of the execution's instance with the same node,
        fingerprint, input digest and transition kind.
        """
        execution = self.get_execution(job_execution_id)
        return (
            FlowDecision.objects.using(self.alias)
            .filter(
                job_execution__job_instance_id=execution.job_instance_id,
                source_node_id=source_node_id,
                plan_fingerprint=plan_fingerprint,
                input_digest=input_digest,
                transition_kind=transition_kind,
            )
            .order_by("-job_execution__attempt", "-sequence")
            .first()
        )

    def flow_decisions(self, job_execution_id: int) -> list[FlowDecision]:
        """Return an execution's decisions in sequence order."""
        return list(
            FlowDecision.objects.using(self.alias)
            .filter(job_execution_id=job_execution_id)
            .order_by("sequence", "id")
        )
