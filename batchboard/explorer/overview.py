"""
The overview's statements: each job's latest runs and its running count.

The overview shows a page of job names (:data:`.queries.JOB_NAMES`, a
keyset list like any other), each with a strip of its latest executions
(:func:`job_strips`) and how many of them are unresolved now
(:func:`running_counts`). Each is one raw statement per page whose cost is
bounded by the names shown, never by the history; a job page's trend reads
through :func:`latest_runs` too. The plans are pinned by
tests/explorer/test_performance.py and test_sqlite_plans.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from django.conf import settings
from django.db import connections
from django.utils import timezone

from batchboard import db
from batchboard.explorer.pagination import Row
from batchboard.vocabulary import RUNNING_LIMIT, STRIP_LENGTH, UNRESOLVED

__all__ = ["RUN_COLUMNS", "job_strips", "latest_runs", "running_counts"]

# One statement over the array of names: per name, a LATERAL walk of the
# job's newest instances off the (job_name, id DESC) index, and of each
# instance's attempts off (job_instance_id, attempt DESC), cut to ``length``.
# Planned once, it costs a fraction of a UNION ALL of one branch per name
# (whose planning alone took 16 ms for 42 names). The name is a parameter
# here, so the planner cannot tell a rare job from a busy one; ordering by
# (job_name, id DESC), which only the name index yields, keeps it from
# walking the primary key past every other job's instances. The names
# compare under the column's collation ("C"), so that index serves.
_RUNS_PG = (
    "SELECT n.job_name, {columns} "
    "FROM unnest(%s::text[]) WITH ORDINALITY AS n(job_name, position) "
    "CROSS JOIN LATERAL (SELECT {middle} FROM ("
    "  SELECT i.id FROM ob_job_instance i "
    '  WHERE i.job_name = n.job_name COLLATE "C" '
    '  AND i.job_name >= n.job_name COLLATE "C" '
    '  AND i.job_name <= n.job_name COLLATE "C" '
    "  ORDER BY i.id DESC LIMIT %s"
    ") AS newest CROSS JOIN LATERAL ("
    "  SELECT {inner} FROM ob_job_execution x "
    "  WHERE x.job_instance_id = newest.id ORDER BY x.attempt DESC LIMIT %s"
    ") AS x ORDER BY x.job_instance_id DESC, x.attempt DESC LIMIT %s) AS e "
    # Sorts the few rows read (len(names) * length), nothing more.
    "ORDER BY n.position, e.job_instance_id DESC, e.attempt DESC"
)
# SQLite has no LATERAL, but the same walk comes from one branch per job: a
# nested loop over the job's instances, newest first off the (job_name, id
# DESC) index, and each instance's attempts off (job_instance_id, attempt
# DESC), ordered by the instance's own id so that the loop yields the order
# and LIMIT stops it after ``length`` rows (no window over the history).
_RUNS_SQLITE_BRANCH = (
    "SELECT * FROM (SELECT %s AS job_name, {inner} FROM ob_job_instance i "
    "JOIN ob_job_execution x ON x.job_instance_id = i.id WHERE i.job_name = %s "
    "ORDER BY i.id DESC, x.attempt DESC LIMIT %s)"
)
# What the overview shows of a run: its chip and, for the latest, when it
# was created (timestamps cost the most to read).
_STRIP_COLUMNS = ("id", "status", "attempt", "job_instance_id", "created_at")
#: The columns latest_runs may read. ``seconds`` is a finished run's
#: duration, computed in the statement (a number costs less to read than
#: the two timestamps it comes from); ``None`` while a run has not ended.
#: SQLite's day numbers are doubles that miss a whole-millisecond span by
#: some microseconds either way (3 min read as 179.99997 s, shown as
#: "2 min 59 s"): the span is rounded back to the milliseconds it is made of.
RUN_COLUMNS: Final = (
    *_STRIP_COLUMNS,
    "started_at",
    "ended_at",
    "exit_code",
    "seconds",
)
_SECONDS = {
    "postgresql": "EXTRACT(EPOCH FROM (x.ended_at - x.started_at))::float8",
    "sqlite": (
        "ROUND((julianday(x.ended_at) - julianday(x.started_at)) * 86400000.0) / 1000.0"
    ),
}


#: Read for each job's newest run only: the strips show when it was created.
_STRIP_NEWEST_ONLY = ("created_at",)
# A column read for the newest run of each name only (reading a timestamp
# costs more than the rest of its row: 504 of them doubled the statement).
_NEWEST_ONLY_PG = (
    "CASE WHEN row_number() OVER (PARTITION BY n.position "
    "ORDER BY e.job_instance_id DESC, e.attempt DESC) = 1 THEN e.{column} END"
)


def latest_runs(
    names: Sequence[str],
    length: int,
    columns: Sequence[str] = _STRIP_COLUMNS,
    newest_only: Sequence[str] = (),
) -> dict[str, list[Row]]:
    """
    Return each named job's latest ``length`` executions, newest first.

    Newest instance first, then latest attempt. One statement whose cost is
    bounded by ``len(names) * length`` index reads whatever the history:
    LATERAL joins on PostgreSQL, a limited nested loop per name on SQLite.
    ``columns`` are of :data:`RUN_COLUMNS`; those also in ``newest_only``
    are read for each name's newest run only (``None`` for the others). The
    overview's strips and a job page's trend read through it.
    """
    runs: dict[str, list[Row]] = {name: [] for name in names}
    if not names:
        return runs
    # The order needs the instance and the attempt.
    chosen = [
        column
        for column in RUN_COLUMNS
        if column in (*columns, "job_instance_id", "attempt")
    ]
    vendor = connections[db.read_alias()].vendor
    inner = ", ".join(
        f"{_SECONDS[vendor]} AS seconds" if column == "seconds" else f"x.{column}"
        for column in chosen
    )
    params: list[Any]
    if vendor == "postgresql":
        outer = [
            _NEWEST_ONLY_PG.format(column=column)
            if column in newest_only
            else f"e.{column}"
            for column in chosen
        ]
        middle = ", ".join(f"x.{column}" for column in chosen)
        sql = _RUNS_PG.format(columns=", ".join(outer), inner=inner, middle=middle)
        params = [list(runs), length, length, length]
    else:
        sql = " UNION ALL ".join([_RUNS_SQLITE_BRANCH.format(inner=inner)] * len(runs))
        params = []
        for name in runs:
            params += [name, name, length]
    connection = connections[db.read_alias()]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for job_name, *values in cursor.fetchall():
            runs[job_name].append(dict(zip(chosen, values, strict=True)))
    if newest_only and connection.vendor != "postgresql":
        # SQLite reads them all (its branches have no cheap "first row").
        for found in runs.values():
            for run in found[1:]:
                for column in newest_only:
                    run[column] = None
    times = [column for column in chosen if column.endswith("_at")]
    if connection.vendor != "postgresql" and settings.USE_TZ:
        # SQLite hands raw SQL its timestamps naive, in the connection's zone.
        for found in runs.values():
            for run in found:
                for column in times:
                    if run[column] is not None and timezone.is_naive(run[column]):
                        run[column] = timezone.make_aware(
                            run[column], connection.timezone
                        )
    return runs


def job_strips(
    names: Sequence[str], length: int = STRIP_LENGTH
) -> dict[str, list[Row]]:
    """
    Return each job's latest executions for the overview's strips.

    Only the newest run of each job has its ``created_at`` (the overview
    shows when the last run was created).
    """
    return latest_runs(names, length, newest_only=_STRIP_NEWEST_ONLY)


# The unresolved executions, off the partial unique index that holds them
# only, each counted under the job of the definition it runs: a writer
# launches an execution with a definition registered for its instance's job
# (oxide-batch and batchboard's repository both refuse another,
# DefinitionJobMismatch), and the definitions are a small table, where
# looking up each execution's instance read a wide row of a large one
# (1.6 ms against 0.5 ms for 500 unresolved executions on PostgreSQL). The
# index is usable only when the statement repeats its condition word for
# word, so the statuses are written in, in the index's order: they are the
# schema's constants, not input. On SQLite INDEXED BY and CROSS JOIN fix the
# plan (left to choose, it walked the definitions' names outward).
_RUNNING_SQL = {
    "postgresql": (
        "SELECT d.job_name, count(*) FROM ob_job_execution x "
        "JOIN ob_job_definition d ON d.id = x.definition_id "
        "WHERE x.status IN ({unresolved}) AND d.job_name IN ({names}) "
        "GROUP BY d.job_name LIMIT %s"
    ),
    "sqlite": (
        "SELECT d.job_name, count(*) FROM ob_job_execution x "
        "INDEXED BY ob_job_execution_one_unresolved "
        "CROSS JOIN ob_job_definition d ON d.id = x.definition_id "
        "WHERE x.status IN ({unresolved}) AND d.job_name IN ({names}) "
        "GROUP BY d.job_name LIMIT %s"
    ),
}


def running_counts(names: Iterable[str]) -> dict[str, int]:
    """
    Return how many unresolved executions each named job has now.

    One read of the unresolved executions (not of the history) and of the
    definitions they run.
    """
    named = list(names)
    if not named:
        return {}
    connection = connections[db.read_alias()]
    sql = _RUNNING_SQL[connection.vendor].format(
        unresolved=", ".join(f"'{status}'" for status in UNRESOLVED),
        names=", ".join(["%s"] * len(named)),
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*named, RUNNING_LIMIT])
        return {job_name: int(count) for job_name, count in cursor.fetchall()}
