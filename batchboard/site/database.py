"""Turn the standalone site's database URLs into ``DATABASES`` entries."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, OperationalError, ProgrammingError

from batchboard.schema import SCHEMA_NAME


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
            # is locked", and the timeout waits out the other writer.
            "OPTIONS": {
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
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
            "OPTIONS": options,
        }
    raise SiteConfigurationError(
        f"{setting} uses the scheme {parts.scheme or '(none)'!r}; batchboard "
        "supports sqlite:/// and postgresql://."
    )


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
SITE_SETTINGS = {"default": "DATABASE_URL", "batchboard": "BATCHBOARD_DATABASE_URL"}


def setting_for(alias: str) -> str:
    """Return the variable (or DATABASES entry) that configures ``alias``."""
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
