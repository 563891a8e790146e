"""
The unit of work every write to the metadata runs in: the repository's and the actions'.

One unit is one transaction on the metadata alias, or a savepoint when the
caller already holds one there, so a caller's ``transaction.atomic`` (a
job's chunk, an action's audit row) commits the unit with its own writes.
This module owns what a unit needs and nothing else:

- the alias: ``BATCHBOARD["DATABASE"]``, the ``ACTION_DATABASES`` alias of
  the role an action writes as (:func:`writing`), or the alias of a writer
  replaying history (:func:`back_dated`); and for the explorer's reads,
  :func:`read_alias`: the replica :mod:`batchboard.replicas` chose for the
  page, else the same primary alias;
- the commit position: inside :func:`tracking_commits` (one web request) a
  unit on PostgreSQL records the primary's WAL position after it commits,
  so that the user's next pages wait for a replica that has replayed it;
- the bounds of spec 9.3: on PostgreSQL the transaction sets its own
  statement, lock and idle-in-transaction timeouts, local to the
  transaction, so a stuck writer surfaces as an error instead of a hung
  request, and the session keeps its settings;
- the clock: timestamps are written in whole milliseconds, as oxide-batch
  writes them, from this host's clock or from a back-dated writer's;
- the errors: a database error leaves a unit as :class:`ConcurrentModification`
  (another writer got in the way: a retry can succeed),
  :class:`ConstraintViolation` (the change breaks a constraint of the
  schema: a retry of the same change cannot) or :class:`Unavailable`
  (anything else), all :class:`RepositoryError`, without the driver's
  message, whose detail line can quote row values (spec 9.2).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, IntegrityError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils.connection import ConnectionDoesNotExist

from batchboard import conf
from batchboard.vocabulary import MAX_STATEMENT_TIMEOUT_MS

logger = logging.getLogger("batchboard.db")

# -- errors --------------------------------------------------------------------


class RepositoryError(Exception):
    """
    Base class of every error of a unit of work and of the job repository.

    A subclass names the contract's error in ``code`` and words its message
    in ``template``, which :meth:`describe` formats with the instance's
    attributes. Subclasses are dataclasses whose fields are those
    attributes: ids, versions, statuses, names, counts and categories only,
    never a parameter value, payload or manifest.
    """

    #: The contract's name of the error (spec 2, 4.5, 7).
    code = "REPOSITORY"
    template = "the metadata operation failed"

    def __post_init__(self) -> None:
        super().__init__(self.describe())

    def describe(self) -> str:
        """Return the message: the template filled with the error's fields."""
        return self.template.format_map(vars(self))


@dataclass(eq=False)
class ConcurrentModification(RepositoryError):
    """
    A concurrent writer changed or held the rows this unit depended on.

    A lock timeout, a deadlock, a serialization failure or SQLite's busy
    database: the same operation can succeed once the other writer is done.
    """

    code = "CONCURRENT_MODIFICATION"
    template = "{what} was modified concurrently; retry the operation"
    retryable = True

    what: str = "a metadata row"


@dataclass(eq=False)
class ConstraintViolation(RepositoryError):
    """
    The unit's change breaks a constraint of the schema (SQLSTATE class 23).

    A foreign key, a unique key, a check or a not-null column refused it.
    Running the same change again meets the same rows and fails the same
    way, so this is never told as a concurrent modification. ``what`` names
    the constraint (PostgreSQL) or its kind, never a value.
    """

    code = "CONSTRAINT_VIOLATION"
    template = "the operation would break {what}; retrying it cannot succeed"
    retryable = False

    what: str = "a constraint of the metadata schema"


#: SQLSTATE classes of a refusal that can pass: a lost connection (08),
#: insufficient resources (53), an operator's or a timeout's cancel (57),
#: a system error (58).
TRANSIENT_CLASSES = frozenset({"08", "53", "57", "58"})


