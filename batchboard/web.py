"""
What every batchboard view shares: sign-in, permissions and error pages.

Two decorators guard the views, both built on :func:`guarded`: :func:`reader`
for the explorer's pages (the view permissions of the models a page shows)
and :func:`action_view` for the console's operator actions (the action's
authorization class, :func:`batchboard.actions.permissions.may`).

The guard also declares how the view reads (:func:`reads`): its GET and
HEAD requests run in one bounded read transaction, on a replica when one
may serve them (a reader's pages) or on the primary (an action's dialogs).
:class:`batchboard.middleware.ReadYourWritesMiddleware` reads the
declaration; moving a view to another module changes nothing.

An anonymous visitor is sent to sign in. Everything else that stops a view
becomes one of the error pages ``batchboard/errors/<status>.html``, a whole
page for a plain request and a fragment for htmx: a refused permission
(403), bad input or a cursor that cannot continue (400, linking to the list
without the offending parameter), an id that names nothing (404) and a
failing database (503, logged by the error's class name only: the message
of a database error may quote row values, which must not reach a log).
"""

from __future__ import annotations

import abc
import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Final, Literal
from urllib.parse import urlencode

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db import DatabaseError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render
from django.urls import reverse
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

from batchboard import cursors
from batchboard.actions import permissions
from batchboard.personal import zones
from batchboard.vocabulary import ACTION_CLASSES, CONTROL_CHARACTERS, is_row_id

__all__ = [
    "BadInput",
    "ErrorPage",
    "has_control_characters",
    "NotFound",
    "RECORDS",
    "Reads",
    "action_view",
    "error_page",
    "first_page_url",
    "guarded",
    "known_id",
    "missing",
    "reader",
    "reads",
    "wants_fragment",
]

logger = logging.getLogger("batchboard.web")

#: A view: a page, or a download streamed (:mod:`batchboard.export`).
View = Callable[..., HttpResponseBase]


#: Where a guarded view's GET and HEAD requests read, in one bounded read
#: transaction: a replica when one may serve them, or the primary.
Reads = Literal["replica", "primary"]

#: The attribute a guard sets on its view (copied by ``functools.wraps``).
READS_ATTRIBUTE: Final = "batchboard_reads"


def reads(view: object) -> Reads | None:
    """Return how ``view`` reads, as its guard declared (``None``: unguarded)."""
    declared = getattr(view, READS_ATTRIBUTE, None)
    return declared if declared in ("replica", "primary") else None


def wants_fragment(request: HttpRequest) -> bool:
    """Return whether to answer with a fragment: htmx, but not a history restore."""
    htmx = getattr(request, "htmx", None)
    if not htmx:
        return False
    return not htmx.history_restore_request


def has_control_characters(request: HttpRequest, *values: object) -> bool:
    """Return whether the path, a query parameter or one of ``values`` holds one."""
    if CONTROL_CHARACTERS.search(request.path):
        return True
    for key, items in request.GET.lists():
        if CONTROL_CHARACTERS.search(key) or any(
            CONTROL_CHARACTERS.search(item) for item in items
        ):
            return True
    return any(CONTROL_CHARACTERS.search(str(value)) for value in values)


#: The longest address an anonymous visitor is sent back to after signing
#: in; a longer one (a query string of megabytes) returns to its page alone.
MAX_RETURN_PATH = 2048


def _current_path(htmx: HtmxDetails) -> str | None:
    """
    Return the path of the page an htmx request came from, if it can be read.

    ``HX-Current-URL`` is a header like any other: django-htmx splits it
    unguarded, and a malformed one (``http://[``) raises ValueError. It then
    names no page, and the request's own path stands in.
    """
    try:
        path = htmx.current_url_abs_path
    except ValueError:
        return None
    return path if path is None or len(path) <= MAX_RETURN_PATH else None


def _login_redirect(request: HttpRequest) -> HttpResponse:
    """
    Send an anonymous visitor to sign in, and back afterwards.

    An htmx request (a poll, a scrolled page, a dialog) whose session expired
    would swap the sign-in page into a table row: it gets ``HX-Redirect``
    instead, so the whole tab signs in and returns to the page it showed.
    """
    htmx = getattr(request, "htmx", None)
    back = request.get_full_path()
    if len(back) > MAX_RETURN_PATH:
        # Django refuses to redirect to a very long URL (and logs the
        # refusal with a traceback): come back to the page, unfiltered.
        back = request.path
    if htmx:
        login = redirect_to_login(_current_path(htmx) or back)
        return HttpResponseClientRedirect(login["Location"])
    return redirect_to_login(back)


