"""
A job repository with oxide-batch's semantics, on the Django ORM.

:class:`JobRepository` records launches, steps, chunk commits, partitions
and flow decisions exactly as oxide-batch's PostgreSQL adapter does (spec
sections 2 and 7), so rows written from Python are rows a Rust runtime
could have written, and the reverse. Each method is one atomic unit of
work on the metadata alias (``BATCHBOARD["DATABASE"]`` unless ``using=``
names another); lifecycle changes are compare-and-swap on ``version``.

Typical use::

    from batchboard.repository import (
        ChunkCounts, JobParameter, JobRepository, StatePayload,
    )

    repo = JobRepository()
    run_date = {"run_date": JobParameter.string("2026-01-01")}
    execution = repo.launch("nightly-import", run_date)
    execution = repo.transition_execution(execution.pk, execution.version, "STARTED")
    step = repo.create_step(execution.pk, "load")
    step = repo.transition_step(step.pk, step.version, "STARTED")
    step = repo.commit_chunk(
        step.pk, step.version, job_execution_id=execution.pk,
        counts=ChunkCounts(read=100, written=100),
        checkpoint=StatePayload("load.position", {"offset": 100}),
    )

Methods return the row as written (a model instance); pass its
``version`` to the next compare-and-swap. A stop request
(:meth:`JobRepository.request_stop`) only records who asked and when; the
owning runtime turns it into STOPPING through
:meth:`JobRepository.observe_control`, which reads ``owner_token``,
``stop_requested_at`` and ``status`` under a row lock.

Every error is a :class:`RepositoryError`; its subclasses carry the
contract's names (``StaleVersion``, ``ExecutionAlreadyActive``, ...) and
messages without parameter values or payloads.
"""

from __future__ import annotations

from batchboard.digests import JobParameter
from batchboard.repository import errors
from batchboard.repository.clock import Clock, ManualClock, SystemClock, truncate_ms
from batchboard.repository.definitions import Definition
from batchboard.repository.errors import *  # noqa: F403  (every error, by name)
from batchboard.repository.errors import RepositoryError
from batchboard.repository.executions import EMPTY_CONTEXT_SCHEMA, ExecutionControl
from batchboard.repository.flows import FlowsMixin, FlowTarget, pattern_matches
from batchboard.repository.lifecycle import (
    ACTIVE,
    FINISHED,
    TRANSITIONS,
    UNRESOLVED,
    Failure,
)
from batchboard.repository.partitions import PartitionEntry, verify_partition
from batchboard.repository.steps import (
    DEFAULT_START_LIMIT,
    ChunkCounts,
    ComponentStateInput,
    StatePayload,
)


class JobRepository(FlowsMixin):
    """
    The job repository: definitions, instances, executions, steps,
    partitions and flow decisions.

    The methods, by part (each documented where it is defined):

    - definitions: :meth:`register_definition`, :meth:`register_upgrade`;
    - instances: :meth:`get_or_create_instance`, :meth:`find_instance`,
      :meth:`get_instance`;
    - executions: :meth:`launch`, :meth:`create_execution`,
      :meth:`transition_execution`, :meth:`enrich_execution_exit_status`,
      :meth:`get_execution`, :meth:`latest_execution`;
    - ownership and stop: :meth:`claim_execution`, :meth:`request_stop`,
      :meth:`observe_control`;
    - steps: :meth:`create_step`, :meth:`create_flow_step`,
      :meth:`transition_step`, :meth:`enrich_step_exit_status`,
      :meth:`commit_chunk`, :meth:`reserve_retry`, :meth:`get_step`,
      :meth:`component_states`;
    - partitions: :meth:`plan_partitions`, :meth:`restart_partitions`,
      :meth:`assign_partition`, :meth:`complete_partition`,
      :meth:`aggregate_partitions`, :meth:`partitions`,
      :meth:`get_partition`;
    - flows: :meth:`append_flow_decision`,
      :meth:`find_reusable_flow_decision`, :meth:`flow_decisions`.

    ``JobRepository(using=None, clock=None)``: ``using`` overrides the
    metadata alias, ``clock`` the source of timestamps (any object with
    ``now()`` returning an aware datetime; see
    :class:`~batchboard.repository.clock.ManualClock` for tests).
    """


__all__ = [
    "ACTIVE",
    "DEFAULT_START_LIMIT",
    "EMPTY_CONTEXT_SCHEMA",
    "FINISHED",
    "TRANSITIONS",
    "UNRESOLVED",
    "ChunkCounts",
    "Clock",
    "ComponentStateInput",
    "Definition",
    "ExecutionControl",
    "Failure",
    "FlowTarget",
    "PartitionEntry",
    "JobParameter",
    "JobRepository",
    "ManualClock",
    "RepositoryError",
    "StatePayload",
    "SystemClock",
    "pattern_matches",
    "truncate_ms",
    "verify_partition",
    *sorted(
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, RepositoryError)
    ),
]
