"""
The gauges a scrape reads from the metadata schema.

Every value is read from the database on the scrape, so each worker of each
host gives the same answer (within :data:`CACHE` reuse), and no statement
counts over history:

- the unresolved executions, one grouped statement over the unresolved
  rows (``status IN (...)``: the schema's unresolved index and its
  ``(status, updated_at, id)`` index), whose size is the work in flight,
  not the history: ``oxide_batch_active_executions`` and
  ``batchboard_unresolved_executions`` by age;
- the executions that failed in the last :data:`WINDOW_SECONDS`, newest
  first on ``(status, updated_at, id)``, at most :data:`WINDOW_ROWS` rows;
- the operator requests and retention actions of the same window, read
  from the newest rows by id (ids grow with time), at most
  :data:`WINDOW_ROWS` rows each;
- each replica's lag, asked of the replica.

A window read that reaches :data:`WINDOW_ROWS` says so in
``batchboard_metrics_window_capped``: its counts are then a lower bound.
The reads run on the primary in one transaction bounded by
``STATEMENT_TIMEOUT_MS`` (:func:`batchboard.replicas.reading`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any, Final

from django.core.signals import setting_changed
from django.db import DatabaseError, connections
from django.dispatch import receiver
from prometheus_client import Metric
from prometheus_client.core import GaugeMetricFamily

from batchboard import conf, db, replicas
from batchboard.metrics.budget import OTHER, job_allowlist
from batchboard.schema.v4 import FAILURE_CATEGORIES
from batchboard.vocabulary import ACTIVE, UNRESOLVED

#: The window of the recent-failure, operator-request and retention gauges.
WINDOW_SECONDS: Final = 3600
#: Rows a window read takes at most.
WINDOW_ROWS: Final = 10_000
#: The unresolved executions' age buckets: (label, upper bound in seconds),
#: by time since the row last changed (``updated_at``); the last is open.
AGE_BUCKETS: Final[tuple[tuple[str, float], ...]] = (
    ("lt_1m", 60),
    ("1m_5m", 300),
    ("5m_15m", 900),
    ("15m_1h", 3600),
    ("1h_6h", 21600),
    ("6h_1d", 86400),
    ("ge_1d", float("inf")),
)
#: The category label of a failed execution that recorded none.
NO_CATEGORY: Final = "none"


def _vendor() -> str:
    return connections[db.alias()].vendor


def _age(column: str) -> str:
    """Return SQL for the time since ``column``, by the database's clock."""
    if _vendor() == "postgresql":
        return f"CURRENT_TIMESTAMP - {column}"
    return f"(julianday('now') - julianday({column})) * 86400.0"


def _age_bound(seconds: float) -> str:
    """Return SQL for an age of ``seconds``, comparable with :func:`_age`."""
    if _vendor() == "postgresql":
        # An interval literal: no conversion per row.
        return f"INTERVAL '{seconds:g} seconds'"
    return f"{seconds:g}"


def _since() -> str:
    """Return SQL for the window's start (one parameter: its seconds)."""
    if _vendor() == "postgresql":
        return "CURRENT_TIMESTAMP - make_interval(secs => %s)"
    return "strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now', printf('-%%d seconds', %s))"


def _marks(count: int) -> str:
    return ", ".join(["%s"] * count)


