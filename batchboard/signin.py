"""
batchboard's sign-in and sign-out pages, for the standalone site and any host.

A host site without a sign-in page of its own includes
:mod:`batchboard.auth_urls` (``path("accounts/", include(...))``, where
Django's default ``LOGIN_URL`` points); the standalone site serves the same
views at ``/login/`` and ``/logout/`` with its throttle. Both pages extend
``batchboard/base_site.html``, so a site's branding dresses them too.

Signing out clears what the browser kept of the site (``Clear-Site-Data``):
htmx's history snapshots in ``sessionStorage`` and anything else a page
stored, so the next person at the browser finds no record there. The
signed-out page also removes htmx's keys itself, for a browser that ignores
the header (a plain-HTTP origin).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.views import LoginView, LogoutView
from django.http import HttpRequest, HttpResponse

__all__ = ["CLEAR_SITE_DATA", "SignInView", "SignOutView"]

#: Cookies stay: Django's sign-out already ended the session, and clearing
#: them would sign the browser out of a host site's other applications.
CLEAR_SITE_DATA = '"cache", "storage"'


class SignInView(LoginView):
    """Sign any active user in, staff or not; pages check permissions."""

    template_name = "batchboard/registration/sign_in.html"


class SignOutView(LogoutView):
    """Sign out (POST only), clear the browser's copy of the site, say so."""

    template_name = "batchboard/registration/signed_out.html"

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = super().post(request, *args, **kwargs)
        response["Clear-Site-Data"] = CLEAR_SITE_DATA
        return response
