"""System checks for batchboard's configuration and metadata database."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.db import DatabaseError, connections
from django.db.migrations.recorder import MigrationRecorder

from batchboard import conf, schema
from batchboard.explorer import cause
from batchboard.metrics.budget import MAX_NAME_ALLOWLIST
from batchboard.vocabulary import (
    MAX_PAGE_SIZE,
    MAX_STATEMENT_TIMEOUT_MS,
    MIN_PAGE_SIZE,
    MIN_STATEMENT_TIMEOUT_MS,
)


def setting_hint(alias: str) -> str:
    """Name the setting that chooses the metadata database on ``alias``."""
    if alias == "default":
        site = (
            "DATABASE_URL, which holds the metadata too unless "
            "BATCHBOARD_DATABASE_URL is set"
        )
    else:
        site = "BATCHBOARD_DATABASE_URL"
    return (
        f"Point DATABASES[{alias!r}] at the oxide-batch database (in the "
        f"standalone site: {site})."
    )


@register()
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Validate the ``BATCHBOARD`` settings dict."""
    errors: list[CheckMessage] = []
    user = getattr(settings, "BATCHBOARD", {})
    if not isinstance(user, dict):
        return [
            Error(
                "BATCHBOARD must be a dict.",
                hint="Set BATCHBOARD = {...} with the keys listed in the README.",
                id="batchboard.E000",
            )
        ]
    unknown = sorted(set(user) - set(conf.DEFAULTS))
    if unknown:
        errors.append(
            Warning(
                f"Unknown BATCHBOARD keys: {', '.join(unknown)}.",
                hint=f"Known keys: {', '.join(sorted(conf.DEFAULTS))}.",
                id="batchboard.W001",
            )
        )
    if conf.schema_mode() not in conf.SCHEMA_MODES:
        errors.append(
            Error(
                f"BATCHBOARD['SCHEMA'] is {conf.get_config()['SCHEMA']!r}.",
                hint="Use 'managed' (batchboard creates the schema) or 'attached' "
                "(an existing oxide-batch database; BATCHBOARD_SCHEMA in the "
                "standalone site).",
                id="batchboard.E001",
            )
        )
    alias = conf.database_alias()
    if alias not in settings.DATABASES:
        errors.append(
            Error(
                f"BATCHBOARD['DATABASE'] names the alias {alias!r}, which is not "
                "in DATABASES.",
                hint="Add that alias to DATABASES or set BATCHBOARD['DATABASE'] "
                "to an existing one.",
                id="batchboard.E002",
            )
        )
    elif alias != "default" and not _router_installed():
        errors.append(
            Error(
                f"The metadata database is {alias!r} but BatchboardRouter is not "
                "installed.",
                hint="Add 'batchboard.routers.BatchboardRouter' to DATABASE_ROUTERS.",
                id="batchboard.E003",
            )
        )
    errors.extend(_action_database_errors())
    errors.extend(_read_database_errors())
    errors.extend(_cause_link_errors())
    errors.extend(_metrics_errors())
    errors.extend(_state_errors())
    errors.extend(_api_errors())
    errors.extend(_export_errors())
    errors.extend(_alert_errors())
    errors.extend(_retention_errors())
    page_size = conf.get_config()["PAGE_SIZE"]
    if not isinstance(page_size, int) or not (
        MIN_PAGE_SIZE <= page_size <= MAX_PAGE_SIZE
    ):
        errors.append(
            Error(
                f"BATCHBOARD['PAGE_SIZE'] is {page_size!r}.",
                hint=f"Use a whole number from {MIN_PAGE_SIZE} to {MAX_PAGE_SIZE}.",
                id="batchboard.E004",
            )
        )
    return errors


def _router_installed() -> bool:
    """Return whether DATABASE_ROUTERS holds batchboard's router."""
    return any(
        str(path).endswith("BatchboardRouter")
        for path in getattr(settings, "DATABASE_ROUTERS", [])
    )


#: The largest BULK_MAX_ITEMS accepted: a plan's items travel in one form.
MAX_BULK_ITEMS = 10_000


