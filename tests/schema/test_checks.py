"""The database-tagged system check names what is wrong with the schema."""

from __future__ import annotations

import pytest
from django.core.checks import Error, Warning
from django.db import OperationalError, connections
from django.test import override_settings

from batchboard import checks, conf

pytestmark = pytest.mark.django_db

ATTACHED = override_settings(BATCHBOARD={"SCHEMA": "attached"})


def _ids(messages: list[object]) -> list[str]:
    return [message.id for message in messages]  # type: ignore[attr-defined]


def _execute(sql: str) -> None:
    with connections[conf.database_alias()].cursor() as cursor:
        cursor.execute(sql)


def _hide_version_table() -> None:
    if connections[conf.database_alias()].vendor == "postgresql":
        _execute("ALTER TABLE oxide_batch.ob_schema_version RENAME TO hidden_version")
    else:
        _execute('DROP TABLE "ob_schema_version"')


def test_supported_schema_passes() -> None:
    """Version 4 with its row gives no message, managed or attached."""
    assert checks.schema_messages(conf.database_alias()) == []
    with ATTACHED:
        assert checks.schema_messages(conf.database_alias()) == []


def test_check_runs_only_for_the_metadata_database() -> None:
    """Without the metadata alias among ``databases`` the check stays silent."""
    _execute("DELETE FROM ob_schema_version")
    assert checks.check_metadata_schema(databases=None) == []
    assert checks.check_metadata_schema(databases=["other"]) == []
    assert _ids(checks.check_metadata_schema(databases=["default"])) == [
        "batchboard.E012"
    ]


def test_missing_schema_is_an_error_when_attached() -> None:
    """Attached to a database without the schema: E011 with a hint."""
    _hide_version_table()
    with ATTACHED:
        (message,) = checks.schema_messages(conf.database_alias())
    assert isinstance(message, Error)
    assert message.id == "batchboard.E011"
    assert "never creates" in message.hint


def test_missing_schema_is_a_warning_when_managed() -> None:
    """Managed, migration recorded, schema gone: W010 says to run migrate."""
    _hide_version_table()
    (message,) = checks.schema_messages(conf.database_alias())
    assert isinstance(message, Warning)
    assert message.id == "batchboard.W010"
    assert "migrate" in message.hint


def test_fresh_managed_database_is_left_to_migrate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before batchboard's first migration the check adds nothing to Django's."""
    _hide_version_table()
    monkeypatch.setattr(checks, "_initial_migration_recorded", lambda alias: False)
    assert checks.schema_messages(conf.database_alias()) == []


def test_missing_row() -> None:
    """An empty ob_schema_version gives E012."""
    _execute("DELETE FROM ob_schema_version")
    with ATTACHED:
        assert _ids(checks.schema_messages(conf.database_alias())) == [
            "batchboard.E012"
        ]


@pytest.mark.parametrize(
    ("version", "expected", "words"),
    [
        (3, "batchboard.E013", "0005_item_stream_component_state"),
        (5, "batchboard.E014", "Upgrade batchboard"),
    ],
)
def test_unsupported_version(version: int, expected: str, words: str) -> None:
    """Version 3 is refused as oxide-batch's runtime refuses it; 5 is too new."""
    _execute(f"UPDATE ob_schema_version SET version = {version}")
    with ATTACHED:
        (message,) = checks.schema_messages(conf.database_alias())
    assert message.id == expected
    assert f"version {version}" in message.msg
    assert words in message.hint


def test_schema_off_the_search_path() -> None:
    """On PostgreSQL a search_path without oxide_batch gives E015."""
    if connections[conf.database_alias()].vendor != "postgresql":
        pytest.skip("search_path exists on PostgreSQL only")
    _execute("SET LOCAL search_path = public")
    with ATTACHED:
        (message,) = checks.schema_messages(conf.database_alias())
    assert message.id == "batchboard.E015"
    assert "search_path=oxide_batch,public" in message.hint


def test_unreachable_database(monkeypatch: pytest.MonkeyPatch) -> None:
    """A connection failure becomes E010 naming the setting to fix."""

    def refuse(alias: str) -> tuple[str, int | None]:
        raise OperationalError("connection refused")

    monkeypatch.setattr(checks, "_schema_version", refuse)
    (message,) = checks.schema_messages("default")
    assert message.id == "batchboard.E010"
    assert "connection refused" in message.msg
    assert "DATABASE_URL" in message.hint


def test_setting_hint_names_the_site_variable() -> None:
    """Each alias's hint names the standalone site's variable for it."""
    assert "(in the standalone site: DATABASE_URL," in checks.setting_hint("default")
    assert "BATCHBOARD_DATABASE_URL)" in checks.setting_hint("batchboard")
