"""
Recovery proposals (spec 5.1 to 5.3): evidence, staleness and its digest.

The evidence is read in one statement without a lock, timed by the database
server's clock (``clock_timestamp()`` on PostgreSQL), so neither the web
host's clock nor request latency decides what is stale. batchboard is never
the owner of an execution: a recorded owner token is always another
process's (``OTHER_PROCESS``).

A writer replaying history (the demo seeder, inside
:func:`batchboard.db.back_dated`) decides at a past moment. Its
proposal is measured ``as_of`` that moment, which must not be later than
the server's clock: an execution idle for longer than the threshold at an
earlier moment is idle for longer still by the server's clock, so ``as_of``
can only withhold a verdict the server's time would give, never grant one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext_lazy as _

from batchboard import conf, db, spans, vocabulary
from batchboard.actions.results import InvalidRequest, TargetNotFound
from batchboard.digests import (
    CheckpointDescriptor,
    RecoveryEvidence,
    StepEvidence,
    epoch_ms,
    evidence_digest,
)
from batchboard.repository.lifecycle import UNKNOWN

MIN_STALE_SECONDS = 60
MAX_STALE_SECONDS = 24 * 3600

CANDIDATE = "CANDIDATE"
NOT_STALE = "NOT_STALE"
NOT_RECOVERABLE = "NOT_RECOVERABLE"
CLOCK_EVIDENCE_UNUSABLE = "CLOCK_EVIDENCE_UNUSABLE"

_SQL = """
SELECT e.id, e.status, e.attempt, e.version, e.owner_token IS NOT NULL,
       {updated_ms}, {server_ms},
       (e.status = 'UNKNOWN'
        OR COALESCE(e.failure_category = 'UNKNOWN_COMMIT', FALSE)
        OR COALESCE(s.status = 'UNKNOWN', FALSE)),
       s.id, s.status, s.checkpoint_format, s.checkpoint_schema,
       s.checkpoint_schema_version, {checkpoint_bytes},
       EXISTS (SELECT 1 FROM ob_step_partition p
               JOIN ob_step_execution ps ON ps.id = p.step_execution_id
               WHERE ps.job_execution_id = e.id AND p.status = 'COMPLETED'),
       EXISTS (SELECT 1 FROM ob_flow_decision f WHERE f.job_execution_id = e.id),
       {ambiguous}
  FROM ob_job_execution e
  JOIN ob_job_definition d ON d.id = e.definition_id
  LEFT JOIN ob_step_execution s
         ON s.id = (SELECT MAX(x.id) FROM ob_step_execution x
                     WHERE x.job_execution_id = e.id)
 WHERE e.id = %s
"""

_VENDOR = {
    "postgresql": {
        "updated_ms": "(extract(epoch FROM e.updated_at) * 1000)::bigint",
        "server_ms": "(extract(epoch FROM clock_timestamp()) * 1000)::bigint",
        "checkpoint_bytes": "pg_column_size(s.checkpoint_payload)::bigint",
        "ambiguous": (
            "COALESCE(d.manifest ->> 'delivery_mode', 'ambiguous')"
            " <> 'atomic_same_resource'"
        ),
    },
    # SQLite (tests and trials): timestamps are text, converted in Python;
    # the checkpoint size is the stored JSON text's byte length, the nearest
    # SQLite has to pg_column_size.
    "sqlite": {
        "updated_ms": "e.updated_at",
        "server_ms": "strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now')",
        "checkpoint_bytes": "length(CAST(s.checkpoint_payload AS BLOB))",
        "ambiguous": (
            "COALESCE(json_extract(d.manifest, '$.delivery_mode'), 'ambiguous')"
            " <> 'atomic_same_resource'"
        ),
    },
}


def _ms(value: Any) -> int:
    if isinstance(value, int):
        return value
    moment = value if isinstance(value, datetime) else parse_datetime(str(value))
    if moment is None:
        raise ValueError("unreadable timestamp")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return epoch_ms(moment)


@dataclass(frozen=True)
class RecoveryProposal:
    """
    What an operator reviews before recovering an execution.

    ``verdict`` is CANDIDATE (recoverable now), NOT_STALE (unresolved but
    updated within the threshold), NOT_RECOVERABLE (finished) or
    CLOCK_EVIDENCE_UNUSABLE (the row's update time is after the server's
    clock, or after ``as_of_ms``). ``digest`` is the evidence digest of spec
    5.3, which the apply step compares with the one reviewed. ``as_of_ms``
    is set only for a proposal measured at a past moment (see the module
    docstring); inactivity is then measured to it.
    """

    evidence: RecoveryEvidence
    digest: bytes
    server_time_ms: int
    threshold_seconds: int
    verdict: str
    as_of_ms: int | None = None

    @property
    def measured_at_ms(self) -> int:
        """Return the moment the verdict was measured at, in epoch ms."""
        return self.server_time_ms if self.as_of_ms is None else self.as_of_ms

    @property
    def execution_id(self) -> int:
        return self.evidence.execution_id

    @property
    def observed_version(self) -> int:
        return self.evidence.version

    @property
    def digest_hex(self) -> str:
        return self.digest.hex()

    @property
    def inactivity_seconds(self) -> int:
        return max(0, self.measured_at_ms - self.evidence.updated_at_ms) // 1000

    @property
    def is_candidate(self) -> bool:
        return self.verdict == CANDIDATE

    @property
    def owner_recorded(self) -> bool:
        return self.evidence.owner != "ABSENT"

    @property
    def markers(self) -> list[tuple[str, bool]]:
        """Return the four markers with their display names, in digest order."""
        e = self.evidence
        return [
            (str(_("unknown commit")), e.unknown_commit),
            (str(_("completed partition")), e.completed_partition),
            (str(_("committed flow decision")), e.committed_flow_decision),
            (str(_("ambiguous external effect")), e.ambiguous_external_effect),
        ]

    def _spans(self) -> dict[str, str]:
        """Return the inactivity and the threshold in the pages' human units."""
        return {
            "age": spans.span(self.inactivity_seconds),
            "limit": spans.span(self.threshold_seconds, whole=True),
        }

    def verdict_text(self) -> str:
        """Return why the execution is or is not a recovery candidate."""
        status = self.evidence.status
        if self.verdict == CANDIDATE:
            if status == UNKNOWN:
                return str(_("UNKNOWN executions are always recovery candidates."))
            return str(
                _("No update for %(age)s, more than the %(limit)s threshold.")
                % self._spans()
            )
        if self.verdict == NOT_STALE:
            return str(
                _(
                    "Updated %(age)s ago, within the %(limit)s threshold: the "
                    "owner may still be working. Wait, or stop it instead."
                )
                % self._spans()
            )
        if self.verdict == CLOCK_EVIDENCE_UNUSABLE:
            return str(
                _(
                    "The execution's last update is later than the database "
                    "server's clock; the evidence cannot be trusted."
                )
            )
        return str(
            _("%(status)s executions are finished and cannot be recovered.")
            % {"status": status}
        )


