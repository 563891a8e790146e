"""Turn the standalone site's database URLs into ``DATABASES`` entries."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, OperationalError, ProgrammingError

from batchboard.schema import SCHEMA_NAME
from batchboard.vocabulary import parse_whole_number


class SiteConfigurationError(ImproperlyConfigured):
    """A setting of the standalone site is missing or wrong; the message says which."""


def parse_database_url(
    url: str, *, setting: str, base_dir: Path, search_path: str | None = None
) -> dict[str, Any]:
    """
    Return a ``DATABASES`` entry for ``sqlite:///path`` or ``postgres://…``.

    ``search_path`` is set on PostgreSQL connections so that the unqualified
    ``ob_*`` table names resolve in the ``oxide_batch`` schema.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise SiteConfigurationError(
            f"{setting} is not a valid database URL ({exc}). "
            "Use sqlite:///path/to/file.sqlite3 or "
            "postgresql://user:password@host:5432/name."
        ) from None
    scheme = parts.scheme.lower()
    if scheme == "sqlite":
        raw = unquote(parts.path)
        if not raw or raw == "/":
            raise SiteConfigurationError(
                f"{setting} names no SQLite file. Use sqlite:///relative.sqlite3 "
                "or sqlite:////absolute/path.sqlite3."
            )
        path = Path(raw[1:]) if raw.startswith("/") else Path(raw)
        if not path.is_absolute():
            path = base_dir / path
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(path),
            # The demo serves pages while its simulator writes: WAL lets
            # readers run beside the writer, IMMEDIATE transactions take the
            # write lock up front instead of failing half-way with "database
            # is locked", and the timeout waits out the other writer. A
            # connection keeps up to 64 MiB of the file's pages (SQLite's
            # default is 2 MiB): the history's indexes run to gigabytes, and
            # a page such as the overview reads a few hundred of them.
            "OPTIONS": {
                "init_command": (
                    "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                    "PRAGMA cache_size=-65536;"
                ),
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
            },
        }
    if scheme in ("postgres", "postgresql", "pgsql"):
        name = unquote(parts.path.lstrip("/"))
        if not name:
            raise SiteConfigurationError(
                f"{setting} names no database. Use "
                "postgresql://user:password@host:5432/name."
            )
        options: dict[str, Any] = dict(parse_qsl(parts.query))
        options.setdefault("connect_timeout", "5")
        pool = _pool_option(options, setting)
        if search_path:
            extra = options.get("options", "")
            options["options"] = f"{extra} -c search_path={search_path}".strip()
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": unquote(parts.hostname or ""),
            "PORT": str(port or ""),
            "OPTIONS": {**options, **pool},
            # Keyset pages are small and bounded: batchboard never needs a
            # server-side cursor, and PgBouncer in transaction mode cannot
            # keep one open between transactions.
            "DISABLE_SERVER_SIDE_CURSORS": True,
        }
    raise SiteConfigurationError(
        f"{setting} uses the scheme {parts.scheme or '(none)'!r}; batchboard "
        "supports sqlite:/// and postgresql://."
    )


def _pool_option(options: dict[str, Any], setting: str) -> dict[str, Any]:
    """
    Take ``pool``, ``pool_min_size`` and ``pool_max_size`` out of ``options``.

    ``?pool=1`` turns on psycopg's connection pool (Django's
    ``OPTIONS["pool"]``), the alternative to PgBouncer; the sizes bound it
    (spec 9.3: 1..1024).
    """
    flag = options.pop("pool", None)
    sizes = {
        key: options.pop(f"pool_{key}")
        for key in ("min_size", "max_size")
        if f"pool_{key}" in options
    }
    if flag is None and not sizes:
        return {}
    if flag not in (None, "1", "true", "on"):
        if flag in ("0", "false", "off") and not sizes:
            return {}
        raise SiteConfigurationError(
            f"{setting} has pool={flag!r}; use pool=1 to pool connections, "
            "or leave it out."
        )
    bounds: dict[str, int] = {}
    for key, raw in sizes.items():
        size = parse_whole_number(raw, maximum=1024)
        if size is None or size < 1:
            raise SiteConfigurationError(
                f"{setting} has pool_{key}={raw!r}; use a whole number from 1 to 1024."
            )
        bounds[key] = size
    if bounds.get("min_size", 1) > bounds.get("max_size", 1024):
        raise SiteConfigurationError(
            f"{setting} has a pool_min_size larger than its pool_max_size."
        )
    return {"pool": bounds or True}


