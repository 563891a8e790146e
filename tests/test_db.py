"""The unit of work: its alias, its timeouts, its clock and its errors."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, IntegrityError, OperationalError, connections
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from batchboard import actions, db, repository
from batchboard.models import JobInstance
from tests import factories
from tests.conftest import held_lock

SECRET = "s3cret-value"


@dataclass
class DriverError(Exception):
    """What a driver puts behind a Django error: a SQLSTATE and diagnostics."""

    sqlstate: str | None = None
    diag: object = None


def failed(kind: type[DatabaseError], state: str | None, **diag: str) -> DatabaseError:
    """Return a Django error whose text quotes a value, as drivers' do."""
    error = kind(f"DETAIL: Key (job_name)=({SECRET}) already exists.")
    error.__cause__ = DriverError(state, SimpleNamespace(**diag) if diag else None)
    return error


# -- errors --------------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [
        failed(OperationalError, "55P03"),
        failed(OperationalError, "40P01"),
        failed(OperationalError, "40001"),
        OperationalError("database is locked"),
        OperationalError("database table is locked: ob_job_execution"),
    ],
    ids=["lock", "deadlock", "serialization", "busy", "shared-cache"],
)
def test_a_lost_race_is_a_concurrent_modification(error: DatabaseError) -> None:
    mapped = db.map_database_error(error)
    assert type(mapped) is db.ConcurrentModification
    assert (mapped.code, mapped.retryable) == ("CONCURRENT_MODIFICATION", True)
    assert str(mapped).startswith("a metadata row was modified concurrently")
    assert SECRET not in str(mapped)


@pytest.mark.parametrize(
    ("error", "what"),
    [
        (
            failed(IntegrityError, "23505", constraint_name="ob_instance_unique"),
            "constraint ob_instance_unique",
        ),
        (failed(IntegrityError, "23503"), "a foreign key"),
        (failed(IntegrityError, "23514"), "a check constraint"),
        (failed(IntegrityError, None), "a constraint of the metadata schema"),
        (IntegrityError("FOREIGN KEY constraint failed"), "a foreign key"),
        (
            IntegrityError(f"UNIQUE constraint failed: ob_job_instance.{SECRET}"),
            "a unique key",
        ),
        (IntegrityError("NOT NULL constraint failed: t.c"), "a not-null column"),
    ],
    ids=[
        "named",
        "foreign-key",
        "check",
        "unnamed",
        "sqlite-fk",
        "sqlite-unique",
        "sqlite-null",
    ],
)
def test_a_violated_constraint_is_never_a_concurrent_modification(
    error: DatabaseError, what: str
) -> None:
    mapped = db.map_database_error(error)
    assert type(mapped) is db.ConstraintViolation
    assert not isinstance(mapped, db.ConcurrentModification)
    assert (mapped.code, mapped.what, mapped.retryable) == (
        "CONSTRAINT_VIOLATION",
        what,
        False,
    )
    assert (
        str(mapped) == f"the operation would break {what}; retrying it cannot succeed"
    )
    assert SECRET not in str(mapped)


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (
            failed(DatabaseError, "57014"),
            "the metadata database refused the operation (SQLSTATE 57014)",
        ),
        (
            failed(DatabaseError, "42501"),
            "the metadata database refused the operation (SQLSTATE 42501)",
        ),
        (
            DatabaseError(f"no such table: {SECRET}"),
            "the metadata database refused the operation",
        ),
    ],
    ids=["statement-timeout", "privilege", "sqlite"],
)
def test_anything_else_is_unavailable(error: DatabaseError, message: str) -> None:
    mapped = db.map_database_error(error)
    assert type(mapped) is db.Unavailable
    assert (mapped.code, str(mapped)) == ("UNAVAILABLE", message)
    # A timeout's cancel passes; a missing privilege does not; SQLite's
    # other refusals cannot be told apart, so a retry may help.
    assert mapped.retryable is (mapped.sqlstate != "42501")


