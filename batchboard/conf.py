"""
batchboard's settings: one ``BATCHBOARD`` dict, read lazily and cached.

Every key, its default and its meaning is listed in docs/configuration.md.
Reading happens on first use, never at import time, and the cache is
dropped when a test overrides ``BATCHBOARD``.
"""

from __future__ import annotations

import functools
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

MANAGED = "managed"
ATTACHED = "attached"
SCHEMA_MODES = (MANAGED, ATTACHED)

#: The roles ``ACTION_DATABASES`` may give a login of their own.
OPERATOR = "OPERATOR"
RETENTION = "RETENTION"
ACTION_ROLES = (OPERATOR, RETENTION)

DEFAULTS: dict[str, Any] = {
    # Database alias that holds the oxide-batch metadata tables.
    "DATABASE": "default",
    # Database alias that holds batchboard's own state (bulk operations and
    # their items; batchboard.state): the site's database, with ordinary
    # migrations. Never the oxide_batch schema; when it differs from
    # DATABASE, nothing of batchboard's own is created on DATABASE.
    "STATE_DATABASE": "default",
    # The most records a bulk action's plan may hold (1..10000); a filter
    # matching more is refused and asked to be narrowed.
    "BULK_MAX_ITEMS": 1000,
    # The most rows one export file holds (1..10000000); a longer list's
    # file stops there and says so in its last line (batchboard.export).
    "EXPORT_MAX_ROWS": 100_000,
    # "managed": batchboard's migration creates the schema.
    # "attached": an existing oxide-batch database; no DDL, ever.
    "SCHEMA": MANAGED,
    # Explorer page size (1..500) when the request names none.
    "PAGE_SIZE": 50,
    # Seconds between refreshes of live regions.
    "POLL_SECONDS": 3,
    # Age (seconds) after which an unresolved execution needs attention.
    "STALE_SECONDS": 900,
    # True only in the demo site: allows the demo login (user demo).
    "DEMO": False,
    # Optional aliases for operator actions' writes, so each can connect as
    # a least-privilege role of spec 9.1: {"OPERATOR": alias} for stop,
    # abandon and recover, {"RETENTION": alias} for holds and purges. A
    # role left out writes through DATABASE.
    "ACTION_DATABASES": {},
    # Aliases of streaming replicas of DATABASE, tried in order, that serve
    # the explorer's pages, fragments and polls (PostgreSQL only). A user who
    # just acted reads from the primary until a replica has replayed their
    # commit; a replica that is down, not in recovery or lags more than
    # REPLICA_MAX_LAG_SECONDS is skipped. Empty: every read uses DATABASE.
    "READ_DATABASES": [],
    # Pages served from a replica lagging more than this many seconds say
    # how old their data is ("data as of 12 s ago").
    "REPLICA_LAG_NOTICE_SECONDS": 5,
    # A replica lagging more than this many seconds is skipped.
    "REPLICA_MAX_LAG_SECONDS": 300,
    # PostgreSQL: statement timeout (milliseconds, 1 ms..24 h, spec 9.3) of
    # the transaction a page's reads run in (SET LOCAL, PgBouncer-safe).
    "STATEMENT_TIMEOUT_MS": 30_000,
    # URL template of where a failure's cause is looked up (a log search),
    # shown beside every failure, e.g. "https://logs.example.org/search?
    # q=execution:{execution_id}". Named fields only, each percent-encoded:
    # execution_id, instance_id, job, failure_category, failure_id,
    # started_at, ended_at, step (explorer/cause.py; check E030). None: no
    # link.
    "FAILURE_LINK": None,
    # (label, URL template) pairs shown on execution and step pages, e.g.
    # [("Traces", "https://traces.example.org/?job={job}&from={started_at}")],
    # with the fields of FAILURE_LINK (check E031).
    "EXECUTION_LINKS": [],
    # /metrics (batchboard.metrics): the job names that may appear as a
    # ``job`` label, at most 50 (check E040); every other name is counted
    # under "__other__". Empty: every job is "__other__".
    "METRICS_JOBS": [],
    # /metrics answers a request carrying "Authorization: Bearer <token>"
    # when a token is set, and a client whose address lies in one of these
    # networks ("10.0.0.0/8", "::1/128") when networks are set; both when
    # both are. With neither, it answers only a DEBUG site (check W040).
    "METRICS_TOKEN": "",
    "METRICS_ALLOWED_NETWORKS": [],
    # Seconds a scrape's database values are reused by the next scrapes of
    # the same process (one scrape interval); 0 reads on every scrape.
    "METRICS_CACHE_SECONDS": 10,
    # Calls one API token may make in one minute (a 429 envelope past it).
    "API_TOKEN_RATE": 600,
    # Alerts (batchboard.alerts): the site's address that alert links start
    # with ("https://batchboard.example.org"; empty: links are paths).
    "ALERTS_BASE_URL": "",
    # Seconds between the watch process's detector cycles.
    "ALERTS_CYCLE_SECONDS": 10,
    # Attempts of one delivery before it is marked failed, and the first
    # retry's delay in seconds (doubled after each failure).
    "ALERTS_MAX_ATTEMPTS": 5,
    "ALERTS_RETRY_SECONDS": 30,
    # Seconds between the watch process's retention cycles, which run the
    # standing retention policies that are due (at least 60).
    "RETENTION_CYCLE_SECONDS": 3600,
    # The most purge batches one policy's run applies to one job (1..100);
    # the next cycle carries on.
    "RETENTION_MAX_BATCHES": 10,
}


@functools.cache
def get_config() -> dict[str, Any]:
    """Return the effective configuration: defaults overlaid by ``BATCHBOARD``."""
    return {**DEFAULTS, **getattr(settings, "BATCHBOARD", {})}


@receiver(setting_changed)
def _reset_config(*, setting: str, **kwargs: Any) -> None:
    if setting in ("BATCHBOARD", "DATABASES"):
        get_config.cache_clear()


def database_alias() -> str:
    """Return the alias of the database that holds the metadata tables."""
    return str(get_config()["DATABASE"])


def state_alias() -> str:
    """Return the alias of the database that holds batchboard's own state."""
    return str(get_config()["STATE_DATABASE"])


def bulk_max_items() -> int:
    """Return ``BULK_MAX_ITEMS`` (validated by check E018)."""
    return int(get_config()["BULK_MAX_ITEMS"])


def export_max_rows() -> int:
    """Return ``EXPORT_MAX_ROWS`` (validated by check E050)."""
    return int(get_config()["EXPORT_MAX_ROWS"])


def schema_mode() -> str:
    """Return ``"managed"`` or ``"attached"`` (validated by check E001)."""
    return str(get_config()["SCHEMA"]).strip().lower()


def is_attached() -> bool:
    return schema_mode() == ATTACHED


def action_aliases() -> set[str]:
    """Return the aliases named in ``ACTION_DATABASES`` (writers' logins)."""
    configured = get_config().get("ACTION_DATABASES") or {}
    if not isinstance(configured, dict):
        return set()
    return {value for value in configured.values() if isinstance(value, str)}


def read_aliases() -> list[str]:
    """Return the replica aliases of ``READ_DATABASES`` (validated by E007)."""
    configured = get_config().get("READ_DATABASES") or []
    if isinstance(configured, str):
        configured = [configured]
    if not isinstance(configured, (list, tuple)):
        return []
    return [value for value in configured if isinstance(value, str)]


def metadata_aliases() -> set[str]:
    """
    Return every alias that reaches the metadata database: the metadata
    alias, its replicas and the action logins.
    """
    return {database_alias(), *read_aliases(), *action_aliases()}
