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

from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from batchboard.admin.shortcut import view_on_site
from batchboard.signin import SignOutView
from batchboard.site import health, throttle
from batchboard.web import error_page

admin.site.site_header = gettext_lazy("batchboard administration")
admin.site.site_title = gettext_lazy("batchboard admin")
admin.site.index_title = gettext_lazy("Batch metadata")


def bad_request(request: HttpRequest, exception: Any = None) -> HttpResponse:
    """Django's 400 (a malformed request), on batchboard's error page."""
    return error_page(
        request, 400, _("Bad request"), _("The request could not be understood.")
    )


def permission_denied(request: HttpRequest, exception: Any = None) -> HttpResponse:
    """Django's 403 (for example a form sent without its CSRF token)."""
    return error_page(
        request,
        403,
        _("Not allowed"),
        _("You may not open this page, or the form expired: reload and try again."),
        "/",
    )


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """The CSRF check's refusal (``CSRF_FAILURE_VIEW``): the same 403 page."""
    return permission_denied(request)


def page_not_found(request: HttpRequest, exception: Any = None) -> HttpResponse:
    """Django's 404 (an address nothing answers), on batchboard's error page."""
    return error_page(
        request,
        404,
        _("Page not found"),
        _("Nothing answers at this address."),
        "/",
    )


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
