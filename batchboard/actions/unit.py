"""
An action's unit of work: the role it writes as and how its outcome settles.

The unit itself (alias, timeouts, clock, error mapping) is
:mod:`batchboard.db`'s. What is the actions' own is telling the operator
when the role's alias is missing, and the end of the protocol of spec 4.3:
a unit that failed before its end re-probes the recorded outcome, and one
that failed at its commit has an unknown outcome.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from datetime import datetime

from django.core.exceptions import ImproperlyConfigured

from batchboard import db
from batchboard.actions.results import (
    ActionError,
    ActionResult,
    OperationOutcomeUnknown,
    told,
)


@contextmanager
def writing(role: str) -> Iterator[None]:
    """
    Run the body through the alias of ``role`` (see :func:`batchboard.db.writing`).

    An alias that ``DATABASES`` does not define is an :class:`ActionError`
    naming it, raised before anything is read or written.
    """
    with ExitStack() as stack:
        try:
            stack.enter_context(db.writing(role))
        except ImproperlyConfigured as error:
            raise ActionError(str(error)) from None
        yield


#: Operation ids the caller has just read to be unrecorded, all at once.
_unrecorded: ContextVar[frozenset[str]] = ContextVar(
    "batchboard_unrecorded", default=frozenset()
)


@contextmanager
def unrecorded(operation_ids: Iterable[str]) -> Iterator[None]:
    """
    Let the body's actions skip the first probe of ``operation_ids``.

    A bulk apply reads which of a batch's operation ids are recorded with
    one statement; an action under an id it read as new then goes straight
    to its unit. Nothing else changes: should another process record the
    id in between, the unit's audit insert fails on the operation id's
    unique index and :func:`settle` re-probes, as for any race.
    """
    token = _unrecorded.set(frozenset(operation_ids))
    try:
        yield
    finally:
        _unrecorded.reset(token)


def first_probe(
    operation_id: str, probe: Callable[[], ActionResult | None]
) -> ActionResult | None:
    """Return ``probe()``, or None for an id read as new (:func:`unrecorded`)."""
    if operation_id in _unrecorded.get():
        return None
    return probe()


def decide(
    operation_id: str,
    probe: Callable[[], ActionResult | None],
    apply: Callable[[datetime], ActionResult],
) -> ActionResult:
    """
    Report the recorded outcome of ``operation_id``, else apply it now.

    ``probe`` returns the recorded outcome (REPLAYED), raises for an id used
    by another request, or returns None for a new id; then ``apply`` runs
    at :func:`batchboard.db.now` as one unit, settled by :func:`settle`
    with ``probe`` as its re-probe.
    """
    replay = first_probe(operation_id, probe)
    if replay is not None:
        return replay
    at = db.now()
    return settle(operation_id, lambda: apply(at), probe)


def settle(
    operation_id: str,
    body: Callable[[], ActionResult],
    reprobe: Callable[[], ActionResult | None],
) -> ActionResult:
    """
    Run ``body`` as one :func:`batchboard.db.unit` and settle its failure.

    A failure inside the unit (normally the audit insert losing to a
    concurrent submission of the same operation id, or a lock or statement
    timeout) re-probes: the recorded outcome, else the failure as
    :func:`~batchboard.actions.results.told` words it for the operator
    (:class:`ConcurrentModification`, :class:`ConstraintViolation` or
    :class:`Unavailable`). A failure after the body ran to its end came
    from COMMIT, so the outcome is unknown (:class:`OperationOutcomeUnknown`);
    resubmitting the same operation id reports it.
    """
    committed = False
    try:
        with db.unit():
            result = body()
            committed = True
    except db.RepositoryError as error:
        if committed:
            raise OperationOutcomeUnknown(operation_id) from error
        replay = reprobe()
        if replay is None:
            raise told(error) from error
        return replay
    return result
