"""
batchboard's own request count and latency, by view name and status.

:class:`RequestMetricsMiddleware` (first in ``MIDDLEWARE``, after Django's
``SecurityMiddleware``) counts every response. The ``view`` label is the
URL pattern's name (``batchboard:job``, ``admin:index``; the view's dotted
path when the pattern has no name), never the path, which holds ids and job
names; a request no pattern matched is ``none``. ``status`` is the HTTP
status code. Both come from closed sets: the URLconf and the codes.

Under gunicorn every worker process counts its own requests. With
``PROMETHEUS_MULTIPROC_DIR`` set in the environment before the workers
start (``gunicorn.conf.py`` does), prometheus-client keeps each worker's
values in a file of that directory and :func:`collect` adds them up, so
whichever worker serves ``/metrics`` answers the server's totals; a
worker that exits (``max_requests``) leaves its counts behind.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Final

from django.http import HttpRequest, HttpResponse
from prometheus_client import CollectorRegistry, Counter, Histogram, Metric
from prometheus_client.multiprocess import MultiProcessCollector

#: The environment variable prometheus-client reads for its shared directory.
MULTIPROCESS_DIRECTORY: Final = "PROMETHEUS_MULTIPROC_DIR"
#: The view label of a request no URL pattern matched.
NO_VIEW: Final = "none"
#: Latency buckets, seconds: pages aim at tens of milliseconds.
BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)

#: This process's request metrics (prometheus-client writes them to the
#: shared directory as well when it is set).
REGISTRY: Final = CollectorRegistry(auto_describe=True)
REQUESTS: Final = Counter(
    "batchboard_http_requests",
    "Requests answered, by view name and status.",
    ["view", "status"],
    registry=REGISTRY,
)
LATENCY: Final = Histogram(
    "batchboard_http_request_duration_seconds",
    "Time from the request reaching batchboard's middleware to its response, "
    "by view name and status.",
    ["view", "status"],
    buckets=BUCKETS,
    registry=REGISTRY,
)


def view_name(request: HttpRequest) -> str:
    """Return the label of the view that answered ``request``."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return NO_VIEW
    return str(match.view_name)


def record(view: str, status: int, seconds: float) -> None:
    """Count one response of ``view`` with ``status`` that took ``seconds``."""
    labels = (view, str(status))
    REQUESTS.labels(*labels).inc()
    LATENCY.labels(*labels).observe(seconds)


def collect() -> list[Metric]:
    """
    Return the request families: every worker's, when they share a directory.

    The ``_created`` samples (when each series began) are left out: the
    shared directory has none, so a single process shows the same series
    as a server of several.
    """
    directory = os.environ.get(MULTIPROCESS_DIRECTORY)
    registry = REGISTRY
    if directory:
        registry = CollectorRegistry(auto_describe=False)
        MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
    families = list(registry.collect())
    for family in families:
        family.samples = [s for s in family.samples if not s.name.endswith("_created")]
    return families


class RequestMetricsMiddleware:
    """Count each response and its time under its view's name and status."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        record(view_name(request), response.status_code, time.perf_counter() - started)
        return response
