"""
Seed realistic demo history through the job repository.

The seeder plays about sixty days of batch work on a manual clock: each
instance's attempts are :class:`~batchboard.demo.runs.JobRun` scripts, and
one timeline interleaves every unit of work, operator action and retention
step in time order, so ids and timestamps grow together as they would in
production. The clock stops at ``now``: whatever is mid-way then is left
as it is, which is how the seeded database gets executions still running
(STARTING, STARTED, STOPPING, with and without stop requests, fresh and
stale). The simulator (:mod:`batchboard.demo.simulate`) is their runtime
from then on: it honours every stop requested on them.

Everything deterministic comes from one ``random.Random(seed)`` and the
given ``now``; the same seed and clock on an empty database write the same
rows.
"""

from __future__ import annotations

import heapq
import itertools
import random
import time
from collections.abc import Callable, Sized
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.db import transaction

from batchboard import conf
from batchboard.actions import Directive
from batchboard.demo.audit import Operator
from batchboard.demo.catalogue import CATALOGUE, JobSpec, Revision, job
from batchboard.demo.runs import RESTARTABLE, InstanceMemory, JobRun, RunPlan
from batchboard.digests import JobParameter, epoch_ms, parameters_from_json
from batchboard.models import (
    FlowDecision,
    JobExecution,
    JobInstance,
    OperatorRequest,
    RecoveryDecision,
    RetentionAction,
    StepExecution,
    StepPartition,
)
from batchboard.repository import (
    Definition,
    JobRepository,
    ManualClock,
    truncate_ms,
)
from batchboard.vocabulary import APPLIED, UNRESOLVED

DEFAULT_INSTANCES = 2000
HISTORY_DAYS = 60
#: When upgraded jobs switch to their second revision, before ``now``.
UPGRADE_AGE = timedelta(days=25)
STALE_AFTER = timedelta(minutes=15)


class _Cutoff(Exception):
    """The timeline reached ``now``: this run stays where it is."""


@dataclass
class SeedReport:
    """Row counts of a seeding run and how long it took."""

    counts: dict[str, int] = field(default_factory=dict)
    jobs: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        parts = ", ".join(f"{count:,} {name}" for name, count in self.counts.items())
        return f"Seeded {self.jobs} jobs: {parts} in {self.seconds:.1f} s."


@dataclass
class _Instance:
    spec: JobSpec
    parameters: dict[str, JobParameter]
    memory: InstanceMemory
    # Scenario marks drawn up front so coverage does not depend on luck.
    scenario: str = ""
    attempts: int = 0
    instance_id: int | None = None


class _Timeline:
    """A priority queue of actions on one manual clock, cut at ``now``."""

    def __init__(self, clock: ManualClock, now: datetime) -> None:
        self.clock = clock
        self.now = now
        self._queue: list[tuple[datetime, int, Callable[[], object]]] = []
        self._serial = itertools.count()

    def at(self, moment: datetime, action: Callable[[], object]) -> None:
        """Run ``action`` at ``moment`` (whatever it returns), unless past ``now``."""
        if moment <= self.now:
            heapq.heappush(self._queue, (moment, next(self._serial), action))

    def run(self, using: str) -> None:
        # Batches of actions share one transaction: thousands of small
        # commits would dominate the run time on either database.
        while self._queue:
            with transaction.atomic(using=using):
                for _ in range(400):
                    if not self._queue:
                        break
                    moment, _, action = heapq.heappop(self._queue)
                    self.clock.set(moment)
                    action()