# -- errors a view raises ----------------------------------------------------------


class ErrorPage(Exception):
    """Answer with an error page instead; ``title`` and ``message`` are shown."""

    status: ClassVar[int] = 400

    def __init__(self, title: str, message: str) -> None:
        super().__init__(message)
        self.title = title
        self.message = message

    def link(self, request: HttpRequest) -> str | None:
        """Return where the page's button leads, if anywhere."""
        return None


class BadInput(ErrorPage):
    """A request parameter is invalid; the page links to the list without it."""

    def __init__(self, title: str, message: str, param: str = "") -> None:
        super().__init__(title, message)
        self.param = param

    def link(self, request: HttpRequest) -> str | None:
        return first_page_url(request, (self.param,))


class NotFound(ErrorPage):
    """An id or name names nothing; ``what`` (already translated) says what."""

    status = 404

    def __init__(self, what: str | None = None) -> None:
        if what is None:
            message = _(
                "There is no such record. It may never have existed or may have "
                "been purged by retention."
            )
        else:
            message = _(
                "There is no %(what)s. It may never have existed or may have been "
                "purged by retention."
            ) % {"what": what}
        super().__init__(_("Not found"), message)

    def link(self, request: HttpRequest) -> str | None:
        return reverse("batchboard:index")


#: How the 404 page names a record of each kind that is not there.
RECORDS: dict[str, Promise] = {
    "instance": gettext_lazy("instance #%(id)s"),
    "execution": gettext_lazy("execution #%(id)s"),
    "step": gettext_lazy("step #%(id)s"),
    "partition": gettext_lazy("partition #%(id)s"),
}


def missing(kind: str, ident: int) -> NotFound:
    """Return the 404 of the ``kind`` record ``ident`` (a key of RECORDS)."""
    return NotFound(str(RECORDS[kind] % {"id": ident}))


def known_id(kind: str, ident: int) -> int:
    """
    Return ``ident`` if it can name a ``kind`` record, or raise its 404.

    An id from a URL beyond bigint (or below 1) names nothing: it is not
    found, as a purged record is, and never reaches the database.
    """
    if not is_row_id(ident):
        raise missing(kind, ident)
    return ident


def first_page_url(request: HttpRequest, drop: Sequence[str] = ()) -> str:
    """Return the current page without its cursor and the parameters ``drop``."""
    params = [
        (key, value)
        for key, value in request.GET.items()
        if key != "cursor" and key not in drop
    ]
    return request.path + (f"?{urlencode(params)}" if params else "")


def error_page(
    request: HttpRequest,
    status: int,
    title: str,
    message: str,
    link: str | None = None,
) -> HttpResponse:
    """Render ``batchboard/errors/<status>.html``, whole or as an htmx fragment."""
    fragment = wants_fragment(request)
    context: dict[str, Any] = {
        "status": status,
        "title": title,
        "message": message,
        "link": link,
        "fragment": fragment,
        "frame": (
            "batchboard/errors/fragment.html"
            if fragment
            else "batchboard/base_site.html"
        ),
    }
    if status == 503:
        # The database may be what failed: render without touching the
        # signed-in user, whose lookup could fail again.
        context["user"] = None
    return render(request, f"batchboard/errors/{status}.html", context, status=status)


# -- who may pass --------------------------------------------------------------------


class Gate(abc.ABC):
    """Who may use a view, and what the refused and the unlucky are told."""

    @abc.abstractmethod
    def allows(self, user: Any) -> bool:
        """Return whether ``user`` may use the view."""

    @abc.abstractmethod
    def refusal(self) -> tuple[str, str]:
        """Return the 403 page's title and message."""

    @abc.abstractmethod
    def unavailable(self) -> tuple[str, str]:
        """Return the 503 page's title and message."""


class ReadGate(Gate):
    """The view permissions of the models a page shows."""

    def __init__(self, needed: Sequence[str]) -> None:
        self.needed = tuple(needed)

    def allows(self, user: Any) -> bool:
        return bool(user.has_perms(self.needed))

    def refusal(self) -> tuple[str, str]:
        return _("Permission needed"), _(
            "Your account may not read these batch records. Ask an administrator "
            "for the view permissions of batchboard."
        )

    def unavailable(self) -> tuple[str, str]:
        return _("Batch metadata unavailable"), _(
            "The metadata database did not answer. The page will work again once "
            "the database is reachable; retry in a moment."
        )


