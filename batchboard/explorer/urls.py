"""
The explorer's URLs, included into ``batchboard.urls``.

Job names are arbitrary text of up to 128 bytes; see
:class:`batchboard.explorer.views.JobNameConverter` for how they stay in one segment.
"""

from __future__ import annotations

from django.urls import path, register_converter

from batchboard.explorer import views

register_converter(views.JobNameConverter, "batchboard_job_name")

urlpatterns = [
    path("", views.index, name="index"),
    path("attention/", views.attention, name="attention"),
    path("jobs/<batchboard_job_name:job_name>/", views.job, name="job"),
    path("instances/<int:instance_id>/", views.instance, name="instance"),
    path("executions/", views.executions, name="executions"),
    path("executions/<int:execution_id>/", views.execution, name="execution"),
    path(
        "executions/<int:execution_id>/live/",
        views.execution_live,
        name="execution_live",
    ),
    path(
        "executions/<int:execution_id>/row/", views.execution_row, name="execution_row"
    ),
    path(
        "executions/<int:execution_id>/flow/",
        views.flow_decisions,
        name="flow_decisions",
    ),
    path(
        "executions/<int:execution_id>/recovery/",
        views.recovery_decisions,
        name="recovery_decisions",
    ),
    path(
        "executions/<int:execution_id>/requests/",
        views.operator_requests,
        name="operator_requests",
    ),
    path("steps/<int:step_id>/", views.step, name="step"),
    path("steps/<int:step_id>/live/", views.step_live, name="step_live"),
    path("steps/<int:step_id>/row/", views.step_row, name="step_row"),
    path(
        "partitions/<int:partition_id>/row/",
        views.partition_row,
        name="partition_row",
    ),
    path("unresolved/", views.unresolved, name="unresolved"),
    path("jump/", views.jump, name="jump"),
]