@dataclass(eq=False)
class Unavailable(RepositoryError):
    """The metadata database refused the unit of work for a reason not listed."""

    code = "UNAVAILABLE"

    sqlstate: str | None = None

    @property
    def retryable(self) -> bool:
        """
        Return whether the same operation can succeed later.

        A refusal whose SQLSTATE class is transient can; so can one without
        a SQLSTATE (SQLite), which cannot be told apart. A missing
        privilege (42501) or any other programming error cannot.
        """
        return self.sqlstate is None or self.sqlstate[:2] in TRANSIENT_CLASSES

    def describe(self) -> str:
        suffix = f" (SQLSTATE {self.sqlstate})" if self.sqlstate else ""
        return f"the metadata database refused the operation{suffix}"


#: SQLSTATEs of a writer that lost to another: lock timeout, deadlock and
#: serialization failure.
CONFLICT_STATES = frozenset({"55P03", "40P01", "40001"})

#: SQLite's messages for a write lock another connection holds.
SQLITE_BUSY = ("database is locked", "database table is locked")

#: The kind of a violated constraint, by SQLSTATE and by the start of
#: SQLite's message (which names columns, never values).
CONSTRAINT_KINDS = {
    "23503": "a foreign key",
    "23505": "a unique key",
    "23514": "a check constraint",
    "23502": "a not-null column",
    "FOREIGN KEY": "a foreign key",
    "UNIQUE": "a unique key",
    "CHECK": "a check constraint",
    "NOT NULL": "a not-null column",
}


def sqlstate(error: BaseException) -> str | None:
    """Return the SQLSTATE behind a Django database error, if the driver gave one."""
    cause = error.__cause__
    state = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    return str(state) if state else None


def cancelled(error: BaseException) -> bool:
    """
    Return whether a statement was stopped by its time bound.

    PostgreSQL cancels it with SQLSTATE 57014 (``statement_timeout``);
    SQLite's progress handler interrupts it (``interrupted``).
    """
    if sqlstate(error) == "57014":
        return True
    return type(error.__cause__).__module__ == "sqlite3" and str(error) == "interrupted"


def constraint_name(error: BaseException) -> str | None:
    """Return the violated constraint's name (PostgreSQL only), never values."""
    diag = getattr(error.__cause__, "diag", None)
    name = getattr(diag, "constraint_name", None)
    return str(name) if name else None


def _constraint(error: IntegrityError, state: str | None) -> str:
    """Return the violated constraint as text: its name, else its kind."""
    name = constraint_name(error)
    if name:
        return f"constraint {name}"
    # The text is matched, never shown: SQLite names the kind only so.
    text = str(error)
    for key, kind in CONSTRAINT_KINDS.items():
        if key == state or text.startswith(f"{key} constraint failed"):
            return kind
    return "a constraint of the metadata schema"


def map_database_error(error: DatabaseError) -> RepositoryError:
    """
    Translate a database error into a repository error without its text.

    A violated constraint is a :class:`ConstraintViolation`; a lock timeout,
    a deadlock, a serialization failure and SQLite's busy database mean
    another writer got in the way (:class:`ConcurrentModification`);
    anything else is :class:`Unavailable` with its SQLSTATE.
    """
    state = sqlstate(error)
    if isinstance(error, IntegrityError):
        return ConstraintViolation(_constraint(error, state))
    # The text is matched, never shown: SQLite reports a busy database (a
    # file) or a locked table (shared-cache memory) only so.
    text = str(error)
    if state in CONFLICT_STATES or any(busy in text for busy in SQLITE_BUSY):
        return ConcurrentModification()
    return Unavailable(state)


# -- aliases -------------------------------------------------------------------

#: The roles of spec 9.1 an action writes as: stop, abandon and recover as
#: the operator writer, holds and purges as the retention role.
OPERATOR = "OPERATOR"
RETENTION = "RETENTION"

# The alias of the role an action in progress writes as (see writing()), and
# whether an action is in progress at all (its role may have no alias).
_writing: ContextVar[str | None] = ContextVar("batchboard_writing", default=None)
_acting: ContextVar[bool] = ContextVar("batchboard_acting", default=False)

