"""The standalone site's database URLs become DATABASES entries."""

from __future__ import annotations

from pathlib import Path

import pytest

from batchboard.site.database import (
    SiteConfigurationError,
    databases_from_environment,
    keep_connections,
    parse_database_url,
)

BASE = Path("/srv/batchboard")


def test_sqlite_relative_and_absolute_paths() -> None:
    """Relative SQLite paths resolve against the checkout."""
    relative = parse_database_url("sqlite:///db.sqlite3", setting="X", base_dir=BASE)
    assert relative["NAME"] == "/srv/batchboard/db.sqlite3"
    absolute = parse_database_url(
        "sqlite:////tmp/x.sqlite3", setting="X", base_dir=BASE
    )
    assert absolute["NAME"] == "/tmp/x.sqlite3"


def test_sqlite_is_ready_for_a_reader_beside_a_writer() -> None:
    """WAL, immediate transactions and a busy timeout for the demo."""
    entry = parse_database_url("sqlite:///db.sqlite3", setting="X", base_dir=BASE)
    assert "journal_mode=WAL" in entry["OPTIONS"]["init_command"]
    assert "cache_size=-65536" in entry["OPTIONS"]["init_command"]
    assert entry["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert entry["OPTIONS"]["timeout"] == 20


def test_postgresql_url_with_search_path() -> None:
    """Credentials are unquoted and the metadata schema joins search_path."""
    entry = parse_database_url(
        "postgresql://ob%20reader:p%40ss@db.example.org:6432/ops?sslmode=verify-full",
        setting="X",
        base_dir=BASE,
        search_path="oxide_batch",
    )
    assert entry["USER"] == "ob reader"
    assert entry["PASSWORD"] == "p@ss"
    assert entry["HOST"] == "db.example.org"
    assert entry["PORT"] == "6432"
    assert entry["OPTIONS"]["sslmode"] == "verify-full"
    assert entry["OPTIONS"]["options"] == "-c search_path=oxide_batch"


def test_one_database_or_two() -> None:
    """A separate BATCHBOARD_DATABASE_URL adds the ``batchboard`` alias."""
    one, alias = databases_from_environment({}, BASE)
    assert alias == "default"
    assert one["default"]["NAME"] == "/srv/batchboard/db.sqlite3"
    two, alias = databases_from_environment(
        {
            "DATABASE_URL": "sqlite:///site.sqlite3",
            "BATCHBOARD_DATABASE_URL": "postgresql://ob@db/ops",
        },
        BASE,
    )
    assert alias == "batchboard"
    options = two["batchboard"]["OPTIONS"]["options"]
    assert options == "-c search_path=public,oxide_batch"


def test_wrong_scheme_names_the_setting() -> None:
    """The message names the variable and the schemes that work."""
    with pytest.raises(SiteConfigurationError, match="^BATCHBOARD_DATABASE_URL uses"):
        parse_database_url(
            "redis://x/0", setting="BATCHBOARD_DATABASE_URL", base_dir=BASE
        )


def _three() -> dict[str, dict[str, object]]:
    databases, _alias = databases_from_environment(
        {
            "DATABASE_URL": "sqlite:///site.sqlite3",
            "BATCHBOARD_DATABASE_URL": "postgresql://ob@db/ops",
        },
        BASE,
    )
    databases["pooled"] = parse_database_url(
        "postgresql://ob@db/ops?pool=1", setting="X", base_dir=BASE
    )
    return databases


def test_postgresql_connections_are_kept_between_requests() -> None:
    """A minute by default, checked before reuse; SQLite and pools as they were."""
    databases = _three()
    keep_connections(databases, {})
    assert databases["batchboard"]["CONN_MAX_AGE"] == 60
    assert databases["batchboard"]["CONN_HEALTH_CHECKS"] is True
    assert "CONN_MAX_AGE" not in databases["default"]
    # Django refuses a pool beside persistent connections.
    assert "CONN_MAX_AGE" not in databases["pooled"]


def test_conn_max_age_zero_closes_after_each_request() -> None:
    databases = _three()
    keep_connections(databases, {"CONN_MAX_AGE": "0"})
    assert databases["batchboard"]["CONN_MAX_AGE"] == 0
    assert databases["batchboard"]["CONN_HEALTH_CHECKS"] is False
    keep_connections(databases, {"CONN_MAX_AGE": "300"})
    assert databases["batchboard"]["CONN_MAX_AGE"] == 300


@pytest.mark.parametrize("value", ["-1", "1.5", "forever", "86401", "٣"])
def test_conn_max_age_must_be_whole_seconds(value: str) -> None:
    with pytest.raises(SiteConfigurationError, match="^CONN_MAX_AGE is"):
        keep_connections(_three(), {"CONN_MAX_AGE": value})
