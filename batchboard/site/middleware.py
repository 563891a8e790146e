"""Turn a failing database into a short 503 page instead of a traceback."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse

from batchboard.site.database import explain_database_error

logger = logging.getLogger("batchboard.site")

PAGE = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">'
    "<title>batchboard: database unavailable</title></head><body>"
    "<h1>batchboard cannot read its database right now.</h1>"
    "<p>The administrator can run <code>manage.py check --database "
    "batchboard</code> (or <code>--database default</code>) to see why.</p>"
    "</body></html>"
)


class DatabaseUnavailableMiddleware:
    """
    Answer 503 with one sentence when a view hits a database error.

    The page names no host, database or statement: visitors are not the
    people who can fix it. The log gets the sentence for the operator.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(
        self, request: HttpRequest, exception: Exception
    ) -> HttpResponse | None:
        if not isinstance(exception, DatabaseError):
            return None
        logger.error("batchboard: %s", explain_database_error(exception))
        return HttpResponse(PAGE, status=503, headers={"Retry-After": "30"})