def stale_threshold_seconds() -> int:
    """Return ``BATCHBOARD["STALE_SECONDS"]``, validated to 1 min .. 24 h."""
    value = conf.get_config()["STALE_SECONDS"]
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not MIN_STALE_SECONDS <= value <= MAX_STALE_SECONDS
    ):
        raise InvalidRequest(
            _("BATCHBOARD['STALE_SECONDS'] must be an integer from 60 to 86400.")
        )
    return value


def snapshot(execution_id: int) -> tuple[RecoveryEvidence, int]:
    """
    Read the recovery evidence of one execution in one statement.

    Return the evidence and the database server's time in milliseconds;
    raise TargetNotFound if the execution does not exist.
    """
    connection = db.connection()
    sql = _SQL.format(**_VENDOR.get(connection.vendor, _VENDOR["postgresql"]))
    with connection.cursor() as cursor:
        cursor.execute(sql, [execution_id])
        row = cursor.fetchone()
    if row is None:
        raise TargetNotFound(str(_("execution")), execution_id)
    (
        ident,
        status,
        attempt,
        version,
        owned,
        updated,
        server,
        unknown_commit,
        step_id,
        step_status,
        checkpoint_format,
        checkpoint_schema,
        checkpoint_schema_version,
        checkpoint_bytes,
        completed_partition,
        flow_decision,
        ambiguous,
    ) = row
    step = None
    if step_id is not None:
        step = StepEvidence(
            step_id=int(step_id),
            status=str(step_status),
            checkpoint=CheckpointDescriptor(
                format_version=int(checkpoint_format),
                schema_id=str(checkpoint_schema),
                schema_version=int(checkpoint_schema_version),
                encoded_len=int(checkpoint_bytes),
            ),
        )
    evidence = RecoveryEvidence(
        execution_id=int(ident),
        status=str(status),
        attempt=int(attempt),
        version=int(version),
        owner="OTHER_PROCESS" if owned else "ABSENT",
        updated_at_ms=_ms(updated),
        latest_step=step,
        unknown_commit=bool(unknown_commit),
        completed_partition=bool(completed_partition),
        committed_flow_decision=bool(flow_decision),
        ambiguous_external_effect=bool(ambiguous),
    )
    return evidence, _ms(server)


def propose(execution_id: int, *, as_of: datetime | None = None) -> RecoveryProposal:
    """
    Return the recovery proposal for one execution, measured in server time.

    ``as_of`` is for non-interactive callers replaying history only (the
    console never passes it): the verdict is then measured at that earlier
    moment. A moment later than the server's clock raises InvalidRequest.
    """
    threshold = stale_threshold_seconds()
    evidence, server_ms = snapshot(execution_id)
    as_of_ms = None if as_of is None else epoch_ms(as_of)
    if as_of_ms is not None and as_of_ms > server_ms:
        raise InvalidRequest(
            _("A recovery cannot be proposed as of a moment after the server's clock.")
        )
    measured_ms = server_ms if as_of_ms is None else as_of_ms
    if evidence.updated_at_ms > measured_ms:
        verdict = CLOCK_EVIDENCE_UNUSABLE
    elif evidence.status == UNKNOWN:
        verdict = CANDIDATE
    elif evidence.status in vocabulary.UNRESOLVED:
        inactive = measured_ms - evidence.updated_at_ms
        verdict = CANDIDATE if inactive > threshold * 1000 else NOT_STALE
    else:
        verdict = NOT_RECOVERABLE
    return RecoveryProposal(
        evidence=evidence,
        digest=evidence_digest(evidence),
        server_time_ms=server_ms,
        threshold_seconds=threshold,
        verdict=verdict,
        as_of_ms=as_of_ms,
    )