def _state_errors() -> list[CheckMessage]:
    """Validate ``STATE_DATABASE`` and ``BULK_MAX_ITEMS``."""
    errors: list[CheckMessage] = []
    state = conf.state_alias()
    if state not in settings.DATABASES or state in conf.read_aliases():
        errors.append(
            Error(
                f"BATCHBOARD['STATE_DATABASE'] names the alias {state!r}, which "
                "is not a writable database of the site.",
                hint="Name an alias of DATABASES that is not a replica "
                "(READ_DATABASES); the default is 'default'.",
                id="batchboard.E017",
            )
        )
    elif state != "default" and not _router_installed():
        errors.append(
            Error(
                f"batchboard's own state is on {state!r} but BatchboardRouter is "
                "not installed.",
                hint="Add 'batchboard.routers.BatchboardRouter' to DATABASE_ROUTERS.",
                id="batchboard.E017",
            )
        )
    if state == conf.database_alias() != "default" and conf.is_attached():
        errors.append(
            Error(
                f"BATCHBOARD['STATE_DATABASE'] is the attached metadata database "
                f"{state!r}, which batchboard never migrates.",
                hint="Keep batchboard's own state in the site's database: leave "
                "STATE_DATABASE at 'default' or name another writable alias.",
                id="batchboard.E017",
            )
        )
    bound = conf.get_config()["BULK_MAX_ITEMS"]
    if (
        isinstance(bound, bool)
        or not isinstance(bound, int)
        or not (1 <= bound <= MAX_BULK_ITEMS)
    ):
        errors.append(
            Error(
                f"BATCHBOARD['BULK_MAX_ITEMS'] is {bound!r}.",
                hint=f"Use a whole number from 1 to {MAX_BULK_ITEMS}.",
                id="batchboard.E018",
            )
        )
    return errors


#: The largest EXPORT_MAX_ROWS accepted: ten million rows are gigabytes of file.
MAX_EXPORT_ROWS = 10_000_000


def _export_errors() -> list[CheckMessage]:
    """Validate ``EXPORT_MAX_ROWS``: the most rows one export file holds."""
    bound = conf.get_config()["EXPORT_MAX_ROWS"]
    if (
        isinstance(bound, bool)
        or not isinstance(bound, int)
        or not 1 <= bound <= MAX_EXPORT_ROWS
    ):
        return [
            Error(
                f"BATCHBOARD['EXPORT_MAX_ROWS'] is {bound!r}.",
                hint=f"Use a whole number of rows from 1 to {MAX_EXPORT_ROWS}.",
                id="batchboard.E050",
            )
        ]
    return []


def _api_errors() -> list[CheckMessage]:
    """Validate ``API_TOKEN_RATE``: calls a token may make in one minute."""
    rate = conf.get_config()["API_TOKEN_RATE"]
    if isinstance(rate, bool) or not isinstance(rate, int) or not 1 <= rate <= 100_000:
        return [
            Error(
                f"BATCHBOARD['API_TOKEN_RATE'] is {rate!r}.",
                hint="Use a whole number of calls a minute from 1 to 100000.",
                id="batchboard.E020",
            )
        ]
    return []


#: Each alert setting and the least value it takes.
_ALERT_MINIMA: dict[str, int] = {
    "ALERTS_CYCLE_SECONDS": 1,
    "ALERTS_MAX_ATTEMPTS": 1,
    "ALERTS_RETRY_SECONDS": 0,
}


