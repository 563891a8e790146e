"""Database helpers shared by the actions: the alias, the clock, the atomic block."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime

from django.db import DatabaseError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils import timezone
from django.utils.connection import ConnectionDoesNotExist

from batchboard import conf
from batchboard.actions.results import (
    ActionError,
    ActionResult,
    ConcurrentModification,
    OperationOutcomeUnknown,
)

OPERATOR = "OPERATOR"
RETENTION = "RETENTION"

# The alias an action in progress writes through (see :func:`writing`).
_writing: ContextVar[str | None] = ContextVar("batchboard_action_alias", default=None)

# Set only by :func:`back_dated`: the clock and the alias of a non-interactive
# writer replaying history. Requests from the console never set them.
_clock: ContextVar[Callable[[], datetime] | None] = ContextVar(
    "batchboard_action_clock", default=None
)
_pinned: ContextVar[str | None] = ContextVar("batchboard_action_pinned", default=None)


def alias() -> str:
    """Return the alias of the action in progress, else the metadata alias."""
    return _writing.get() or _pinned.get() or conf.database_alias()


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
    clock_token = _clock.set(clock)
    alias_token = _pinned.set(using)
    try:
        yield
    finally:
        _pinned.reset(alias_token)
        _clock.reset(clock_token)


def _defined(name: str) -> bool:
    try:
        connections[name]
    except ConnectionDoesNotExist:
        return False
    return True


@contextmanager
def writing(role: str) -> Iterator[None]:
    """
    Run the body against ``BATCHBOARD["ACTION_DATABASES"][role]``, if set.

    ``role`` is OPERATOR (stop, abandon, recover: the operator-writer role
    of spec 9.1) or RETENTION (holds and purges: the retention role). Each
    alias names the same database as ``DATABASE`` with other credentials.
    Inside :func:`back_dated` the writer's own alias is used instead.
    """
    configured = conf.get_config().get("ACTION_DATABASES") or {}
    chosen = configured.get(role) if isinstance(configured, dict) else None
    if _pinned.get() is not None:
        chosen = None
    if chosen is not None and not _defined(chosen):
        raise ActionError(
            f"BATCHBOARD['ACTION_DATABASES'] names the database alias "
            f"{chosen!r} for {role}, which DATABASES does not define."
        )
    token = _writing.set(chosen)
    try:
        yield
    finally:
        _writing.reset(token)


def connection() -> BaseDatabaseWrapper:
    return connections[alias()]


def atomic() -> transaction.Atomic:
    """Open one transaction (or a savepoint) on the metadata database."""
    return transaction.atomic(using=alias())


# Bounds of spec 9.3: an operator waits at most this long for a row lock or
# a statement, then is told to try again, rather than hanging on a runtime
# that holds the row.
LOCK_TIMEOUT_MS = 5_000
STATEMENT_TIMEOUT_MS = 30_000


@contextmanager
def unit() -> Iterator[None]:
    """
    Run the body as one transaction with bounded lock and statement waits.

    A lock or statement timeout surfaces as a DatabaseError, which the
    actions turn into a re-probe and, failing that, a message to retry.
    """
    with transaction.atomic(using=alias()):
        metadata = connection()
        if metadata.vendor == "postgresql":
            with metadata.cursor() as cursor:
                cursor.execute(
                    "SELECT set_config('lock_timeout', %s, true),"
                    " set_config('statement_timeout', %s, true)",
                    [f"{LOCK_TIMEOUT_MS}ms", f"{STATEMENT_TIMEOUT_MS}ms"],
                )
        yield


def settle(
    operation_id: str,
    body: Callable[[], ActionResult],
    reprobe: Callable[[], ActionResult | None],
    *,
    errors: tuple[type[Exception], ...] = (DatabaseError,),
) -> ActionResult:
    """
    Run ``body`` as one :func:`unit` and settle its failure as spec 4.3 does.

    A failure inside the unit (normally the audit insert losing to a
    concurrent submission of the same operation id) re-probes: the recorded
    outcome, else :class:`ConcurrentModification`. A failure after the body
    ran to its end came from COMMIT, so the outcome is unknown
    (:class:`OperationOutcomeUnknown`); resubmitting the same operation id
    reports it.
    """
    committed = False
    try:
        with unit():
            result = body()
            committed = True
    except errors as error:
        if committed:
            raise OperationOutcomeUnknown(operation_id) from error
        replay = reprobe()
        if replay is None:
            raise ConcurrentModification() from error
        return replay
    return result


def now() -> datetime:
    """
    Return the current time truncated to whole milliseconds.

    The time is this host's, or the clock of :func:`back_dated` inside one.
    oxide-batch writes millisecond timestamps; writing the same precision
    keeps digests that bind timestamps (the recovery evidence) stable when
    oxide-batch reads the rows back.
    """
    moment = back_dated_now() or timezone.now()
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def back_dated_now() -> datetime | None:
    """Return the time of the :func:`back_dated` clock, or None outside one."""
    clock = _clock.get()
    return None if clock is None else clock()


def not_before(moment: datetime, *bounds: datetime | None) -> datetime:
    """
    Return ``moment``, or the latest of ``bounds`` if that is later.

    The schema requires ``updated_at``/``ended_at`` not to precede the times
    already recorded; when this host's clock is behind the runtime's, the
    recorded time is used rather than failing the check constraint.
    """
    latest = max([b for b in bounds if b is not None], default=moment)
    return max(moment, latest)


__all__ = [
    "OPERATOR",
    "RETENTION",
    "DatabaseError",
    "alias",
    "atomic",
    "back_dated",
    "back_dated_now",
    "connection",
    "not_before",
    "now",
    "settle",
    "unit",
    "writing",
]
