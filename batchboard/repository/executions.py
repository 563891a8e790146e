"""
Job executions: attempts, lifecycle transitions, ownership and stop control.

An attempt is created under a row lock on its instance (spec 2.2, 7.3), so
two launches of one instance serialise and the second sees the first's
STARTING attempt. Transitions are compare-and-swap on ``version`` (spec
2.1). Stop requests and owner claims touch ``updated_at`` but not
``version``: they are not lifecycle transitions, and a runtime holding the
version it last wrote must still be able to move on.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import DateTimeField, F, Q, Value
from django.db.models.functions import Greatest

from batchboard.models import DefinitionUpgrade, JobExecution, JobInstance
from batchboard.repository.cas import cas_transition, cas_update, check_version
from batchboard.repository.definitions import Definition, DefinitionsMixin
from batchboard.repository.errors import (
    AbandonedInstance,
    CompletedInstance,
    ConcurrentModification,
    ExecutionAlreadyActive,
    ExecutionOwned,
    ExecutionOwnershipNotAllowed,
    IncompatibleDefinition,
)
from batchboard.repository.instances import InstancesMixin, Parameters
from batchboard.repository.lifecycle import (
    ABANDONED,
    COMPLETED,
    FAILED,
    FINISHED,
    STARTED,
    STARTING,
    STOPPED,
    STOPPING,
    Failure,
)
from batchboard.repository.validation import check_bytes, check_name

#: The context every new execution and step starts with (spec 7.3).
EMPTY_CONTEXT_SCHEMA = "oxide_batch.empty.v1"
OWNER_TOKEN_BYTES = 16


@dataclass(frozen=True)
class ExecutionControl:
    """
    What a runtime learns when it observes its execution (spec 4.6).

    ``execution`` is the row after the observation (STOPPING if this
    observation honoured a stop request); ``owner_matches`` says whether the
    caller's token is the recorded owner; ``stop_requested`` whether a stop
    request is recorded.
    """

    execution: JobExecution
    owner_matches: bool
    stop_requested: bool

    @property
    def should_stop(self) -> bool:
        """Return True when the owner must stop at its next safe point."""
        return self.execution.status == STOPPING


def _check_token(token: object) -> bytes:
    return check_bytes(
        token, OWNER_TOKEN_BYTES, f"an owner token is exactly {OWNER_TOKEN_BYTES} bytes"
    )


class ExecutionsMixin(InstancesMixin, DefinitionsMixin):
    # -- reading --------------------------------------------------------------

    def get_execution(self, execution_id: int) -> JobExecution:
        """Return execution ``execution_id`` or raise :class:`JobExecutionNotFound`."""
        return self._row(JobExecution, execution_id)

    def latest_execution(self, instance_id: int) -> JobExecution | None:
        """Return the instance's highest attempt, or ``None`` before the first."""
        return (
            JobExecution.objects.using(self.alias)
            .filter(job_instance_id=instance_id)
            .order_by("-attempt")
            .first()
        )

    # -- attempts (spec 2.2, 7.3) ---------------------------------------------

    def launch(
        self,
        job_name: str,
        parameters: Parameters | None = None,
        definition: Definition | None = None,
    ) -> JobExecution:
        """
        Select or create the instance and create its next attempt, atomically.

        A first launch creates attempt 1; launching an instance whose latest
        attempt is FAILED or STOPPED restarts it. See :meth:`create_execution`
        for the errors.
        """
        with self.unit():
            instance = self._select_or_create_instance(job_name, parameters or {})
            return self._create_execution(instance.pk, definition)

    def create_execution(
        self, instance_id: int, definition: Definition | None = None
    ) -> JobExecution:
        """
        Create the next attempt of instance ``instance_id`` in STARTING.

        ``definition`` defaults to the legacy identity. Raises
        :class:`JobInstanceNotFound`, :class:`CompletedInstance`,
        :class:`AbandonedInstance`, :class:`ExecutionAlreadyActive` (the
        latest attempt is unresolved), :class:`IncompatibleDefinition` (the
        definition changed without a direct upgrade edge) and the
        registration errors of :meth:`register_definition`.
        """
        with self.unit():
            return self._create_execution(instance_id, definition)

    def _create_execution(
        self, instance_id: int, definition: Definition | None
    ) -> JobExecution:
        instance = self._row(JobInstance, instance_id, lock=True)
        latest = self.latest_execution(instance_id)
        if latest is not None:
            if latest.status == COMPLETED:
                raise CompletedInstance(instance_id)
            if latest.status == ABANDONED:
                raise AbandonedInstance(instance_id)
            if latest.status not in (STOPPED, FAILED):
                raise ExecutionAlreadyActive(instance_id, latest.pk, latest.status)
        row = self._ensure_definition(
            instance.job_name, definition or Definition.legacy()
        )
        upgrade_from = None
        if latest is not None and latest.definition_id != row.pk:
            edge = DefinitionUpgrade.objects.using(self.alias).filter(
                from_definition_id=latest.definition_id, to_definition_id=row.pk
            )
            if not edge.exists():
                raise IncompatibleDefinition(instance_id, latest.definition_id, row.pk)
            upgrade_from = latest.definition_id
        now = self.now()
        created = self._insert(
            JobExecution,
            job_instance_id=instance_id,
            definition_id=row.pk,
            upgrade_from_definition_id=upgrade_from,
            restart_of_execution_id=latest.pk if latest else None,
            attempt=(latest.attempt if latest else 0) + 1,
            status=STARTING,
            exit_code="UNKNOWN",
            parameters=instance.identifying_parameters,
            context_format=1,
            context_schema=EMPTY_CONTEXT_SCHEMA,
            context_schema_version=1,
            context_payload={},
            created_at=now,
            updated_at=now,
            version=0,
        )
        if created is not None:
            return created
        # Only a writer that skipped the instance lock can get here (the
        # one-unresolved index or the attempt number caught it): report what
        # that writer left, as the lock would have.
        current = self.latest_execution(instance_id)
        if current is not None and current.status not in FINISHED:
            raise ExecutionAlreadyActive(instance_id, current.pk, current.status)
        raise ConcurrentModification(f"job instance {instance_id}")

    # -- lifecycle (spec 2.1) ---------------------------------------------------

    def transition_execution(
        self,
        execution_id: int,
        expected_version: int,
        to_status: str,
        *,
        at: datetime | None = None,
        failure: Failure | None = None,
    ) -> JobExecution:
        """
        Move an execution to ``to_status`` if it is still at ``expected_version``.

        ``at`` defaults to the clock's now. Raises :class:`StaleVersion`,
        :class:`IllegalTransition`, :class:`RestartRequiresNewAttempt`,
        :class:`FailedTransitionMissingFailure`,
        :class:`InvalidTransitionTime` or :class:`JobExecutionNotFound`.
        """
        with self.unit():
            return cas_transition(
                self.get_execution(execution_id),
                using=self.alias,
                expected=expected_version,
                to_status=to_status,
                at=self.instant(at),
                failure=failure,
            )

    def enrich_execution_exit_status(
        self, execution_id: int, expected_version: int, exit_code: str
    ) -> JobExecution:
        """Set the exit code (and nothing else) by compare-and-swap."""
        return self._set_exit_code(
            JobExecution, execution_id, expected_version, exit_code
        )

    # -- ownership and stop control (spec 4.6, 7.7) -----------------------------

    def claim_execution(
        self, execution_id: int, expected_version: int, owner_token: bytes
    ) -> JobExecution:
        """
        Record ``owner_token`` (16 bytes) as the owner of a STARTING execution.

        Re-claiming with the same token is allowed. The token is evidence
        of which process runs the execution, never a lease. Raises
        :class:`StaleVersion`, :class:`ExecutionOwnershipNotAllowed` (not
        STARTING), :class:`ExecutionOwned` (another token) or
        :class:`JobExecutionNotFound`.
        """
        token = _check_token(owner_token)
        with self.unit():
            updated = (
                JobExecution.objects.using(self.alias)
                .filter(pk=execution_id, version=expected_version, status=STARTING)
                .filter(Q(owner_token__isnull=True) | Q(owner_token=token))
                .update(owner_token=token, updated_at=self._touched())
            )
            row = self.get_execution(execution_id)
            if updated == 1:
                return row
            check_version(row, expected_version)
            if row.status != STARTING:
                raise ExecutionOwnershipNotAllowed(execution_id, row.status)
            raise ExecutionOwned(execution_id)

    def request_stop(
        self, execution_id: int, expected_version: int, *, actor: str
    ) -> JobExecution:
        """
        Record a stop request on an execution (spec 4.6), without transitioning.

        Sets ``stop_requested_at`` (now) and ``stop_requested_by`` (``actor``)
        when the execution is still at ``expected_version``; a repeat
        overwrites both. The owning runtime sees the request through
        :meth:`observe_control`. This is the bare effect: the operator STOP
        action adds its guards and audit row around it.
        """
        check_name(actor, "actor")
        with self.unit():
            now = self.now()
            cas_update(
                JobExecution,
                self.alias,
                execution_id,
                expected_version,
                stop_requested_at=now,
                stop_requested_by=actor,
                updated_at=self._touched(now),
            )
            return self.get_execution(execution_id)

    def _touched(self, now: datetime | None = None) -> Greatest:
        """
        Return ``updated_at`` moved to now, never backwards.

        Claims and stop requests are not transitions: they leave a later
        ``updated_at`` a runtime wrote in place.
        """
        moment = Value(now or self.now(), output_field=DateTimeField())
        return Greatest(F("updated_at"), moment)

    def observe_control(
        self, execution_id: int, owner_token: bytes, *, at: datetime | None = None
    ) -> ExecutionControl:
        """
        Let the owning runtime observe stop requests on its execution.

        Locks the row and reads ``owner_token`` and ``stop_requested_at``.
        When a stop was requested, the token matches and the execution is
        STARTING or STARTED, it moves to STOPPING (a CAS transition at
        ``at``, default now). A runtime calls this at each chunk commit and
        between commits; without a live owner nothing transitions.
        """
        token = _check_token(owner_token)
        with self.unit():
            row = self._row(JobExecution, execution_id, lock=True)
            owner_matches = (
                row.owner_token is not None and bytes(row.owner_token) == token
            )
            stop_requested = row.stop_requested_at is not None
            if owner_matches and stop_requested and row.status in (STARTING, STARTED):
                row = cas_transition(
                    row,
                    using=self.alias,
                    expected=row.version,
                    to_status=STOPPING,
                    at=self.instant(at),
                    failure=None,
                )
            return ExecutionControl(row, owner_matches, stop_requested)