def _alert_errors() -> list[CheckMessage]:
    """Validate the alert settings: whole numbers and a base URL."""
    config = conf.get_config()
    errors: list[CheckMessage] = []
    for key, least in _ALERT_MINIMA.items():
        value = config[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            errors.append(
                Error(
                    f"BATCHBOARD[{key!r}] is {value!r}.",
                    hint=f"Use a whole number of at least {least}.",
                    id="batchboard.E019",
                )
            )
    base = config["ALERTS_BASE_URL"]
    if not isinstance(base, str) or (
        base and not base.startswith(("http://", "https://"))
    ):
        errors.append(
            Error(
                f"BATCHBOARD['ALERTS_BASE_URL'] is {base!r}.",
                hint="Use the site's address (https://batchboard.example.org), "
                "or leave it empty for links that are paths.",
                id="batchboard.E019",
            )
        )
    return errors


#: Each retention setting, its bounds and its check id.
_RETENTION_BOUNDS: dict[str, tuple[int, int, str]] = {
    "RETENTION_CYCLE_SECONDS": (60, 7 * 24 * 3600, "batchboard.E080"),
    "RETENTION_MAX_BATCHES": (1, 100, "batchboard.E081"),
}


def _retention_errors() -> list[CheckMessage]:
    """Validate the retention policies' settings: whole numbers in bounds."""
    config = conf.get_config()
    errors: list[CheckMessage] = []
    for key, (least, most, check_id) in _RETENTION_BOUNDS.items():
        value = config[key]
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not least <= value <= most
        ):
            errors.append(
                Error(
                    f"BATCHBOARD[{key!r}] is {value!r}.",
                    hint=f"Use a whole number from {least} to {most}.",
                    id=check_id,
                )
            )
    return errors


def _action_database_errors() -> list[CheckMessage]:
    """Validate ``ACTION_DATABASES``: known roles, defined aliases."""
    configured = conf.get_config().get("ACTION_DATABASES") or {}
    if not isinstance(configured, dict):
        example = ", ".join(f'"{role}": "<alias>"' for role in conf.ACTION_ROLES)
        return [
            Error(
                "BATCHBOARD['ACTION_DATABASES'] must be a dict.",
                hint=f"Use {{{example}}}, or leave it out to write through "
                "BATCHBOARD['DATABASE'].",
                id="batchboard.E005",
            )
        ]
    errors: list[CheckMessage] = []
    unknown = sorted(str(role) for role in configured if role not in conf.ACTION_ROLES)
    if unknown:
        errors.append(
            Error(
                f"BATCHBOARD['ACTION_DATABASES'] has unknown roles: "
                f"{', '.join(unknown)}.",
                hint=f"Known roles: {', '.join(conf.ACTION_ROLES)}.",
                id="batchboard.E005",
            )
        )
    for role, alias in sorted(configured.items(), key=lambda item: str(item[0])):
        if alias not in settings.DATABASES:
            errors.append(
                Error(
                    f"BATCHBOARD['ACTION_DATABASES'][{role!r}] names the alias "
                    f"{alias!r}, which is not in DATABASES.",
                    hint="Add that alias to DATABASES (the metadata database "
                    "under the role's login) or remove the entry.",
                    id="batchboard.E006",
                )
            )
    return errors