class Seeder:
    """Play ``instances`` instances of the catalogue onto the timeline."""

    def __init__(self, *, instances: int, seed: int, now: datetime, using: str) -> None:
        self.rng = random.Random(seed)
        self.now = now
        self.start = now - timedelta(days=HISTORY_DAYS)
        self.switch = now - UPGRADE_AGE
        self.clock = ManualClock(self.start - timedelta(days=1))
        self.repository = JobRepository(using=using, clock=self.clock)
        self.timeline = _Timeline(self.clock, now)
        # Operation ids carry the seeding's clock and the requests already
        # recorded, so seeding again (--force) never replays earlier ones.
        earlier = OperatorRequest.objects.using(using).count()
        run = f"{epoch_ms(now):x}-{earlier}"
        self.operators = [
            Operator(
                self.repository, actor="ops@example.org", prefix=f"demo-{run}-ops"
            ),
            Operator(self.repository, actor="oncall.bot", prefix=f"demo-{run}-bot"),
            Operator(
                self.repository, actor="jane.doe@example.org", prefix=f"demo-{run}-jd"
            ),
        ]
        self.count = instances
        self.using = using

    # -- setup -----------------------------------------------------------------------

    def register(self) -> None:
        """Register every definition, and the upgrade edges at the switch."""
        for spec in CATALOGUE:
            rows = []
            for index, revision in enumerate(spec.revisions):
                self.clock.set(
                    self.start - timedelta(days=1) if index == 0 else self.switch
                )
                rows.append(
                    self.repository.register_definition(
                        spec.name, Definition(revision.name, spec.manifest(revision))
                    )
                )
            for (old, new), (before, after) in zip(
                itertools.pairwise(spec.revisions),
                itertools.pairwise(rows),
                strict=True,
            ):
                self.repository.register_upgrade(
                    before.pk,
                    after.pk,
                    upgrade_key=new.upgrade_key or f"{old.name}-to-{new.name}",
                    step_mapping=spec.step_mapping(old, new),
                )

    def revision(self, spec: JobSpec, moment: datetime) -> Revision:
        if len(spec.revisions) > 1 and moment >= self.switch:
            return spec.revisions[-1]
        return spec.revisions[0]

    def plan(self) -> None:
        """Draw every instance and schedule its first attempt."""
        weights = [spec.weight for spec in CATALOGUE]
        span = (self.now - self.start) / self.count
        # Numbering continues after instances already there (--force), so a
        # second seeding adds new instances instead of relaunching old ones.
        serials: dict[str, int] = {
            spec.name: JobInstance.objects.using(self.using)
            .filter(job_name=spec.name)
            .count()
            for spec in CATALOGUE
        }
        upgrade_marked: set[str] = set()
        instances = []
        for index in range(self.count):
            spec = self.rng.choices(CATALOGUE, weights)[0]
            moment = self.start + span * (index + self.rng.random())
            moment = truncate_ms(moment)
            serial = serials[spec.name] = serials[spec.name] + 1
            low, high = spec.volume
            instance = _Instance(
                spec,
                spec.parameters(serial, moment),
                InstanceMemory(volume=self.rng.randint(low, high)),
            )
            instances.append((moment, instance))
        # Coverage that must not depend on the draw: for each upgraded job,
        # the last instance before the switch fails and restarts after it.
        for moment, instance in reversed(instances):
            name = instance.spec.name
            if (
                len(instance.spec.revisions) > 1
                and name not in upgrade_marked
                and self.switch - timedelta(days=3) < moment < self.switch
            ):
                instance.scenario = "upgrade"
                upgrade_marked.add(name)
        for spec in CATALOGUE:
            if len(spec.revisions) > 1 and spec.name not in upgrade_marked:
                serial = serials[spec.name] = serials[spec.name] + 1
                moment = self.switch - timedelta(hours=2)
                low, high = spec.volume
                extra = _Instance(
                    spec,
                    spec.parameters(serial, moment),
                    InstanceMemory(volume=self.rng.randint(low, high)),
                    scenario="upgrade",
                )
                instances.append((moment, extra))
        # Warm-ups are never restarted, so a purge of their history never
        # meets a restart chain that reaches past its candidates.
        eligible = [
            item
            for item in instances
            if not item[1].scenario and item[1].spec.name != "cache-warmup"
        ]
        stoppable = [item for item in eligible if item[1].spec.entry.kind == "chunk"]
        for _moment, instance in stoppable[3 :: _every(stoppable, 60)]:
            instance.scenario = "stop"
        plain = [item for item in eligible if not item[1].scenario]
        for _moment, instance in plain[5 :: _every(plain, 90)]:
            instance.scenario = "vanish"
        plain = [item for item in plain if not item[1].scenario]
        for _moment, instance in plain[1 :: _every(plain, 150)]:
            instance.scenario = "unknown"
        plain = [item for item in plain if not item[1].scenario]
        for _moment, instance in plain[2 :: _every(plain, 200)]:
            instance.scenario = "hold"
        instances.extend(self._tail(serials))
        for moment, instance in instances:
            self.timeline.at(moment, self._launcher(instance, moment))

    def _tail(self, serials: dict[str, int]) -> list[tuple[datetime, _Instance]]:
        """
        Return the instances of the last hours, whatever the count.

        They make sure the seeded database ends with work in flight: long
        runs still going at ``now``, two processes that vanished and were
        never recovered (stale), and launches nobody has started yet.
        """
        tail = (
            ("warehouse-vacuum", timedelta(minutes=4), ""),
            ("nightly-ledger-import", timedelta(minutes=2), ""),
            ("warehouse-vacuum", timedelta(minutes=9), ""),
            ("search-reindex", timedelta(minutes=3), ""),
            ("customer-email-digest", timedelta(minutes=1), ""),
            ("inventory-snapshot", timedelta(hours=5), "stale"),
            ("payroll-run", timedelta(hours=2), "stale"),
            ("fx-rates-refresh", timedelta(seconds=40), "starting"),
            ("invoice-export", timedelta(seconds=90), "starting"),
        )
        out = []
        for name, age, scenario in tail:
            spec = job(name)
            serial = serials[name] = serials[name] + 1
            moment = self.now - age
            low, high = spec.volume
            instance = _Instance(
                spec,
                spec.parameters(serial, moment),
                InstanceMemory(volume=self.rng.randint(low, high)),
                scenario=scenario,
            )
            out.append((moment, instance))
        return out

    # -- attempts ----------------------------------------------------------------------

    def _plan_for(self, instance: _Instance) -> RunPlan:
        scenario = instance.scenario if instance.attempts == 0 else ""
        if scenario == "upgrade":
            return RunPlan("FAILED", 0, 0.5, "TRANSIENT_INFRASTRUCTURE")
        if scenario in ("vanish", "stale"):
            return RunPlan("VANISH", 0, self.rng.uniform(0.2, 0.8))
        if scenario == "unknown":
            return RunPlan("UNKNOWN", 0, self.rng.uniform(0.2, 0.8))
        if scenario == "starting":
            return RunPlan("STARTING")
        if scenario == "stop":
            return RunPlan()
        return RunPlan.draw(self.rng, instance.spec)

    def _launcher(self, instance: _Instance, moment: datetime) -> Callable[[], None]:
        def launch() -> None:
            self._start(instance, moment, launched=None)

        return launch

    def _start(
        self, instance: _Instance, moment: datetime, launched: JobExecution | None
    ) -> None:
        spec = instance.spec
        if launched is None and instance.attempts == 0 and self.rng.random() < 0.02:
            # Now and then someone launches a run from the console.
            revision = self.revision(spec, moment)
            outcome = self.operators[2].launch(
                spec.name,
                instance.parameters,
                Definition(revision.name, spec.manifest(revision)),
            )
            launched = outcome.execution
        track = _Track(self, moment)
        on_commit = None
        if instance.scenario == "stop" and instance.attempts == 0:
            on_commit = self._stopper()
        run = JobRun(
            self.repository,
            spec,
            self.revision(spec, moment),
            instance.parameters,
            plan=self._plan_for(instance),
            memory=instance.memory,
            rng=self.rng,
            pace=track.pace,
            on_commit=on_commit,
            launched=launched,
        )
        instance.attempts += 1
        track.run = run
        track.instance = instance
        track.advance()

    def _stopper(self) -> Callable[[JobRun], None]:
        """Return an on-commit hook that has an operator stop the run once."""
        fired = False

        def stop(run: JobRun) -> None:
            nonlocal fired
            if fired:
                return
            fired = True
            execution = run.refresh()
            operator = self.operators[0]
            operator.stop(execution.pk, execution.version)

        return stop

    def finished(self, track: _Track) -> None:
        """Decide what happens after an attempt: restart, abandon, recover, nothing."""
        run, instance = track.run, track.instance
        assert run is not None and instance is not None
        if run.execution is None:
            return
        if instance.instance_id is None:
            instance.instance_id = run.execution.job_instance_id
            if instance.scenario == "hold":
                self._schedule_hold(instance, track.at)
        rng = self.rng
        later = track.at + timedelta(minutes=rng.uniform(5, 180))
        status = run.status
        if status == "COMPLETED":
            if rng.random() < 0.004:
                self.timeline.at(later, lambda: self._restart_rejected(instance))
            return
        if status in RESTARTABLE:
            if instance.spec.name == "cache-warmup":
                return  # warm-ups are simply re-run under a new generation
            if instance.scenario == "upgrade" and instance.attempts == 1:
                later = self.switch + timedelta(minutes=rng.uniform(10, 120))
                self.timeline.at(later, lambda: self._relaunch(instance, later))
                return
            roll = rng.random()
            if roll < 0.45:
                self.timeline.at(later, lambda: self._relaunch(instance, later))
            elif roll < 0.8:
                self.timeline.at(later, lambda: self._operator_restart(instance, later))
            elif roll < 0.92:
                self.timeline.at(later, lambda: self._abandon(run))
            return
        if status == "UNKNOWN":
            self.timeline.at(later, lambda: self._recover(run, instance, unknown=True))
            return
        if run.plan.event == "VANISH" and instance.scenario != "stale":
            stale = track.at + STALE_AFTER + timedelta(minutes=rng.uniform(5, 240))
            self.timeline.at(stale, lambda: self._recover(run, instance, unknown=False))

    def _relaunch(self, instance: _Instance, moment: datetime) -> None:
        self._start(instance, moment, launched=None)

    def _operator_restart(self, instance: _Instance, moment: datetime) -> None:
        assert instance.instance_id is not None
        revision = self.revision(instance.spec, moment)
        definition = Definition(revision.name, instance.spec.manifest(revision))
        outcome = self.rng.choice(self.operators).restart(
            instance.instance_id, definition
        )
        if outcome.applied:
            self._start(instance, moment, launched=outcome.execution)

    def _restart_rejected(self, instance: _Instance) -> None:
        assert instance.instance_id is not None
        revision = self.revision(instance.spec, self.clock.now())
        definition = Definition(revision.name, instance.spec.manifest(revision))
        self.rng.choice(self.operators).restart(instance.instance_id, definition)

    def _abandon(self, run: JobRun) -> None:
        execution = run.refresh()
        operator = self.rng.choice(self.operators)
        reason = self.rng.choice(
            ("OPERATOR_DECISION", "BAD_INPUT_DATA", "DUPLICATE_RUN")
        )
        if self.rng.random() < 0.1:
            # An operator working from a stale page: the version moved on.
            operator.abandon(execution.pk, execution.version - 1, reason)
        operator.abandon(execution.pk, execution.version, reason)

    def _recover(self, run: JobRun, instance: _Instance, *, unknown: bool) -> None:
        execution = run.refresh()
        if execution.status not in UNRESOLVED:
            return
        operator = self.operators[self.rng.randrange(len(self.operators))]
        roll = self.rng.random()
        version = execution.version
        if unknown and roll < 0.25:
            # Left for a human to decide; the console shows it as such.
            operator.stop(execution.pk, version)  # rejected: UNKNOWN
            operator.abandon(execution.pk, version, "OPERATOR_DECISION")
            return
        proposal = operator.propose(execution.pk)
        if unknown:
            failed = Directive.mark_failed("UNKNOWN_COMMIT", execution.pk)
            reason = "UNKNOWN_EFFECT"
            if roll < 0.45:
                # Rejected: an unknown commit is marked failed only with
                # the reason UNKNOWN_EFFECT.
                operator.recover(
                    execution.pk,
                    expected_version=version,
                    reason="HOST_LOST",
                    directive=failed,
                    proposal=proposal,
                )
            directive = failed if roll < 0.8 else Directive.abandon()
        else:
            failed = Directive.mark_failed("STALE_RECOVERED", execution.pk)
            reason = "HOST_LOST"
            if roll < 0.15:
                # Rejected: an operator working from a page a version ahead.
                operator.recover(
                    execution.pk,
                    expected_version=version + 1,
                    reason=reason,
                    directive=failed,
                    proposal=proposal,
                )
            directive = failed if roll < 0.75 else Directive.abandon()
        outcome = operator.recover(
            execution.pk,
            expected_version=version,
            reason=reason,
            directive=directive,
            proposal=proposal,
        )
        if outcome.recorded_outcome == APPLIED and outcome.result_status == "FAILED":
            later = self.clock.now() + timedelta(minutes=self.rng.uniform(2, 60))
            self.timeline.at(later, lambda: self._operator_restart(instance, later))

    def _schedule_hold(self, instance: _Instance, moment: datetime) -> None:
        operator = self.operators[2]
        hold_at = moment + timedelta(hours=self.rng.uniform(1, 48))

        def hold() -> None:
            assert instance.instance_id is not None
            reason = self.rng.choice(("LEGAL_HOLD", "AUDIT"))
            operator.hold(instance.instance_id, reason)
            if self.rng.random() < 0.4:
                release_at = self.clock.now() + timedelta(days=self.rng.uniform(1, 10))
                self.timeline.at(
                    release_at,
                    lambda: operator.release_hold(
                        instance.instance_id or 0, "HOLD_NO_LONGER_NEEDED"
                    ),
                )

        self.timeline.at(hold_at, hold)

    def schedule_housekeeping(self) -> None:
        """Schedule the purge and the last-minute stops and launch clashes."""
        operator = self.operators[1]
        self.timeline.at(
            self.now - timedelta(hours=2),
            lambda: operator.purge(
                "cache-warmup",
                reason="RETENTION_POLICY",
                min_age_seconds=2_592_000,
                batch=200,
            ),
        )

    def finish_at_now(self) -> None:
        """
        Give the runs left in flight at ``now`` their operator touches.

        Two running executions get a stop request their runtime has not
        seen yet; one has seen it (STOPPING); an operator launches an
        instance that is already running (rejected).
        """
        self.clock.set(self.now)
        running = list(
            JobExecution.objects.using(self.using)
            .filter(status="STARTED", owner_token__isnull=False)
            .order_by("-updated_at", "-id")[:6]
        )
        operator = self.operators[0]
        with transaction.atomic(using=self.using):
            for execution in running[:3]:
                operator.stop(execution.pk, execution.version)
            token = running[0].owner_token if running else None
            if token is not None:
                observed = self.repository.observe_control(running[0].pk, bytes(token))
                assert observed.should_stop
            if len(running) > 3:
                execution = running[3]
                instance = JobInstance.objects.using(self.using).get(
                    pk=execution.job_instance_id
                )
                spec = job(instance.job_name)
                revision = self.revision(spec, self.now)
                operator.launch(
                    spec.name,
                    parameters_from_json(instance.identifying_parameters),
                    Definition(revision.name, spec.manifest(revision)),
                )


