from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    # batchboard's sign-in and sign-out, where Django's LOGIN_URL points.
    path("accounts/", include("batchboard.auth_urls")),
    path("ops/batch/", include("batchboard.urls")),
]
