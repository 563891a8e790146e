"""
Indexes batchboard adds to its embedded SQLite copy of the schema, and why.

The PostgreSQL schema is oxide-batch's, exactly; nothing here ever runs
there. On SQLite batchboard creates the schema itself (managed mode), and a
few reads and deletes have no query shape that SQLite can bound with
oxide-batch's indexes alone:

* ``bb_execution_status_identity``: the executions list filtered by status
  is ordered by id. oxide-batch's ``(status, updated_at, id)`` index yields a
  status's rows by update time, so the newest by id can only be found by
  sorting every row of the status, or by walking the primary key past every
  row of other statuses. PostgreSQL's planner picks between the two from
  column statistics; SQLite has none by default, and either choice is
  unbounded for some status. ``(status, id)`` serves every status, first
  page and deep, with one index range.
* ``bb_execution_restart_of``, ``bb_flow_decision_source_step``,
  ``bb_flow_decision_reused`` and ``bb_step_partition_worker``: SQLite checks
  a foreign key on every deleted parent row by searching the referencing
  column. Without an index each check reads the whole child table, so a
  purge of 1,000 executions read the step and decision tables thousands of
  times. No statement batchboard writes can avoid those checks.
* ``bb_operator_request_instance``: the same check on deleting a job
  instance searches the operator requests by ``job_instance_id``, which
  oxide-batch indexes only after ``job_execution_id``; without it a purge
  read the whole request table once per emptied instance (migration
  ``0004``).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

#: ``(index name, table, columns)`` of every embedded-only index.
SQLITE_INDEXES: Final = (
    ("bb_execution_status_identity", "ob_job_execution", "status, id"),
    ("bb_execution_restart_of", "ob_job_execution", "restart_of_execution_id"),
    ("bb_flow_decision_source_step", "ob_flow_decision", "source_step_execution_id"),
    ("bb_flow_decision_reused", "ob_flow_decision", "reused_decision_id"),
    ("bb_step_partition_worker", "ob_step_partition", "worker_step_execution_id"),
    ("bb_operator_request_instance", "ob_operator_request", "job_instance_id"),
)


def sqlite_statements(
    *, drop: bool = False, names: Collection[str] | None = None
) -> list[str]:
    """
    Return the statements that create (or drop) the embedded-only indexes.

    ``names`` picks some of them (each migration adds its own); None is all.
    """
    known = {name for name, _, _ in SQLITE_INDEXES}
    if names is not None and not set(names) <= known:
        raise ValueError(f"unknown embedded indexes: {sorted(set(names) - known)}")
    chosen = [row for row in SQLITE_INDEXES if names is None or row[0] in names]
    if drop:
        return [f'DROP INDEX IF EXISTS "{name}"' for name, _, _ in chosen]
    return [
        f'CREATE INDEX IF NOT EXISTS "{name}" ON "{table}" ({columns})'
        for name, table, columns in chosen
    ]