#: Seconds a worker keeps a PostgreSQL connection open between requests.
DEFAULT_CONN_MAX_AGE = 60
#: The longest ``CONN_MAX_AGE`` the site accepts (one day).
MAX_CONN_MAX_AGE = 86_400


def keep_connections(databases: dict[str, dict[str, Any]], env: dict[str, str]) -> None:
    """
    Let each worker keep its PostgreSQL connections open between requests.

    Opening a connection per request costs more than most pages: the
    server starts a backend process, and a new backend reads the catalog
    afresh for every table and index a page touches. ``CONN_MAX_AGE``
    (seconds, default :data:`DEFAULT_CONN_MAX_AGE`, ``0`` closes after each
    request as Django does by default) keeps them; Django checks a kept
    connection once per request before using it (``CONN_HEALTH_CHECKS``),
    so a restarted server or pooler costs a reconnect, not a failed page.
    Pages set their statement timeout locally to their transaction, so
    nothing of one request outlives it on the connection. A URL with
    ``?pool=1`` keeps its connections in psycopg's pool instead (Django
    refuses both at once), and SQLite files are opened per request: opening
    one is cheap, and ``runserver`` serves each request on a new thread.
    """
    raw = env.get("CONN_MAX_AGE", "").strip()
    seconds = (
        parse_whole_number(raw, maximum=MAX_CONN_MAX_AGE)
        if raw
        else DEFAULT_CONN_MAX_AGE
    )
    if seconds is None:
        raise SiteConfigurationError(
            f"CONN_MAX_AGE is {raw!r}; use a whole number of seconds from 0 to "
            f"{MAX_CONN_MAX_AGE} (0 closes each connection after its request)."
        )
    for entry in databases.values():
        if entry["ENGINE"] != "django.db.backends.postgresql":
            continue
        if entry["OPTIONS"].get("pool"):
            continue
        entry["CONN_MAX_AGE"] = seconds
        entry["CONN_HEALTH_CHECKS"] = seconds > 0


def read_databases(
    env: dict[str, str], base_dir: Path, metadata_alias: str
) -> dict[str, dict[str, Any]]:
    """
    Return the replicas named by ``BATCHBOARD_READ_DATABASE_URL``.

    The variable holds one or more comma-separated URLs of streaming
    replicas of the metadata database; they become the aliases
    ``batchboard_read_1``, ``batchboard_read_2`` and so on, which the test
    runner treats as mirrors of the metadata alias.
    """
    urls = [
        url.strip()
        for url in env.get("BATCHBOARD_READ_DATABASE_URL", "").split(",")
        if url.strip()
    ]
    databases: dict[str, dict[str, Any]] = {}
    for number, url in enumerate(urls, start=1):
        entry = parse_database_url(
            url,
            setting="BATCHBOARD_READ_DATABASE_URL",
            base_dir=base_dir,
            search_path=f"public,{SCHEMA_NAME}",
        )
        if entry["ENGINE"] != "django.db.backends.postgresql":
            raise SiteConfigurationError(
                "BATCHBOARD_READ_DATABASE_URL names a SQLite file; replicas are "
                "PostgreSQL streaming standbys (postgresql://...)."
            )
        entry["TEST"] = {"MIRROR": metadata_alias}
        databases[f"batchboard_read_{number}"] = entry
    return databases


#: The action roles the standalone site gives a login of their own, and the
#: variable naming each one's URL.
ACTION_VARIABLES = {
    "OPERATOR": "BATCHBOARD_OPERATOR_DATABASE_URL",
    "RETENTION": "BATCHBOARD_RETENTION_DATABASE_URL",
}


