"""
Health probes of the standalone site: liveness and readiness.

``/healthz`` answers while the process serves requests; it touches no
database. ``/readyz`` answers 200 only when the metadata database answers
and holds the schema version batchboard supports; otherwise 503. Neither
says why: probes are often reachable by more people than the logs, so the
reason goes to the log only.
"""

from __future__ import annotations

import logging

from django.db import DatabaseError, connections
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from batchboard import conf, schema

logger = logging.getLogger("batchboard.site")

__all__ = ["liveness", "readiness"]


def _plain(text: str, status: int) -> HttpResponse:
    return HttpResponse(text, status=status, content_type="text/plain; charset=utf-8")


@never_cache
@require_safe
def liveness(request: HttpRequest) -> HttpResponse:
    """Answer 200 while the process serves requests."""
    return _plain("ok\n", 200)


def _schema_version() -> int | None:
    alias = conf.database_alias()
    with connections[alias].cursor() as cursor:
        cursor.execute(f"SELECT version FROM {schema.VERSION_TABLE}")
        row = cursor.fetchone()
    return None if row is None else int(row[0])


@never_cache
@require_safe
def readiness(request: HttpRequest) -> HttpResponse:
    """Answer 200 when the metadata database answers with the schema supported."""
    try:
        version = _schema_version()
    except DatabaseError as error:
        logger.warning("readiness: metadata database error %s", type(error).__name__)
        return _plain("unavailable\n", 503)
    if version != schema.SUPPORTED_SCHEMA_VERSION:
        logger.warning(
            "readiness: metadata schema version %s, batchboard supports %s",
            version,
            schema.SUPPORTED_SCHEMA_VERSION,
        )
        return _plain("unavailable\n", 503)
    return _plain("ready\n", 200)
