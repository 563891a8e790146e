"""Turn a failing database into a short 503 page instead of a traceback."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from batchboard.site.database import explain_database_error

logger = logging.getLogger("batchboard.site")


def unavailable_page() -> str:
    """Return the page a visitor sees while the database fails, translated."""
    advice = format_html(
        _("The administrator can run {command} (or {alternative}) to see why."),
        command=format_html("<code>{}</code>", "manage.py check --database batchboard"),
        alternative=format_html("<code>{}</code>", "--database default"),
    )
    return format_html(
        '<!doctype html><html lang="{}"><head><meta charset="utf-8">'
        "<title>{}</title></head><body><h1>{}</h1><p>{}</p></body></html>",
        get_language() or "en",
        _("batchboard: database unavailable"),
        _("batchboard cannot read its database right now."),
        advice,
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
        return HttpResponse(
            unavailable_page(), status=503, headers={"Retry-After": "30"}
        )
