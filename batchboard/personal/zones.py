"""
The time zone a user reads times in: UTC (the default), the browser's, or a
named IANA zone.

Times always keep their UTC value in ``datetime=`` and ``title=``; only
their text follows the choice. A named zone is applied on the server, by
:func:`batchboard.web.guarded` activating it for the request; the
browser's zone is applied by ``batchboard.js``, which rewrites each
``<time>``'s text from its ``datetime`` on load and after every swap.

The choice is read once per session (the session keeps it) and again only
when the user changes it, so a page pays no statement for it.
"""

from __future__ import annotations

import functools
import zoneinfo
from typing import Any, Final

from django.db import DatabaseError
from django.http import HttpRequest
from django.utils import timezone

from batchboard import conf

#: The default, and the zone every stored and machine-readable time is in.
UTC: Final = "UTC"
#: Times are shown in the zone the browser reports.
BROWSER: Final = "browser"

#: The session key holding the user's choice.
SESSION_KEY: Final = "batchboard_time_zone"
#: The request attribute holding the choice once read.
REQUEST_ATTRIBUTE: Final = "batchboard_time_zone"


@functools.cache
def named_zones() -> tuple[str, ...]:
    """Return the IANA zone names this system knows, sorted."""
    return tuple(sorted(zoneinfo.available_timezones()))


def is_choice(value: str) -> bool:
    """Return whether ``value`` is a valid choice: UTC, browser or a known zone."""
    return value in (UTC, BROWSER) or value in named_zones()


def stored(user_id: int) -> str:
    """Return the choice kept for user ``user_id``; UTC if none (or no longer valid)."""
    from batchboard.personal.models import UserPreference

    kept = (
        UserPreference.objects.using(conf.state_alias())
        .filter(user_id=user_id)
        .values_list("time_zone", flat=True)
        .first()
    )
    return kept if kept and is_choice(kept) else UTC


def store(request: HttpRequest, choice: str) -> None:
    """Keep ``choice`` for the signed-in user, and in their session."""
    from batchboard.personal.models import UserPreference

    UserPreference.objects.using(conf.state_alias()).update_or_create(
        user_id=request.user.pk or 0, defaults={"time_zone": choice}
    )
    request.session[SESSION_KEY] = choice
    setattr(request, REQUEST_ATTRIBUTE, choice)


def choice(request: HttpRequest) -> str:
    """Return the signed-in user's choice, read from the session when it holds it."""
    known = getattr(request, REQUEST_ATTRIBUTE, None)
    if isinstance(known, str):
        return known
    session: Any = getattr(request, "session", None)
    chosen = session.get(SESSION_KEY) if session is not None else None
    if not isinstance(chosen, str) or not is_choice(chosen):
        # A user with no row (a service, say) has no stored choice to read.
        pk = getattr(request.user, "pk", None)
        chosen = UTC if pk is None else stored(pk)
        if session is not None:
            session[SESSION_KEY] = chosen
    setattr(request, REQUEST_ATTRIBUTE, chosen)
    return chosen


def server_zone(chosen: str) -> zoneinfo.ZoneInfo:
    """
    Return the zone the server renders text in for ``chosen``.

    The browser's zone is rendered as UTC first, and rewritten in the browser.
    UTC is named rather than left to ``settings.TIME_ZONE``, which a site may
    set to anything.
    """
    return zoneinfo.ZoneInfo(UTC if chosen in (UTC, BROWSER) else chosen)


def activate_for(request: HttpRequest) -> timezone.override:
    """Return a context manager that renders the request's times in its zone."""
    return timezone.override(server_zone(choice(request)))


def remember_on_sign_in(request: HttpRequest | None, user: Any) -> None:
    """Put the user's choice into the new session, so pages need not read it."""
    if request is None or getattr(request, "session", None) is None:
        return
    try:
        chosen = stored(user.pk or 0)
    except DatabaseError:
        # The first page reads it again (choice()).
        return
    request.session[SESSION_KEY] = chosen
