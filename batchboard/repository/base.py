"""
The unit-of-work machinery every repository operation runs in.

One operation is one transaction on the metadata alias. On PostgreSQL the
transaction bounds its own statements and lock waits (spec 7), so a stuck
writer surfaces as an error instead of a hung request. Database errors
leave as repository errors without the driver's message, whose detail line
can quote row values.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

from django.db import DatabaseError, IntegrityError, connections, transaction

from batchboard import conf
from batchboard.repository.clock import Clock, SystemClock, truncate_ms
from batchboard.repository.errors import (
    ConcurrentModification,
    RepositoryError,
    Unavailable,
)

# SQLSTATEs that mean "another writer got in the way": lock timeout,
# deadlock, serialization failure, and SQLite's busy database.
_CONFLICT_STATES = {"55P03", "40P01", "40001"}


def sqlstate(error: BaseException) -> str | None:
    """Return the SQLSTATE behind a Django database error, if the driver gave one."""
    cause = error.__cause__
    state = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    return str(state) if state else None


def constraint_name(error: BaseException) -> str | None:
    """Return the violated constraint's name (PostgreSQL only), never values."""
    diag = getattr(error.__cause__, "diag", None)
    name = getattr(diag, "constraint_name", None)
    return str(name) if name else None


def map_database_error(error: DatabaseError) -> RepositoryError:
    """Translate a database error into a repository error without its text."""
    state = sqlstate(error)
    if isinstance(error, IntegrityError):
        return ConcurrentModification(
            f"constraint {constraint_name(error) or 'of the metadata schema'}"
        )
    if state in _CONFLICT_STATES or "database is locked" in str(error):
        return ConcurrentModification()
    return Unavailable(state)


class RepositoryBase:
    """
    The state every repository part shares: alias, clock and timeouts.

    ``using`` names the database alias of the metadata tables; it defaults
    to ``BATCHBOARD["DATABASE"]``, read at each operation so settings
    overrides apply. ``clock`` supplies every timestamp written (defaults
    to :class:`~batchboard.repository.clock.SystemClock`); whatever it
    returns is truncated to whole milliseconds.
    """

    def __init__(
        self,
        *,
        using: str | None = None,
        clock: Clock | None = None,
        statement_timeout_ms: int = 30_000,
        lock_timeout_ms: int = 5_000,
        idle_in_transaction_timeout_ms: int = 60_000,
    ) -> None:
        if not 1 <= lock_timeout_ms <= statement_timeout_ms <= 86_400_000:
            raise ValueError("need 1 <= lock timeout <= statement timeout <= 24 h")
        self._using = using
        self.clock: Clock = clock or SystemClock()
        self.statement_timeout_ms = statement_timeout_ms
        self.lock_timeout_ms = lock_timeout_ms
        self.idle_in_transaction_timeout_ms = idle_in_transaction_timeout_ms
        # Per thread: how deep the current unit nests, and which partition
        # plans it created (a plan must commit before workers are assigned).
        self._local = threading.local()

    @property
    def alias(self) -> str:
        """Return the database alias this repository writes to."""
        return self._using or conf.database_alias()

    def now(self) -> datetime:
        """Return the clock's current instant, whole milliseconds, aware."""
        return truncate_ms(self.clock.now())

    def instant(self, moment: datetime | None) -> datetime:
        """Return ``moment`` truncated to milliseconds, or now when ``None``."""
        return self.now() if moment is None else truncate_ms(moment)

    @contextmanager
    def unit(self) -> Iterator[None]:
        """
        Run the body as one atomic unit of work on the metadata alias.

        Nested inside a caller's ``transaction.atomic`` on the same alias,
        the unit becomes a savepoint and commits with the caller, which is
        how a job makes its own writes atomic with a chunk commit. Use
        ``with repo.unit():`` to make several operations one unit of work.
        """
        local = self._local
        depth = getattr(local, "depth", 0)
        if depth == 0:
            local.planned = set()
        local.depth = depth + 1
        try:
            with transaction.atomic(using=self.alias):
                self._bound_transaction()
                yield
        except RepositoryError:
            raise
        except DatabaseError as error:
            raise map_database_error(error) from None
        finally:
            local.depth = depth

    def _plans_in_this_unit(self) -> set[int]:
        """Return the parent steps whose partition plan this unit created."""
        planned: set[int] = self._local.planned
        return planned

    def _bound_transaction(self) -> None:
        connection = connections[self.alias]
        if connection.vendor != "postgresql":
            return
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT set_config('statement_timeout', %s, true), "
                "set_config('lock_timeout', %s, true), "
                "set_config('idle_in_transaction_session_timeout', %s, true)",
                [
                    f"{self.statement_timeout_ms}ms",
                    f"{self.lock_timeout_ms}ms",
                    f"{self.idle_in_transaction_timeout_ms}ms",
                ],
            )

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """Run the body in a savepoint so an expected conflict can be handled."""
        with transaction.atomic(using=self.alias):
            yield
