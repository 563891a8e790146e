"""
The demo's operators: console actions on the seeder's clock.

STOP, ABANDON, RECOVER, HOLD, RELEASE_HOLD and the purge go through the
console's own service, :mod:`batchboard.actions`, as a
:class:`~batchboard.actions.ServiceActor` inside
:func:`~batchboard.actions.back_dated`: the guards, digests, audit rows and
deletions are the ones the console writes, only timed by the repository's
clock and written through its connection.

LAUNCH and RESTART are written here because neither the service nor the
repository offers them as audited requests: the console has no launch or
restart form (oxide-batch launches), and the repository provides only the
bare effects (:meth:`~batchboard.repository.JobRepository.launch`,
:meth:`~batchboard.repository.JobRepository.create_execution`). This module
adds the request digest of spec 4.2 and the audit row of 4.4 around them;
a rejection rolls the effect back and is recorded in its own transaction.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction

from batchboard import actions, digests
from batchboard.actions import ActionResult, Directive, RecoveryProposal, ServiceActor
from batchboard.actions import permissions as action_permissions
from batchboard.actions.envelope import validate_operation_id
from batchboard.digests import DefinitionArgument
from batchboard.models import JobExecution, OperatorRequest
from batchboard.repository import (
    AbandonedInstance,
    CompletedInstance,
    Definition,
    ExecutionAlreadyActive,
    IncompatibleDefinition,
    JobRepository,
    RepositoryError,
    StaleVersion,
)
from batchboard.vocabulary import (
    ABANDON,
    APPLIED,
    APPLY_PURGE,
    AUTHORIZATION_CLASSES,
    HOLD,
    LIFECYCLE,
    RECOVER,
    REJECTED,
    RELEASE_HOLD,
    STOP,
)


class Rejected(Exception):
    """A guard refused the request; carries the contract's rejection code."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass(frozen=True)
class Outcome:
    """The audit row of one LAUNCH or RESTART and, if applied, its execution."""

    request: OperatorRequest
    execution: JobExecution | None = None

    @property
    def applied(self) -> bool:
        return self.request.outcome_class == APPLIED


_REJECTIONS: tuple[tuple[type[RepositoryError], str], ...] = (
    (CompletedInstance, "INSTANCE_COMPLETED"),
    (AbandonedInstance, "INSTANCE_ABANDONED"),
    (ExecutionAlreadyActive, "EXECUTION_ALREADY_ACTIVE"),
    (IncompatibleDefinition, "INCOMPATIBLE_DEFINITION"),
    (StaleVersion, "OPTIMISTIC_CONFLICT"),
)


def _rejection_for(error: RepositoryError) -> str | None:
    for kind, code in _REJECTIONS:
        if isinstance(error, kind):
            return code
    return None


# The effect of a LAUNCH or RESTART: the new execution and the prior status.
_Started = tuple[JobExecution, str | None]


