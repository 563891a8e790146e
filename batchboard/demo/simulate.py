"""
A live simulator: a handful of catalogue jobs running through the repository.

Every tick, each running job performs one unit of work (a chunk commit, a
partition's worker, a flow decision), so the dashboard sees counters move
chunk by chunk. New instances launch every few seconds up to a small bound;
some runs fail and are restarted a little later; one process per session
vanishes, leaving its execution STARTED and stale; stop requests placed from
the console are honoured at the next commit through ``observe_control``.

Every running execution of the demo belongs to the simulator: those it did
not start (left mid-way by the seeder, by an earlier session, or by its own
vanished process) are watched too, and a stop requested on any of them
ends it STOPPED within two ticks, so every stop placed in the demo
completes. Nothing else moves them: a stale one stays a recovery candidate.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from batchboard.demo.catalogue import JobSpec, job
from batchboard.demo.runs import InstanceMemory, JobRun, RunPlan
from batchboard.digests import JobParameter
from batchboard.models import JobExecution, JobInstance, StepExecution
from batchboard.repository import JobRepository, RepositoryError, SystemClock
from batchboard.vocabulary import ACTIVE, STOPPABLE

#: The jobs the simulator keeps going: one of each shape.
LIVE_JOBS = (
    "nightly-ledger-import",
    "customer-email-digest",
    "search-reindex",
    "month-end-close",
    "gdpr-erasure",
    "fx-rates-refresh",
    "shard-compaction",
)


@dataclass
class _Live:
    run: JobRun
    spec: JobSpec
    parameters: dict[str, JobParameter]
    memory: InstanceMemory


@dataclass
class _Pending:
    due: float
    spec: JobSpec
    parameters: dict[str, JobParameter]
    memory: InstanceMemory


@dataclass
class Simulator:
    """
    Keep up to ``concurrency`` jobs running, one unit of work per tick.

    ``say`` receives one line per launch, finish and vanishing, nothing
    else; lines name jobs, execution ids and statuses, never parameter
    values.
    """

    repository: JobRepository = field(
        default_factory=lambda: JobRepository(clock=SystemClock())
    )
    seed: int | None = None
    concurrency: int = 4
    launch_every: tuple[float, float] = (2.0, 6.0)
    failure_rate: float = 0.2
    say: Callable[[str], None] = print
    clock: Callable[[], float] = time.monotonic
    active: list[_Live] = field(default_factory=list)
    vanished: list[_Live] = field(default_factory=list)
    pending: list[_Pending] = field(default_factory=list)
    launches: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.next_launch = self.clock()
        self._serials: dict[str, int] = {}

    # -- launching -----------------------------------------------------------------

    def _parameters(self, spec: JobSpec) -> dict[str, JobParameter]:
        if spec.name not in self._serials:
            # Continue after the instances already there, so every launch is
            # a new instance whatever ran before (seeding, earlier sessions).
            self._serials[spec.name] = (
                JobInstance.objects.using(self.repository.alias)
                .filter(job_name=spec.name)
                .count()
                + 1_000_000
            )
        self._serials[spec.name] += 1
        now = self.repository.now()
        return spec.parameters(self._serials[spec.name], now)

    def launch(self, name: str | None = None, plan: RunPlan | None = None) -> _Live:
        """Launch a new instance of ``name`` (or a random live job) and start it."""
        spec = job(name or self.rng.choice(LIVE_JOBS))
        low, high = spec.volume
        memory = InstanceMemory(volume=self.rng.randint(low, high))
        return self._start(spec, self._parameters(spec), memory, plan)

    def _start(
        self,
        spec: JobSpec,
        parameters: dict[str, JobParameter],
        memory: InstanceMemory,
        plan: RunPlan | None,
    ) -> _Live:
        if plan is None:
            if self.launches == 1:
                # Once per session a process dies mid-step: its execution
                # stays STARTED with no more updates and turns stale.
                plan = RunPlan("VANISH", 0, 0.5)
            elif self.rng.random() < self.failure_rate:
                plan = RunPlan.draw(self.rng, replace(spec, failure_rate=1.0))
            else:
                plan = RunPlan()
        run = JobRun(
            self.repository,
            spec,
            spec.revisions[-1],
            parameters,
            plan=plan,
            memory=memory,
            rng=self.rng,
        )
        run.advance()
        live = _Live(run, spec, parameters, memory)
        self.active.append(live)
        self.launches += 1
        execution = run.execution
        assert execution is not None
        self.say(
            f"launched {spec.name} (execution {execution.pk}, attempt {execution.attempt})"
        )
        return live

    # -- ticking ---------------------------------------------------------------------

    def tick(self) -> None:
        """Advance every running job by one unit; launch and restart as due."""
        now = self.clock()
        for live in list(self.active):
            if not live.run.advance():
                self._finished(live, now)
        self.honour_stops()
        for pending in [p for p in self.pending if p.due <= now]:
            if len(self.active) < self.concurrency:
                self.pending.remove(pending)
                self._start(pending.spec, pending.parameters, pending.memory, None)
        if now >= self.next_launch and len(self.active) < self.concurrency:
            self.launch()
            low, high = self.launch_every
            self.next_launch = now + self.rng.uniform(low, high)

    # -- the executions it did not start -----------------------------------------

    def honour_stops(self) -> None:
        """
        Act as the runtime of every running execution it does not run.

        One statement finds them (the status index): unresolved, a stop
        requested, not one of this simulator's live runs. One that has not
        seen its request yet moves to STOPPING, as its owner's
        ``observe_control`` would (claiming a STARTING one nobody claimed
        first); a STOPPING one winds its open steps down and ends STOPPED.
        A row someone else moved meanwhile is left to the next tick.
        """
        own = [live.run.execution_id for live in self.active]
        waiting = (
            JobExecution.objects.using(self.repository.alias)
            .filter(status__in=ACTIVE, stop_requested_at__isnull=False)
            .exclude(pk__in=own)
            .order_by("pk")
        )
        for execution in waiting:
            try:
                if execution.status in STOPPABLE:
                    self._observe_stop(execution)
                else:
                    self._end_stopped(execution)
            except RepositoryError:
                continue

    def _observe_stop(self, execution: JobExecution) -> None:
        repo = self.repository
        token = execution.owner_token
        if token is None and execution.status == "STARTING":
            token = self.rng.randbytes(16)
            execution = repo.claim_execution(execution.pk, execution.version, token)
        if token is not None:
            execution = repo.observe_control(execution.pk, bytes(token)).execution
        if execution.status != "STOPPING":
            # Running with no owner recorded: nobody else can observe it.
            repo.transition_execution(execution.pk, execution.version, "STOPPING")
        self.say(f"stopping execution {execution.pk} (stop requested)")

    def _end_stopped(self, execution: JobExecution) -> None:
        repo = self.repository
        steps = StepExecution.objects.using(repo.alias).filter(
            job_execution_id=execution.pk, status__in=ACTIVE
        )
        for step in steps.order_by("pk"):
            if step.status == "STARTING":
                step = repo.transition_step(step.pk, step.version, "STOPPING")
            step = repo.transition_step(step.pk, step.version, "STOPPED")
            repo.enrich_step_exit_status(step.pk, step.version, "STOPPED")
        ended = repo.transition_execution(execution.pk, execution.version, "STOPPED")
        repo.enrich_execution_exit_status(ended.pk, ended.version, "STOPPED")
        self.say(f"finished execution {execution.pk} STOPPED (stop requested)")

    def _vanish(self, live: _Live) -> None:
        self.active.remove(live)
        self.vanished.append(live)
        self.say(
            f"vanished {live.spec.name} (execution {live.run.execution_id}, left STARTED)"
        )

    def _finished(self, live: _Live, now: float) -> None:
        run = live.run
        if run.plan.event == "VANISH" and run.status == "STARTED":
            self._vanish(live)
            return
        self.active.remove(live)
        self.say(
            f"finished {live.spec.name} (execution {run.execution_id}) {run.status}"
        )
        if run.status == "FAILED":
            # Failed work is relaunched after a pause, as a scheduler would.
            self.pending.append(
                _Pending(
                    now + self.rng.uniform(2.0, 5.0),
                    live.spec,
                    live.parameters,
                    live.memory,
                )
            )

    def run(
        self,
        *,
        tick: float = 1.0,
        max_seconds: float | None = None,
        should_stop: Callable[[], bool] = lambda: False,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Tick until ``should_stop()`` or ``max_seconds`` have passed."""
        started = self.clock()
        while not should_stop():
            if max_seconds is not None and self.clock() - started >= max_seconds:
                break
            began = self.clock()
            self.tick()
            sleep(max(0.0, tick - (self.clock() - began)))
