"""
Read-your-writes across workers and hosts, and the bounded read transaction.

:class:`ReadYourWritesMiddleware` goes after Django's ``SessionMiddleware``
and ``AuthenticationMiddleware`` in ``MIDDLEWARE``. For every request it

- collects the primary's WAL position after each unit of work the request
  commits (:func:`batchboard.db.tracking_commits`) and keeps the latest in
  the user's session, which lives in the database or a shared cache, never
  in the process, so the next request may land on any worker of any host;
- serves each guarded view's GET or HEAD inside
  :func:`batchboard.replicas.reading`, as the view's guard declared
  (:func:`batchboard.web.reads`): on a replica that has replayed that
  position (else the primary) or on the primary, in one transaction bounded
  by ``STATEMENT_TIMEOUT_MS``.

The reading starts in ``process_view`` and ends when the response comes
back through the middleware, even when the view raised: Django calls the
view itself, so the ``process_view`` and ``process_exception`` of the
middleware listed after this one run as usual (inside the reading).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from django.http import HttpRequest, HttpResponse

from batchboard import db, replicas, web

#: The request attribute holding the reading a view runs in, until it ends.
_READING = "_batchboard_reading"


class ReadYourWritesMiddleware:
    """See the module's description."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with db.tracking_commits() as positions:
            try:
                response = self.get_response(request)
            except BaseException as error:
                _leave(request, error)
                raise
            _leave(request, None)
        session = getattr(request, "session", None)
        if positions and session is not None:
            replicas.remember(session, positions)
        return response

    def process_view(
        self,
        request: HttpRequest,
        view: Callable[..., HttpResponse],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        source = web.reads(view)
        if request.method not in ("GET", "HEAD") or source is None:
            return None
        if getattr(request, _READING, None) is not None:
            return None
        session = getattr(request, "session", None)
        reading = replicas.reading(session, replica=source == "replica")
        reading.__enter__()
        setattr(request, _READING, reading)
        return None


def _leave(request: HttpRequest, error: BaseException | None) -> None:
    """End the reading ``process_view`` started for ``request``, if any."""
    reading: AbstractContextManager[Any] | None = getattr(request, _READING, None)
    if reading is None:
        return
    setattr(request, _READING, None)
    if error is None:
        reading.__exit__(None, None, None)
    else:
        reading.__exit__(type(error), error, error.__traceback__)
