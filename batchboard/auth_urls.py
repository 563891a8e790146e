"""
batchboard's sign-in and sign-out pages, for a host site that has none.

``path("accounts/", include("batchboard.auth_urls"))`` serves them where
Django's default ``LOGIN_URL`` (``/accounts/login/``) sends visitors; under
another prefix, set ``LOGIN_URL = "login"``. The names are the plain
``login`` and ``logout`` Django's settings and batchboard's header look for.
"""

from __future__ import annotations

from django.urls import path

from batchboard.signin import SignInView, SignOutView

urlpatterns = [
    # Signed in without a page to return to: batchboard's overview, rather
    # than Django's default LOGIN_REDIRECT_URL, which a host rarely serves.
    path("login/", SignInView.as_view(next_page="batchboard:index"), name="login"),
    # POST only (Django's LogoutView): a link cannot sign anyone out.
    path("logout/", SignOutView.as_view(), name="logout"),
]