def test_each_failure_is_told_with_whether_trying_again_helps() -> None:
    """The operator's message of each unit failure, from :func:`told`."""
    told = actions.results.told
    race = told(db.ConcurrentModification())
    assert type(race) is actions.ConcurrentModification
    assert "Trying again can help" in race.message
    broken = told(db.ConstraintViolation("a foreign key"))
    assert type(broken) is actions.ConstraintViolation
    assert isinstance(broken, db.ConstraintViolation)
    assert not isinstance(broken, db.ConcurrentModification)
    assert (broken.code, broken.retryable) == ("CONSTRAINT_VIOLATION", False)
    assert "would break a foreign key" in broken.message
    assert "will not help" in broken.message
    assert "changed" not in broken.message
    denied = told(db.Unavailable("42501"))
    assert type(denied) is actions.Unavailable
    assert "(SQLSTATE 42501)" in denied.message and "will not help" in denied.message
    timeout = told(db.Unavailable("57014"))
    assert "(SQLSTATE 57014)" in timeout.message and "can help" in timeout.message
    assert "can help" in told(db.Unavailable(None)).message


def test_both_front_ends_share_one_concurrent_modification() -> None:
    assert repository.ConcurrentModification is db.ConcurrentModification
    assert repository.Unavailable is db.Unavailable
    assert repository.RepositoryError is db.RepositoryError
    told = actions.ConcurrentModification()
    assert isinstance(told, db.ConcurrentModification)
    assert isinstance(told, actions.ActionError)
    assert told.code == db.ConcurrentModification.code
    assert "try again" in told.message and str(told) == told.message
    assert repository.ConstraintViolation is db.ConstraintViolation


def test_errors_fill_their_template_with_their_facts() -> None:
    stale = repository.StaleVersion(3, 5, what="job execution 9")
    assert (stale.expected, stale.actual, stale.code) == (3, 5, "STALE_VERSION")
    assert str(stale) == "job execution 9 is at version 5, not the expected version 3"
    assert repr(stale) == "StaleVersion(expected=3, actual=5, what='job execution 9')"
    corrupt = repository.PartitionStateCorrupt("bad", partition_id=4)
    assert str(corrupt) == "step partition 4 is inconsistent: bad"
    assert str(repository.PartitionStateCorrupt("bad")).startswith("partition state")


@pytest.mark.django_db
def test_a_unit_maps_a_real_violation_without_its_values() -> None:
    row = factories.instance("mapped")
    with pytest.raises(db.ConstraintViolation) as raised, db.unit():
        JobInstance.objects.create(
            job_name="mapped",
            instance_key=bytes(row.instance_key),
            identifying_parameters={},
            created_at=row.created_at,
        )
    assert "retrying it cannot succeed" in str(raised.value)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    assert JobInstance.objects.filter(job_name="mapped").count() == 1


@pytest.mark.django_db
def test_a_unit_lets_other_errors_pass_and_rolls_back() -> None:
    with pytest.raises(KeyError), db.unit():
        factories.instance("rolled-back")
        raise KeyError("not a database error")
    assert not JobInstance.objects.filter(job_name="rolled-back").exists()


# -- timeouts ------------------------------------------------------------------


def test_timeouts_are_ordered_and_bounded() -> None:
    assert db.Timeouts(30_000, 5_000, 60_000) == db.DEFAULT_TIMEOUTS
    assert db.DEFAULT_TIMEOUTS.settings() == {
        "statement_timeout": "30000ms",
        "lock_timeout": "5000ms",
        "idle_in_transaction_session_timeout": "60000ms",
    }
    for wrong in (
        {"lock_ms": 0},
        {"lock_ms": 40_000},
        {"statement_ms": 86_400_001, "lock_ms": 10},
        {"idle_in_transaction_ms": 0},
    ):
        with pytest.raises(ValueError):
            db.Timeouts(**wrong)


def _show(*names: str) -> list[str]:
    with connections["default"].cursor() as cursor:
        values = []
        for name in names:
            cursor.execute(f"SHOW {name}")
            values.append(cursor.fetchone()[0])
        return values


NAMES = ("statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout")


