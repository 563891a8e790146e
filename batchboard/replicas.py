"""
Where a page reads from: a streaming replica, or the primary.

The explorer's pages, fragments and polls read from one of
``BATCHBOARD["READ_DATABASES"]`` when a replica may serve them; operator
actions, recovery proposals, purge plans and applies, and every write stay
on the primary (:func:`batchboard.db.alias`). The explorer asks
:func:`batchboard.db.read_alias`; this module decides what it answers, once
per request, in :func:`reading`.

A replica serves a page only when, at the start of the page's transaction
on it, it

- answers at all (one that refuses a connection is left alone for
  :data:`RETRY_DOWN_SECONDS`, so a dead replica costs one attempt),
- is in recovery (a promoted or misconfigured "replica" is not one),
- lags no more than ``REPLICA_MAX_LAG_SECONDS``, and
- has replayed the user's own last commit: the WAL position the session
  holds under :data:`SESSION_KEY` (read-your-writes). Other users carry no
  position and are not held back.

Otherwise the page reads from the primary. Either way its reads run in one
transaction with ``SET LOCAL statement_timeout`` (``STATEMENT_TIMEOUT_MS``,
set through ``set_config(..., true)``, in the same round trip as the
replica's status): nothing is set on the session, so it is safe behind
PgBouncer in transaction mode. The transaction is rolled back at the end:
a page never writes.

Lag is ``now() - pg_last_xact_replay_timestamp()`` while the replica has
received WAL it has not replayed yet, and zero when it has replayed all it
received: an idle primary sends no transactions, so the time since the last
replayed one is not lag.
"""

from __future__ import annotations

import itertools
import logging
import math
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, connections, transaction

from batchboard import conf, db

logger = logging.getLogger("batchboard.replicas")

#: The session key holding the WAL position of the user's last commit.
SESSION_KEY = "batchboard_wal_position"

#: Seconds a replica that refused a connection is not tried again (per process).
RETRY_DOWN_SECONDS = 5.0

#: A replica's lag in seconds: zero once it has replayed all it received.
LAG_SQL = (
    "CASE WHEN pg_last_wal_receive_lsn() IS NOT DISTINCT FROM "
    "pg_last_wal_replay_lsn() THEN 0 ELSE COALESCE(EXTRACT(EPOCH FROM now() - "
    "pg_last_xact_replay_timestamp()), 0) END::float8"
)

# One round trip: bound the transaction's statements, then the replica's state.
_STATUS_SQL = (
    "SELECT set_config('statement_timeout', %s, true), pg_is_in_recovery(), "
    + LAG_SQL
    + ", %s::pg_lsn IS NULL OR pg_last_wal_replay_lsn() >= %s::pg_lsn"
)
_BOUND_SQL = "SELECT set_config('statement_timeout', %s, true)"


@dataclass(frozen=True)
class ReadChoice:
    """The alias a page reads from, and how far behind it is."""

    alias: str
    replica: bool = False
    lag_seconds: float = 0.0

    def notice_seconds(self) -> int | None:
        """Return the lag to tell the reader, or None when it is not worth saying."""
        threshold = float(conf.get_config()["REPLICA_LAG_NOTICE_SECONDS"])
        if not self.replica or self.lag_seconds <= threshold:
            return None
        return math.ceil(self.lag_seconds)


_current: ContextVar[ReadChoice | None] = ContextVar(
    "batchboard_read_choice", default=None
)
_down_until: dict[str, float] = {}
_down_lock = threading.Lock()
_rotation = itertools.count()


def current() -> ReadChoice | None:
    """Return the choice of the page being served, if any."""
    return _current.get()


def position_value(position: str) -> int:
    """Return a WAL position ``"X/Y"`` (hex) as a number; ValueError if malformed."""
    high, sep, low = position.partition("/")
    if not sep or not high or not low or len(high) > 8 or len(low) > 8:
        raise ValueError(position)
    return (int(high, 16) << 32) | int(low, 16)


def session_position(session: Mapping[str, Any] | None) -> str | None:
    """Return the well-formed WAL position a session holds, if any."""
    if session is None:
        return None
    value = session.get(SESSION_KEY)
    if not isinstance(value, str):
        return None
    try:
        position_value(value)
    except ValueError:
        return None
    return value


def remember(session: Any, positions: Sequence[str]) -> None:
    """Keep in ``session`` the latest of its position and ``positions``."""
    known = [p for p in (session_position(session), *positions) if p]
    valid = []
    for position in known:
        try:
            valid.append((position_value(position), position))
        except ValueError:
            continue
    if valid:
        latest = max(valid)[1]
        if session.get(SESSION_KEY) != latest:
            session[SESSION_KEY] = latest


#: A caller's own deadline for the reads, in milliseconds (see :func:`reading`).
_deadline_ms: ContextVar[int | None] = ContextVar("batchboard_deadline", default=None)

#: SQLite virtual-machine steps between two looks at the clock.
_PROGRESS_STEPS = 10_000


def _timeout() -> str:
    configured = int(conf.get_config()["STATEMENT_TIMEOUT_MS"])
    deadline = _deadline_ms.get()
    return f"{configured if deadline is None else min(configured, deadline)}ms"