def _read_database_errors() -> list[CheckMessage]:
    """Validate ``READ_DATABASES``, the read timeout and the lag thresholds."""
    config = conf.get_config()
    errors: list[CheckMessage] = []
    configured = config.get("READ_DATABASES") or []
    if isinstance(configured, str) or not isinstance(configured, (list, tuple)):
        errors.append(
            Error(
                "BATCHBOARD['READ_DATABASES'] must be a list of database aliases.",
                hint='Use ["<replica alias>", ...], or leave it out to read '
                "through BATCHBOARD['DATABASE'].",
                id="batchboard.E007",
            )
        )
        configured = []
    for alias in configured:
        if alias not in settings.DATABASES:
            errors.append(
                Error(
                    f"BATCHBOARD['READ_DATABASES'] names the alias {alias!r}, "
                    "which is not in DATABASES.",
                    hint="Add that alias to DATABASES (a streaming replica of the "
                    "metadata database) or remove it from READ_DATABASES.",
                    id="batchboard.E007",
                )
            )
        elif alias == conf.database_alias():
            errors.append(
                Error(
                    f"BATCHBOARD['READ_DATABASES'] names {alias!r}, the primary "
                    "metadata alias itself.",
                    hint="List replicas only; the primary serves reads anyway "
                    "when no replica may.",
                    id="batchboard.E007",
                )
            )
    middleware = "batchboard.middleware.ReadYourWritesMiddleware"
    if configured and middleware not in getattr(settings, "MIDDLEWARE", []):
        errors.append(
            Warning(
                "BATCHBOARD['READ_DATABASES'] names replicas but "
                "ReadYourWritesMiddleware is not installed: every page reads "
                "from the primary.",
                hint=f"Add '{middleware}' to MIDDLEWARE, after SessionMiddleware "
                "and AuthenticationMiddleware (last is fine).",
                id="batchboard.W007",
            )
        )
    timeout = config.get("STATEMENT_TIMEOUT_MS")
    if (
        not isinstance(timeout, int)
        or isinstance(timeout, bool)
        or not MIN_STATEMENT_TIMEOUT_MS <= timeout <= MAX_STATEMENT_TIMEOUT_MS
    ):
        errors.append(
            Error(
                f"BATCHBOARD['STATEMENT_TIMEOUT_MS'] is {timeout!r}.",
                hint=f"Use a whole number of milliseconds from "
                f"{MIN_STATEMENT_TIMEOUT_MS} to {MAX_STATEMENT_TIMEOUT_MS} (24 h).",
                id="batchboard.E008",
            )
        )
    notice = config.get("REPLICA_LAG_NOTICE_SECONDS")
    maximum = config.get("REPLICA_MAX_LAG_SECONDS")
    numbers = all(
        isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
        for value in (notice, maximum)
    )
    if not numbers or notice > maximum:  # type: ignore[operator]
        errors.append(
            Error(
                f"BATCHBOARD['REPLICA_LAG_NOTICE_SECONDS'] is {notice!r} and "
                f"BATCHBOARD['REPLICA_MAX_LAG_SECONDS'] is {maximum!r}.",
                hint="Use seconds, zero or more, with the notice no larger than "
                "the maximum lag.",
                id="batchboard.E009",
            )
        )
    return errors


_CAUSE_HINT = (
    "Write an http:// or https:// URL with its host written out and fields "
    "among " + ", ".join(f"{{{name}}}" for name in cause.FIELDS) + " in single "
    "braces, bare (literal braces doubled: {{ }})."
)


def _cause_link_errors() -> list[CheckMessage]:
    """Validate the URL templates of ``FAILURE_LINK`` and ``EXECUTION_LINKS``."""
    config = conf.get_config()
    errors: list[CheckMessage] = []
    failure = config.get("FAILURE_LINK")
    wrong = None if failure is None else cause.problem(failure)
    if wrong:
        errors.append(
            Error(
                f"BATCHBOARD['FAILURE_LINK']: {wrong}.",
                hint=f"{_CAUSE_HINT} Or set it to None.",
                id="batchboard.E030",
            )
        )
    links = config.get("EXECUTION_LINKS") or []
    pairs = isinstance(links, (list, tuple)) and all(
        isinstance(pair, (list, tuple))
        and len(pair) == 2
        and isinstance(pair[0], str)
        and pair[0]
        for pair in links
    )
    if not pairs:
        errors.append(
            Error(
                "BATCHBOARD['EXECUTION_LINKS'] must be a list of "
                "(label, URL template) pairs.",
                hint='Use [("Logs", "https://logs.example.org/?q={execution_id}"), '
                "...], or leave it out.",
                id="batchboard.E031",
            )
        )
        return errors
    for label, template in links:
        wrong = cause.problem(template)
        if wrong:
            errors.append(
                Error(
                    f"BATCHBOARD['EXECUTION_LINKS'] {label!r}: {wrong}.",
                    hint=_CAUSE_HINT,
                    id="batchboard.E031",
                )
            )
    return errors


