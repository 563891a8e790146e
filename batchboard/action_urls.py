"""
The operator actions' URLs, included into ``batchboard.urls``.

No ``app_name`` here: the including module's ``batchboard`` namespace
applies, so names reverse as ``batchboard:action_stop`` and so on.
"""

from __future__ import annotations

from django.urls import path

from batchboard import action_views

urlpatterns = [
    path(
        "executions/<int:execution_id>/stop/",
        action_views.stop,
        name="action_stop",
    ),
    path(
        "executions/<int:execution_id>/abandon/",
        action_views.abandon,
        name="action_abandon",
    ),
    path(
        "executions/<int:execution_id>/recovery-proposal/",
        action_views.recovery_proposal,
        name="recovery_proposal",
    ),
    path(
        "executions/<int:execution_id>/recover/",
        action_views.recover,
        name="action_recover",
    ),
    path("instances/<int:instance_id>/hold/", action_views.hold, name="action_hold"),
    path(
        "instances/<int:instance_id>/release/",
        action_views.release,
        name="action_release",
    ),
    path("retention/purge/", action_views.purge_plan, name="purge_plan"),
    path("retention/purge/apply/", action_views.purge_apply, name="purge_apply"),
]
