"""The explorer's URLs with the actions included, as ``batchboard.urls`` will."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from batchboard import urls as batchboard_urls

urlpatterns = [
    path("admin/", admin.site.urls),
    # The sign-in page LOGIN_URL names, where anonymous requests are sent.
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path(
        "",
        include((batchboard_urls.urlpatterns, "batchboard")),
    ),
]