def _metrics_errors() -> list[CheckMessage]:
    """Validate the ``METRICS_*`` keys of ``/metrics`` (batchboard.metrics)."""
    config = conf.get_config()
    errors: list[CheckMessage] = []
    jobs = config.get("METRICS_JOBS")
    if (
        isinstance(jobs, str)
        or not isinstance(jobs, (list, tuple))
        or not all(isinstance(name, str) and name for name in jobs)
    ):
        errors.append(
            Error(
                "BATCHBOARD['METRICS_JOBS'] must be a list of job names.",
                hint='Use ["nightly-import", ...], or [] to label every job __other__.',
                id="batchboard.E040",
            )
        )
    elif len(set(jobs)) > MAX_NAME_ALLOWLIST:
        errors.append(
            Error(
                f"BATCHBOARD['METRICS_JOBS'] names {len(set(jobs))} jobs; "
                f"oxide-batch's cardinality budget allows {MAX_NAME_ALLOWLIST}.",
                hint=f"Keep the {MAX_NAME_ALLOWLIST} jobs worth a series of their "
                "own; the others are counted under __other__.",
                id="batchboard.E040",
            )
        )
    token = config.get("METRICS_TOKEN")
    if not isinstance(token, str):
        errors.append(
            Error(
                "BATCHBOARD['METRICS_TOKEN'] must be a string.",
                hint="Set a long random string (BATCHBOARD_METRICS_TOKEN in the "
                'standalone site), or "" for no token.',
                id="batchboard.E041",
            )
        )
    networks = config.get("METRICS_ALLOWED_NETWORKS")
    if isinstance(networks, str) or not isinstance(networks, (list, tuple)):
        networks = [networks]
    for network in networks:
        try:
            ipaddress.ip_network(str(network), strict=False)
        except ValueError:
            errors.append(
                Error(
                    "BATCHBOARD['METRICS_ALLOWED_NETWORKS'] holds "
                    f"{network!r}, which is not a network.",
                    hint='List networks as "10.0.0.0/8" or addresses as "192.0.2.7".',
                    id="batchboard.E041",
                )
            )
    seconds = config.get("METRICS_CACHE_SECONDS")
    if (
        not isinstance(seconds, (int, float))
        or isinstance(seconds, bool)
        or not 0 <= seconds <= 3600
    ):
        errors.append(
            Error(
                f"BATCHBOARD['METRICS_CACHE_SECONDS'] is {seconds!r}.",
                hint="Use seconds from 0 to 3600, at most the scrape interval.",
                id="batchboard.E042",
            )
        )
    return errors


@register(Tags.security, deploy=True)
def check_metrics_protected(
    app_configs: Any = None, **kwargs: Any
) -> list[CheckMessage]:
    """Warn a production site whose ``/metrics`` admits nobody (W040)."""
    config = conf.get_config()
    if (
        settings.DEBUG
        or config.get("METRICS_TOKEN")
        or config.get("METRICS_ALLOWED_NETWORKS")
    ):
        return []
    return [
        Warning(
            "/metrics has neither a bearer token nor a network allowlist, so it "
            "refuses every scrape.",
            hint="Set BATCHBOARD['METRICS_TOKEN'] or "
            "BATCHBOARD['METRICS_ALLOWED_NETWORKS'] (BATCHBOARD_METRICS_TOKEN or "
            "BATCHBOARD_METRICS_ALLOWED_NETWORKS in the standalone site).",
            id="batchboard.W040",
        )
    ]


def _schema_version(alias: str) -> tuple[str, int | None]:
    """
    Return (state, version) for the metadata schema on ``alias``.

    state is "ok", "no-schema", "no-search-path", "no-table" or "no-row".
    """
    connection = connections[alias]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = %s), "
                "to_regclass(%s) IS NOT NULL, %s = ANY(current_schemas(false))",
                [
                    schema.SCHEMA_NAME,
                    f"{schema.SCHEMA_NAME}.{schema.VERSION_TABLE}",
                    schema.SCHEMA_NAME,
                ],
            )
            has_schema, has_table, on_path = cursor.fetchone()
            if not has_schema:
                return "no-schema", None
            if not has_table:
                return "no-table", None
            if not on_path:
                return "no-search-path", None
        else:
            cursor.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = %s",
                [schema.VERSION_TABLE],
            )
            if cursor.fetchone() is None:
                return "no-schema", None
        cursor.execute(f"SELECT version FROM {schema.VERSION_TABLE}")
        row = cursor.fetchone()
    if row is None:
        return "no-row", None
    return "ok", int(row[0])


def _initial_migration_recorded(alias: str) -> bool:
    recorder = MigrationRecorder(connections[alias])
    return ("batchboard", "0001_initial") in recorder.applied_migrations()


