"""
The operator actions' URLs, included into ``batchboard.urls``.

No ``app_name`` here: ``batchboard.urls`` gives them the ``batchboard``
namespace, so names reverse as ``batchboard:action_stop`` and so on.
"""

from __future__ import annotations

from django.urls import path

from batchboard.console import bulk, views

urlpatterns = [
    path("executions/<int:execution_id>/stop/", views.stop, name="action_stop"),
    path(
        "executions/<int:execution_id>/abandon/", views.abandon, name="action_abandon"
    ),
    path(
        "executions/<int:execution_id>/recovery-proposal/",
        views.recovery_proposal,
        name="recovery_proposal",
    ),
    path(
        "executions/<int:execution_id>/recover/", views.recover, name="action_recover"
    ),
    path("instances/<int:instance_id>/hold/", views.hold, name="action_hold"),
    path("instances/<int:instance_id>/release/", views.release, name="action_release"),
    path("retention/purge/", views.purge_plan, name="purge_plan"),
    path("retention/purge/apply/", views.purge_apply, name="purge_apply"),
    path("retention/purge/export/", views.purge_export, name="purge_export"),
    path("bulk/apply/", bulk.bulk_apply, name="bulk_apply"),
    path("bulk/plan/<str:source>/<str:action>/", bulk.bulk_plan, name="bulk_plan"),
    path(
        "bulk/plan/<str:source>/<str:action>/export/",
        bulk.bulk_plan_export,
        name="bulk_plan_export",
    ),
    path("bulk/operations/<str:bulk_id>/", bulk.bulk_operation, name="bulk_operation"),
    path(
        "bulk/operations/<str:bulk_id>/continue/",
        bulk.bulk_continue,
        name="bulk_continue",
    ),
]
