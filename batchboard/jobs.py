"""
Run a Python batch job in a Django site as an oxide-batch-style job.

A :class:`Job` is a name, a definition revision and an ordered list of
steps. :meth:`Job.run` launches the instance named by the identifying
parameters (restarting it when its last attempt failed or stopped), runs
the steps and records everything through the job repository, so the run
appears in batchboard exactly like a run of an oxide-batch runtime::

    from batchboard.jobs import Job, StepContext
    from batchboard.repository import JobParameter

    job = Job("import-records", revision="2026-03")

    @job.step("import")
    def import_records(step: StepContext) -> None:
        position = step.checkpoint.get("next", 0)    # resume point on restart
        while position < 1000:
            batch = load(position, 100)              # your work
            position += len(batch)
            step.commit(read=len(batch), written=len(batch),
                        checkpoint={"next": position})

    execution = job.run({"run_date": JobParameter.string("2026-03-01")})

What the runner guarantees:

- **Each commit is durable.** :meth:`StepContext.commit` adds the chunk's
  counters and stores the checkpoint in one transaction on the metadata
  database; :meth:`StepContext.chunk` also lets the job's own writes on
  that database commit atomically with it.
- **Restart from the checkpoint.** Running a failed or stopped instance
  again creates the next attempt; each step starts from the checkpoint,
  context and counters its previous attempt committed, and steps that
  already COMPLETED are not run again.
- **Failures are categorised.** An exception ends the step and the
  execution FAILED with a failure category (``USER_COMPONENT`` unless the
  job raises :class:`JobFailure` with another, or a ``classify`` hook says
  otherwise) and a random failure id, which is logged with the exception's
  type only: messages may carry data and never reach the metadata or the
  log.
- **Stop requests are honoured at the next commit.** After every commit,
  and from :meth:`StepContext.check_stop` between commits, the runner
  observes its execution; a stop request moves it to STOPPING and the run
  ends STOPPED. Ctrl-C ends the run STOPPED as well.

The generated definition is a linear flow manifest (format 2) of the
steps. Changing the steps changes the manifest, so give the job a new
``revision`` then; restarting an instance across revisions needs an
upgrade edge (:meth:`JobRepository.register_upgrade`), as in oxide-batch.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.db import DatabaseError, transaction

from batchboard import vocabulary
from batchboard.models import JobExecution, StepExecution
from batchboard.repository import (
    ChunkCounts,
    Definition,
    Failure,
    JobParameter,
    JobRepository,
    RepositoryError,
    StaleVersion,
    StatePayload,
    lifecycle,
)
from batchboard.repository.executions import EMPTY_CONTEXT_SCHEMA

logger = logging.getLogger("batchboard.jobs")

#: Schema ids of the checkpoint and context the job API writes.
CHECKPOINT_SCHEMA = "batchboard.jobs.checkpoint"
CONTEXT_SCHEMA = "batchboard.jobs.context"

StepFunction = Callable[["StepContext"], None]


class JobFailure(Exception):
    """
    Raise from a step to fail it with a specific failure category.

    ``category`` is one of the contract's fifteen (for example
    ``"TRANSIENT_INFRASTRUCTURE"``); the message stays in your process.
    """

    def __init__(self, category: str, message: str = "") -> None:
        super().__init__(message or category)
        self.category = Failure(category, 1).category


class StopRequested(Exception):
    """Raised inside a step when the runner observed a stop request."""


class ExecutionNoLongerActive(Exception):
    """
    Raised inside a step when the execution left the runner's hands.

    A recovery decided the execution's fate (FAILED, ABANDONED) or marked it
    UNKNOWN while the job still ran; the runner stops working for it and
    leaves its status alone.
    """


def default_classify(error: BaseException) -> str:
    """Return the failure category recorded for an exception."""
    if isinstance(error, JobFailure):
        return error.category
    if isinstance(error, ExecutionNoLongerActive):
        return "CANCELLED"
    if isinstance(error, StaleVersion):
        return "OPTIMISTIC_CONFLICT"
    if isinstance(error, TimeoutError):
        return "TIMEOUT"
    if isinstance(error, DatabaseError | ConnectionError | RepositoryError):
        return "TRANSIENT_INFRASTRUCTURE"
    return "USER_COMPONENT"


@dataclass
class Chunk:
    """What one chunk did; fill it inside :meth:`StepContext.chunk`."""

    read: int = 0
    processed: int = 0
    written: int = 0
    filtered: int = 0
    skipped: int = 0
    checkpoint: Mapping[str, Any] | None = None
    context: Mapping[str, Any] | None = None

    def add(
        self,
        *,
        read: int = 0,
        processed: int | None = None,
        written: int = 0,
        filtered: int = 0,
        skipped: int = 0,
    ) -> None:
        """Add to the chunk's counters; ``processed`` defaults to ``read``."""
        self.read += read
        self.processed += read if processed is None else processed
        self.written += written
        self.filtered += filtered
        self.skipped += skipped