def _driver_reason(exc: DatabaseError) -> str:
    """
    Return the driver's first line: why (refused, unknown database, bad
    password), without echoing credentials; later lines may carry SQL.
    """
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def schema_messages(alias: str) -> list[CheckMessage]:
    """Describe what is wrong with the metadata schema on ``alias``, if anything."""
    attached = conf.is_attached()
    setting_hint_text = setting_hint(alias)
    try:
        state, version = _schema_version(alias)
    except DatabaseError as exc:
        reason = _driver_reason(exc)
        return [
            Error(
                f"Cannot reach the metadata database {alias!r}: {reason}",
                hint=f"{setting_hint_text} "
                + (
                    "Does the SQLite file's directory exist, and may this user "
                    "write there?"
                    if connections[alias].vendor == "sqlite"
                    else "Is the server running and reachable?"
                ),
                id="batchboard.E010",
            )
        ]
    if state == "no-search-path":
        return [
            Error(
                f"The database {alias!r} has the {schema.SCHEMA_NAME} schema but "
                f"it is not on the connection's search_path.",
                hint=f"Add OPTIONS={{'options': '-c search_path="
                f"{schema.SCHEMA_NAME},public'}} to DATABASES[{alias!r}].",
                id="batchboard.E015",
            )
        ]
    if state in ("no-schema", "no-table"):
        if not attached:
            if not _initial_migration_recorded(alias):
                # A fresh managed database: Django already reports the
                # unapplied migration, and ``migrate`` (which runs this check
                # first) is about to create the schema.
                return []
            return [
                Warning(
                    f"The metadata database {alias!r} has no oxide-batch schema "
                    "although batchboard's migration is recorded as applied.",
                    hint="Run 'manage.py migrate' (with --database=" + alias + " "
                    "when it is a separate database).",
                    id="batchboard.W010",
                )
            ]
        return [
            Error(
                f"The metadata database {alias!r} has no oxide-batch schema "
                f"({schema.SCHEMA_NAME}.{schema.VERSION_TABLE} not found).",
                hint=f"{setting_hint_text} In attached mode batchboard never creates "
                "the schema: run oxide-batch's migrator there first, or set "
                "BATCHBOARD_SCHEMA=managed for a database of batchboard's own.",
                id="batchboard.E011",
            )
        ]
    if state == "no-row":
        return [
            Error(
                f"{schema.VERSION_TABLE} in {alias!r} has no row.",
                hint="The schema is incomplete: re-run oxide-batch's migrator "
                "(attached) or recreate the database (managed).",
                id="batchboard.E012",
            )
        ]
    assert version is not None
    if version < schema.SUPPORTED_SCHEMA_VERSION:
        return [
            Error(
                f"The oxide-batch schema in {alias!r} is version {version}; "
                f"batchboard supports version {schema.SUPPORTED_SCHEMA_VERSION} only.",
                hint="Upgrade it with oxide-batch's migrator (version 3 needs "
                "migration 0005_item_stream_component_state). batchboard does "
                "not read older schemas, as oxide-batch's own runtime does not.",
                id="batchboard.E013",
            )
        ]
    if version > schema.SUPPORTED_SCHEMA_VERSION:
        return [
            Error(
                f"The oxide-batch schema in {alias!r} is version {version}, newer "
                f"than the version {schema.SUPPORTED_SCHEMA_VERSION} batchboard "
                "supports.",
                hint="Upgrade batchboard to a release that supports it.",
                id="batchboard.E014",
            )
        ]
    return []


