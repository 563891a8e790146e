"""The router and the migration guard keep DDL off the metadata database."""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError
from django.db import connection
from django.test import override_settings

from batchboard.models import BulkItem, BulkOperation, JobExecution
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


def test_own_state_goes_to_the_state_database() -> None:
    """Bulk operations read, write and migrate on STATE_DATABASE only."""
    settings = {"DATABASE": "meta", "STATE_DATABASE": "site"}
    with override_settings(BATCHBOARD=settings):
        for model in (BulkOperation, BulkItem):
            assert ROUTER.db_for_read(model) == "site"
            assert ROUTER.db_for_write(model) == "site"
        assert ROUTER.db_for_read(JobExecution) == "meta"
        assert ROUTER.allow_migrate("site", "batchboard", "bulkoperation") is True
        assert ROUTER.allow_migrate("meta", "batchboard", "bulkoperation") is False
        assert ROUTER.allow_migrate("meta", "batchboard", "bulkitem") is False
        assert ROUTER.allow_migrate("site", "batchboard", "jobexecution") is False
        assert ROUTER.allow_migrate("meta", "batchboard", "jobexecution") is True


def test_own_state_and_metadata_rows_are_not_related() -> None:
    """A relation between own state and a metadata row is not allowed."""
    assert ROUTER.allow_relation(BulkItem(), BulkOperation()) is True
    assert ROUTER.allow_relation(BulkItem(), JobExecution()) is False


@pytest.mark.postgresql
@pytest.mark.django_db
def test_bulk_tables_are_not_in_the_oxide_batch_schema() -> None:
    """On PostgreSQL the bulk tables land in public, beside Django's own."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, table_schema FROM information_schema.tables"
            " WHERE table_name LIKE 'batchboard_bulk_%%'"
        )
        placed = dict(cursor.fetchall())
    assert placed == {
        "batchboard_bulk_operation": "public",
        "batchboard_bulk_item": "public",
    }
