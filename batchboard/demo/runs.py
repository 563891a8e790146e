"""
Run catalogue jobs through the job repository, one unit of work at a time.

A :class:`JobRun` is one attempt of one job instance, played as a runtime
would play it: launch, claim, start, then each node in turn (chunk commits
with stop observation, partition workers, decisions), then the end state
with its exit code. :meth:`JobRun.advance` performs the next unit of work
and says whether more remains, so the seeder can play many runs in the
order of their virtual clocks and the simulator can interleave live runs
tick by tick.

A :class:`RunPlan` decides how the attempt ends: completing, failing,
being stopped, ending UNKNOWN, or vanishing mid-step (the process died and
its execution is left STARTED without further updates).
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Literal

from batchboard.demo.catalogue import (
    PARTITION_CONTEXT_SCHEMA,
    JobSpec,
    Node,
    Revision,
    Transition,
    partition_key,
    partition_worker_name,
)
from batchboard.digests import JobParameter, instance_key
from batchboard.models import FlowDecision, JobExecution, StepExecution
from batchboard.repository import (
    ChunkCounts,
    Definition,
    Failure,
    FlowTarget,
    JobRepository,
    PartitionEntry,
    StatePayload,
)

Event = Literal["FAILED", "UNKNOWN", "VANISH", "STARTING"]

FAILURE_WEIGHTS = (
    ("TRANSIENT_INFRASTRUCTURE", 40),
    ("USER_COMPONENT", 25),
    ("TIMEOUT", 15),
    ("PERMANENT_INFRASTRUCTURE", 10),
    ("SERIALIZATION", 5),
    ("INVARIANT", 5),
)
#: The statuses an attempt may end in and still be restarted.
RESTARTABLE = ("FAILED", "STOPPED")
_FLOW_STEP_INPUT = b"oxide-batch.flow-step-input.v1\0"
_DECIDER_INPUT = b"oxide-batch.decider-input.v1\0"


@dataclass
class RunPlan:
    """
    How one attempt ends.

    ``event`` happens in the ``at_step``-th step the attempt runs (0-based),
    after ``fraction`` of that step's work: FAILED (with ``category``),
    UNKNOWN (the runtime cannot tell whether its last commit landed),
    VANISH (the process disappears), or STARTING (the attempt is launched
    and never started). ``None`` runs to the flow's own end.
    """

    event: Event | None = None
    at_step: int = 0
    fraction: float = 0.5
    category: str = "TRANSIENT_INFRASTRUCTURE"

    @classmethod
    def draw(cls, rng: random.Random, spec: JobSpec) -> RunPlan:
        """Return a plan that fails at the job's failure rate, else completes."""
        if rng.random() >= spec.failure_rate:
            return cls()
        steps = sum(1 for node in spec.nodes if node.kind != "decision")
        return cls(
            "FAILED",
            at_step=rng.randrange(steps),
            fraction=rng.uniform(0.1, 0.9),
            category=_weighted(rng, FAILURE_WEIGHTS),
        )


@dataclass
class InstanceMemory:
    """
    What a runtime remembers about an instance across its attempts.

    ``volume`` is the work each chunk step of the instance has to do;
    ``completed`` maps flow nodes completed in an earlier attempt to the
    decision (and its target) that left them, for reuse on restart;
    ``partitioned`` maps partitioned nodes to their parent step of the
    latest attempt, whose plan a restart carries over.
    """

    volume: int
    completed: dict[str, tuple[int, str]] = field(default_factory=dict)
    partitioned: dict[str, int] = field(default_factory=dict)
    failure_serial: int = 0


