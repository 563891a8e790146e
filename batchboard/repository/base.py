"""
The state every repository part shares: alias, clock, timeouts, unit of work.

One repository operation is one :func:`batchboard.db.unit`: a transaction
on the metadata alias, bounded and with its database errors mapped there.
What is the repository's own is the clock it is given and the partition
plans a unit created, which workers may not be assigned to before the plan
commits.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction

from batchboard import db
from batchboard.repository.cas import ModelT, cas_update, fetch
from batchboard.repository.validation import check_code


class RepositoryBase:
    """
    The state every repository part shares: alias, clock and timeouts.

    ``using`` names the database alias of the metadata tables; it defaults
    to ``BATCHBOARD["DATABASE"]``, read at each operation so settings
    overrides apply. ``clock`` supplies every timestamp written (defaults
    to :class:`~batchboard.db.SystemClock`); whatever it returns is
    truncated to whole milliseconds. The timeouts bound each unit of work
    on PostgreSQL (see :class:`batchboard.db.Timeouts`).
    """

    def __init__(
        self,
        *,
        using: str | None = None,
        clock: db.Clock | None = None,
        statement_timeout_ms: int = db.STATEMENT_TIMEOUT_MS,
        lock_timeout_ms: int = db.LOCK_TIMEOUT_MS,
        idle_in_transaction_timeout_ms: int = db.IDLE_IN_TRANSACTION_TIMEOUT_MS,
    ) -> None:
        self._using = using
        self.clock: db.Clock = clock or db.SystemClock()
        self.timeouts = db.Timeouts(
            statement_ms=statement_timeout_ms,
            lock_ms=lock_timeout_ms,
            idle_in_transaction_ms=idle_in_transaction_timeout_ms,
        )
        # Per thread: how deep the current unit nests, and which partition
        # plans it created (a plan must commit before workers are assigned).
        self._local = threading.local()

    @property
    def alias(self) -> str:
        """Return the database alias this repository writes to."""
        return db.alias(self._using)

    def now(self) -> datetime:
        """Return the clock's current instant, whole milliseconds, aware."""
        return db.truncate_ms(self.clock.now())

    def instant(self, moment: datetime | None) -> datetime:
        """Return ``moment`` truncated to milliseconds, or now when ``None``."""
        return self.now() if moment is None else db.truncate_ms(moment)

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
            with db.unit(self.alias, timeouts=self.timeouts):
                yield
        finally:
            local.depth = depth

    def _plans_in_this_unit(self) -> set[int]:
        """Return the parent steps whose partition plan this unit created."""
        planned: set[int] = self._local.planned
        return planned

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """Run the body in a savepoint so an expected conflict can be handled."""
        with transaction.atomic(using=self.alias):
            yield

    def _row(self, model: type[ModelT], row_id: int, *, lock: bool = False) -> ModelT:
        """Return row ``row_id`` of ``model`` (locked if asked) or raise not-found."""
        return fetch(model, self.alias, row_id, lock=lock)

    def _set_exit_code(
        self, model: type[ModelT], row_id: int, expected: int, exit_code: str
    ) -> ModelT:
        """Set a row's exit code (and nothing else) by compare-and-swap."""
        check_code(exit_code, "exit code")
        with self.unit():
            cas_update(
                model,
                self.alias,
                row_id,
                expected,
                exit_code=exit_code,
                updated_at=self.now(),
                version=expected + 1,
            )
            return self._row(model, row_id)

    def _insert(self, model: type[ModelT], **values: Any) -> ModelT | None:
        """
        Insert one row in a savepoint; return None if a constraint refused it.

        The refusal rolls back the savepoint only, so the unit goes on to
        report what the conflicting writer left.
        """
        try:
            with self.savepoint():
                return model._default_manager.using(self.alias).create(**values)
        except IntegrityError:
            return None
