"""
The standalone site's URLs: the admin, a sign-in page and the dashboard.

The sign-in page admits every active user; the admin's own login admits staff
only, and batchboard's readers and operators need not be staff.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    # Django's LogoutView accepts POST only: a link cannot sign anyone out.
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("batchboard.urls")),
]
