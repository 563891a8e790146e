"""
Spans of time in human units: the one humaniser of every front end.

``span(18438)`` is ``"5 h 07 min"`` on a list, on the execution page, in a
recovery verdict and in the admin alike. Imports only Django's translation,
so the action service (its verdicts) and the explorer (its cells) share it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Final

from django.utils.functional import Promise
from django.utils.html import escape
from django.utils.safestring import SafeString
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

_UNITS: Final[Mapping[str, Promise]] = {
    "ms": _("%(ms)d ms"),
    "tenths": _("%(s).1f s"),
    "s": _("%(s)d s"),
    "min_s": _("%(min)d min %(s)02d s"),
    "min": _("%(min)d min"),
    "h_min": _("%(h)d h %(min)02d min"),
    "h": _("%(h)d h"),
    "d_h": _("%(d)d d %(h)d h"),
}


@functools.lru_cache(maxsize=64)
def _units_in(language: str | None) -> Mapping[str, str]:
    # Escaped once: a format's numbers keep it safe.
    return {key: escape(str(text)) for key, text in _UNITS.items()}


def formats() -> Mapping[str, str]:
    """
    Return the unit formats of the active language, escaped.

    A caller writing many spans at once (a page's rows) reads them once and
    passes them to :func:`span`: looking up the active language costs more
    than writing a span.
    """
    return _units_in(get_language())


def span(
    seconds: float, whole: bool = False, units: Mapping[str, str] | None = None
) -> SafeString:
    """
    Return a span in human units, e.g. ``"4 min 03 s"``.

    ``whole`` leaves out a zero lower unit (``"15 min"``), for bounds a
    person chose rather than spans measured. ``units`` are the active
    language's :func:`formats`, read here when not given.
    """
    if units is None:
        units = formats()
    seconds = max(seconds, 0.0)
    if seconds < 1:
        return SafeString(units["ms"] % {"ms": int(seconds * 1000)})
    if seconds < 60:
        if seconds < 10 and not whole:
            return SafeString(units["tenths"] % {"s": seconds})
        return SafeString(units["s"] % {"s": int(seconds)})
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        if whole and not secs:
            return SafeString(units["min"] % {"min": minutes})
        return SafeString(units["min_s"] % {"min": minutes, "s": secs})
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        if whole and not minutes:
            return SafeString(units["h"] % {"h": hours})
        return SafeString(units["h_min"] % {"h": hours, "min": minutes})
    days, hours = divmod(hours, 24)
    return SafeString(units["d_h"] % {"d": days, "h": hours})
