"""
The standalone site's URLs: the admin, a sign-in page, health probes and
the dashboard.

The sign-in page admits every active user; the admin's own login admits staff
only, and batchboard's readers and operators need not be staff. Both are
throttled (:mod:`batchboard.site.throttle`).

The probes belong to the site, not to ``batchboard.urls``: a site that
embeds batchboard has its own probes and decides what readiness means.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from batchboard.site import health, throttle

admin.site.login_form = throttle.ThrottledAdminAuthenticationForm

urlpatterns = [
    path("healthz", health.liveness, name="healthz"),
    path("readyz", health.readiness, name="readyz"),
    path("admin/", admin.site.urls),
    path("login/", throttle.ThrottledLoginView.as_view(), name="login"),
    # Django's LogoutView accepts POST only: a link cannot sign anyone out.
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("batchboard.urls")),
]