class StepContext:
    """
    A running step, handed to the step function.

    Read :attr:`checkpoint` and :attr:`context` to resume; report progress
    with :meth:`commit` or :meth:`chunk`; call :meth:`check_stop` during
    long work between commits.
    """

    def __init__(self, run: _Run, row: StepExecution) -> None:
        self._run = run
        self.row = row

    @property
    def name(self) -> str:
        return self.row.step_name

    @property
    def attempt(self) -> int:
        """Return the job execution's attempt number (1 on a first run)."""
        return self._run.execution.attempt

    @property
    def checkpoint(self) -> dict[str, Any]:
        """Return the last committed checkpoint (empty before the first commit)."""
        if self.row.checkpoint_schema == EMPTY_CONTEXT_SCHEMA:
            return {}
        return dict(self.row.checkpoint_payload)

    @property
    def context(self) -> dict[str, Any]:
        """Return the last committed execution context of the step."""
        if self.row.context_schema == EMPTY_CONTEXT_SCHEMA:
            return {}
        return dict(self.row.context_payload)

    @property
    def counts(self) -> dict[str, int]:
        """Return the committed counters, carried over from earlier attempts."""
        return {
            "read": self.row.read_count,
            "processed": self.row.processed_count,
            "written": self.row.write_count,
            "filtered": self.row.filter_count,
            "commits": self.row.commit_count,
        }

    @contextmanager
    def chunk(self) -> Iterator[Chunk]:
        """
        Commit one chunk when the block ends without an exception.

        The block runs in a transaction on the metadata database alias, so
        writes the job makes there commit atomically with the counters and
        checkpoint. After the commit the runner observes stop requests and
        raises :class:`StopRequested` if one arrived.
        """
        chunk = Chunk()
        repo = self._run.repo
        with transaction.atomic(using=repo.alias):
            yield chunk
            checkpoint = (
                chunk.checkpoint if chunk.checkpoint is not None else self.checkpoint
            )
            self.row = repo.commit_chunk(
                self.row.pk,
                self.row.version,
                job_execution_id=self.row.job_execution_id,
                counts=ChunkCounts(
                    read=chunk.read,
                    processed=chunk.processed,
                    written=chunk.written,
                    filtered=chunk.filtered,
                    process_skips=chunk.skipped,
                ),
                checkpoint=StatePayload(CHECKPOINT_SCHEMA, checkpoint),
                context=None
                if chunk.context is None
                else StatePayload(CONTEXT_SCHEMA, chunk.context),
            )
        self._run.observe(force=True)

    def commit(
        self,
        *,
        checkpoint: Mapping[str, Any],
        read: int = 0,
        processed: int | None = None,
        written: int = 0,
        filtered: int = 0,
        skipped: int = 0,
        context: Mapping[str, Any] | None = None,
    ) -> None:
        """Commit one chunk's counters and checkpoint (see :meth:`chunk`)."""
        with self.chunk() as chunk:
            chunk.add(
                read=read,
                processed=processed,
                written=written,
                filtered=filtered,
                skipped=skipped,
            )
            chunk.checkpoint = checkpoint
            chunk.context = context

    def check_stop(self) -> None:
        """
        Raise :class:`StopRequested` if a stop was requested.

        Polls the database at most once per ``stop_poll_seconds`` of the job,
        so it is cheap to call inside tight loops.
        """
        self._run.observe(force=False)


@dataclass
class _Step:
    name: str
    function: StepFunction


