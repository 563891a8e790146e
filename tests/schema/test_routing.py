"""The router and the migration guard keep DDL off the metadata database."""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError
from django.test import override_settings

from batchboard.routers import BatchboardRouter
from batchboard.signals import refuse_migrating_attached_database

ROUTER = BatchboardRouter()


def test_batchboard_migrates_only_on_its_alias() -> None:
    """batchboard's migrations run on the metadata alias and nowhere else."""
    with override_settings(BATCHBOARD={"DATABASE": "meta"}):
        assert ROUTER.allow_migrate("meta", "batchboard") is True
        assert ROUTER.allow_migrate("default", "batchboard") is False
        assert ROUTER.allow_migrate("meta", "auth") is False
        assert ROUTER.allow_migrate("default", "auth") is None


def test_django_apps_stay_off_action_aliases() -> None:
    """Operator and retention logins never receive Django's tables."""
    settings = {"ACTION_DATABASES": {"OPERATOR": "ops", "RETENTION": "keep"}}
    with override_settings(BATCHBOARD=settings):
        for alias in ("ops", "keep"):
            assert ROUTER.allow_migrate(alias, "auth") is False
            assert ROUTER.allow_migrate(alias, "batchboard") is False
        assert ROUTER.allow_migrate("default", "sessions") is None


def test_models_read_and_write_through_the_metadata_alias() -> None:
    """Every batchboard model is routed to ``BATCHBOARD['DATABASE']``."""
    from batchboard.models import JobExecution

    with override_settings(BATCHBOARD={"DATABASE": "meta"}):
        assert ROUTER.db_for_read(JobExecution) == "meta"
        assert ROUTER.db_for_write(JobExecution) == "meta"


@pytest.mark.parametrize(
    ("settings", "using", "words"),
    [
        ({"DATABASE": "meta", "SCHEMA": "attached"}, "meta", "never migrates it"),
        ({"ACTION_DATABASES": {"OPERATOR": "ops"}}, "ops", "is never migrated"),
    ],
)
def test_migrate_is_refused(
    settings: dict[str, object], using: str, words: str
) -> None:
    """migrate --database on an attached or action alias stops at once."""
    with (
        override_settings(BATCHBOARD=settings),
        pytest.raises(CommandError, match=words),
    ):
        refuse_migrating_attached_database(using=using)


@pytest.mark.parametrize(
    ("settings", "using"),
    [
        ({"DATABASE": "meta", "SCHEMA": "managed"}, "meta"),
        ({"SCHEMA": "attached"}, "default"),
        ({"ACTION_DATABASES": {"OPERATOR": "default"}}, "default"),
    ],
)
def test_migrate_goes_on(settings: dict[str, object], using: str) -> None:
    """Managed metadata and the default database migrate as usual."""
    with override_settings(BATCHBOARD=settings):
        assert refuse_migrating_attached_database(using=using) is None
