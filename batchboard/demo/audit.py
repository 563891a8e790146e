"""
Operator requests, recovery decisions and retention actions for the demo.

The console's operator-action service is a separate piece of batchboard;
the demo needs its audit trail before that exists. This module writes the
same rows by the contract's rules and nothing more: the guards of spec 4.5
in their order, the request digest of 4.2, the audit row table of 4.4, the
recovery evidence and apply of 5.1 to 5.5, and the holds and purge of 6.1 to
6.3. Each call is one transaction; a guard rejection rolls the effect back
and records a REJECTED row in its own transaction, as oxide-batch does.
Effects on executions go through the job repository where it has them
(stop requests, transitions, launches); the recovery update and the purge
deletions are written here, by the contract's column rules.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connections, transaction
from django.db.models import Q

from batchboard import digests, schema
from batchboard.digests import (
    CheckpointDescriptor,
    DefinitionArgument,
    RecoveryArgument,
    RecoveryEvidence,
    StepEvidence,
)
from batchboard.models import (
    ComponentState,
    FlowDecision,
    JobDefinition,
    JobExecution,
    JobInstance,
    OperatorRequest,
    RecoveryDecision,
    RetentionAction,
    StepExecution,
    StepPartition,
)
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

UNRESOLVED = frozenset(schema.UNRESOLVED)


class Rejected(Exception):
    """A guard refused the request; carries the contract's rejection code."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass(frozen=True)
class Outcome:
    """The audit row written for one request and, if applied, what it did."""

    request: OperatorRequest
    execution: JobExecution | None = None

    @property
    def applied(self) -> bool:
        return self.request.outcome_class == "APPLIED"


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