class Operator:
    """
    A demo operator: one service actor, one clock, its own operation ids.

    The actor holds every authorization class. Operation ids are
    ``<prefix>-<action>-<serial>``, unique per operator object; give each
    operator its own ``prefix``.
    """

    def __init__(
        self, repository: JobRepository, *, actor: str, prefix: str = "demo"
    ) -> None:
        self.repository = repository
        self.actor = ServiceActor(actor, AUTHORIZATION_CLASSES)
        self.prefix = prefix
        self._serial = itertools.count(1)

    @property
    def alias(self) -> str:
        return self.repository.alias

    def _operation_id(self, action: str) -> str:
        action = action.lower().replace("_", "-")
        return f"{self.prefix}-{action}-{next(self._serial):06d}"

    @contextmanager
    def _acting(self) -> Iterator[None]:
        with actions.back_dated(self.repository.now, using=self.alias):
            yield

    def _act(
        self, action: str, service: Callable[..., ActionResult], **arguments: Any
    ) -> ActionResult:
        """Run the console service's ``action`` as this operator, on its clock."""
        with self._acting():
            return service(
                user=self.actor, operation_id=self._operation_id(action), **arguments
            )

    # -- through the service -----------------------------------------------------

    def stop(self, execution_id: int, expected_version: int) -> ActionResult:
        """STOP: ask the owning runtime to stop (no transition here)."""
        return self._act(
            STOP,
            actions.stop_execution,
            execution_id=execution_id,
            expected_version=expected_version,
        )

    def abandon(
        self, execution_id: int, expected_version: int, reason: str
    ) -> ActionResult:
        """ABANDON: write off a STOPPED or FAILED execution for good."""
        return self._act(
            ABANDON,
            actions.abandon_execution,
            execution_id=execution_id,
            expected_version=expected_version,
            reason_code=reason,
        )

    def propose(self, execution_id: int) -> RecoveryProposal:
        """Return the recovery proposal as of the repository clock's moment."""
        with self._acting():
            return actions.propose(execution_id, as_of=self.repository.now())

    def recover(
        self,
        execution_id: int,
        *,
        expected_version: int,
        reason: str,
        directive: Directive,
        proposal: RecoveryProposal | None = None,
    ) -> ActionResult:
        """
        RECOVER: resolve an unresolved execution as FAILED or ABANDONED.

        ``proposal`` is the one the operator reviewed (taken now when
        omitted); its digest and unknown-commit marker go into the request.
        """
        reviewed = proposal or self.propose(execution_id)
        return self._act(
            RECOVER,
            actions.recover_execution,
            execution_id=execution_id,
            expected_version=expected_version,
            evidence_digest=reviewed.digest,
            unknown_commit=reviewed.evidence.unknown_commit,
            directive=directive,
            reason_code=reason,
        )

    def hold(self, instance_id: int, reason: str) -> ActionResult:
        """Place (or overwrite) a hold that keeps an instance out of purges."""
        return self._act(
            HOLD, actions.place_hold, instance_id=instance_id, reason_code=reason
        )

    def release_hold(self, instance_id: int, reason: str) -> ActionResult:
        """Release an instance's hold (audited even if none was placed)."""
        return self._act(
            RELEASE_HOLD,
            actions.release_hold,
            instance_id=instance_id,
            reason_code=reason,
        )

    def purge(
        self,
        job_name: str,
        *,
        reason: str,
        statuses: Iterable[str] | None = None,
        min_age_seconds: int = 2_592_000,
        batch: int = 1000,
    ) -> ActionResult:
        """Plan one purge batch of a job's old finished history and apply it."""
        with self._acting():
            plan = actions.plan_purge(
                user=self.actor,
                job_name=job_name,
                statuses=statuses,
                min_age_seconds=min_age_seconds,
                batch=batch,
            )
            return self._act(
                APPLY_PURGE,
                actions.apply_purge,
                criteria=plan.criteria,
                candidates=plan.candidates,
                plan_digest_hex=plan.digest_hex,
                reason_code=reason,
            )

    # -- written here: LAUNCH and RESTART -------------------------------------------

    def launch(
        self,
        job_name: str,
        parameters: Mapping[str, digests.JobParameter],
        definition: Definition,
    ) -> Outcome:
        """LAUNCH: select or create the instance and start its next attempt."""
        key = digests.instance_key(job_name, parameters)

        def effect() -> _Started:
            return self.repository.launch(job_name, parameters, definition), None

        # Launch rejections name neither instance nor execution (spec 4.4).
        return self._request(
            "LAUNCH", f"instance-key:{key.hex()}", definition, None, effect
        )

    def restart(self, instance_id: int, definition: Definition) -> Outcome:
        """RESTART: start the next attempt of an instance whose latest ended."""

        def effect() -> _Started:
            latest = self.repository.latest_execution(instance_id)
            if latest is None:
                raise Rejected("RESTART_WITHOUT_PRIOR_ATTEMPT")
            if latest.status == "UNKNOWN":
                raise Rejected("INVALID_STATE")
            execution = self.repository.create_execution(instance_id, definition)
            return execution, latest.status

        return self._request(
            "RESTART", f"instance:{instance_id}", definition, instance_id, effect
        )

    def _request(
        self,
        action: str,
        target: str,
        definition: Definition,
        rejected_instance: int | None,
        effect: Callable[[], _Started],
    ) -> Outcome:
        """Run a Lifecycle request's effect and audit it, or audit its rejection."""
        if not action_permissions.has_class(self.actor, LIFECYCLE):
            raise PermissionDenied(f"{action} needs the LIFECYCLE authorization class")
        digest = digests.request_digest(
            action=action,
            target=target,
            expected_version=None,
            reason_code=None,
            arguments=DefinitionArgument(definition.revision, definition.digest),
        )
        operation_id = validate_operation_id(self._operation_id(action))
        at = self.repository.now()

        def record(
            execution: JobExecution | None, prior: str | None, code: str | None
        ) -> OperatorRequest:
            return OperatorRequest.objects.using(self.alias).create(
                job_instance_id=(
                    execution.job_instance_id if execution else rejected_instance
                ),
                job_execution_id=execution.pk if execution else None,
                action=action,
                authorization_class=LIFECYCLE,
                operation_id=operation_id,
                actor_ref=self.actor.actor_ref,
                reason_code=None,
                request_digest=digest,
                observed_version=None,
                prior_status=prior,
                result_status="STARTING" if execution else None,
                outcome_class=REJECTED if code else APPLIED,
                rejection_code=code,
                requested_at=at,
            )

        try:
            with transaction.atomic(using=self.alias):
                execution, prior = effect()
                return Outcome(record(execution, prior, None), execution)
        except Rejected as rejected:
            code = rejected.code
        except RepositoryError as error:
            found = _rejection_for(error)
            if found is None:
                raise
            code = found
        with transaction.atomic(using=self.alias):
            return Outcome(record(None, None, code))