# Set only by back_dated(): the clock and the alias of a non-interactive
# writer replaying history. Requests from the console never set them.
_back_dated_clock: ContextVar[Callable[[], datetime] | None] = ContextVar(
    "batchboard_back_dated_clock", default=None
)
_back_dated_alias: ContextVar[str | None] = ContextVar(
    "batchboard_back_dated_alias", default=None
)


def alias(using: str | None = None) -> str:
    """
    Return the alias to work on: ``using`` if given, else the current one.

    The current alias is the role's inside :func:`writing`, the writer's
    inside :func:`back_dated`, else ``BATCHBOARD["DATABASE"]``, read at
    each call so settings overrides apply.
    """
    return using or _writing.get() or _back_dated_alias.get() or conf.database_alias()


def connection(using: str | None = None) -> BaseDatabaseWrapper:
    """Return the connection of :func:`alias`."""
    return connections[alias(using)]


def among(
    column: str, values: Sequence[int], using: str | None = None
) -> tuple[str, list[Any]]:
    """
    Return ``column`` is one of ``values`` as SQL and its parameters.

    PostgreSQL takes the values as one array, so the statement's text is the
    same for any number of them: a list of a thousand placeholders cost more
    to bind and parse than the statement took to run.
    """
    if connections[using or alias()].vendor == "postgresql":
        return f"{column} = ANY(%s)", [list(values)]
    return f"{column} IN ({', '.join(['%s'] * len(values))})", list(values)


def pairs(
    rows: Sequence[tuple[int, int]], using: str | None = None
) -> tuple[str, list[Any]]:
    """
    Return a FROM item of constant rows ``w(column1, column2)``, and its values.

    As :func:`among` does for one column: PostgreSQL takes two arrays, so
    the statement's text is the same for any number of rows (a list of 50
    ``(%s, %s)`` rows made psycopg split a new text on every page, which
    took longer than the statement ran); SQLite takes a VALUES list.
    """
    if connections[using or alias()].vendor == "postgresql":
        return (
            "unnest(%s::bigint[], %s::bigint[]) AS w(column1, column2)",
            [[first for first, _second in rows], [second for _first, second in rows]],
        )
    values = ", ".join(["(%s, %s)"] * len(rows))
    return f"(VALUES {values}) AS w", [value for row in rows for value in row]


# The alias a page reads from (see batchboard.replicas.reading()).
_reading: ContextVar[str | None] = ContextVar("batchboard_reading", default=None)


def read_alias() -> str:
    """
    Return the alias the explorer reads from: the one place that says so.

    That is the replica chosen for the current page by
    :func:`batchboard.replicas.reading`, else :func:`alias`. Inside an
    action (:func:`writing`) or a back-dated writer reads stay on the
    writer's alias: a write's guards and evidence are always the primary's.
    """
    if _acting.get() or _back_dated_alias.get() is not None:
        return alias()
    return _reading.get() or alias()


@contextmanager
def reading_from(name: str) -> Iterator[None]:
    """Make ``name`` the :func:`read_alias` of the body."""
    token = _reading.set(name)
    try:
        yield
    finally:
        _reading.reset(token)


# -- commit positions ----------------------------------------------------------

# The WAL positions (text, e.g. "0/3000148") of the units committed during
# the current request; None outside tracking_commits().
_committed: ContextVar[list[str] | None] = ContextVar(
    "batchboard_committed", default=None
)


@contextmanager
def tracking_commits() -> Iterator[list[str]]:
    """
    Collect the primary's WAL position after each unit the body commits.

    Yields the list the positions are appended to, in commit order. Used
    by :class:`batchboard.middleware.ReadYourWritesMiddleware` around a
    request; outside it units record nothing and cost nothing extra.
    """
    positions: list[str] = []
    token = _committed.set(positions)
    try:
        yield positions
    finally:
        _committed.reset(token)