def action_databases(
    env: dict[str, str], base_dir: Path, metadata_alias: str
) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """
    Return ``(DATABASES entries, ACTION_DATABASES)`` for the writers' logins.

    ``BATCHBOARD_OPERATOR_DATABASE_URL`` (stop, abandon, recover) and
    ``BATCHBOARD_RETENTION_DATABASE_URL`` (holds, purges) name the primary
    metadata database under the least-privilege roles of spec 9.1.
    """
    databases: dict[str, dict[str, Any]] = {}
    roles: dict[str, str] = {}
    for role, variable in ACTION_VARIABLES.items():
        url = env.get(variable, "").strip()
        if not url:
            continue
        alias = f"batchboard_{role.lower()}"
        entry = parse_database_url(
            url,
            setting=variable,
            base_dir=base_dir,
            search_path=f"public,{SCHEMA_NAME}",
        )
        entry["TEST"] = {"MIRROR": metadata_alias}
        databases[alias] = entry
        roles[role] = alias
    return databases, roles


def databases_from_environment(
    env: dict[str, str], base_dir: Path
) -> tuple[dict[str, dict[str, Any]], str]:
    """
    Return ``(DATABASES, metadata alias)`` from ``DATABASE_URL`` and
    ``BATCHBOARD_DATABASE_URL``.

    Without ``BATCHBOARD_DATABASE_URL`` (or with the same URL) the metadata
    tables live in the default database; otherwise in a second alias named
    ``batchboard``.
    """
    default_url = env.get("DATABASE_URL") or "sqlite:///db.sqlite3"
    metadata_url = env.get("BATCHBOARD_DATABASE_URL") or default_url
    if metadata_url == default_url:
        databases = {
            "default": parse_database_url(
                default_url,
                setting="DATABASE_URL",
                base_dir=base_dir,
                search_path=f"public,{SCHEMA_NAME}",
            )
        }
        return databases, "default"
    databases = {
        "default": parse_database_url(
            default_url, setting="DATABASE_URL", base_dir=base_dir
        ),
        "batchboard": parse_database_url(
            metadata_url,
            setting="BATCHBOARD_DATABASE_URL",
            base_dir=base_dir,
            # public first: Django's own bookkeeping (django_migrations,
            # when migrating a managed schema) never lands inside
            # oxide_batch, whose catalog must stay oxide-batch's.
            search_path=f"public,{SCHEMA_NAME}",
        ),
    }
    return databases, "batchboard"


# The standalone site's variable behind each alias it defines.
SITE_SETTINGS = {
    "default": "DATABASE_URL",
    "batchboard": "BATCHBOARD_DATABASE_URL",
    "batchboard_operator": "BATCHBOARD_OPERATOR_DATABASE_URL",
    "batchboard_retention": "BATCHBOARD_RETENTION_DATABASE_URL",
}


def setting_for(alias: str) -> str:
    """Return the variable (or DATABASES entry) that configures ``alias``."""
    if alias.startswith("batchboard_read_"):
        return "BATCHBOARD_READ_DATABASE_URL"
    return SITE_SETTINGS.get(alias, f"DATABASES[{alias!r}]")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def unreachable_alias() -> tuple[str, str] | None:
    """Return ``(alias, reason)`` for the first database that refuses a connection."""
    from django.db import connections

    for alias in connections:
        try:
            connections[alias].ensure_connection()
        except DatabaseError as failure:
            return alias, _first_line(failure)
    return None


def explain_database_error(exc: DatabaseError) -> str:
    """
    Return one sentence saying which setting to fix after ``exc``.

    Only the driver's first line of connection and schema errors is quoted:
    later lines, and the text of other errors (a rejected value, say), may
    carry SQL or data.
    """
    from django.db import connections

    from batchboard import conf

    failed = unreachable_alias()
    if failed is not None:
        alias, reason = failed
        setting = setting_for(alias)
        if connections[alias].vendor == "sqlite":
            # A file, not a server: no host or port to check.
            return (
                f"Cannot open the SQLite file named by {setting} "
                f"({connections[alias].settings_dict['NAME']}: {reason}). Check "
                "that its directory exists and that this user may write there."
            )
        return (
            f"Cannot connect to the database named by {setting} ({reason}). "
            f"Check that the server is running and that {setting} gives the "
            "right host, port, database name and user."
        )
    alias = conf.database_alias()
    detail = (
        f" ({_first_line(exc)})"
        if isinstance(exc, (OperationalError, ProgrammingError))
        else f" ({type(exc).__name__})"
    )
    return (
        f"A database statement failed{detail}. Run 'manage.py check --database "
        f"{alias}' to see whether the oxide-batch schema behind "
        f"{setting_for(alias)} is missing or of a version batchboard does not "
        "support."
    )
