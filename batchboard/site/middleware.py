"""
The standalone site's middleware: headers, refusals, request logs and the
503 page of a failing database.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.utils.functional import empty
from django.utils.html import format_html
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from batchboard.api import output
from batchboard.site.database import explain_database_error
from batchboard.site.security import PERMISSIONS_POLICY, builtin_csp, csp_header
from batchboard.vocabulary import CONTROL_CHARACTERS

logger = logging.getLogger("batchboard.site")
request_logger = logging.getLogger("batchboard.request")

Handler = Callable[[HttpRequest], HttpResponse]


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
    people who can fix it. The log gets the sentence for the operator. A
    statement cancelled by ``statement_timeout`` (SQLSTATE 57014) ends here
    too, as every other database error a view does not handle itself.
    """

    def __init__(self, get_response: Handler) -> None:
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


class SecurityHeadersMiddleware:
    """
    Send the site's Permissions-Policy and, before Django 6, its CSP.

    Django 6 sends ``SECURE_CSP`` itself (the settings install its
    middleware instead); either way the policy is
    :data:`batchboard.site.security.CONTENT_SECURITY_POLICY`.
    """

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response
        self.csp = None if builtin_csp() else csp_header()

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if self.csp is not None:
            response.headers.setdefault("Content-Security-Policy", self.csp)
        response.headers.setdefault("Permissions-Policy", PERMISSIONS_POLICY)
        return response


class ControlCharactersMiddleware:
    """
    Refuse a request whose path or query string holds a control character.

    No page, filter or admin lookup reads one, and PostgreSQL refuses NUL in
    text with an error that would read as an outage. batchboard's own views
    refuse them too (with their 400 page), for sites that embed them.
    """

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if CONTROL_CHARACTERS.search(request.path) or any(
            CONTROL_CHARACTERS.search(key)
            or any(CONTROL_CHARACTERS.search(value) for value in values)
            for key, values in request.GET.lists()
        ):
            if "/api/v1/" in request.path:
                # The JSON API answers in its envelope, never in text.
                return output.failure(
                    "unknown",
                    "USAGE",
                    "INVALID_VALUE",
                    "the address holds a control character",
                ).response()
            return HttpResponseBadRequest(
                _("The address holds a control character."),
                content_type="text/plain; charset=utf-8",
            )
        return self.get_response(request)


def _user_id(request: HttpRequest) -> int | str | None:
    """Return the signed-in user's id if the request already looked it up."""
    user = getattr(request, "user", None)
    wrapped = getattr(user, "_wrapped", empty)
    if user is None or wrapped is empty:
        # Nobody asked who it was: looking now would cost the queries the
        # view saved (a static file, a health probe).
        return None
    pk = getattr(wrapped, "pk", None)
    return pk if isinstance(pk, (int, str)) else None


class RequestLogMiddleware:
    """
    Log one JSON line per request: method, path, status, duration, user id.

    The query string is never logged (filters name jobs and carry cursors),
    nor any header, form field or body.
    """

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        if request_logger.isEnabledFor(logging.INFO):
            request_logger.info(
                json.dumps(
                    {
                        "method": request.method,
                        "path": request.path,
                        "status": response.status_code,
                        "ms": round((time.perf_counter() - started) * 1000, 1),
                        "user": _user_id(request),
                    },
                    ensure_ascii=True,
                )
            )
        return response