@pytest.mark.django_db
def test_a_unit_bounds_its_postgresql_transaction_with_local_settings() -> None:
    metadata = connections["default"]
    with CaptureQueriesContext(metadata) as queries, db.unit():
        pass
    bounds = [query["sql"] for query in queries if "set_config" in query["sql"]]
    if metadata.vendor != "postgresql":
        assert bounds == []
        return
    # set_config(..., true) is SET LOCAL; a plain SET would outlive the unit.
    assert len(bounds) == 1 and bounds[0].count(", true)") == 3
    assert not [query for query in queries if query["sql"].startswith("SET ")]


@pytest.mark.postgresql
@pytest.mark.django_db
def test_a_unit_applies_its_timeouts_or_the_defaults() -> None:
    with db.unit():
        assert _show(*NAMES) == ["30s", "5s", "1min"]
    with db.unit(timeouts=db.Timeouts(4321, 1234, 9876)):
        assert _show(*NAMES) == ["4321ms", "1234ms", "9876ms"]


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_the_timeouts_end_with_the_units_transaction() -> None:
    session = _show(*NAMES)
    assert session != ["4321ms", "1234ms", "9876ms"]
    with db.unit(timeouts=db.Timeouts(4321, 1234, 9876)):
        assert _show(*NAMES) == ["4321ms", "1234ms", "9876ms"]
    assert _show(*NAMES) == session


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_a_lock_held_past_the_lock_timeout_is_a_concurrent_modification() -> None:
    instance = factories.instance("locked")
    lock = "SELECT 1 FROM ob_job_instance WHERE id = %s FOR UPDATE"
    with (
        held_lock(lock, instance.pk),
        pytest.raises(db.ConcurrentModification),
        db.unit(timeouts=db.Timeouts(lock_ms=50)),
    ):
        JobInstance.objects.select_for_update().get(pk=instance.pk)


# -- aliases -------------------------------------------------------------------


def test_the_alias_follows_settings_roles_and_back_dated_writers() -> None:
    assert db.alias() == "default"
    assert db.alias("other") == "other"
    with override_settings(BATCHBOARD={"DATABASE": "metadata"}):
        assert db.alias() == "metadata"
    roles = {"ACTION_DATABASES": {db.OPERATOR: "default"}}
    with override_settings(BATCHBOARD={**roles, "DATABASE": "metadata"}):
        with db.writing(db.OPERATOR):
            assert db.alias() == "default"
        with db.writing(db.RETENTION):
            assert db.alias() == "metadata"
        with db.back_dated(db.now, using="replay"), db.writing(db.OPERATOR):
            assert db.alias() == "replay"
        assert db.alias() == "metadata"


def test_a_role_alias_outside_databases_is_a_configuration_error() -> None:
    roles = {"ACTION_DATABASES": {db.RETENTION: "missing"}}
    with override_settings(BATCHBOARD=roles):
        with (
            pytest.raises(ImproperlyConfigured, match="'missing' for RETENTION"),
            db.writing(db.RETENTION),
        ):
            pass
        with (
            pytest.raises(actions.ActionError, match="'missing'"),
            actions.unit.writing(db.RETENTION),
        ):
            pass


# -- the clock -----------------------------------------------------------------


def test_now_is_this_hosts_time_in_whole_milliseconds() -> None:
    before = datetime.now(UTC) - timedelta(milliseconds=1)
    moment = db.now()
    assert moment.tzinfo is not None and moment.microsecond % 1000 == 0
    assert before <= moment <= datetime.now(UTC)
    assert db.back_dated_now() is None


def test_a_back_dated_writer_has_its_own_clock_inside_the_block_only() -> None:
    clock = db.ManualClock(datetime(2026, 5, 1, 12, 0, 0, 999_999, tzinfo=UTC))
    with db.back_dated(clock.now, using="default"):
        assert db.now() == db.back_dated_now() == clock.now()
        clock.advance(milliseconds=1500)
        assert db.now() == datetime(2026, 5, 1, 12, 0, 2, 499_000, tzinfo=UTC)
    assert db.back_dated_now() is None
    assert db.now() > clock.now()


def test_clocks_refuse_naive_time() -> None:
    with pytest.raises(ValueError):
        db.truncate_ms(datetime(2026, 1, 1))
    with (
        pytest.raises(ValueError),
        db.back_dated(lambda: datetime(2026, 1, 1), using="default"),
    ):
        db.now()