def _record_position(name: str, positions: list[str]) -> None:
    """After a commit on ``name``: append ``pg_current_wal_lsn()``."""
    try:
        with connections[name].cursor() as cursor:
            cursor.execute("SELECT pg_current_wal_lsn()::text")
            row = cursor.fetchone()
    except DatabaseError as error:
        # The commit stands; only the read-your-writes hint is lost. Say
        # which alias, never the driver's text.
        logger.warning(
            "batchboard: no WAL position after a commit on %r (%s)",
            name,
            type(error).__name__,
        )
        return
    if row and row[0]:
        positions.append(str(row[0]))


def _track(name: str) -> None:
    positions = _committed.get()
    if positions is None or connections[name].vendor != "postgresql":
        return
    transaction.on_commit(lambda: _record_position(name, positions), using=name)


def _defined(name: str) -> bool:
    try:
        connections[name]
    except ConnectionDoesNotExist:
        return False
    return True


@contextmanager
def _binding(*pairs: tuple[ContextVar[Any], Any]) -> Iterator[None]:
    """Set each context variable to its value for the body, then restore it."""
    tokens = [(variable, variable.set(value)) for variable, value in pairs]
    try:
        yield
    finally:
        for variable, token in reversed(tokens):
            variable.reset(token)


@contextmanager
def writing(role: str) -> Iterator[None]:
    """
    Run the body against ``BATCHBOARD["ACTION_DATABASES"][role]``, if set.

    ``role`` is :data:`OPERATOR` or :data:`RETENTION`. Each alias names the
    same database as ``DATABASE`` with the role's credentials; a role left
    out writes through ``DATABASE``. Inside :func:`back_dated` the writer's
    own alias is used instead. Raises ImproperlyConfigured, before the body
    runs, when the alias is not one of ``DATABASES``.
    """
    configured = conf.get_config().get("ACTION_DATABASES") or {}
    chosen = configured.get(role) if isinstance(configured, dict) else None
    if _back_dated_alias.get() is not None:
        chosen = None
    if chosen is not None and not _defined(chosen):
        raise ImproperlyConfigured(
            f"BATCHBOARD['ACTION_DATABASES'] names the database alias "
            f"{chosen!r} for {role}, which DATABASES does not define."
        )
    with _binding((_writing, chosen), (_acting, True)):
        yield


# -- the clock -----------------------------------------------------------------


class Clock(Protocol):
    """Anything with a ``now()`` returning an aware :class:`datetime`."""

    def now(self) -> datetime: ...


def truncate_ms(moment: datetime) -> datetime:
    """Return ``moment`` cut to whole milliseconds; refuse naive datetimes."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("the repository clock must return aware datetimes")
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


class SystemClock:
    """This host's clock, in UTC, to the millisecond."""

    def now(self) -> datetime:
        return truncate_ms(datetime.now(UTC))


class ManualClock:
    """
    A clock that moves only when told to; for tests, demos and simulations.

    ``now()`` returns the same instant until :meth:`advance` or :meth:`set`
    moves it. It is safe to share between threads.
    """

    def __init__(self, start: datetime | None = None) -> None:
        self._now = truncate_ms(start or datetime(2026, 1, 1, tzinfo=UTC))
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, *, milliseconds: int = 0, seconds: float = 0) -> datetime:
        """Move the clock forward and return the new instant."""
        step = timedelta(milliseconds=milliseconds, seconds=seconds)
        if step < timedelta(0):
            raise ValueError("a ManualClock only moves forward")
        with self._lock:
            self._now = truncate_ms(self._now + step)
            return self._now

    def set(self, moment: datetime) -> None:
        with self._lock:
            self._now = truncate_ms(moment)


@contextmanager
def back_dated(clock: Callable[[], datetime], *, using: str) -> Iterator[None]:
    """
    Run the body's actions on ``clock`` and through ``using`` only.

    For a writer that records history on its own clock, such as the demo
    seeder: the audit rows, effects and purge ages take their time from
    ``clock`` instead of this host's, and every action writes through
    ``using`` (the writer's own connection and transaction) whatever
    ``ACTION_DATABASES`` says. Everything else is unchanged: permissions,
    guards, digests, replays. Recovery proposals stay bounded by the
    database server's clock (see :func:`batchboard.actions.recovery.propose`).
    """
    with _binding((_back_dated_clock, clock), (_back_dated_alias, using)):
        yield


