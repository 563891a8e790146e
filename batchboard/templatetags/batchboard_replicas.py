"""The lag notice of a page served from a replica (``{% replica_lag %}``)."""

from __future__ import annotations

from django import template

from batchboard import replicas

register = template.Library()


@register.simple_tag
def replica_lag() -> int | None:
    """Return the seconds the page's replica lags behind, when worth saying."""
    choice = replicas.current()
    return None if choice is None else choice.notice_seconds()