class JobRun:
    """
    One attempt of a catalogue job, played through the repository.

    ``pace(seconds)`` is called before each unit of work with the time that
    work took; the seeder moves a manual clock with it, the simulator lets
    real time pass between ticks instead. ``on_commit(run)`` is called after
    each chunk commit, before the stop observation, so a scenario can place
    a stop request exactly there.
    """

    def __init__(
        self,
        repository: JobRepository,
        spec: JobSpec,
        revision: Revision,
        parameters: dict[str, JobParameter],
        *,
        plan: RunPlan,
        memory: InstanceMemory,
        rng: random.Random,
        pace: Callable[[float], object] = lambda seconds: None,
        on_commit: Callable[[JobRun], None] | None = None,
        launched: JobExecution | None = None,
    ) -> None:
        self.repository = repository
        self.spec = spec
        self.revision = revision
        self.parameters = parameters
        self.plan = plan
        self.memory = memory
        self.rng = rng
        self.pace = pace
        self.on_commit = on_commit
        self.token = rng.randbytes(16)
        self.instance_key = instance_key(spec.name, parameters)
        self.fingerprint = spec.digest(revision)
        # An attempt an operator already created (RESTART) is not launched again.
        self.execution: JobExecution | None = launched
        self.step: StepExecution | None = None
        self.status: str | None = None
        self.done = False
        self._steps_run = 0
        self._sequence = 0
        self._script = self._play()

    # -- driving -----------------------------------------------------------------

    def advance(self) -> bool:
        """Perform the next unit of work; return False once nothing remains."""
        if self.done:
            return False
        try:
            next(self._script)
        except StopIteration:
            self.done = True
        return not self.done

    def run_to_end(self) -> None:
        while self.advance():
            pass

    @property
    def definition(self) -> Definition:
        return Definition(self.revision.name, self.spec.manifest(self.revision))

    @property
    def execution_id(self) -> int:
        assert self.execution is not None
        return int(self.execution.pk)

    def refresh(self) -> JobExecution:
        self.execution = self.repository.get_execution(self.execution_id)
        return self.execution

    # -- the script ----------------------------------------------------------------

    def _play(self) -> Iterator[None]:
        repo = self.repository
        if self.execution is None:
            self.execution = repo.launch(
                self.spec.name, self.parameters, self.definition
            )
        self.status = "STARTING"
        yield
        if self.plan.event == "STARTING":
            return
        self.pace(self.rng.uniform(0.05, 2.0))
        self.execution = repo.claim_execution(
            self.execution_id, self.execution.version, self.token
        )
        self.execution = repo.transition_execution(
            self.execution_id, self.execution.version, "STARTED"
        )
        self.status = "STARTED"
        yield
        node: Node | None = self.spec.entry
        failure: Failure | None = None
        terminal = "complete"
        while node is not None:
            if node.kind == "decision":
                self.pace(self.rng.uniform(0.01, 0.5))
                outcome = _weighted(self.rng, node.outcomes)
                transition = self.spec.next_target(node.id, outcome)
                self._decide(node, None, outcome, transition, "DECIDER")
                yield
            elif self.spec.manifest_format > 1 and node.id in self.memory.completed:
                decision_id, _ = self.memory.completed[node.id]
                reused = FlowDecision.objects.using(repo.alias).get(pk=decision_id)
                transition = self.spec.next_target(node.id, "COMPLETED")
                self.pace(0.01)
                self._decide(
                    node,
                    reused.source_step_execution_id,
                    "COMPLETED",
                    transition,
                    "COMPLETED_STEP_REUSE",
                    reused=decision_id,
                )
                yield
            else:
                outcome = yield from self._run_node(node)
                if outcome in ("UNKNOWN", "VANISH"):
                    return
                assert self.step is not None
                if outcome == "FAILED":
                    category, failure_id = (
                        self.step.failure_category,
                        self.step.failure_id,
                    )
                    # The schema makes a FAILED step carry its failure.
                    assert category is not None and failure_id is not None
                    failure = Failure(category, failure_id)
                transition = self.spec.next_target(node.id, outcome)
                if self.spec.manifest_format > 1:
                    decision = self._decide(
                        node, self.step.pk, outcome, transition, "STEP_EXIT"
                    )
                    if outcome == "COMPLETED" and transition.node is not None:
                        self.memory.completed[node.id] = (decision.pk, transition.node)
                yield
            if transition.node is not None:
                node = self.spec.node(transition.node)
            else:
                terminal = transition.terminal or "complete"
                node = None
        yield from self._finish(terminal, failure)

    def _finish(self, terminal: str, failure: Failure | None) -> Iterator[None]:
        repo = self.repository
        execution = self.refresh()
        self.pace(self.rng.uniform(0.01, 1.0))
        if terminal == "complete":
            status = "COMPLETED"
        elif terminal == "fail":
            status = "FAILED"
            if failure is None:
                # A decider chose to fail the flow: record why by category.
                failure = Failure("INVARIANT", self._failure_id())
        else:
            status = "STOPPED"
        if status == "STOPPED" and execution.status == "STARTED":
            execution = repo.transition_execution(
                self.execution_id, execution.version, "STOPPING"
            )
        execution = repo.transition_execution(
            self.execution_id, execution.version, status, failure=failure
        )
        self.execution = repo.enrich_execution_exit_status(
            self.execution_id, execution.version, status
        )
        self.status = status
        yield

    # -- nodes ---------------------------------------------------------------------

    def _event_here(self) -> bool:
        return self.plan.event is not None and self._steps_run == self.plan.at_step

    def _create_step(self, name: str, node_id: str) -> StepExecution:
        if self.spec.manifest_format == 1:
            return self.repository.create_step(self.execution_id, name)
        return self.repository.create_flow_step(self.execution_id, name, node_id)

    def _run_node(self, node: Node) -> Generator[None, None, str]:
        """Run a step node; return its outcome (or UNKNOWN/VANISH/LEFT)."""
        repo = self.repository
        self.pace(self.rng.uniform(0.01, 0.3))
        name = self.spec.step_name(node, self.revision)
        step = self._create_step(name, node.id)
        self.pace(self.rng.uniform(0.01, 0.3))
        self.step = repo.transition_step(step.pk, step.version, "STARTED")
        yield None
        event_here = self._event_here()
        self._steps_run += 1
        low, high = self.spec.step_seconds
        seconds = self.rng.uniform(low, high)
        if node.kind == "tasklet":
            self.pace(seconds * (self.plan.fraction if event_here else 1.0))
            if event_here:
                return self._event()
            if self._stop_observed():
                return self._end_step("STOPPED")
            return self._end_step("COMPLETED")
        if node.kind == "chunk":
            return (yield from self._run_chunks(node, seconds, event_here))
        return (yield from self._run_partitions(node, seconds, event_here))

    def _run_chunks(
        self, node: Node, seconds: float, event_here: bool
    ) -> Generator[None, None, str]:
        repo = self.repository
        assert self.step is not None
        size = node.chunk_size * self.revision.chunk_scale
        remaining = max(self.memory.volume - self.step.read_count, 1)
        commits = max(1, math.ceil(remaining / size))
        stop_after = (
            max(1, int(commits * self.plan.fraction)) if event_here else commits + 1
        )
        for commit in range(1, commits + 1):
            items = min(size, remaining)
            remaining -= items
            self.pace(seconds / commits)
            if self.spec.retry_rate and self.rng.random() < self.spec.retry_rate:
                self.step = repo.reserve_retry(
                    self.step.pk,
                    self.step.version,
                    job_execution_id=self.execution_id,
                    phase=self.rng.choice(("read", "process", "write")),
                    fault_state={
                        "checkpoint": hashlib.sha256(
                            str(self.step.read_count).encode()
                        ).hexdigest(),
                        "entries": [{"attempt": 1}],
                    },
                )
            skips = int(items * self.spec.skip_rate * self.rng.uniform(0.0, 2.0))
            filtered = items // 40
            processed = items - skips
            self.step = repo.commit_chunk(
                self.step.pk,
                self.step.version,
                job_execution_id=self.execution_id,
                counts=ChunkCounts(
                    read=items,
                    processed=processed,
                    written=processed - filtered,
                    filtered=filtered,
                    process_skips=skips,
                ),
                checkpoint=StatePayload(
                    node.checkpoint_schema, {"offset": self.step.read_count + items}
                ),
            )
            if self.on_commit is not None:
                self.on_commit(self)
            if self._stop_observed():
                yield None
                # The current chunk's work winds down before the step stops.
                self.pace(self.rng.uniform(2.0, 30.0))
                return self._end_step("STOPPED")
            if commit >= stop_after:
                return self._event()
            yield None
        return self._end_step("COMPLETED")

    def _run_partitions(
        self, node: Node, seconds: float, event_here: bool
    ) -> Generator[None, None, str]:
        repo = self.repository
        assert self.step is not None
        parent = self.step
        previous = self.memory.partitioned.get(node.id)
        if previous is not None:
            partitions = repo.restart_partitions(previous, parent.pk)
        else:
            low, high = node.partitions
            count = self.rng.randint(low, high)
            partitions = repo.plan_partitions(
                parent.pk,
                [
                    _partition_entry(node, ordinal, count, self.memory.volume)
                    for ordinal in range(1, count + 1)
                ],
            )
        self.memory.partitioned[node.id] = parent.pk
        yield None
        pending = [p for p in partitions if p.status != "COMPLETED"]
        failing = (
            int(len(pending) * self.plan.fraction)
            if event_here and self.plan.event == "FAILED"
            else -1
        )
        vanish = (
            int(len(pending) * self.plan.fraction)
            if event_here and self.plan.event in ("VANISH", "UNKNOWN")
            else -1
        )
        for index, partition in enumerate(pending):
            if index == vanish:
                return self._event()
            if self._stop_observed():
                break
            self.pace(seconds / max(1, len(pending)))
            worker_name = partition_worker_name(node.id, partition.partition_key)
            worker = repo.create_flow_step(self.execution_id, worker_name, worker_name)
            partition = repo.assign_partition(
                partition.pk, partition.version, worker.pk
            )
            worker = repo.transition_step(worker.pk, worker.version, "STARTED")
            items = max(1, self.memory.volume // max(1, len(partitions)))
            worker = repo.commit_chunk(
                worker.pk,
                worker.version,
                job_execution_id=self.execution_id,
                counts=ChunkCounts(read=items, processed=items, written=items),
                checkpoint=StatePayload(node.checkpoint_schema, {"done": True}),
            )
            if index == failing:
                status = "FAILED"
                worker = repo.transition_step(
                    worker.pk,
                    worker.version,
                    "FAILED",
                    failure=Failure(self.plan.category, self._failure_id()),
                )
            else:
                status = "COMPLETED"
                worker = repo.transition_step(worker.pk, worker.version, "COMPLETED")
            worker = repo.enrich_step_exit_status(worker.pk, worker.version, status)
            repo.complete_partition(partition.pk, partition.version, worker.pk)
            # Siblings of a failed partition still finish (the manifests'
            # finish_siblings policy); the aggregate then fails the parent.
            yield None
        if self._stop_observed():
            # Partitions not yet run are left unassigned; the parent stops.
            return self._end_step("STOPPED")
        self.step = repo.aggregate_partitions(parent.pk, parent.version)
        outcome = self.step.status
        self.step = repo.enrich_step_exit_status(
            self.step.pk, self.step.version, outcome
        )
        return outcome

    # -- endings -------------------------------------------------------------------

    def _failure_id(self) -> int:
        self.memory.failure_serial += 1
        return self.execution_id * 100 + self.memory.failure_serial

    def _event(self) -> str:
        repo = self.repository
        assert self.step is not None
        event = self.plan.event
        if event == "FAILED":
            return self._end_step(
                "FAILED", Failure(self.plan.category, self._failure_id())
            )
        if event == "UNKNOWN":
            step = repo.get_step(self.step.pk)
            self.step = repo.transition_step(step.pk, step.version, "UNKNOWN")
            execution = self.refresh()
            self.execution = repo.transition_execution(
                self.execution_id, execution.version, "UNKNOWN"
            )
            self.status = "UNKNOWN"
            return "UNKNOWN"
        # VANISH: the process is gone; nothing more is written.
        return "VANISH"

    def _end_step(self, status: str, failure: Failure | None = None) -> str:
        repo = self.repository
        assert self.step is not None
        # self.step is the row as this run last wrote it; nobody else
        # writes a running step.
        step = repo.transition_step(
            self.step.pk, self.step.version, status, failure=failure
        )
        self.step = repo.enrich_step_exit_status(step.pk, step.version, status)
        return status

    def _stop_observed(self) -> bool:
        control = self.repository.observe_control(self.execution_id, self.token)
        self.execution = control.execution
        if control.should_stop:
            self.status = "STOPPING"
        return control.should_stop

    # -- flow decisions ------------------------------------------------------------

    def _decide(
        self,
        node: Node,
        source_step_id: int | None,
        outcome: str,
        transition: Transition,
        kind: str,
        *,
        reused: int | None = None,
    ) -> FlowDecision:
        self._sequence += 1
        return self.repository.append_flow_decision(
            self.execution_id,
            source_node_id=node.id,
            observed_outcome=outcome,
            target=FlowTarget(
                node=transition.node,
                terminal=transition.terminal.upper() if transition.terminal else None,
            ),
            transition_kind=kind,
            plan_fingerprint=self.fingerprint,
            input_digest=input_digest(
                self.instance_key, node.id, decider=kind == "DECIDER"
            ),
            source_step_execution_id=source_step_id,
            reused_decision_id=reused,
            sequence=self._sequence,
        )


def input_digest(instance_key: bytes, node_id: str, *, decider: bool = False) -> bytes:
    """
    Return the input digest a flow decision of ``node_id`` carries.

    The runtime derives it from the node's inputs under the flow-step (or
    decider) domain tag; here the inputs are the instance and the node, so
    a restart's reuse decision carries the digest of the decision it reuses.
    """
    tag = _DECIDER_INPUT if decider else _FLOW_STEP_INPUT
    return hashlib.sha256(tag + instance_key + node_id.encode("utf-8")).digest()


def weighted_names(choices: tuple[tuple[str, int], ...]) -> list[str]:
    """Return each name repeated by its weight: a uniform pick is weighted."""
    return [name for name, weight in choices for _ in range(weight)]


def _weighted(rng: random.Random, choices: tuple[tuple[str, int], ...]) -> str:
    return rng.choice(weighted_names(choices))


def _partition_entry(
    node: Node, ordinal: int, count: int, volume: int
) -> PartitionEntry:
    share = volume // count
    return PartitionEntry(
        partition_key(node, ordinal, count),
        StatePayload(
            PARTITION_CONTEXT_SCHEMA,
            {
                "first_item": (ordinal - 1) * share,
                "items": share,
                "label": f"{node.id} ✓ {ordinal}/{count}",
            },
        ),
    )