def back_dated_now() -> datetime | None:
    """Return the time of the :func:`back_dated` clock, or None outside one."""
    clock = _back_dated_clock.get()
    return None if clock is None else truncate_ms(clock())


def now() -> datetime:
    """
    Return the current time in whole milliseconds, aware.

    The time is this host's, or the clock of :func:`back_dated` inside one.
    oxide-batch writes millisecond timestamps; writing the same precision
    keeps digests that bind timestamps (the recovery evidence) stable when
    oxide-batch reads the rows back.
    """
    moment = back_dated_now()
    return SystemClock().now() if moment is None else moment


# -- the unit of work ----------------------------------------------------------

#: The bounds of spec 9.3, in milliseconds: a writer waits at most this long
#: for a statement or a row lock, then is told to retry, rather than hanging
#: on a runtime that holds the row; a transaction left idle is ended.
STATEMENT_TIMEOUT_MS = 30_000
LOCK_TIMEOUT_MS = 5_000
IDLE_IN_TRANSACTION_TIMEOUT_MS = 60_000
MAX_TIMEOUT_MS = MAX_STATEMENT_TIMEOUT_MS


@dataclass(frozen=True)
class Timeouts:
    """The bounds one unit of work sets on PostgreSQL, in milliseconds."""

    statement_ms: int = STATEMENT_TIMEOUT_MS
    lock_ms: int = LOCK_TIMEOUT_MS
    idle_in_transaction_ms: int = IDLE_IN_TRANSACTION_TIMEOUT_MS

    def __post_init__(self) -> None:
        if not 1 <= self.lock_ms <= self.statement_ms <= MAX_TIMEOUT_MS:
            raise ValueError("need 1 <= lock timeout <= statement timeout <= 24 h")
        if not 1 <= self.idle_in_transaction_ms <= MAX_TIMEOUT_MS:
            raise ValueError("need 1 <= idle-in-transaction timeout <= 24 h")

    def settings(self) -> dict[str, str]:
        """Return the PostgreSQL settings these bounds set, with their values."""
        return {
            "statement_timeout": f"{self.statement_ms}ms",
            "lock_timeout": f"{self.lock_ms}ms",
            "idle_in_transaction_session_timeout": f"{self.idle_in_transaction_ms}ms",
        }


#: The bounds of a unit that names none; read at each unit.
DEFAULT_TIMEOUTS = Timeouts()


def _bound(metadata: BaseDatabaseWrapper, timeouts: Timeouts) -> None:
    """Set the unit's timeouts for the current transaction only (SET LOCAL)."""
    if metadata.vendor != "postgresql":
        return
    settings = timeouts.settings()
    # set_config(name, value, true) is SET LOCAL with bound values, all three
    # in one round trip; COMMIT or ROLLBACK restores the session's own.
    calls = ", ".join("set_config(%s, %s, true)" for _ in settings)
    values: list[Any] = [part for pair in settings.items() for part in pair]
    with metadata.cursor() as cursor:
        cursor.execute(f"SELECT {calls}", values)


@contextmanager
def unit(
    using: str | None = None, *, timeouts: Timeouts | None = None
) -> Iterator[None]:
    """
    Run the body as one unit of work on :func:`alias` (or ``using``).

    The body runs in ``transaction.atomic`` with the unit's timeouts set
    (``timeouts``, else :data:`DEFAULT_TIMEOUTS`); a database error raised
    by the body or by the commit leaves as :func:`map_database_error` says,
    without the driver's message. Errors that are not database errors pass
    unchanged.
    """
    name = alias(using)
    try:
        with transaction.atomic(using=name):
            _bound(connections[name], timeouts or DEFAULT_TIMEOUTS)
            _track(name)
            yield
    except DatabaseError as error:
        raise map_database_error(error) from None