@dataclass
class Job:
    """
    A batch job: a name, a definition revision and ordered steps.

    ``revision`` names this version of the job's code (1..128 bytes).
    ``manifest`` overrides the generated linear-flow manifest; give it if
    the job must match a definition registered elsewhere. ``classify``
    maps an exception to a failure category. ``stop_poll_seconds`` bounds
    how often :meth:`StepContext.check_stop` reads the database.
    ``repository`` defaults to a :class:`JobRepository` on the metadata
    alias with the system clock.
    """

    name: str
    revision: str = "1"
    manifest: Mapping[str, Any] | None = None
    classify: Callable[[BaseException], str] = default_classify
    stop_poll_seconds: float = 1.0
    repository: JobRepository | None = None
    steps: list[_Step] = field(default_factory=list)

    def step(self, name: str) -> Callable[[StepFunction], StepFunction]:
        """Register the decorated function as the job's next step ``name``."""

        def register(function: StepFunction) -> StepFunction:
            self.add_step(name, function)
            return function

        return register

    def add_step(self, name: str, function: StepFunction) -> None:
        """Append step ``name`` running ``function(step_context)``."""
        if any(step.name == name for step in self.steps):
            raise ValueError(f"the job already has a step named {name!r}")
        self.steps.append(_Step(name, function))

    def definition(self) -> Definition:
        """Return the definition recorded with every execution of this job."""
        if self.manifest is not None:
            return Definition(self.revision, self.manifest)
        names = [step.name for step in self.steps]
        transitions: list[dict[str, Any]] = []
        for index, name in enumerate(names):
            following = (
                {"node": names[index + 1]}
                if index + 1 < len(names)
                else {"terminal": "complete"}
            )
            transitions += [
                {"pattern": "FAILED", "source": name, "target": {"terminal": "fail"}},
                {"pattern": "STOPPED", "source": name, "target": {"terminal": "stop"}},
                {"pattern": "*", "source": name, "target": following},
            ]
        return Definition(
            self.revision,
            {
                "entry": names[0] if names else "",
                "format": 2,
                "job": self.name,
                "nodes": [{"id": name, "kind": "step"} for name in names],
                "runtime": "batchboard.jobs",
                "transitions": transitions,
            },
        )

    def run(
        self,
        parameters: Mapping[str, JobParameter] | None = None,
        *,
        reraise: bool = False,
    ) -> JobExecution:
        """
        Launch (or restart) the instance of ``parameters`` and run the steps.

        Return the execution as it ended: COMPLETED, FAILED or STOPPED.
        Launch refusals (the instance completed, or another attempt is
        active) raise the repository's error before anything runs. With
        ``reraise`` the step's exception propagates after the failure is
        recorded.
        """
        if not self.steps:
            raise ValueError("a job needs at least one step")
        repo = self.repository or JobRepository()
        execution = repo.launch(self.name, parameters or {}, self.definition())
        return _Run(self, repo, execution).execute(reraise=reraise)

    def run_execution(
        self, execution_id: int, *, reraise: bool = False
    ) -> JobExecution:
        """
        Run an execution created elsewhere (an operator's LAUNCH or RESTART).

        The execution must belong to this job, be STARTING and be unclaimed
        (or claimed with this run's token); it is claimed first.
        """
        repo = self.repository or JobRepository()
        execution = repo.get_execution(execution_id)
        job_name = repo.get_instance(execution.job_instance_id).job_name
        if job_name != self.name:
            raise ValueError(f"execution {execution_id} belongs to job {job_name!r}")
        return _Run(self, repo, execution).execute(reraise=reraise)


