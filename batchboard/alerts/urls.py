"""The alerts' URLs, included into ``batchboard.urls`` (``batchboard:`` names)."""

from __future__ import annotations

from django.urls import path

from batchboard.alerts import views

urlpatterns = [
    path("alerts/", views.rules, name="alert_rules"),
    path("alerts/channels/<int:channel_id>/", views.channel_log, name="alert_channel"),
    path("alerts/overdue/", views.overdue, name="overdue"),
    path(
        "retention/policies/",
        views.retention_policies,
        name="retention_policies",
    ),
    path(
        "retention/policies/<int:policy_id>/",
        views.retention_policy,
        name="retention_policy",
    ),
    path("inbox/", views.inbox, name="inbox"),
    path("inbox/count/", views.inbox_count, name="inbox_count"),
]