def _unresolved_sql(allowlist: Sequence[str]) -> tuple[str, list[Any]]:
    """Group the unresolved executions by status, job label and age bucket."""
    params: list[Any] = []
    if allowlist:
        job = (
            f"CASE WHEN i.job_name IN ({_marks(len(allowlist))}) "
            "THEN i.job_name ELSE %s END"
        )
        params += [*allowlist, OTHER]
        source = "ob_job_execution e JOIN ob_job_instance i ON i.id = e.job_instance_id"
    else:
        # No job may be named: no instance is read.
        job = "%s"
        params.append(OTHER)
        source = "ob_job_execution e"
    bucket = " ".join(
        f"WHEN age < {_age_bound(bound)} THEN {number}"
        for number, (_label, bound) in enumerate(AGE_BUCKETS[:-1])
    )
    sql = (
        f"SELECT status, job, CASE {bucket} ELSE {len(AGE_BUCKETS) - 1} END, "
        f"COUNT(*) FROM (SELECT e.status AS status, {job} AS job, "
        f"{_age('e.updated_at')} AS age FROM {source} "
        f"WHERE e.status IN ({_marks(len(UNRESOLVED))})) unresolved "
        "GROUP BY 1, 2, 3"
    )
    return sql, [*params, *UNRESOLVED]


def _failures_sql() -> str:
    return (
        "SELECT category, COUNT(*) FROM (SELECT e.failure_category AS category "
        f"FROM ob_job_execution e WHERE e.status = %s AND e.updated_at >= {_since()} "
        "ORDER BY e.updated_at DESC, e.id DESC LIMIT %s) recent GROUP BY category"
    )


def _newest_sql(table: str, columns: str, moment: str) -> str:
    """Count the window's rows among ``table``'s newest by id, by ``columns``."""
    return (
        f"SELECT {columns}, COUNT(*) FROM (SELECT {columns}, {moment} FROM {table} "
        f"ORDER BY id DESC LIMIT %s) newest WHERE {moment} >= {_since()} "
        f"GROUP BY {columns}"
    )


