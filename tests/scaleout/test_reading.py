"""
The read transaction and read-your-writes in process, on the suite's own
PostgreSQL server (no standby here: tests/scaleout/test_standby.py has one).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connections
from django.db.utils import load_backend
from django.test import Client, override_settings

from batchboard import checks, db, replicas
from tests import factories
from tests.conftest import wipe_metadata
from tests.scaleout.cluster import free_port

pytestmark = pytest.mark.postgresql


@pytest.fixture(autouse=True)
def _postgresql() -> None:
    if connections["default"].vendor != "postgresql":
        pytest.skip("needs PostgreSQL (set DATABASE_URL)")


@pytest.fixture
def extra_aliases(
    transactional_db: None, django_db_blocker: Any
) -> Iterator[dict[str, str]]:
    """Two aliases: "same", the suite's own primary; "gone", a closed port."""
    base = connections["default"].settings_dict
    added = {
        "same": {**base},
        "gone": {**base, "HOST": "127.0.0.1", "PORT": str(free_port())},
    }
    # Connections made here rather than in DATABASES, as a deployment's
    # extra aliases would be; the test runner lets a test use those.
    backend = load_backend(base["ENGINE"])
    for alias, entry in added.items():
        connections[alias] = backend.DatabaseWrapper(entry, alias)
    try:
        with django_db_blocker.unblock():
            yield {alias: alias for alias in added}
    finally:
        for alias in added:
            connections[alias].close()
            del connections[alias]
        replicas._down_until.clear()


def test_a_primary_posing_as_a_replica_is_skipped(
    extra_aliases: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """Not in recovery: the page reads the primary, bounded, and the log says why."""
    with (
        override_settings(BATCHBOARD={"READ_DATABASES": ["same"]}),
        replicas.reading({}, replica=True) as choice,
        connections["default"].cursor() as cursor,
    ):
        assert choice == replicas.ReadChoice("default")
        assert db.read_alias() == "default"
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "30s"
    assert "'same' skipped: not in recovery" in caplog.text


def test_a_replica_that_refuses_is_left_alone_for_a_while(
    extra_aliases: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """A refused connection marks the replica down; the next page does not retry."""
    with override_settings(BATCHBOARD={"READ_DATABASES": ["gone"]}):
        with replicas.reading({}, replica=True) as choice:
            assert choice.alias == "default"
        assert replicas._is_down("gone")
        caplog.clear()
        with replicas.reading({}, replica=True) as choice:
            assert choice.alias == "default"
        assert "gone" not in caplog.text


@pytest.mark.django_db
def test_the_read_timeout_is_local_to_the_page() -> None:
    """SET LOCAL: the session's own timeout is back after the page."""
    with (
        override_settings(BATCHBOARD={"STATEMENT_TIMEOUT_MS": 1234}),
        replicas.reading({}, replica=False),
        connections["default"].cursor() as cursor,
    ):
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "1234ms"
    with connections["default"].cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] != "1234ms"


@pytest.mark.django_db(transaction=True)
def test_a_committed_unit_records_the_wal_position() -> None:
    """Inside tracking_commits a unit's commit adds pg_current_wal_lsn()."""
    with (
        db.tracking_commits() as positions,
        db.unit(),
        connections["default"].cursor() as cursor,
    ):
        cursor.execute("SELECT 1")
    assert len(positions) == 1
    assert replicas.position_value(positions[0]) > 0
    with db.unit():
        pass  # outside tracking: nothing is recorded, nothing fails


@pytest.mark.django_db(transaction=True)
def test_an_action_puts_its_position_in_the_session(admin_user: User) -> None:
    """The operator's stop leaves the commit's WAL position in their session."""
    running = factories.execution(factories.instance(), "STARTED")
    client = Client()
    client.force_login(admin_user)
    dialog = client.get(f"/executions/{running.pk}/stop/")
    assert dialog.status_code == 200
    operation = dialog.content.decode().split('name="operation_id" value="')[1][:35]
    response = client.post(
        f"/executions/{running.pk}/stop/",
        {"operation_id": operation, "expected_version": str(running.version)},
    )
    assert response.status_code == 200
    assert b"APPLIED" in response.content
    position = client.session.get(replicas.SESSION_KEY)
    assert isinstance(position, str) and replicas.position_value(position) > 0
    wipe_metadata()


@pytest.mark.django_db
def test_the_suite_superuser_lacks_nothing() -> None:
    """A login holding every privilege gets no role message."""
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    assert list(checks.check_database_roles(databases=["default"])) == []


@pytest.mark.django_db
@pytest.mark.django_db
def test_a_login_without_grants_is_told_each_privilege() -> None:
    """As a role with no grant at all, each missing privilege is named."""
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = 'bb_scale_nobody'")
        if cursor.fetchone() is None:
            cursor.execute("CREATE ROLE bb_scale_nobody NOLOGIN")
        cursor.execute("GRANT USAGE ON SCHEMA oxide_batch TO bb_scale_nobody")
        cursor.execute("SET LOCAL ROLE bb_scale_nobody")
        missing = checks.missing_privileges("default", checks.ROLE_NEEDS["OPERATOR"][0])
        cursor.execute("RESET ROLE")
        cursor.execute("REVOKE USAGE ON SCHEMA oxide_batch FROM bb_scale_nobody")
        cursor.execute("SET LOCAL ROLE bb_scale_nobody")
        no_schema = checks.missing_privileges("default", checks.ROLE_NEEDS["READ"][0])
        cursor.execute("RESET ROLE")
    assert missing == list(checks.ROLE_NEEDS["OPERATOR"][0])
    assert checks.describe_need(missing[0]) == (
        "INSERT ON oxide_batch.ob_operator_request"
    )
    assert no_schema == [("schema", "", None, "USAGE")]
    assert checks.describe_need(no_schema[0]) == "USAGE ON SCHEMA oxide_batch"
    assert (
        checks.describe_need(("column", "ob_job_execution", "status", "UPDATE"))
        == "UPDATE (status) ON oxide_batch.ob_job_execution"
    )


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
def test_role_checks_in_process(extra_aliases: dict[str, str]) -> None:
    """W020 for a primary posing as a replica, W021 for a dead one, none for a writer."""
    from django.conf import settings
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    databases = {**settings.DATABASES, "same": {}, "gone": {}}
    config = {"READ_DATABASES": ["same", "gone"], "ACTION_DATABASES": {}}
    with override_settings(DATABASES=databases, BATCHBOARD=config):
        ids = [m.id for m in checks.check_database_roles(databases=["same", "gone"])]
    assert ids == ["batchboard.W020", "batchboard.W021"]
    config = {"ACTION_DATABASES": {"OPERATOR": "same", "RETENTION": "same"}}
    with override_settings(DATABASES=databases, BATCHBOARD=config):
        assert list(checks.check_database_roles(databases=["default", "same"])) == []
