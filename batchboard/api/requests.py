"""
An API call's caller and inputs: bearer tokens, sessions, CSRF, parameters.

Every failure here is an :class:`Refused` carrying the envelope to answer
with; nothing the caller sent is echoed in it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import CsrfViewMiddleware

from batchboard.api import output, tokens
from batchboard.api.output import Envelope
from batchboard.vocabulary import CONTROL_CHARACTERS, MAX_BIGINT, parse_whole_number

#: The largest JSON body an action takes.
MAX_BODY_BYTES = 16_384
PAGE_SIZE_DEFAULT = 50
PAGE_SIZE_MAX = 500
DURATION_RE = re.compile(r"([0-9]{1,12})(ms|s|m|h|d)")
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class Refused(Exception):
    """Stop the call and answer ``envelope``."""

    def __init__(self, envelope: Envelope) -> None:
        super().__init__(envelope.command)
        self.envelope = envelope


def refuse(command: str, category: str, code: str, detail: str) -> Refused:
    return Refused(output.failure(command, category, code, detail))


def _csrf_failure(request: HttpRequest) -> bool:
    def nothing(_request: HttpRequest) -> HttpResponse:
        return HttpResponse()

    checker = CsrfViewMiddleware(nothing)
    checker.process_request(request)
    return checker.process_view(request, nothing, (), {}) is not None


def caller(request: HttpRequest, command: str) -> Any:
    """
    Return who calls: a token's owner limited to its classes, or the session's user.

    A bearer token is checked (and counted) on every call; a revoked,
    expired or unknown token gets 401. A session call that writes must
    carry the CSRF token; a bearer call carries no cookie and needs none.
    """
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if header:
        scheme, _, secret = header.partition(" ")
        token = tokens.find(secret.strip()) if scheme.lower() == "bearer" else None
        if token is None:
            raise refuse(
                command,
                "UNAUTHENTICATED",
                "TOKEN_REJECTED",
                "the bearer token is unknown, revoked or expired",
            )
        if not tokens.admit(token):
            raise refuse(
                command,
                "THROTTLED",
                "TOKEN_THROTTLED",
                "the token's calls for this minute are used up",
            )
        return tokens.ScopedUser(token.user, token.class_set)
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        raise refuse(
            command,
            "UNAUTHENTICATED",
            "AUTHENTICATION_REQUIRED",
            "sign in or send a bearer token",
        )
    if request.method not in ("GET", "HEAD", "OPTIONS") and _csrf_failure(request):
        raise refuse(
            command,
            "FORBIDDEN",
            "CSRF_FAILED",
            "a session call that writes needs the CSRF token",
        )
    return user


def require_perms(user: Any, command: str, *permissions: str) -> None:
    if not user.has_perms(permissions):
        raise refuse(
            command,
            "FORBIDDEN",
            "PERMISSION_DENIED",
            "the caller lacks a permission this command needs",
        )


# -- query parameters ---------------------------------------------------------


#: The CLI's global ``--timeout``, which every read takes as ``?timeout=``.
TIMEOUT_PARAM = "timeout"
MIN_TIMEOUT_MS = 1_000
MAX_TIMEOUT_MS = 3_600_000


def check_params(request: HttpRequest, command: str, allowed: set[str]) -> None:
    """Refuse a parameter the command does not take, or one given twice."""
    reads = request.method in ("GET", "HEAD")
    for name in request.GET:
        if name not in allowed and not (reads and name == TIMEOUT_PARAM):
            raise refuse(
                command, "USAGE", "UNKNOWN_OPTION", "an unknown option was given"
            )
        if len(request.GET.getlist(name)) > 1 and name != "status":
            raise refuse(
                command,
                "USAGE",
                "REPEATED_OPTION",
                "a single-valued option was repeated",
            )


def page_size(request: HttpRequest, command: str) -> int:
    text = request.GET.get("page_size")
    if text is None:
        return PAGE_SIZE_DEFAULT
    value = parse_whole_number(text)
    if value is None or not 1 <= value <= PAGE_SIZE_MAX:
        raise refuse(
            command,
            "CONFIGURATION_INVALID",
            "PAGE_SIZE_OUT_OF_RANGE",
            "the page size is outside its bound",
        )
    return value


def cursor(request: HttpRequest) -> str | None:
    return request.GET.get("cursor") or None


def identifier(text: object, command: str, what: str) -> int:
    """Return a u64 id (>= 1 and within bigint), else refuse as INVALID_<WHAT>."""
    value = (
        text
        if isinstance(text, int) and not isinstance(text, bool)
        else parse_whole_number(text, maximum=None)
        if isinstance(text, str)
        else None
    )
    if value is None or not 1 <= value <= MAX_BIGINT:
        raise refuse(
            command,
            "USAGE",
            f"INVALID_{what.upper()}",
            f"the {what} identifier is not a positive whole number",
        )
    return value


def job_name(text: str, command: str) -> str:
    """Return ``text`` if it is a job name of 1 to 128 bytes, else refuse it."""
    if not 1 <= len(text.encode("utf-8", "surrogatepass")) <= 128:
        raise refuse(command, "USAGE", "INVALID_JOB", "the job name is 1 to 128 bytes")
    return text


def duration_seconds(text: str, command: str, code: str) -> int:
    """Return a CLI duration (digits and ms|s|m|h|d) in whole seconds."""
    match = DURATION_RE.fullmatch(text)
    if match is None:
        raise refuse(
            command, "USAGE", code, "the duration is digits then ms, s, m, h or d"
        )
    number, unit = int(match.group(1)), match.group(2)
    return number // 1000 if unit == "ms" else number * UNIT_SECONDS[unit]


def deadline_ms(request: HttpRequest, command: str) -> int | None:
    """
    Return a read's ``timeout`` (1 s to 1 h, as the CLI's) in milliseconds.

    Its reads stop once it has passed (:func:`batchboard.replicas.reading`),
    and the answer is the CLI's DEADLINE_EXCEEDED. A write is refused one:
    its unit keeps its own lock and statement bounds, and a write stopped
    half-way is not what the caller would be told it was.
    """
    text = request.GET.get(TIMEOUT_PARAM)
    if text is None:
        return None
    if request.method not in ("GET", "HEAD"):
        raise refuse(
            command,
            "USAGE",
            "OPTION_NOT_ACCEPTED",
            "a write takes no timeout; its own bounds apply",
        )
    match = DURATION_RE.fullmatch(text)
    if match is None:
        raise refuse(
            command,
            "USAGE",
            "INVALID_VALUE",
            "the timeout is digits then ms, s, m, h or d",
        )
    number, unit = int(match.group(1)), match.group(2)
    value = number if unit == "ms" else number * UNIT_SECONDS[unit] * 1000
    if not MIN_TIMEOUT_MS <= value <= MAX_TIMEOUT_MS:
        raise refuse(command, "USAGE", "INVALID_VALUE", "the timeout is 1 s to 1 h")
    return value


# -- JSON bodies --------------------------------------------------------------------


def body(
    request: HttpRequest,
    command: str,
    required: set[str],
    optional: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Return the JSON object sent, refusing malformed JSON and unknown or missing keys."""
    raw = request.body if len(request.body) <= MAX_BODY_BYTES else None
    if raw is None:
        raise refuse(
            command, "USAGE", "BODY_TOO_LARGE", "the request body is too large"
        )
    try:
        document = json.loads(raw.decode("utf-8") or "{}")
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise refuse(
            command, "USAGE", "MALFORMED_BODY", "the request body is not a JSON object"
        ) from None
    if not isinstance(document, dict):
        raise refuse(
            command, "USAGE", "MALFORMED_BODY", "the request body is not a JSON object"
        )
    if _holds_control_characters(document):
        raise refuse(
            command, "USAGE", "INVALID_VALUE", "a field holds a control character"
        )
    for key in document:
        if key not in required | optional:
            raise refuse(
                command, "USAGE", "UNKNOWN_OPTION", "an unknown field was given"
            )
    for key in sorted(required):
        if key not in document:
            raise refuse(
                command,
                "USAGE",
                f"MISSING_{key.upper()}",
                f"the field {key} is required",
            )
    return document


def _holds_control_characters(value: Any, depth: int = 0) -> bool:
    """Return whether a string anywhere in ``value`` (keys too) holds one."""
    if isinstance(value, str):
        return bool(CONTROL_CHARACTERS.search(value))
    if depth > 32:
        return True
    if isinstance(value, dict):
        return any(
            _holds_control_characters(key, depth + 1)
            or _holds_control_characters(item, depth + 1)
            for key, item in value.items()
        )
    if isinstance(value, list):
        return any(_holds_control_characters(item, depth + 1) for item in value)
    return False


def text_field(document: dict[str, Any], key: str, command: str) -> str:
    value = document.get(key)
    if not isinstance(value, str) or not value or len(value) > 256:
        raise refuse(
            command,
            "USAGE",
            f"INVALID_{key.upper()}",
            f"the field {key} must be a short string",
        )
    return value
