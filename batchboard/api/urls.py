"""The JSON API's routes, included under ``api/v1/`` by :mod:`batchboard.urls`."""

from __future__ import annotations

from django.urls import path, re_path

from batchboard.api import schema, views

urlpatterns = [
    path("schema/", schema.openapi, name="api-schema"),
    path("jobs/", views.job_list, name="api-job-list"),
    path("jobs/<str:job_name>/", views.job_show, name="api-job-show"),
    path(
        "jobs/<str:job_name>/instances/", views.instance_list, name="api-instance-list"
    ),
    path("instances/<str:instance_id>/", views.instance_show, name="api-instance-show"),
    path(
        "instances/<str:instance_id>/executions/",
        views.instance_executions,
        name="api-execution-list",
    ),
    path("instances/<str:instance_id>/hold/", views.hold, name="api-hold"),
    path("instances/<str:instance_id>/release/", views.release, name="api-release"),
    path("executions/", views.recent, name="api-executions"),
    path("unresolved/", views.unresolved, name="api-unresolved"),
    path("executions/<str:execution_id>/", views.execution_show, name="api-execution"),
    path(
        "executions/<str:execution_id>/steps/",
        views.execution_steps,
        name="api-execution-steps",
    ),
    path(
        "executions/<str:execution_id>/history/",
        views.execution_history,
        name="api-execution-history",
    ),
    path(
        "executions/<str:execution_id>/recovery/",
        views.recovery_propose,
        name="api-recovery-propose",
    ),
    path("executions/<str:execution_id>/stop/", views.stop, name="api-stop"),
    path("executions/<str:execution_id>/abandon/", views.abandon, name="api-abandon"),
    path("executions/<str:execution_id>/recover/", views.recover, name="api-recover"),
    path("steps/<str:step_id>/", views.step_show, name="api-step"),
    path(
        "steps/<str:step_id>/partitions/",
        views.step_partitions,
        name="api-step-partitions",
    ),
    path("retention/plan/", views.purge_plan, name="api-purge-plan"),
    path("retention/apply/", views.purge_apply, name="api-purge-apply"),
    path("audit/", views.audit, name="api-audit"),
    path("bulk/", views.bulk_list, name="api-bulk-list"),
    path("bulk/plan/", views.bulk_plan, name="api-bulk-plan"),
    path("bulk/apply/", views.bulk_apply, name="api-bulk-apply"),
    # Anything else under the API's root: the root itself lists the
    # commands, any other path is an unknown command (both in the envelope).
    re_path(r"^.*$", views.unknown, name="api-index"),
]
