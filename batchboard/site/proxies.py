"""
Which peers may name the client: gunicorn's ``FORWARDED_ALLOW_IPS``, read once.

gunicorn trusts ``X-Forwarded-Proto`` from these peers (``gunicorn.conf.py``
reads :func:`allowed` too); the site trusts their ``X-Forwarded-For`` for the
client's address (:func:`client_address`), so one variable says which
proxies are trusted, for both. Addresses and networks, comma separated, or
``*`` for any peer. This module imports nothing from Django at import time:
gunicorn reads it before Django is set up.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

__all__ = ["DEFAULT", "allowed", "client_address", "trusted_networks"]

#: gunicorn's own default.
DEFAULT = "127.0.0.1,::1"

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def allowed(environ: Mapping[str, str]) -> str:
    """Return ``FORWARDED_ALLOW_IPS`` as the environment sets it, or the default."""
    return environ.get("FORWARDED_ALLOW_IPS", DEFAULT).strip() or DEFAULT


def trusted_networks(value: str) -> tuple[Network, ...] | None:
    """
    Parse ``FORWARDED_ALLOW_IPS``; ``None`` stands for ``*`` (every peer).

    A value that is not an address or a network raises ``ValueError``, as
    gunicorn refuses it.
    """
    items = [item.strip() for item in value.split(",") if item.strip()]
    if "*" in items:
        return None
    return tuple(ipaddress.ip_network(item, strict=False) for item in items)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def _trusted(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address | None,
    networks: tuple[Network, ...] | None,
) -> bool:
    if address is None:
        return False
    if networks is None:
        return True
    return any(address in network for network in networks)


def client_address(
    meta: Mapping[str, Any], networks: tuple[Network, ...] | None
) -> str:
    """
    Return the client's address of a request whose WSGI environ is ``meta``.

    ``REMOTE_ADDR`` unless that peer is a trusted proxy; then the nearest
    address in ``X-Forwarded-For`` that is not itself a trusted proxy,
    read from the right: each proxy appends the peer it saw, so entries to
    the left of the first untrusted one are whatever the client wrote. A
    malformed entry stops the walk at the last trusted hop.
    """
    peer = str(meta.get("REMOTE_ADDR", ""))
    if not _trusted(_address(peer), networks):
        return peer
    nearest = peer
    hops = str(meta.get("HTTP_X_FORWARDED_FOR", "")).split(",")
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            return nearest
        if not _trusted(address, networks):
            return str(address)
        nearest = str(address)
    return nearest