class _Run:
    """One attempt of a job, from claim to its final status."""

    def __init__(self, job: Job, repo: JobRepository, execution: JobExecution) -> None:
        self.job = job
        self.repo = repo
        self.execution = execution
        self.token = secrets.token_bytes(16)
        self._last_poll = 0.0

    def refresh(self) -> JobExecution:
        self.execution = self.repo.get_execution(self.execution.pk)
        return self.execution

    def observe(self, *, force: bool) -> None:
        now = time.monotonic()
        if not force and now - self._last_poll < self.job.stop_poll_seconds:
            return
        self._last_poll = now
        control = self.repo.observe_control(self.execution.pk, self.token)
        self.execution = control.execution
        if control.should_stop:
            raise StopRequested()
        if control.execution.status not in (lifecycle.STARTING, lifecycle.STARTED):
            raise ExecutionNoLongerActive()

    def execute(self, *, reraise: bool) -> JobExecution:
        repo = self.repo
        self.execution = repo.claim_execution(
            self.execution.pk, self.execution.version, self.token
        )
        logger.info(
            "batchboard job %s: execution %s attempt %s started",
            self.job.name,
            self.execution.pk,
            self.execution.attempt,
        )
        try:
            self.observe(force=True)
            self.execution = repo.transition_execution(
                self.execution.pk, self.execution.version, lifecycle.STARTED
            )
            for step in self.job.steps:
                if self._completed_before(step.name):
                    continue
                self._run_step(step)
        except StopRequested:
            return self._finish(lifecycle.STOPPED)
        except KeyboardInterrupt:
            self._finish(lifecycle.STOPPED)
            raise
        except Exception as error:
            failure = self._failure(error)
            final = self._finish(lifecycle.FAILED, failure)
            if reraise:
                raise
            return final
        return self._finish(lifecycle.COMPLETED)

    def _completed_before(self, name: str) -> bool:
        latest = (
            StepExecution.objects.using(self.repo.alias)
            .filter(
                job_execution__job_instance_id=self.execution.job_instance_id,
                step_logical_id=name,
            )
            .order_by("-job_execution__attempt", "-id")
            .values_list("status", flat=True)
            .first()
        )
        return latest == lifecycle.COMPLETED

    def _run_step(self, step: _Step) -> None:
        repo = self.repo
        row = repo.create_flow_step(self.execution.pk, step.name, step.name)
        row = repo.transition_step(row.pk, row.version, lifecycle.STARTED)
        context = StepContext(self, row)
        try:
            step.function(context)
        except (StopRequested, KeyboardInterrupt):
            self._end_step(context, lifecycle.STOPPED)
            raise
        except Exception as error:
            self._end_step(
                context, lifecycle.FAILED, self._failure(error, step=step.name)
            )
            raise
        self._end_step(context, lifecycle.COMPLETED)

    def _failure(self, error: BaseException, *, step: str | None = None) -> Failure:
        cached = getattr(error, "_batchboard_failure", None)
        if isinstance(cached, Failure):
            return cached
        category = self.job.classify(error)
        if category not in vocabulary.FAILURE_CATEGORIES:
            category = "USER_COMPONENT"
        failure = Failure(category, secrets.randbelow(vocabulary.MAX_BIGINT) + 1)
        # Only the exception's type is logged: its message may hold data.
        logger.error(
            "batchboard job %s: execution %s failed%s with %s, %s, failure id %s",
            self.job.name,
            self.execution.pk,
            f" in step {step}" if step else "",
            type(error).__name__,
            failure.category,
            failure.failure_id,
        )
        # Remember the failure on the exception so the step and the job
        # record the same failure id; some exception types refuse attributes.
        with contextlib.suppress(AttributeError):
            error._batchboard_failure = failure  # type: ignore[attr-defined]
        return failure

    def _not_recorded(self, what: str, error: RepositoryError) -> None:
        # Repository errors name ids and statuses only, never data.
        logger.error(
            "batchboard job %s: could not record the end of %s (%s)",
            self.job.name,
            what,
            error,
        )

    def _end_step(
        self, context: StepContext, status: str, failure: Failure | None = None
    ) -> None:
        try:
            row = self.repo.get_step(context.row.pk)
            if row.status == lifecycle.STARTING:
                # A step may stop or fail before it ever started.
                if status == lifecycle.STOPPED:
                    row = self.repo.transition_step(
                        row.pk, row.version, lifecycle.STOPPING
                    )
                elif status == lifecycle.COMPLETED:
                    row = self.repo.transition_step(
                        row.pk, row.version, lifecycle.STARTED
                    )
            if row.status not in vocabulary.FINISHED:
                row = self.repo.transition_step(
                    row.pk, row.version, status, failure=failure
                )
            context.row = self.repo.enrich_step_exit_status(
                row.pk, row.version, row.status
            )
        except RepositoryError as error:
            self._not_recorded(f"step {context.row.step_name}", error)

    def _finish(self, status: str, failure: Failure | None = None) -> JobExecution:
        repo = self.repo
        try:
            execution = self.refresh()
            if execution.status not in vocabulary.ACTIVE:
                # Someone else (a recovery) already decided this execution.
                logger.warning(
                    "batchboard job %s: execution %s is %s; leaving it as it is",
                    self.job.name,
                    execution.pk,
                    execution.status,
                )
                return execution
            if execution.status == lifecycle.STOPPING and status == lifecycle.COMPLETED:
                # A stop observed after the last commit still wins.
                status = lifecycle.STOPPED
            if execution.status == lifecycle.STARTING and status != lifecycle.FAILED:
                execution = repo.transition_execution(
                    execution.pk, execution.version, lifecycle.STOPPING
                )
            execution = repo.transition_execution(
                execution.pk, execution.version, status, failure=failure
            )
            self.execution = repo.enrich_execution_exit_status(
                execution.pk, execution.version, execution.status
            )
        except RepositoryError as error:
            self._not_recorded(f"execution {self.execution.pk}", error)
            return self.refresh()
        logger.info(
            "batchboard job %s: execution %s ended %s",
            self.job.name,
            self.execution.pk,
            self.execution.status,
        )
        return self.execution
