"""
Read-your-writes across workers and hosts, and the bounded read transaction.

:class:`ReadYourWritesMiddleware` goes after Django's ``SessionMiddleware``
and ``AuthenticationMiddleware`` in ``MIDDLEWARE``. For every request it

- collects the primary's WAL position after each unit of work the request
  commits (:func:`batchboard.db.tracking_commits`) and keeps the latest in
  the user's session, which lives in the database or a shared cache, never
  in the process, so the next request may land on any worker of any host;
- runs each batchboard page (GET or HEAD) inside
  :func:`batchboard.replicas.reading`: the explorer's on a replica that has
  replayed that position (else the primary), the console's on the primary,
  each in one transaction bounded by ``STATEMENT_TIMEOUT_MS``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse

from batchboard import db, replicas

#: The modules whose pages run in a bounded read transaction.
BOUNDED_VIEW_MODULES = ("batchboard.explorer.views", "batchboard.console.views")


class ReadYourWritesMiddleware:
    """See the module's description."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with db.tracking_commits() as positions:
            response = self.get_response(request)
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
    ) -> HttpResponse | None:
        module = getattr(view, "__module__", "") or ""
        if request.method not in ("GET", "HEAD") or module not in BOUNDED_VIEW_MODULES:
            return None
        session = getattr(request, "session", None)
        with replicas.reading(session, replica=module in replicas.REPLICA_VIEW_MODULES):
            return view(request, *args, **kwargs)
