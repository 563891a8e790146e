"""
The standalone site's URLs: the admin, a sign-in page, health probes and
the dashboard.

The sign-in page (batchboard's own, :mod:`batchboard.signin`) admits every
active user; the admin's own login admits staff only, and batchboard's
readers and operators need not be staff. Both are throttled
(:mod:`batchboard.site.throttle`).

The probes belong to the site, not to ``batchboard.urls``: a site that
embeds batchboard has its own probes and decides what readiness means.

The admin carries batchboard's name here, on the standalone site only: an
embedding site's admin keeps its own. Django's own 400, 403 and 404 answers
(a CSRF-less form, an unknown address) use batchboard's error pages, so every
error page looks the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy

from batchboard.admin.shortcut import view_on_site
from batchboard.signin import SignOutView
from batchboard.site import health, throttle
from batchboard.web import error_page

admin.site.site_header = gettext_lazy("batchboard administration")
admin.site.site_title = gettext_lazy("batchboard admin")
admin.site.index_title = gettext_lazy("Batch metadata")


#: Django's own refusals, each on batchboard's error page: the title, the
#: sentence and where to go from there.
_REFUSALS: dict[int, tuple[Promise, Promise, str | None]] = {
    # A malformed request.
    400: (
        gettext_lazy("Bad request"),
        gettext_lazy("The request could not be understood."),
        None,
    ),
    # For example a form sent without its CSRF token.
    403: (
        gettext_lazy("Not allowed"),
        gettext_lazy(
            "You may not open this page, or the form expired: reload and try again."
        ),
        "/",
    ),
    # An address nothing answers.
    404: (
        gettext_lazy("Page not found"),
        gettext_lazy("Nothing answers at this address."),
        "/",
    ),
}


def _refusal(status: int) -> Callable[..., HttpResponse]:
    title, message, link = _REFUSALS[status]

    def handler(request: HttpRequest, exception: Any = None) -> HttpResponse:
        return error_page(request, status, str(title), str(message), link)

    handler.__doc__ = f"Django's {status}, on batchboard's error page."
    return handler


bad_request = _refusal(400)
permission_denied = _refusal(403)
page_not_found = _refusal(404)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """The CSRF check's refusal (``CSRF_FAILURE_VIEW``): the same 403 page."""
    return permission_denied(request)


handler400 = bad_request
handler403 = permission_denied
handler404 = page_not_found


admin.site.login_form = throttle.ThrottledAdminAuthenticationForm

urlpatterns = [
    path("healthz", health.liveness, name="healthz"),
    path("readyz", health.readiness, name="readyz"),
    # Ahead of the admin: its own shortcut would load whole rows, payloads
    # included (batchboard.admin.shortcut).
    path(
        "admin/r/<int:content_type_id>/<path:object_id>/",
        admin.site.admin_view(view_on_site),
    ),
    path("admin/", admin.site.urls),
    path("login/", throttle.ThrottledLoginView.as_view(), name="login"),
    # POST only (Django's LogoutView): a link cannot sign anyone out.
    path("logout/", SignOutView.as_view(), name="logout"),
    path("", include("batchboard.urls")),
]
