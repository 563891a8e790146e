"""
Purges (spec 6.2, 6.3): the purge plan and APPLY_PURGE.

A purge's audit row is replayed as a hold's is
(:mod:`batchboard.actions.holds`).

The restart-chain rule (spec 11.2)
    A purge plan never contains an execution that a surviving execution
    still references: a candidate is left out when an execution outside the
    plan restarts it (``restart_of_execution_id``), when a flow decision of
    an execution outside the plan names one of its steps as source
    (``source_step_execution_id``), or when a partition under a step outside
    the plan names one of its steps as worker (``worker_step_execution_id``).
    Leaving one out can make another referenced, so the rule is applied
    until nothing changes. A restart chain is therefore purged only when
    every execution of it qualifies in the same plan; otherwise its older
    part waits. Decisions reused by surviving decisions do not block: their
    ``reused_decision_id`` is cleared wherever they sit, as oxide-batch
    does. The plan page lists what the rule left out. Applying re-checks the
    rule inside the transaction, so an apply never fails half-way on a
    foreign key.

The survey applies the batch bound before the rule, so a plan may hold
fewer executions than its batch; the next plan picks up where it stopped.
Ages are measured against this host's clock, as oxide-batch measures them
against its own (spec 10).

Apply re-validates every candidate under row locks (instances first, so a
concurrent restart or hold waits): the same version, status in the set,
still older than the minimum age, the instance unheld and without an
unresolved execution, and the rule above. Any difference deletes nothing,
records nothing and raises :class:`PlanStale`. The age and job name are
re-checked too (oxide-batch does not), so a hand-made candidate list cannot
purge anything the plan's inputs would not select.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import (
    DateTimeField,
    Exists,
    IntegerField,
    OuterRef,
    TextField,
)
from django.db.models.expressions import RawSQL
from django.utils.translation import gettext_lazy as _

from batchboard import db, vocabulary
from batchboard.actions import envelope, permissions, unit
from batchboard.actions.holds import COUNT_FIELDS, _probe, _retention_result
from batchboard.actions.results import (
    ActionResult,
    InvalidRequest,
    PlanStale,
)
from batchboard.digests import ParameterError, plan_digest, validate_name
from batchboard.expressions import Unindexed
from batchboard.models import (
    JobExecution,
    JobInstance,
    RetentionAction,
)
from batchboard.vocabulary import APPLIED, parse_whole_number

MIN_AGE_SECONDS = 3600
# A bound of batchboard's own: older thresholds fall outside the calendar
# Python can compute with, and nothing that old is in a metadata store.
MAX_AGE_SECONDS = 100 * 365 * 24 * 3600
DEFAULT_AGE_SECONDS = 30 * 24 * 3600
MAX_BATCH = 1000
DEFAULT_BATCH = 1000


# -- purge plan (spec 6.2) --------------------------------------------------------


@dataclass(frozen=True)
class PurgeCriteria:
    """The validated inputs of a purge plan."""

    job_name: str
    statuses: tuple[str, ...]
    min_age_seconds: int
    batch: int

    @classmethod
    def validated(
        cls,
        *,
        job_name: object,
        statuses: Iterable[str] | None = None,
        min_age_seconds: object = DEFAULT_AGE_SECONDS,
        batch: object = DEFAULT_BATCH,
    ) -> PurgeCriteria:
        try:
            name = validate_name(str(job_name or ""), what="job name")
        except ParameterError as error:
            raise InvalidRequest(_("Enter a job name of 1 to 128 bytes.")) from error
        wanted = set(statuses) if statuses is not None else set(vocabulary.FINISHED)
        if not wanted:
            raise InvalidRequest(_("Pick at least one finished status."))
        if not wanted <= set(vocabulary.FINISHED):
            raise InvalidRequest(_("Only finished statuses can be purged."))
        age, size = envelope.whole_numbers(
            min_age_seconds,
            batch,
            invalid=_("The age and batch must be whole numbers."),
        )
        if not MIN_AGE_SECONDS <= age <= MAX_AGE_SECONDS:
            raise InvalidRequest(
                _("The minimum age is one hour (3600 s) to a hundred years.")
            )
        if not 1 <= size <= MAX_BATCH:
            raise InvalidRequest(_("The batch is 1 to 1000 executions."))
        ordered = tuple(s for s in vocabulary.FINISHED if s in wanted)
        return cls(name, ordered, age, size)


@dataclass(frozen=True)
class PurgeFacts:
    """A candidate as the review shows it (not part of the plan's digest)."""

    status: str
    ended_at: datetime | None
    updated_at: datetime


@dataclass(frozen=True)
class PurgePlan:
    """
    A reviewed purge: its criteria, candidates, counts and digest.

    ``candidates`` are ``(instance id, execution id, version)`` in
    ``(instance, execution)`` order; ``left_out`` the execution ids the
    restart-chain rule kept; ``counts`` the rows per table that would go,
    keyed like the audit row's columns.
    """

    criteria: PurgeCriteria
    candidates: tuple[tuple[int, int, int], ...]
    left_out: tuple[int, ...]
    counts: dict[str, int]
    digest: bytes
    #: What the review shows of each candidate, by execution id, read by
    #: the survey's own statement: its status, end and last update.
    facts: dict[int, PurgeFacts] = field(default_factory=dict)
    #: The clock the survey measured ages against.
    at: datetime | None = None

    @property
    def digest_hex(self) -> str:
        return self.digest.hex()

    def candidates_text(self) -> str:
        """Return the candidates as ``instance:execution:version`` words."""
        return " ".join(f"{i}:{e}:{v}" for i, e, v in self.candidates)


def parse_candidates(text: object) -> tuple[tuple[int, int, int], ...]:
    """Parse :meth:`PurgePlan.candidates_text` back, refusing anything else."""
    out = []
    for word in str(text or "").split():
        numbers = [parse_whole_number(part) for part in word.split(":")]
        if len(numbers) != 3 or None in numbers:
            raise InvalidRequest(_("The plan's candidate list is malformed."))
        instance, execution, version = (int(n or 0) for n in numbers)
        out.append((instance, execution, version))
    if len(out) > MAX_BATCH:
        raise InvalidRequest(_("The plan's candidate list is too long."))
    return tuple(out)


def _threshold(criteria: PurgeCriteria, at: datetime) -> datetime:
    return at - timedelta(seconds=criteria.min_age_seconds)


def _survey(
    criteria: PurgeCriteria, at: datetime
) -> list[tuple[int, int, int, str, datetime | None, datetime]]:
    """
    Return ``(instance, execution, version)`` the survey selects, by batch,
    each followed by the status, end and last update the review shows.

    The statement walks the job's instances oldest first off the
    ``(job_name, id DESC)`` index and each instance's executions off
    ``(job_instance_id, attempt DESC)``, so it stops after the batch instead
    of reading every execution of the statuses: it is ordered by the joined
    instance's id (the same order as the execution's copy of it, but one
    the nested loop yields), and on SQLite, which has no statistics to
    weigh them by, the status and update time are compared unindexed.
    """
    unresolved_siblings = JobExecution.objects.using(db.alias()).filter(
        job_instance_id=OuterRef("job_instance_id"), status__in=vocabulary.UNRESOLVED
    )
    table = JobInstance._meta.db_table
    return list(
        JobExecution.objects.using(db.alias())
        .alias(
            bb_status=Unindexed("status", output_field=TextField()),
            bb_updated=Unindexed("updated_at", output_field=DateTimeField()),
            bb_instance=RawSQL(f'"{table}"."id"', (), output_field=IntegerField()),
        )
        .filter(
            job_instance__job_name=criteria.job_name,
            job_instance__hold_actor__isnull=True,
            bb_status__in=criteria.statuses,
            bb_updated__lt=_threshold(criteria, at),
        )
        .exclude(Exists(unresolved_siblings))
        .order_by("bb_instance", "id")
        .values_list(
            "job_instance_id", "id", "version", "status", "ended_at", "updated_at"
        )[: criteria.batch]
    )


def _referenced(planned: set[int], instances: Iterable[int]) -> set[int]:
    """
    Return the planned executions that an execution outside ``planned`` needs.

    Only the executions of the planned ones' ``instances`` are searched:
    the repository writes a restart, a reused decision's source step and a
    partition's worker within one instance (spec 2.2, 7), and none of the
    referencing columns has an index in oxide-batch's schema, so a search of
    the whole table would read every execution, decision or partition. A
    row another writer linked across instances is still caught: deleting
    what it references fails its foreign key and rolls the purge back.
    """
    if not planned:
        return set()
    ids = sorted(planned)
    owners, owned = db.among("x.job_instance_id", sorted(set(instances)))
    outside, beside = db.among("x.id", ids)
    statements = (
        # An execution outside the plan restarts a planned one.
        ("x.restart_of_execution_id", "", "x.restart_of_execution_id"),
        # A decision outside the plan names a planned execution's step.
        (
            "s.job_execution_id",
            " JOIN ob_flow_decision d ON d.job_execution_id = x.id"
            " JOIN ob_step_execution s ON s.id = d.source_step_execution_id",
            "s.job_execution_id",
        ),
        # A partition under a step outside the plan names a planned worker.
        (
            "w.job_execution_id",
            " JOIN ob_step_execution s ON s.job_execution_id = x.id"
            " JOIN ob_step_partition p ON p.step_execution_id = s.id"
            " JOIN ob_step_execution w ON w.id = p.worker_step_execution_id",
            "w.job_execution_id",
        ),
    )
    branches = []
    params: list[Any] = []
    for column, joins, target in statements:
        planned_target, targets = db.among(target, ids)
        branches.append(
            f"SELECT {column} FROM ob_job_execution x{joins} WHERE {owners}"
            f" AND NOT ({outside}) AND {planned_target}"
        )
        params += owned + beside + targets
    # One statement, one round trip: each branch starts from the planned
    # instances' executions on (job_instance_id, attempt DESC).
    with db.connection().cursor() as cursor:
        cursor.execute(" UNION ALL ".join(branches), params)
        return {int(row[0]) for row in cursor.fetchall()}


def _apply_chain_rule(
    planned: set[int], instances: Iterable[int]
) -> tuple[set[int], set[int]]:
    """Drop referenced candidates until none is left; return (kept, left out)."""
    kept = set(planned)
    owners = sorted(set(instances))
    while True:
        blocked = _referenced(kept, owners)
        if not blocked:
            return kept, planned - kept
        kept -= blocked


def _count_rows(executions: Sequence[int], instances: Sequence[int]) -> dict[str, int]:
    """Count the rows a purge of ``executions`` deletes, per audit column."""
    counts = dict.fromkeys(COUNT_FIELDS, 0)
    if not executions:
        return counts
    planned, ids = db.among("job_execution_id", executions)
    steps = f"SELECT id FROM ob_step_execution WHERE {planned}"
    statements = {
        "deleted_flow_decisions": (
            f"SELECT COUNT(*) FROM ob_flow_decision WHERE {planned}"
        ),
        "deleted_recovery_decisions": (
            f"SELECT COUNT(*) FROM ob_recovery_decision WHERE {planned}"
        ),
        "deleted_step_partitions": (
            f"SELECT COUNT(*) FROM ob_step_partition WHERE step_execution_id IN ({steps})"
        ),
        "deleted_step_executions": (
            f"SELECT COUNT(*) FROM ob_step_execution WHERE {planned}"
        ),
    }
    with db.connection().cursor() as cursor:
        for name, sql in statements.items():
            cursor.execute(sql, ids)
            counts[name] = int(cursor.fetchone()[0])
        emptied = _emptied(cursor, executions, instances)
        cursor.execute(f"SELECT COUNT(*) FROM ob_operator_request WHERE {planned}", ids)
        requests = int(cursor.fetchone()[0])
        if emptied:
            owners, owned = db.among("job_instance_id", emptied)
            cursor.execute(
                "SELECT COUNT(*) FROM ob_operator_request WHERE job_execution_id IS NULL"
                f" AND {owners}",
                owned,
            )
            requests += int(cursor.fetchone()[0])
    counts["deleted_operator_requests"] = requests
    counts["deleted_job_executions"] = len(executions)
    counts["deleted_job_instances"] = len(emptied)
    return counts


def _emptied(
    cursor: Any, executions: Sequence[int], instances: Sequence[int]
) -> list[int]:
    """Return the instances that have no execution outside ``executions``."""
    if not instances:
        return []
    owners, owned = db.among("i.id", instances)
    planned, ids = db.among("x.id", executions)
    cursor.execute(
        f"SELECT i.id FROM ob_job_instance i WHERE {owners}"
        " AND NOT EXISTS (SELECT 1 FROM ob_job_execution x"
        f" WHERE x.job_instance_id = i.id AND NOT ({planned}))"
        " ORDER BY i.id",
        owned + ids,
    )
    return [int(row[0]) for row in cursor.fetchall()]


def plan_purge(
    *,
    user: Any,
    job_name: object,
    statuses: Iterable[str] | None = None,
    min_age_seconds: object = DEFAULT_AGE_SECONDS,
    batch: object = DEFAULT_BATCH,
) -> PurgePlan:
    """Survey what a purge would delete (Read); change nothing."""
    permissions.require(user, vocabulary.PLAN_PURGE)
    criteria = PurgeCriteria.validated(
        job_name=job_name,
        statuses=statuses,
        min_age_seconds=min_age_seconds,
        batch=batch,
    )
    at = db.now()
    with transaction.atomic(using=db.alias()):
        read = _survey(criteria, at)
        surveyed = [(i, e, v) for i, e, v, *_shown in read]
        kept, left_out = _apply_chain_rule(
            {e for _i, e, _v in surveyed}, (i for i, _e, _v in surveyed)
        )
        candidates = tuple((i, e, v) for i, e, v in surveyed if e in kept)
        counts = _count_rows(
            [e for _i, e, _v in candidates], sorted({i for i, _e, _v in candidates})
        )
    return PurgePlan(
        criteria=criteria,
        candidates=candidates,
        left_out=tuple(sorted(left_out)),
        counts=counts,
        digest=_digest(criteria, candidates),
        facts={
            e: PurgeFacts(status, ended_at, updated_at)
            for _i, e, _v, status, ended_at, updated_at in read
            if e in kept
        },
        at=at,
    )


def _digest(
    criteria: PurgeCriteria, candidates: Iterable[tuple[int, int, int]]
) -> bytes:
    return plan_digest(
        job_name=criteria.job_name,
        statuses=criteria.statuses,
        min_age_seconds=criteria.min_age_seconds,
        batch=criteria.batch,
        candidates=candidates,
    )


# -- purge apply (spec 6.3) -------------------------------------------------------


def _revalidate(
    criteria: PurgeCriteria, candidates: Sequence[tuple[int, int, int]], at: datetime
) -> None:
    """Lock the plan's rows and raise PlanStale unless it still holds."""
    using = db.alias()
    instances = sorted({i for i, _e, _v in candidates})
    executions = [e for _i, e, _v in candidates]
    locked_instances = {
        row.pk: row
        for row in JobInstance.objects.using(using)
        .select_for_update()
        .only("id", "job_name", "hold_actor")
        .filter(pk__in=instances)
        .order_by("pk")
    }
    # Executions are not locked here (the retention role may delete them
    # but not update them, and FOR UPDATE needs UPDATE): their deletion
    # below compares the version instead, and a mismatch rolls back all.
    rows = {
        row.pk: row
        for row in JobExecution.objects.using(using)
        .only("id", "job_instance_id", "status", "version", "updated_at")
        .filter(pk__in=executions)
    }
    threshold = _threshold(criteria, at)
    for instance_id, execution_id, version in candidates:
        instance = locked_instances.get(instance_id)
        row = rows.get(execution_id)
        if instance is None or row is None or row.job_instance_id != instance_id:
            raise PlanStale(_("execution #%(id)s is gone.") % {"id": execution_id})
        if instance.hold_actor is not None:
            raise PlanStale(_("instance #%(id)s is now held.") % {"id": instance_id})
        if (
            row.version != version
            or row.status not in criteria.statuses
            or instance.job_name != criteria.job_name
            or not row.updated_at < threshold
        ):
            raise PlanStale(
                _("execution #%(id)s changed since the plan.") % {"id": execution_id}
            )
    # Any one will do for the message; no order, so no sort.
    running = list(
        JobExecution.objects.using(using)
        .filter(job_instance_id__in=instances, status__in=vocabulary.UNRESOLVED)
        .order_by()
        .values_list("id", flat=True)[:1]
    )
    if running:
        (unresolved,) = running
        raise PlanStale(
            _("execution #%(id)s of a planned instance is running.")
            % {"id": unresolved}
        )
    if _referenced(set(executions), instances):
        raise PlanStale(_("a newer execution now references a planned one."))


def _delete(candidates: Sequence[tuple[int, int, int]]) -> dict[str, int]:
    """Delete in the order of spec 6.3 and return the counts actually deleted."""
    counts = dict.fromkeys(COUNT_FIELDS, 0)
    if not candidates:
        return counts
    instances = sorted({i for i, _e, _v in candidates})
    executions = [e for _i, e, _v in candidates]
    planned, ids = db.among("job_execution_id", executions)
    steps = f"SELECT id FROM ob_step_execution WHERE {planned}"
    with db.connection().cursor() as cursor:

        def run(sql: str, params: list[Any]) -> int:
            cursor.execute(sql, params)
            return int(cursor.rowcount)

        # (1) A surviving decision that reused a planned one keeps its own
        # row and loses the citation, in whichever instance it sits, as
        # oxide-batch's apply does (spec 6.3). SQLite finds the citing rows
        # on its embedded index of the column; PostgreSQL has none and reads
        # the table once, where the foreign-key check of the delete below
        # reads it once per deleted decision (docs/benchmarks.md).
        cited = (
            "UPDATE ob_flow_decision SET reused_decision_id = NULL"
            " WHERE reused_decision_id IN (SELECT id FROM ob_flow_decision"
            f" WHERE {planned})"
        )
        if db.connection().vendor == "sqlite":
            # SQLite checks RESTRICT row by row, so a planned decision citing
            # another is cleared too before the delete trips over it.
            run(cited, ids)
        else:
            run(f"{cited} AND NOT ({planned})", ids + ids)
        counts["deleted_flow_decisions"] = run(
            f"DELETE FROM ob_flow_decision WHERE {planned}", ids
        )
        counts["deleted_recovery_decisions"] = run(
            f"DELETE FROM ob_recovery_decision WHERE {planned}", ids
        )
        requests = run(f"DELETE FROM ob_operator_request WHERE {planned}", ids)
        counts["deleted_step_partitions"] = run(
            f"DELETE FROM ob_step_partition WHERE step_execution_id IN ({steps})", ids
        )
        # Component state is deleted but not counted (the audit row has no
        # column for it).
        run(f"DELETE FROM ob_component_state WHERE step_execution_id IN ({steps})", ids)
        counts["deleted_step_executions"] = run(
            f"DELETE FROM ob_step_execution WHERE {planned}", ids
        )
        if db.connection().vendor == "sqlite":
            # SQLite checks RESTRICT row by row, so a restart chain deleted in
            # one statement trips over itself; PostgreSQL checks at the end
            # of the statement (and the retention role may not update this
            # column there).
            restarts, chain = db.among("id", executions)
            run(
                "UPDATE ob_job_execution SET restart_of_execution_id = NULL"
                f" WHERE {restarts}",
                chain,
            )
        # Compare-and-delete: an execution whose version moved since the
        # re-validation is not deleted, and the short count rolls back the
        # whole purge. The ids alone first: SQLite reads the whole table
        # for a row value compared with a VALUES list.
        pairs = ", ".join(["(%s, %s)"] * len(candidates))
        rows, row_ids = db.among("id", executions)
        deleted = run(
            f"DELETE FROM ob_job_execution WHERE {rows}"
            f" AND (id, version) IN (VALUES {pairs})",
            row_ids + [value for _i, e, v in candidates for value in (e, v)],
        )
        if deleted != len(candidates):
            raise PlanStale(_("an execution changed while the purge ran."))
        counts["deleted_job_executions"] = deleted
        emptied = _emptied(cursor, executions, instances)
        if emptied:
            gone, held = db.among("job_instance_id", emptied)
            requests += run(
                "DELETE FROM ob_operator_request WHERE job_execution_id IS NULL"
                f" AND {gone}",
                held,
            )
            run(
                f"UPDATE ob_retention_action SET job_instance_id = NULL WHERE {gone}",
                held,
            )
            emptied_ids, kept = db.among("id", emptied)
            counts["deleted_job_instances"] = run(
                f"DELETE FROM ob_job_instance WHERE {emptied_ids}", kept
            )
        counts["deleted_operator_requests"] = requests
    return counts


def apply_purge(
    *,
    user: Any,
    criteria: PurgeCriteria,
    candidates: Sequence[tuple[int, int, int]],
    plan_digest_hex: str,
    reason_code: str,
    operation_id: str,
) -> ActionResult:
    """
    Delete a reviewed plan's history (Destructive), or nothing at all.

    ``plan_digest_hex`` is the digest the operator reviewed; it must match
    the criteria and candidates submitted with it.
    """
    permissions.require(user, vocabulary.APPLY_PURGE)
    reason = envelope.validate_reason(reason_code, vocabulary.APPLY_PURGE)
    op = envelope.validate_operation_id(operation_id)
    try:
        reviewed = bytes.fromhex(str(plan_digest_hex).strip().lower())
    except ValueError as error:
        raise InvalidRequest(_("The plan digest must be 64 hex digits.")) from error
    if len(reviewed) != 32:
        raise InvalidRequest(_("The plan digest must be 64 hex digits."))
    if len(candidates) > criteria.batch:
        raise InvalidRequest(_("The plan has more candidates than its batch."))
    if _digest(criteria, candidates) != reviewed:
        raise InvalidRequest(
            _("The plan digest does not match the plan submitted with it.")
        )
    expected = {
        "reason_code": reason,
        "plan_digest": reviewed,
        "batch_bound": criteria.batch,
    }
    with unit.writing(db.RETENTION):
        return _purge_protocol(
            user, criteria, candidates, reviewed, reason, op, expected
        )


def _purge_protocol(
    user: Any,
    criteria: PurgeCriteria,
    candidates: Sequence[tuple[int, int, int]],
    reviewed: bytes,
    reason: str,
    op: str,
    expected: dict[str, Any],
) -> ActionResult:
    actor = envelope.actor_ref_for(user)

    def apply(at: datetime) -> ActionResult:
        _revalidate(criteria, candidates, at)
        counts = _delete(candidates)
        row = RetentionAction.objects.using(db.alias()).create(
            job_instance_id=None,
            action=vocabulary.APPLY_PURGE,
            operation_id=op,
            actor_ref=actor,
            reason_code=reason,
            plan_digest=reviewed,
            batch_bound=criteria.batch,
            outcome_class=APPLIED,
            applied_at=at,
            **counts,
        )
        return _retention_result(row, APPLIED, changed=bool(candidates))

    def reprobe() -> ActionResult | None:
        return _probe(vocabulary.APPLY_PURGE, op, **expected)

    try:
        return unit.decide(op, reprobe, apply)
    except PlanStale:
        # A concurrent submission of the same form may have purged the
        # plan first: then this one is its replay, not a stale plan.
        replay = reprobe()
        if replay is not None:
            return replay
        raise
