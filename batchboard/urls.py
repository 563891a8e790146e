from __future__ import annotations

from django.urls import path
from django.views.generic.base import RedirectView

app_name = "batchboard"

urlpatterns = [
    path(
        "",
        RedirectView.as_view(pattern_name="admin:app_list", permanent=False),
        {"app_label": "batchboard"},
        name="index",
    ),
]
