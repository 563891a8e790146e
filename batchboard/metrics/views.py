"""
The ``/metrics`` endpoint: who may scrape it, and the exposition.

A scraper is admitted by ``BATCHBOARD["METRICS_TOKEN"]`` (the request
carries ``Authorization: Bearer <token>``) and by
``METRICS_ALLOWED_NETWORKS`` (the client's address, ``REMOTE_ADDR``, lies
in one of them): each one that is set must admit it. With neither set, only
a DEBUG site answers (check W040 warns a production site). A refusal is a
short plain-text 401 or 403 that names no setting and echoes nothing.

The answer is the Prometheus text format, or OpenMetrics when the scraper
asks for it (``Accept``), with every family held to the budget
(:mod:`.budget`).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import Iterable, Iterator
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from prometheus_client import CollectorRegistry, Metric
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import choose_encoder

from batchboard import conf
from batchboard.metrics import database, requests
from batchboard.metrics.budget import within_budget

logger = logging.getLogger("batchboard.metrics")

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def allowed_networks() -> list[Network]:
    """Return ``METRICS_ALLOWED_NETWORKS`` parsed; invalid entries (E041) are left out."""
    configured = conf.get_config().get("METRICS_ALLOWED_NETWORKS") or []
    if isinstance(configured, str):
        configured = [configured]
    networks = []
    for entry in configured if isinstance(configured, (list, tuple)) else []:
        try:
            networks.append(ipaddress.ip_network(str(entry), strict=False))
        except ValueError:
            continue
    return networks


def token() -> str:
    """Return ``METRICS_TOKEN`` ("" when unset or not a string, E041)."""
    value = conf.get_config().get("METRICS_TOKEN") or ""
    return value if isinstance(value, str) else ""


def _bearer(request: HttpRequest) -> str | None:
    scheme, _space, credentials = request.headers.get("Authorization", "").partition(
        " "
    )
    if scheme.lower() != "bearer" or not credentials.strip():
        return None
    return credentials.strip()


def _address_allowed(request: HttpRequest, networks: Iterable[Network]) -> bool:
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(address in network for network in networks)


def refusal(request: HttpRequest) -> HttpResponse | None:
    """Return the 401 or 403 that refuses ``request``, or None to admit it."""
    secret = token()
    networks = allowed_networks()
    if not secret and not networks:
        if settings.DEBUG:
            return None
        return _plain(403, "Metrics are not enabled on this site.\n")
    if networks and not _address_allowed(request, networks):
        return _plain(403, "Not allowed from this address.\n")
    if secret:
        given = _bearer(request)
        if given is None or not hmac.compare_digest(
            given.encode("utf-8", "surrogatepass"), secret.encode("utf-8")
        ):
            response = _plain(401, "A valid bearer token is required.\n")
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
            return response
    return None


def _plain(status: int, text: str) -> HttpResponse:
    return HttpResponse(text, status=status, content_type="text/plain; charset=utf-8")


class _Families:
    """A collector of families already read."""

    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self.families)


def families() -> list[Metric]:
    """Return every family of a scrape, each within the budget."""
    found = [*requests.collect(), *database.families()]
    folded = GaugeMetricFamily(
        "batchboard_metrics_folded_series",
        "Label sets past a family's 200 folded into its __other__ set.",
        labels=["family"],
    )
    for family in found:
        count = within_budget(family)
        if count:
            folded.add_metric([family.name], count)
    return [*found, folded]


def exposition(accept: str | None) -> tuple[bytes, str]:
    """Return the scrape's body and content type for an ``Accept`` header."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(families()))
    encoder, content_type = choose_encoder(accept or "")
    return encoder(registry), content_type


@require_safe
@never_cache
def metrics(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """Answer a scrape with every family, or refuse it."""
    refused = refusal(request)
    if refused is not None:
        return refused
    try:
        body, content_type = exposition(request.headers.get("Accept"))
    except DatabaseError as error:
        # The class name only: a database error's message may quote values.
        logger.error("batchboard: /metrics could not read: %s", type(error).__name__)
        response = _plain(503, "The metadata database did not answer.\n")
        response["Retry-After"] = "30"
        return response
    return HttpResponse(body, content_type=content_type)