@register(Tags.database)
def check_metadata_schema(
    app_configs: Any = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> Iterable[CheckMessage]:
    """Check the metadata schema when the metadata alias is among ``databases``."""
    alias = conf.database_alias()
    if not databases or alias not in databases or alias not in settings.DATABASES:
        return []
    return schema_messages(alias)


# -- database roles (spec 9.1) ---------------------------------------------------

#: A privilege a class of work needs: (kind, table, column, privilege), kind
#: "table", "column", "sequence" (the sequence behind ``table.column``) or
#: "schema" (the metadata schema itself).
Need = tuple[str, str, str | None, str]

_READ_NEEDS: tuple[Need, ...] = tuple(
    ("table", name, None, "SELECT") for name in schema.TABLE_NAMES
)
_OPERATOR_NEEDS: tuple[Need, ...] = (
    ("table", "ob_operator_request", None, "INSERT"),
    ("table", "ob_recovery_decision", None, "INSERT"),
    *(
        ("column", "ob_job_execution", column, "UPDATE")
        for column in (
            "status",
            "exit_code",
            "failure_category",
            "failure_id",
            "started_at",
            "ended_at",
            "updated_at",
            "version",
            "stop_requested_at",
            "stop_requested_by",
        )
    ),
    ("sequence", "ob_operator_request", "id", "USAGE"),
    ("sequence", "ob_recovery_decision", "id", "USAGE"),
)
_RETENTION_NEEDS: tuple[Need, ...] = (
    ("table", "ob_retention_action", None, "INSERT"),
    ("table", "ob_retention_action", None, "UPDATE"),
    *(
        ("column", "ob_job_instance", column, "UPDATE")
        for column in ("hold_actor", "hold_reason", "hold_placed_at")
    ),
    ("column", "ob_flow_decision", "reused_decision_id", "UPDATE"),
    *(
        ("table", name, None, "DELETE")
        for name in (
            "ob_flow_decision",
            "ob_recovery_decision",
            "ob_operator_request",
            "ob_step_partition",
            "ob_component_state",
            "ob_step_execution",
            "ob_job_execution",
            "ob_job_instance",
        )
    ),
    ("sequence", "ob_retention_action", "id", "USAGE"),
)

#: What each kind of login needs, and the work that fails without it.
ROLE_NEEDS: dict[str, tuple[tuple[Need, ...], str]] = {
    "READ": (_READ_NEEDS, "every explorer page"),
    conf.OPERATOR: (_OPERATOR_NEEDS, "stop, abandon and recover"),
    conf.RETENTION: (_RETENTION_NEEDS, "placing and releasing holds, and purges"),
}


def describe_need(need: Need) -> str:
    """Name a privilege as a GRANT would: ``UPDATE (status) ON oxide_batch.t``."""
    kind, table, column, privilege = need
    if kind == "schema":
        return f"{privilege} ON SCHEMA {schema.SCHEMA_NAME}"
    qualified = f"{schema.SCHEMA_NAME}.{table}"
    if kind == "column":
        return f"{privilege} ({column}) ON {qualified}"
    if kind == "sequence":
        return f"{privilege} ON the sequence of {qualified}.{column}"
    return f"{privilege} ON {qualified}"


def missing_privileges(alias: str, needs: Sequence[Need]) -> list[Need]:
    """
    Return the ``needs`` the login of ``alias`` lacks (PostgreSQL), in order.

    Without ``USAGE`` on the schema nothing in it is reachable, so that is
    the one privilege reported then. Objects are found through the catalog,
    which every login may read, so a missing privilege is never an error.
    """
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT has_schema_privilege(%s, 'USAGE')", [schema.SCHEMA_NAME])
        row = cursor.fetchone()
        if not (row and row[0]):
            return [("schema", "", None, "USAGE")]
        rows = ", ".join("(%s, %s, %s, %s, %s)" for _ in needs)
        params: list[Any] = []
        for number, (kind, table, column, privilege) in enumerate(needs):
            params += [number, kind, table, column, privilege]
        cursor.execute(
            "WITH need(n, kind, tbl, col, priv) AS (VALUES "
            + rows
            + "), found AS (SELECT need.*, c.oid AS rel, a.attnum FROM need "
            "LEFT JOIN pg_namespace ns ON ns.nspname = %s "
            "LEFT JOIN pg_class c ON c.relnamespace = ns.oid AND c.relname = need.tbl "
            "LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = need.col) "
            "SELECT n FROM found WHERE NOT COALESCE(CASE kind "
            "WHEN 'table' THEN has_table_privilege(rel, priv) "
            "WHEN 'column' THEN has_column_privilege(rel, attnum, priv) "
            "ELSE (SELECT has_sequence_privilege(d.objid, priv) FROM pg_depend d "
            "JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S' "
            "WHERE d.refobjid = rel AND d.refobjsubid = attnum "
            "AND d.deptype IN ('a', 'i') LIMIT 1) END, false) ORDER BY n",
            [*params, schema.SCHEMA_NAME],
        )
        return [needs[int(found[0])] for found in cursor.fetchall()]


def _login(alias: str) -> str:
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT current_user")
        row = cursor.fetchone()
    return str(row[0]) if row else "?"


def _privilege_messages(alias: str, role: str, *, warn: bool) -> list[CheckMessage]:
    needs, work = ROLE_NEEDS[role]
    missing = missing_privileges(
        alias, (_READ_NEEDS + needs) if role != "READ" else needs
    )
    if not missing:
        return []
    login = _login(alias)
    messages: list[CheckMessage] = []
    for need in missing:
        grant = describe_need(need)
        kind = Warning if warn else Error
        messages.append(
            kind(
                f"The login {login!r} of the database alias {alias!r} lacks "
                f"{grant}, which {work} need"
                + (
                    " (they write through this alias: ACTION_DATABASES gives "
                    "them no login of their own)."
                    if warn
                    else "."
                ),
                hint=f"As the schema owner: GRANT {grant.replace('the sequence of ', '')}"
                f" TO {login}; (see the README's least-privilege roles).",
                id="batchboard.W016" if warn else "batchboard.E016",
            )
        )
    return messages


def _replica_messages(alias: str) -> list[CheckMessage]:
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT pg_is_in_recovery()")
            row = cursor.fetchone()
    except DatabaseError as exc:
        return [
            Warning(
                f"The replica {alias!r} cannot be reached: {_driver_reason(exc)}",
                hint="Pages fall back to the primary until it answers; check the "
                "replica and BATCHBOARD_READ_DATABASE_URL.",
                id="batchboard.W021",
            )
        ]
    if row and not row[0]:
        return [
            Warning(
                f"The replica {alias!r} is not in recovery: it is a primary, "
                "not a streaming standby.",
                hint="Point it at a standby (pg_is_in_recovery() true); batchboard "
                "skips it and reads from the primary meanwhile.",
                id="batchboard.W020",
            )
        ]
    return []


def _schema_ready(alias: str) -> bool:
    try:
        return _schema_version(alias)[0] == "ok"
    except DatabaseError:
        return False


@register(Tags.database)
def check_database_roles(
    app_configs: Any = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> Iterable[CheckMessage]:
    """
    Check replicas and the privileges of each login batchboard uses (PostgreSQL).

    For each alias among ``databases``: a replica must be in recovery
    (W020, W021) and may read every table; the metadata alias may read
    every table, and warns (W016) for the actions it writes for; an
    ``ACTION_DATABASES`` alias holds its class's privileges (E016). Each
    missing privilege is named, as a GRANT would name it.
    """
    if not databases:
        return []
    primary = conf.database_alias()
    if primary not in settings.DATABASES:
        return []
    actions = conf.get_config().get("ACTION_DATABASES") or {}
    if not isinstance(actions, dict):
        actions = {}
    messages: list[CheckMessage] = []
    for alias in databases:
        if alias not in settings.DATABASES:
            continue
        if connections[alias].vendor != "postgresql":
            continue
        if alias in conf.read_aliases():
            found = _replica_messages(alias)
            messages += found
            if not found:
                messages += _privilege_messages(alias, "READ", warn=False)
            continue
        roles = [role for role, named in actions.items() if named == alias]
        if alias != primary and not roles:
            continue
        if not _schema_ready(primary):
            continue  # the schema checks say what is wrong first
        try:
            if alias == primary:
                messages += _privilege_messages(alias, "READ", warn=False)
                for role in conf.ACTION_ROLES:
                    if role not in actions:
                        messages += _privilege_messages(alias, role, warn=True)
            for role in roles:
                if role in ROLE_NEEDS:
                    messages += _privilege_messages(alias, role, warn=False)
        except DatabaseError as exc:
            messages.append(
                Error(
                    f"Cannot check the privileges of {alias!r}: {type(exc).__name__}.",
                    hint="Run 'manage.py check --database "
                    f"{alias}' once the database answers.",
                    id="batchboard.E010",
                )
            )
    return messages