@contextmanager
def _interrupting(alias: str, deadline_ms: int | None) -> Iterator[None]:
    """
    On SQLite, interrupt the body's statements once ``deadline_ms`` has passed.

    SQLite has no statement timeout; its progress handler looks at the
    clock every few thousand steps and stops the statement (``interrupted``,
    :func:`batchboard.db.cancelled`) after the deadline.
    """
    if deadline_ms is None:
        yield
        return
    connection = connections[alias]
    connection.ensure_connection()
    raw = connection.connection
    ends = time.monotonic() + deadline_ms / 1000
    raw.set_progress_handler(lambda: int(time.monotonic() > ends), _PROGRESS_STEPS)
    try:
        yield
    finally:
        raw.set_progress_handler(None, _PROGRESS_STEPS)


def _is_down(alias: str) -> bool:
    with _down_lock:
        return _down_until.get(alias, 0.0) > time.monotonic()


def _mark_down(alias: str) -> None:
    with _down_lock:
        _down_until[alias] = time.monotonic() + RETRY_DOWN_SECONDS


def _candidates() -> list[str]:
    aliases = conf.read_aliases()
    if len(aliases) < 2:
        return aliases
    start = next(_rotation) % len(aliases)
    return aliases[start:] + aliases[:start]


def _close_quietly(attempt: ExitStack, error: BaseException) -> None:
    with suppress(DatabaseError):
        attempt.__exit__(type(error), error, error.__traceback__)


def _skip_reason(in_recovery: bool, lag: float) -> str | None:
    if not in_recovery:
        return "not in recovery"
    if lag > float(conf.get_config()["REPLICA_MAX_LAG_SECONDS"]):
        return f"lag {lag:.1f} s"
    return None


def _try_replica(stack: ExitStack, alias: str, position: str | None) -> float | None:
    """
    Open the page's transaction on replica ``alias`` if it may serve the page.

    Returns its lag, with the transaction left open on ``stack``, or None
    (nothing left open) when the replica is down, not in recovery, too far
    behind, or behind the user's own last commit.
    """
    attempt = ExitStack()
    try:
        attempt.enter_context(transaction.atomic(using=alias))
        with connections[alias].cursor() as cursor:
            cursor.execute(_STATUS_SQL, [_timeout(), position, position])
            _, in_recovery, lag, caught_up = cursor.fetchone()
    except DatabaseError as error:
        _close_quietly(attempt, error)
        connections[alias].close()
        _mark_down(alias)
        logger.warning(
            "batchboard: replica %r skipped: %s", alias, type(error).__name__
        )
        return None
    reason = _skip_reason(bool(in_recovery), float(lag))
    if reason is not None or not caught_up:
        if reason is not None:
            logger.warning("batchboard: replica %r skipped: %s", alias, reason)
        # Behind this user's own commit only: no warning, the primary serves.
        transaction.set_rollback(True, using=alias)
        attempt.close()
        return None
    stack.push(attempt.pop_all())
    return float(lag)


def _open_primary(stack: ExitStack, primary: str) -> bool:
    """Open the page's bounded transaction on the primary; False if it fails."""
    attempt = ExitStack()
    try:
        attempt.enter_context(transaction.atomic(using=primary))
        with connections[primary].cursor() as cursor:
            cursor.execute(_BOUND_SQL, [_timeout()])
    except DatabaseError as error:
        # The view meets the same failure and answers with its 503 page.
        _close_quietly(attempt, error)
        return False
    stack.push(attempt.pop_all())
    return True


def _choose_replica(stack: ExitStack, position: str | None) -> ReadChoice | None:
    """Return the first replica that may serve the page, its transaction open."""
    for alias in _candidates():
        if _is_down(alias):
            continue
        lag = _try_replica(stack, alias, position)
        if lag is not None:
            return ReadChoice(alias, replica=True, lag_seconds=lag)
    return None


@contextmanager
def reading(
    session: Mapping[str, Any] | None,
    *,
    replica: bool,
    deadline_ms: int | None = None,
) -> Iterator[ReadChoice]:
    """
    Serve the body's explorer reads from a replica or the primary, bounded.

    ``replica`` says whether the page may be served from a replica at all
    (as its guard declared, :func:`batchboard.web.reads`); ``session`` holds
    the user's last commit position. On PostgreSQL the body runs inside a transaction on the
    chosen alias with the statement timeout set locally; the transaction is
    rolled back afterwards. On SQLite the body runs as it is.

    ``deadline_ms`` is a caller's own bound (the API's ``timeout``): the
    statements stop once it has passed, if it is shorter than
    ``STATEMENT_TIMEOUT_MS``; on SQLite it is the only bound.
    """
    primary = db.alias()
    if connections[primary].vendor != "postgresql":
        plain = ReadChoice(primary)
        token = _current.set(plain)
        try:
            with _interrupting(primary, deadline_ms):
                yield plain
        finally:
            _current.reset(token)
        return
    position = session_position(session)
    deadline = _deadline_ms.set(deadline_ms)
    with ExitStack() as stack:
        stack.callback(_deadline_ms.reset, deadline)
        choice = _choose_replica(stack, position) if replica else None
        opened = True
        if choice is None:
            choice = ReadChoice(primary)
            opened = _open_primary(stack, primary)
        token = _current.set(choice)
        try:
            with db.reading_from(choice.alias):
                yield choice
        finally:
            _current.reset(token)
            if opened:
                # A page writes nothing; ending it with ROLLBACK also ends
                # a transaction that a timed-out statement left aborted.
                transaction.set_rollback(True, using=choice.alias)