class ActionGate(Gate):
    """
    The authorization class of one operator action (spec 4.1), and the view
    permissions of the page the action's dialog describes.
    """

    def __init__(self, action: str, needed: Sequence[str] = ()) -> None:
        self.action = action
        self.needed = tuple(needed)

    def allows(self, user: Any) -> bool:
        return permissions.may(user, self.action) and bool(user.has_perms(self.needed))

    def refusal(self) -> tuple[str, str]:
        return _("Not allowed"), _(
            "%(action)s needs the %(cls)s authorization class, which your account "
            "does not have. Nothing was changed."
        ) % {"action": self.action, "cls": ACTION_CLASSES[self.action]}

    def unavailable(self) -> tuple[str, str]:
        return _("Database unavailable"), _(
            "The metadata database did not answer. Nothing is known to have "
            "changed; try again in a moment."
        )


def _cursor_message(error: cursors.CursorError) -> str:
    if isinstance(error, cursors.CursorQueryMismatch):
        return _(
            "The continuation token belongs to a different list, filter or page size."
        )
    return _("The continuation token is damaged or not a batchboard/oxide-batch token.")


def guarded(gate: Gate, source: Reads = "primary") -> Callable[[View], View]:
    """
    Wrap a view with sign-in, ``gate`` and the error pages.

    ``source`` declares where its GET and HEAD requests read (see
    :func:`reads`). Responses vary on ``HX-Request``, so a cache never
    serves a fragment for a page or the other way round, and are
    ``private, no-store``: they show records (and error pages name what was
    asked for), which no shared cache and no browser cache may keep.
    """

    def decorator(view: View) -> View:
        @functools.wraps(view)
        @cache_control(private=True, no_store=True)
        @vary_on_headers("HX-Request")
        def wrapped(
            request: HttpRequest, *args: Any, **kwargs: Any
        ) -> HttpResponseBase:
            try:
                # Reading the user may reach the session and auth tables,
                # so it belongs inside the database-error guard too.
                if has_control_characters(request, *kwargs.values()):
                    # Before sign-in: the login redirect would carry them on.
                    return error_page(
                        request,
                        400,
                        _("Control characters in the address"),
                        _(
                            "No id, name, filter or continuation token holds a "
                            "control character. Check the link."
                        ),
                        reverse("batchboard:index"),
                    )
                if not request.user.is_authenticated:
                    return _login_redirect(request)
                if not gate.allows(request.user):
                    raise PermissionDenied
                # Times render in the user's zone (UTC unless they chose one).
                with zones.activate_for(request):
                    return view(request, *args, **kwargs)
            except PermissionDenied:
                return error_page(request, 403, *gate.refusal())
            except cursors.CursorError as error:
                return error_page(
                    request,
                    400,
                    _("This link cannot continue the list"),
                    _cursor_message(error),
                    first_page_url(request),
                )
            except Http404:
                # Http404's text is for developers; the page says its own.
                missing = NotFound()
                return error_page(
                    request, 404, missing.title, missing.message, missing.link(request)
                )
            except ErrorPage as error:
                return error_page(
                    request,
                    error.status,
                    error.title,
                    error.message,
                    error.link(request),
                )
            except DatabaseError as error:
                match = request.resolver_match
                logger.error(
                    "batchboard view %s failed: database error %s",
                    match.view_name if match else "?",
                    type(error).__name__,
                )
                # Retrying a read is safe; a refused POST is sent again from
                # the form it came from.
                retry = request.get_full_path() if request.method == "GET" else None
                return error_page(request, 503, *gate.unavailable(), retry)

        setattr(wrapped, READS_ATTRIBUTE, source)
        return wrapped

    return decorator


def reader(*needed: str) -> Callable[[View], View]:
    """
    Guard a page that shows records (GET and HEAD): the view permissions
    ``needed``. A replica may serve it.
    """
    guard = guarded(ReadGate(needed), source="replica")

    def decorator(view: View) -> View:
        return require_safe(guard(view))

    return decorator


def action_view(action: str, *needed: str) -> Callable[[View], View]:
    """
    Guard an operator action: the authorization class of ``action``, and the
    view permissions ``needed`` of the page its dialog shows records of.
    Its dialogs read the primary: an action's evidence is the primary's.
    """
    return guarded(ActionGate(action, needed), source="primary")