class Operator:
    """
    An operator acting through the console: one actor, one clock.

    Operation ids are ``<prefix>-<action>-<serial>``, unique per operator
    object; give each operator its own ``prefix``.
    """

    def __init__(
        self, repository: JobRepository, *, actor: str, prefix: str = "demo"
    ) -> None:
        self.repository = repository
        self.actor = actor
        self.prefix = prefix
        self._serial = itertools.count(1)

    @property
    def alias(self) -> str:
        return self.repository.alias

    def _operation_id(self, action: str) -> str:
        return f"{self.prefix}-{action.lower()}-{next(self._serial):06d}"

    def _record(
        self,
        *,
        action: str,
        authorization_class: str,
        operation_id: str,
        reason: str | None,
        digest: bytes,
        observed_version: int | None,
        instance_id: int | None,
        execution_id: int | None,
        prior: str | None,
        result: str | None,
        rejection: str | None,
        at: datetime,
    ) -> OperatorRequest:
        return OperatorRequest.objects.using(self.alias).create(
            job_instance_id=instance_id,
            job_execution_id=execution_id,
            action=action,
            authorization_class=authorization_class,
            operation_id=operation_id,
            actor_ref=self.actor,
            reason_code=reason,
            request_digest=digest,
            observed_version=observed_version,
            prior_status=None if rejection else prior,
            result_status=None if rejection else result,
            outcome_class="REJECTED" if rejection else "APPLIED",
            rejection_code=rejection,
            requested_at=at,
        )

    def _reject(
        self,
        *,
        action: str,
        authorization_class: str,
        operation_id: str,
        reason: str | None,
        digest: bytes,
        observed_version: int | None,
        instance_id: int | None,
        execution_id: int | None,
        code: str,
        at: datetime,
    ) -> Outcome:
        with transaction.atomic(using=self.alias):
            row = self._record(
                action=action,
                authorization_class=authorization_class,
                operation_id=operation_id,
                reason=reason,
                digest=digest,
                observed_version=observed_version,
                instance_id=instance_id,
                execution_id=execution_id,
                prior=None,
                result=None,
                rejection=code,
                at=at,
            )
        return Outcome(row)

    # -- lifecycle actions ---------------------------------------------------------

    def launch(
        self,
        job_name: str,
        parameters: Mapping[str, digests.JobParameter],
        definition: Definition,
    ) -> Outcome:
        """LAUNCH: select or create the instance and start its next attempt."""
        key = digests.instance_key(job_name, parameters)
        digest = digests.request_digest(
            action="LAUNCH",
            target=f"instance-key:{key.hex()}",
            expected_version=None,
            reason_code=None,
            arguments=DefinitionArgument(definition.revision, definition.digest),
        )
        operation_id = self._operation_id("LAUNCH")
        at = self.repository.now()
        try:
            with transaction.atomic(using=self.alias):
                execution = self.repository.launch(job_name, parameters, definition)
                row = self._record(
                    action="LAUNCH",
                    authorization_class="LIFECYCLE",
                    operation_id=operation_id,
                    reason=None,
                    digest=digest,
                    observed_version=None,
                    instance_id=execution.job_instance_id,
                    execution_id=execution.pk,
                    prior=None,
                    result="STARTING",
                    rejection=None,
                    at=at,
                )
                return Outcome(row, execution)
        except RepositoryError as error:
            code = _rejection_for(error)
            if code is None:
                raise
        # Launch rejections name neither instance nor execution (spec 4.4).
        return self._reject(
            action="LAUNCH",
            authorization_class="LIFECYCLE",
            operation_id=operation_id,
            reason=None,
            digest=digest,
            observed_version=None,
            instance_id=None,
            execution_id=None,
            code=code,
            at=at,
        )

    def restart(self, instance_id: int, definition: Definition) -> Outcome:
        """RESTART: start the next attempt of an instance whose latest ended."""
        digest = digests.request_digest(
            action="RESTART",
            target=f"instance:{instance_id}",
            expected_version=None,
            reason_code=None,
            arguments=DefinitionArgument(definition.revision, definition.digest),
        )
        operation_id = self._operation_id("RESTART")
        at = self.repository.now()
        try:
            with transaction.atomic(using=self.alias):
                latest = self.repository.latest_execution(instance_id)
                if latest is None:
                    raise Rejected("RESTART_WITHOUT_PRIOR_ATTEMPT")
                if latest.status == "UNKNOWN":
                    raise Rejected("INVALID_STATE")
                execution = self.repository.create_execution(instance_id, definition)
                row = self._record(
                    action="RESTART",
                    authorization_class="LIFECYCLE",
                    operation_id=operation_id,
                    reason=None,
                    digest=digest,
                    observed_version=None,
                    instance_id=instance_id,
                    execution_id=execution.pk,
                    prior=latest.status,
                    result="STARTING",
                    rejection=None,
                    at=at,
                )
                return Outcome(row, execution)
        except Rejected as rejected:
            code = rejected.code
        except RepositoryError as error:
            code = _rejection_for(error) or ""
            if not code:
                raise
        return self._reject(
            action="RESTART",
            authorization_class="LIFECYCLE",
            operation_id=operation_id,
            reason=None,
            digest=digest,
            observed_version=None,
            instance_id=instance_id,
            execution_id=None,
            code=code,
            at=at,
        )

    def stop(self, execution_id: int, expected_version: int) -> Outcome:
        """STOP: ask the owning runtime to stop (no transition here)."""
        digest = digests.request_digest(
            action="STOP",
            target=f"execution:{execution_id}",
            expected_version=expected_version,
            reason_code=None,
        )
        operation_id = self._operation_id("STOP")
        at = self.repository.now()
        try:
            with transaction.atomic(using=self.alias):
                execution = self.repository.get_execution(execution_id)
                status = execution.status
                if status == "UNKNOWN":
                    raise Rejected("INVALID_STATE")
                if status in ("STARTING", "STARTED"):
                    execution = self.repository.request_stop(
                        execution_id, expected_version, actor=self.actor
                    )
                row = self._record(
                    action="STOP",
                    authorization_class="LIFECYCLE",
                    operation_id=operation_id,
                    reason=None,
                    digest=digest,
                    observed_version=expected_version,
                    instance_id=execution.job_instance_id,
                    execution_id=execution_id,
                    prior=status,
                    result=status,
                    rejection=None,
                    at=at,
                )
                return Outcome(row, execution)
        except Rejected as rejected:
            code = rejected.code
        except StaleVersion:
            code = "OPTIMISTIC_CONFLICT"
        return self._reject(
            action="STOP",
            authorization_class="LIFECYCLE",
            operation_id=operation_id,
            reason=None,
            digest=digest,
            observed_version=expected_version,
            instance_id=None,
            execution_id=execution_id,
            code=code,
            at=at,
        )

    def abandon(self, execution_id: int, expected_version: int, reason: str) -> Outcome:
        """ABANDON: write off a STOPPED or FAILED execution for good."""
        digest = digests.request_digest(
            action="ABANDON",
            target=f"execution:{execution_id}",
            expected_version=expected_version,
            reason_code=reason,
        )
        operation_id = self._operation_id("ABANDON")
        at = self.repository.now()
        try:
            with transaction.atomic(using=self.alias):
                execution = self.repository.get_execution(execution_id)
                prior = execution.status
                if prior in ("STOPPED", "FAILED", "UNKNOWN"):
                    if (
                        prior == "UNKNOWN"
                        and not RecoveryDecision.objects.using(self.alias)
                        .filter(job_execution_id=execution_id)
                        .exists()
                    ):
                        raise Rejected("UNRESOLVED_RECOVERY_REQUIRED")
                    execution = self.repository.transition_execution(
                        execution_id, expected_version, "ABANDONED", at=at
                    )
                elif prior != "ABANDONED":
                    raise Rejected("INVALID_STATE")
                row = self._record(
                    action="ABANDON",
                    authorization_class="DESTRUCTIVE",
                    operation_id=operation_id,
                    reason=reason,
                    digest=digest,
                    observed_version=expected_version,
                    instance_id=execution.job_instance_id,
                    execution_id=execution_id,
                    prior=prior,
                    result="ABANDONED",
                    rejection=None,
                    at=at,
                )
                return Outcome(row, execution)
        except Rejected as rejected:
            code = rejected.code
        except StaleVersion:
            code = "OPTIMISTIC_CONFLICT"
        return self._reject(
            action="ABANDON",
            authorization_class="DESTRUCTIVE",
            operation_id=operation_id,
            reason=reason,
            digest=digest,
            observed_version=expected_version,
            instance_id=None,
            execution_id=execution_id,
            code=code,
            at=at,
        )

    # -- recovery (spec 5) ---------------------------------------------------------

    def evidence(self, execution_id: int) -> RecoveryEvidence:
        """Take the recovery snapshot of spec 5.1 (a console is never the owner)."""
        execution = JobExecution.objects.using(self.alias).get(pk=execution_id)
        step = (
            StepExecution.objects.using(self.alias)
            .filter(job_execution_id=execution_id)
            .order_by("-id")
            .first()
        )
        latest: StepEvidence | None = None
        if step is not None:
            latest = StepEvidence(
                step.pk,
                step.status,
                CheckpointDescriptor(
                    step.checkpoint_format,
                    step.checkpoint_schema,
                    step.checkpoint_schema_version,
                    _stored_size(self.alias, step.pk),
                ),
            )
        manifest = (
            JobDefinition.objects.using(self.alias)
            .get(pk=execution.definition_id)
            .manifest
        )
        return RecoveryEvidence(
            execution_id=execution_id,
            status=execution.status,
            attempt=execution.attempt,
            version=execution.version,
            owner="ABSENT" if execution.owner_token is None else "OTHER_PROCESS",
            updated_at_ms=digests.epoch_ms(execution.updated_at),
            latest_step=latest,
            unknown_commit=(
                execution.status == "UNKNOWN"
                or execution.failure_category == "UNKNOWN_COMMIT"
                or (step is not None and step.status == "UNKNOWN")
            ),
            completed_partition=StepPartition.objects.using(self.alias)
            .filter(step_execution__job_execution_id=execution_id, status="COMPLETED")
            .exists(),
            committed_flow_decision=FlowDecision.objects.using(self.alias)
            .filter(job_execution_id=execution_id)
            .exists(),
            ambiguous_external_effect=manifest.get("delivery_mode", "ambiguous")
            != "atomic_same_resource",
        )

    def recover(
        self,
        execution_id: int,
        *,
        expected_version: int,
        reason: str,
        resulting: str,
        category: str | None = None,
        failure_id: int | None = None,
        evidence: RecoveryEvidence | None = None,
    ) -> Outcome:
        """
        RECOVER: resolve an unresolved execution as FAILED or ABANDONED.

        ``evidence`` is the proposal the operator reviewed (taken now when
        omitted); its digest goes into the request and the decision.
        """
        evidence = evidence or self.evidence(execution_id)
        evidence_digest = digests.evidence_digest(evidence)
        argument = RecoveryArgument(
            resulting,  # type: ignore[arg-type]
            evidence_digest,
            evidence.unknown_commit,
            category.lower() if category else None,
            failure_id,
        )
        digest = digests.request_digest(
            action="RECOVER",
            target=f"execution:{execution_id}",
            expected_version=expected_version,
            reason_code=reason,
            arguments=argument,
        )
        operation_id = self._operation_id("RECOVER")
        at = self.repository.now()
        try:
            with transaction.atomic(using=self.alias):
                execution = (
                    JobExecution.objects.using(self.alias)
                    .select_for_update()
                    .get(pk=execution_id)
                )
                if execution.version != expected_version:
                    raise Rejected("OPTIMISTIC_CONFLICT")
                if (
                    evidence.unknown_commit
                    and resulting == "FAILED"
                    and reason != "UNKNOWN_EFFECT"
                ):
                    raise Rejected("UNRESOLVED_RECOVERY_REQUIRED")
                prior = execution.status
                if prior not in UNRESOLVED:
                    raise Rejected("INVALID_STATE")
                updated = (
                    JobExecution.objects.using(self.alias)
                    .filter(pk=execution_id, version=expected_version)
                    .update(
                        status=resulting,
                        ended_at=at,
                        updated_at=at,
                        failure_category=category.upper() if category else None,
                        failure_id=failure_id if category else None,
                        version=expected_version + 1,
                    )
                )
                if updated != 1:
                    raise Rejected("OPTIMISTIC_CONFLICT")
                RecoveryDecision.objects.using(self.alias).create(
                    job_execution_id=execution_id,
                    execution_version=expected_version,
                    prior_status=prior,
                    resulting_status=resulting,
                    reason_code=reason,
                    operator_reference=self.actor,
                    evidence_digest=evidence_digest,
                    decided_at=at,
                )
                row = self._record(
                    action="RECOVER",
                    authorization_class="DESTRUCTIVE",
                    operation_id=operation_id,
                    reason=reason,
                    digest=digest,
                    observed_version=expected_version,
                    instance_id=execution.job_instance_id,
                    execution_id=execution_id,
                    prior=prior,
                    result=resulting,
                    rejection=None,
                    at=at,
                )
                return Outcome(
                    row, JobExecution.objects.using(self.alias).get(pk=execution_id)
                )
        except Rejected as rejected:
            code = rejected.code
        return self._reject(
            action="RECOVER",
            authorization_class="DESTRUCTIVE",
            operation_id=operation_id,
            reason=reason,
            digest=digest,
            observed_version=expected_version,
            instance_id=None,
            execution_id=execution_id,
            code=code,
            at=at,
        )

    # -- retention (spec 6) ----------------------------------------------------------

    def _retention(
        self,
        action: str,
        reason: str,
        instance_id: int | None,
        at: datetime,
        **extra: object,
    ) -> RetentionAction:
        return RetentionAction.objects.using(self.alias).create(
            job_instance_id=instance_id,
            action=action,
            operation_id=self._operation_id(action.replace("_", "-")),
            actor_ref=self.actor,
            reason_code=reason,
            outcome_class="APPLIED",
            applied_at=at,
            **extra,
        )

    def hold(self, instance_id: int, reason: str) -> RetentionAction:
        """Place (or overwrite) a hold that keeps an instance out of purges."""
        at = self.repository.now()
        with transaction.atomic(using=self.alias):
            JobInstance.objects.using(self.alias).filter(pk=instance_id).update(
                hold_actor=self.actor, hold_reason=reason, hold_placed_at=at
            )
            return self._retention("HOLD", reason, instance_id, at)

    def release_hold(self, instance_id: int, reason: str) -> RetentionAction:
        """Release an instance's hold (a no-op on an unheld instance, still audited)."""
        at = self.repository.now()
        with transaction.atomic(using=self.alias):
            JobInstance.objects.using(self.alias).filter(pk=instance_id).update(
                hold_actor=None, hold_reason=None, hold_placed_at=None
            )
            return self._retention("RELEASE_HOLD", reason, instance_id, at)

    def purge(
        self,
        job_name: str,
        *,
        reason: str,
        statuses: Iterable[str] = schema.FINISHED,
        min_age_seconds: int = 2_592_000,
        batch: int = 1000,
    ) -> RetentionAction:
        """Plan and apply one purge batch of a job's old finished executions."""
        wanted = [status for status in schema.FINISHED if status in set(statuses)]
        at = self.repository.now()
        threshold = at - timedelta(seconds=min_age_seconds)
        with transaction.atomic(using=self.alias):
            unresolved_instances = (
                JobExecution.objects.using(self.alias)
                .filter(status__in=schema.UNRESOLVED)
                .values("job_instance_id")
            )
            candidates = list(
                JobExecution.objects.using(self.alias)
                .filter(
                    job_instance__job_name=job_name,
                    job_instance__hold_actor__isnull=True,
                    status__in=wanted,
                    updated_at__lt=threshold,
                )
                .exclude(job_instance_id__in=unresolved_instances)
                .order_by("job_instance_id", "id")
                .values_list("job_instance_id", "id", "version")[:batch]
            )
            plan = digests.plan_digest(
                job_name=job_name,
                statuses=wanted,
                min_age_seconds=min_age_seconds,
                batch=batch,
                candidates=candidates,
            )
            counts = self._delete(
                [execution for _, execution, _ in candidates],
                {instance for instance, _, _ in candidates},
            )
            return self._retention(
                "APPLY_PURGE",
                reason,
                None,
                at,
                plan_digest=plan,
                batch_bound=batch,
                **counts,
            )

    def _delete(self, executions: list[int], instances: set[int]) -> dict[str, int]:
        """Delete candidate executions and what hangs off them (spec 6.3 step 3)."""
        db = self.alias
        steps = StepExecution.objects.using(db).filter(job_execution_id__in=executions)
        step_ids = list(steps.values_list("id", flat=True))
        decisions = FlowDecision.objects.using(db).filter(
            job_execution_id__in=executions
        )
        FlowDecision.objects.using(db).filter(
            reused_decision__job_execution_id__in=executions
        ).exclude(job_execution_id__in=executions).update(reused_decision=None)
        counts = {"deleted_flow_decisions": decisions.count()}
        # Reuse links inside the candidates go first, so rows can be deleted
        # in any order.
        decisions.update(reused_decision=None)
        decisions.delete()
        counts["deleted_recovery_decisions"] = (
            RecoveryDecision.objects.using(db)
            .filter(job_execution_id__in=executions)
            .delete()[0]
        )
        requests = (
            OperatorRequest.objects.using(db)
            .filter(job_execution_id__in=executions)
            .delete()[0]
        )
        counts["deleted_step_partitions"] = (
            StepPartition.objects.using(db)
            .filter(
                Q(step_execution_id__in=step_ids)
                | Q(worker_step_execution_id__in=step_ids)
            )
            .delete()[0]
        )
        ComponentState.objects.using(db).filter(step_execution_id__in=step_ids).delete()
        counts["deleted_step_executions"] = steps.delete()[0]
        # A restart chain inside the batch: newest attempt first, so no row
        # is deleted while a remaining one still restarts it.
        deleted = 0
        for execution_id in sorted(executions, reverse=True):
            deleted += (
                JobExecution.objects.using(db).filter(pk=execution_id).delete()[0]
            )
        counts["deleted_job_executions"] = deleted
        emptied = [
            instance
            for instance in instances
            if not JobExecution.objects.using(db)
            .filter(job_instance_id=instance)
            .exists()
        ]
        requests += (
            OperatorRequest.objects.using(db)
            .filter(job_execution_id__isnull=True, job_instance_id__in=emptied)
            .delete()[0]
        )
        counts["deleted_operator_requests"] = requests
        RetentionAction.objects.using(db).filter(job_instance_id__in=emptied).update(
            job_instance=None
        )
        counts["deleted_job_instances"] = (
            JobInstance.objects.using(db).filter(pk__in=emptied).delete()[0]
        )
        return counts


def _stored_size(alias: str, step_id: int) -> int:
    """Return the checkpoint payload's stored size (``pg_column_size`` on PostgreSQL)."""
    connection = connections[alias]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT pg_column_size(checkpoint_payload) FROM ob_step_execution "
                "WHERE id = %s",
                [step_id],
            )
        else:
            cursor.execute(
                'SELECT length(CAST("checkpoint_payload" AS BLOB)) FROM ob_step_execution '
                "WHERE id = %s",
                [step_id],
            )
        (size,) = cursor.fetchone()
    return int(size)
