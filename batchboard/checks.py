"""System checks for batchboard's configuration and metadata database."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.db import DatabaseError, connections
from django.db.migrations.recorder import MigrationRecorder

from batchboard import conf, schema
from batchboard.vocabulary import MAX_PAGE_SIZE, MIN_PAGE_SIZE


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
    elif alias != "default" and not any(
        str(path).endswith("BatchboardRouter")
        for path in getattr(settings, "DATABASE_ROUTERS", [])
    ):
        errors.append(
            Error(
                f"The metadata database is {alias!r} but BatchboardRouter is not "
                "installed.",
                hint="Add 'batchboard.routers.BatchboardRouter' to DATABASE_ROUTERS.",
                id="batchboard.E003",
            )
        )
    errors.extend(_action_database_errors())
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


def schema_messages(alias: str) -> list[CheckMessage]:
    """Describe what is wrong with the metadata schema on ``alias``, if anything."""
    attached = conf.is_attached()
    setting_hint_text = setting_hint(alias)
    try:
        state, version = _schema_version(alias)
    except DatabaseError as exc:
        # The driver's first line says why (refused, unknown database, bad
        # password) without echoing credentials; later lines may carry SQL.
        text = str(exc).strip()
        reason = text.splitlines()[0] if text else type(exc).__name__
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
