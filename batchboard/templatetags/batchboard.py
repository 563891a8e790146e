"""
Template helpers of the explorer: ``{% load batchboard %}``.

Times are shown in UTC with a relative age beside them, durations in human
units, statuses as text with a colour class (never colour alone).
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta
from typing import Any

from django import template
from django.conf import settings
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from batchboard import schema

register = template.Library()

_STATUS_TONE = {
    "STARTING": "active",
    "STARTED": "active",
    "STOPPING": "warn",
    "STOPPED": "warn",
    "FAILED": "bad",
    "COMPLETED": "good",
    "ABANDONED": "muted",
    "UNKNOWN": "bad",
}


# Every known status's badge is built once: a list renders one per row.
_BADGES = {
    value: format_html('<span class="bb-status bb-status--{}">{}</span>', tone, value)
    for value, tone in _STATUS_TONE.items()
}
_NO_BADGE = format_html('<span class="bb-status bb-status--none">{}</span>', "—")


@register.simple_tag
def status(value: str | None) -> SafeString:
    """Render a status as a labelled badge whose colour repeats the text."""
    if not value:
        return _NO_BADGE
    badge = _BADGES.get(value)
    if badge is None:
        badge = format_html('<span class="bb-status bb-status--muted">{}</span>', value)
    return badge


@register.filter
def unresolved(value: str | None) -> bool:
    """Return whether a status is unresolved (still running or ambiguous)."""
    return value in schema.UNRESOLVED


def _human(seconds: float) -> str:
    seconds = max(seconds, 0.0)
    if seconds < 1:
        return f"{int(seconds * 1000)} ms"
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{int(seconds)} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"


@register.filter
def seconds(value: int) -> str:
    """Return a number of seconds in human units, e.g. ``"15 min 00 s"``."""
    return _human(float(value)).replace(" 00 s", "").replace(" 00 min", "")


@register.simple_tag
def duration(
    start: datetime | None, end: datetime | None, now: datetime | None = None
) -> str:
    """Return a human duration; unfinished spans run to ``now``."""
    if start is None:
        return "—"
    finish = end or now or timezone.now()
    return _human((finish - start).total_seconds())


@register.filter
def age(moment: datetime | None, now: datetime | None = None) -> str:
    """Return how long ago ``moment`` was, e.g. ``"4 min 03 s ago"``."""
    if moment is None:
        return "—"
    delta = ((now or timezone.now()) - moment).total_seconds()
    if delta < 0:
        return "in " + _human(-delta)
    return _human(delta) + " ago"


_NO_TIME = format_html('<span class="bb-muted">{}</span>', "—")


@register.simple_tag
def utc(moment: datetime | None, now: datetime | None = None) -> SafeString:
    """Render a UTC timestamp in a ``<time>`` element with its age beside it."""
    if moment is None:
        return _NO_TIME
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    ago = age(moment, now)
    iso = moment.isoformat()
    # Every part is digits, separators or a fixed unit word, so nothing
    # needs escaping; a list renders this once or twice per row.
    return SafeString(
        f'<time datetime="{iso}" title="{ago}">{iso[:10]} {iso[11:19]}Z</time> '
        f'<span class="bb-age">{ago}</span>'
    )


@register.filter
def hexdigest(value: bytes | memoryview | None) -> str:
    """Return bytes as lowercase hex (digests are displayable, spec 3.5)."""
    if value is None:
        return "—"
    return bytes(value).hex()


@register.filter
def short_hex(value: bytes | memoryview | None) -> str:
    if value is None:
        return "—"
    return bytes(value).hex()[:12] + "…"


@register.filter
def number(value: int | None) -> str:
    """Group digits with thin spaces so large counters stay readable."""
    if value is None:
        return "—"
    return f"{int(value):,}".replace(",", "\u2009")


@register.filter
def size(value: int | None) -> str:
    """Return a byte count in binary units."""
    if value is None:
        return "—"
    amount = float(value)
    for unit in ("B", "KiB", "MiB"):
        if amount < 1024 or unit == "MiB":
            return f"{int(amount)} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{value} B"


@register.filter
def percent(done: int | None, total: int | None) -> int:
    """Return ``done`` of ``total`` as a whole percentage (0 when no total)."""
    if not total:
        return 0
    return int(round(100 * (done or 0) / total))


@register.filter
def get(mapping: dict[str, Any], key: str) -> Any:
    return mapping.get(key) if mapping else None


@register.simple_tag
def elapsed_seconds(start: datetime | None, end: datetime | None = None) -> int:
    if start is None:
        return 0
    return int(((end or timezone.now()) - start).total_seconds())


@register.filter
def plus(value: timedelta | int, other: int) -> Any:
    return value + other


_MARKS = {
    "STARTING": "…",
    "STARTED": "▶",
    "STOPPING": "◼",
    "STOPPED": "■",
    "FAILED": "✕",
    "COMPLETED": "✓",
    "ABANDONED": "–",
    "UNKNOWN": "?",
}


@register.filter
def status_mark(value: str) -> str:
    """Return a one-glyph mark per status for dense strips (text stays beside it)."""
    return _MARKS.get(value, "·")


# -- links outside row lists -------------------------------------------------
# Each URL name is reversed once (per script prefix and URLconf) around a
# placeholder and the id substituted; row lists get their links from the
# view (see batchboard.explorer.views._Links).

_PLACEHOLDER = "987654321987"


@functools.lru_cache(maxsize=256)
def _pattern(name: str, prefix: str, urlconf: str | None, root: str) -> str:
    return reverse(name, args=[_PLACEHOLDER])


def _base(name: str) -> str:
    return _pattern(
        name, get_script_prefix(), get_urlconf(), str(settings.ROOT_URLCONF)
    )


@register.filter
def link(pk: int, name: str) -> str:
    """
    Return the URL of page ``name`` for an integer id.

    Usage: ``{{ row.id|link:"batchboard:execution" }}``.
    """
    return _base(name).replace(_PLACEHOLDER, str(int(pk)))
