"""The settings check names each misconfiguration of ``BATCHBOARD``."""

from __future__ import annotations

import pytest
from django.test import override_settings

from batchboard import checks


def _ids(settings: object) -> list[str]:
    with override_settings(BATCHBOARD=settings):
        return [message.id for message in checks.check_settings()]


def test_defaults_pass() -> None:
    """No BATCHBOARD keys at all is a valid configuration."""
    assert _ids({}) == []


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ([], ["batchboard.E000"]),
        ({"PAGES": 3}, ["batchboard.W001"]),
        ({"SCHEMA": "borrowed"}, ["batchboard.E001"]),
        ({"DATABASE": "nowhere"}, ["batchboard.E002"]),
        ({"PAGE_SIZE": 0}, ["batchboard.E004"]),
        ({"PAGE_SIZE": 501}, ["batchboard.E004"]),
        ({"ACTION_DATABASES": ["default"]}, ["batchboard.E005"]),
        ({"ACTION_DATABASES": {"ADMIN": "default"}}, ["batchboard.E005"]),
        ({"ACTION_DATABASES": {"OPERATOR": "ops"}}, ["batchboard.E006"]),
        ({"STATE_DATABASE": "nowhere"}, ["batchboard.E017"]),
        ({"BULK_MAX_ITEMS": 0}, ["batchboard.E018"]),
        ({"BULK_MAX_ITEMS": "1000"}, ["batchboard.E018"]),
        ({"BULK_MAX_ITEMS": 10_001}, ["batchboard.E018"]),
    ],
)
def test_misconfiguration_is_named(settings: object, expected: list[str]) -> None:
    """Each mistake has its own id."""
    assert _ids(settings) == expected


def test_action_databases_on_defined_aliases_pass() -> None:
    """Roles pointing at defined aliases are accepted."""
    assert _ids({"ACTION_DATABASES": {"OPERATOR": "default"}}) == []


# The check reads only the keys of DATABASES; no connection is opened.
@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
def test_separate_metadata_alias_needs_the_router() -> None:
    """A metadata alias other than default without the router: E003."""
    databases = {
        "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"},
        "meta": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"},
    }
    with override_settings(DATABASES=databases, DATABASE_ROUTERS=[]):
        assert _ids({"DATABASE": "meta"}) == ["batchboard.E003"]
