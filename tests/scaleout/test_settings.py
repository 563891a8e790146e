"""The settings of scale-out: replicas, the read timeout, lag, site variables."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import override_settings

from batchboard import checks, conf
from batchboard.site.database import (
    SiteConfigurationError,
    action_databases,
    parse_database_url,
    read_databases,
    setting_for,
)

BASE = Path("/srv/batchboard")


def _ids(settings: object) -> list[str]:
    with override_settings(BATCHBOARD=settings):
        return [message.id for message in checks.check_settings()]


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"READ_DATABASES": "replica"}, ["batchboard.E007"]),
        ({"READ_DATABASES": ["nowhere"]}, ["batchboard.E007"]),
        # The site's own database as a replica: batchboard's own state
        # (STATE_DATABASE, "default") would sit on it too.
        ({"READ_DATABASES": ["default"]}, ["batchboard.E007", "batchboard.E017"]),
        ({"STATEMENT_TIMEOUT_MS": 0}, ["batchboard.E008"]),
        ({"STATEMENT_TIMEOUT_MS": 86_400_001}, ["batchboard.E008"]),
        ({"STATEMENT_TIMEOUT_MS": "30s"}, ["batchboard.E008"]),
        ({"REPLICA_LAG_NOTICE_SECONDS": -1}, ["batchboard.E009"]),
        (
            {"REPLICA_LAG_NOTICE_SECONDS": 60, "REPLICA_MAX_LAG_SECONDS": 30},
            ["batchboard.E009"],
        ),
    ],
)
def test_misconfiguration_is_named(settings: object, expected: list[str]) -> None:
    """Each mistake in the scale-out keys has its id."""
    assert _ids(settings) == expected


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
def test_replicas_without_the_middleware_are_named() -> None:
    """Replicas configured, middleware missing: W007 (pages stay on the primary)."""
    databases = {
        "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"},
        "replica": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"},
    }
    with override_settings(DATABASES=databases):
        assert _ids({"READ_DATABASES": ["replica"]}) == []
        with override_settings(MIDDLEWARE=[]):
            assert _ids({"READ_DATABASES": ["replica"]}) == ["batchboard.W007"]


def test_bounds_of_the_read_timeout_pass() -> None:
    """1 ms and 24 h are both accepted (spec 9.3)."""
    assert _ids({"STATEMENT_TIMEOUT_MS": 1}) == []
    assert _ids({"STATEMENT_TIMEOUT_MS": 86_400_000}) == []


def test_read_aliases_ignore_malformed_values() -> None:
    """A malformed READ_DATABASES reads as no replica (E007 reports it)."""
    with override_settings(BATCHBOARD={"READ_DATABASES": 3}):
        assert conf.read_aliases() == []
    with override_settings(BATCHBOARD={"READ_DATABASES": "r1"}):
        assert conf.read_aliases() == ["r1"]


def test_read_database_url_names_one_alias_per_replica() -> None:
    """Comma-separated URLs become batchboard_read_1.. mirrors of the metadata."""
    found = read_databases(
        {
            "BATCHBOARD_READ_DATABASE_URL": (
                "postgresql://reader@standby-a/oxide, postgresql://reader@standby-b/oxide"
            )
        },
        BASE,
        "batchboard",
    )
    assert list(found) == ["batchboard_read_1", "batchboard_read_2"]
    assert found["batchboard_read_2"]["HOST"] == "standby-b"
    assert found["batchboard_read_1"]["TEST"] == {"MIRROR": "batchboard"}
    assert (
        "search_path=public,oxide_batch"
        in found["batchboard_read_1"]["OPTIONS"]["options"]
    )
    assert setting_for("batchboard_read_2") == "BATCHBOARD_READ_DATABASE_URL"
    assert read_databases({}, BASE, "default") == {}


def test_a_replica_must_be_postgresql() -> None:
    """A SQLite replica is refused, naming the variable."""
    with pytest.raises(SiteConfigurationError, match="BATCHBOARD_READ_DATABASE_URL"):
        read_databases(
            {"BATCHBOARD_READ_DATABASE_URL": "sqlite:///r.sqlite3"}, BASE, "default"
        )


def test_action_urls_give_each_writer_its_login() -> None:
    """The operator and retention variables become ACTION_DATABASES."""
    databases, roles = action_databases(
        {
            "BATCHBOARD_OPERATOR_DATABASE_URL": "postgresql://op@primary/oxide",
            "BATCHBOARD_RETENTION_DATABASE_URL": "postgresql://ret@primary/oxide",
        },
        BASE,
        "batchboard",
    )
    assert roles == {
        "OPERATOR": "batchboard_operator",
        "RETENTION": "batchboard_retention",
    }
    assert databases["batchboard_operator"]["USER"] == "op"
    assert databases["batchboard_retention"]["TEST"] == {"MIRROR": "batchboard"}
    assert setting_for("batchboard_operator") == "BATCHBOARD_OPERATOR_DATABASE_URL"
    assert action_databases({}, BASE, "default") == ({}, {})


def test_postgresql_never_uses_server_side_cursors() -> None:
    """Every PostgreSQL alias of the site is safe behind PgBouncer."""
    entry = parse_database_url("postgresql://ob@db/ops", setting="X", base_dir=BASE)
    assert entry["DISABLE_SERVER_SIDE_CURSORS"] is True


@pytest.mark.parametrize(
    ("query", "pool"),
    [
        ("pool=1", True),
        ("pool=1&pool_min_size=2&pool_max_size=8", {"min_size": 2, "max_size": 8}),
        ("pool_max_size=4", {"max_size": 4}),
        ("pool=0", None),
    ],
)
def test_pool_option(query: str, pool: object) -> None:
    """?pool=1 turns on psycopg's pool; the sizes pass as numbers."""
    entry = parse_database_url(
        f"postgresql://ob@db/ops?{query}", setting="X", base_dir=BASE
    )
    assert entry["OPTIONS"].get("pool") == pool
    assert not any(key.startswith("pool_") for key in entry["OPTIONS"])


@pytest.mark.parametrize(
    "query",
    [
        "pool=maybe",
        "pool_max_size=0",
        "pool_max_size=2000",
        "pool_min_size=9&pool_max_size=2",
    ],
)
def test_bad_pool_options_are_named(query: str) -> None:
    """A pool option out of bounds is one sentence naming the variable."""
    with pytest.raises(SiteConfigurationError, match="BATCHBOARD_DATABASE_URL"):
        parse_database_url(
            f"postgresql://ob@db/ops?{query}",
            setting="BATCHBOARD_DATABASE_URL",
            base_dir=BASE,
        )