def _every(items: Sized, step: int) -> int:
    """Return ``step``, shortened so that short lists still get a few marks."""
    return max(1, min(step, len(items) // 3))


@dataclass
class _Track:
    """A run on the timeline: its own clock position, rescheduled per unit."""

    seeder: Seeder
    at: datetime
    run: JobRun | None = None
    instance: _Instance | None = None

    def pace(self, seconds: float) -> None:
        moment = truncate_ms(self.at + timedelta(seconds=seconds))
        if moment > self.seeder.now:
            raise _Cutoff
        self.at = moment
        self.seeder.clock.set(moment)

    def advance(self) -> None:
        assert self.run is not None
        try:
            more = self.run.advance()
        except _Cutoff:
            return
        if more:
            self.seeder.timeline.at(self.at, self.advance)
        else:
            self.seeder.finished(self)


def seed(
    *,
    instances: int = DEFAULT_INSTANCES,
    seed: int = 2026,
    now: datetime | None = None,
    using: str | None = None,
) -> SeedReport:
    """Seed ``instances`` job instances of demo history ending at ``now``."""
    alias = using or conf.database_alias()
    moment = truncate_ms(now or datetime.now(UTC))
    began = time.perf_counter()
    seeder = Seeder(instances=instances, seed=seed, now=moment, using=alias)
    seeder.register()
    seeder.plan()
    seeder.schedule_housekeeping()
    seeder.timeline.run(alias)
    seeder.finish_at_now()
    report = SeedReport(jobs=len(CATALOGUE), seconds=time.perf_counter() - began)
    for name, model in (
        ("instances", JobInstance),
        ("executions", JobExecution),
        ("steps", StepExecution),
        ("partitions", StepPartition),
        ("flow decisions", FlowDecision),
        ("recovery decisions", RecoveryDecision),
        ("operator requests", OperatorRequest),
        ("retention actions", RetentionAction),
    ):
        report.counts[name] = model.objects.using(alias).count()
    return report