def _read(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    with connections[db.alias()].cursor() as cursor:
        cursor.execute(sql, list(params))
        return list(cursor.fetchall())


def _executions(allowlist: Sequence[str]) -> list[Metric]:
    sql, params = _unresolved_sql(allowlist)
    active = GaugeMetricFamily(
        "oxide_batch_active_executions",
        "Executions currently active (STARTING, STARTED, STOPPING), by status "
        "and job; step is always __other__ (executions, not steps).",
        labels=["status", "job", "step"],
    )
    unresolved = GaugeMetricFamily(
        "batchboard_unresolved_executions",
        "Unresolved executions by status and time since their row last "
        "changed (updated_at).",
        labels=["status", "age"],
    )
    by_job = {(status, job): 0 for status in ACTIVE for job in (*allowlist, OTHER)}
    by_age = {(status, label): 0 for status in UNRESOLVED for label, _ in AGE_BUCKETS}
    for status, job, bucket, count in _read(sql, params):
        if status in ACTIVE:
            by_job[(status, job)] = by_job.get((status, job), 0) + int(count)
        label = AGE_BUCKETS[int(bucket)][0]
        by_age[(status, label)] += int(count)
    for (status, job), count in by_job.items():
        active.add_metric([status, job, OTHER], count)
    for (status, label), count in by_age.items():
        unresolved.add_metric([status, label], count)
    return [active, unresolved]


def _window_families() -> tuple[list[Metric], dict[str, bool]]:
    failures = GaugeMetricFamily(
        "batchboard_recent_failed_executions",
        f"Executions that failed in the last {WINDOW_SECONDS} s (by updated_at), "
        "by failure category.",
        labels=["category"],
    )
    counts = dict.fromkeys((*FAILURE_CATEGORIES, NO_CATEGORY), 0)
    rows = _read(_failures_sql(), ["FAILED", WINDOW_SECONDS, WINDOW_ROWS])
    for category, count in rows:
        counts[category or NO_CATEGORY] = int(count)
    for category, count in counts.items():
        failures.add_metric([category], count)
    capped = {
        "batchboard_recent_failed_executions": sum(counts.values()) >= WINDOW_ROWS
    }

    requests = GaugeMetricFamily(
        "batchboard_recent_operator_requests",
        f"Operator requests recorded in the last {WINDOW_SECONDS} s, by action, "
        "authorization class and outcome (oxide_batch_operator_requests_total's "
        "labels).",
        labels=["action", "authorization", "outcome"],
    )
    columns = "action, authorization_class, outcome_class"
    rows = _read(
        _newest_sql("ob_operator_request", columns, "requested_at"),
        [WINDOW_ROWS, WINDOW_SECONDS],
    )
    for action, authorization, outcome, count in sorted(rows):
        requests.add_metric([action, authorization, outcome], int(count))
    capped[requests.name] = sum(int(row[-1]) for row in rows) >= WINDOW_ROWS

    retention = GaugeMetricFamily(
        "batchboard_recent_retention_actions",
        f"Retention actions (holds, releases, purges) recorded in the last "
        f"{WINDOW_SECONDS} s, by action and outcome.",
        labels=["action", "outcome"],
    )
    rows = _read(
        _newest_sql("ob_retention_action", "action, outcome_class", "applied_at"),
        [WINDOW_ROWS, WINDOW_SECONDS],
    )
    for action, outcome, count in sorted(rows):
        retention.add_metric([action, outcome], int(count))
    capped[retention.name] = sum(int(row[-1]) for row in rows) >= WINDOW_ROWS
    return [failures, requests, retention], capped


def replica_families() -> list[Metric]:
    lag = GaugeMetricFamily(
        "batchboard_replica_lag_seconds",
        "Seconds a read replica is behind the primary; 0 once it has replayed "
        "all it received.",
        labels=["replica"],
    )
    up = GaugeMetricFamily(
        "batchboard_replica_up",
        "1 when a read replica answered and is in recovery, else 0.",
        labels=["replica"],
    )
    for alias in replicas_to_ask():
        try:
            with connections[alias].cursor() as cursor:
                cursor.execute(f"SELECT pg_is_in_recovery(), {replicas.LAG_SQL}")
                in_recovery, seconds = cursor.fetchone()
        except DatabaseError:
            up.add_metric([alias], 0)
            continue
        up.add_metric([alias], 1 if in_recovery else 0)
        lag.add_metric([alias], float(seconds))
    return [lag, up]


def replicas_to_ask() -> list[str]:
    """Return the PostgreSQL replica aliases of ``READ_DATABASES``."""
    return [
        alias
        for alias in conf.read_aliases()
        if alias in connections.settings and connections[alias].vendor == "postgresql"
    ]


def read() -> list[Metric]:
    """Read every database gauge now, in a constant number of statements."""
    allowlist = job_allowlist()
    with replicas.reading(None, replica=False):
        families = _executions(allowlist)
        windowed, capped = _window_families()
    families += windowed
    families += replica_families()
    capped_family = GaugeMetricFamily(
        "batchboard_metrics_window_capped",
        f"1 when a window gauge read its {WINDOW_ROWS} rows: its counts are a "
        "lower bound.",
        labels=["family"],
    )
    for name, full in capped.items():
        capped_family.add_metric([name], 1 if full else 0)
    families.append(capped_family)
    return families


class _Cache:
    """The last read and when it was taken (per process)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.taken_at = 0.0
        self.families: list[Metric] | None = None

    def clear(self) -> None:
        with self.lock:
            self.families = None


CACHE: Final = _Cache()


def families() -> list[Metric]:
    """
    Return the database gauges, read at most once per ``METRICS_CACHE_SECONDS``.

    Scrapes within the interval (several Prometheus servers, a retry) reuse
    the last read of this process; one thread reads while the others wait.
    """
    seconds = float(conf.get_config()["METRICS_CACHE_SECONDS"])
    with CACHE.lock:
        now = time.monotonic()
        if CACHE.families is None or now - CACHE.taken_at >= seconds:
            CACHE.families = read()
            CACHE.taken_at = now
        return CACHE.families


@receiver(setting_changed)
def _drop_cache(*, setting: str, **kwargs: Any) -> None:
    if setting in ("BATCHBOARD", "DATABASES"):
        CACHE.clear()
