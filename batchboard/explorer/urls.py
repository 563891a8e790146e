"""
The explorer's URLs, included into ``batchboard.urls``.

Job names are arbitrary text of up to 128 bytes, ``/`` included;
:class:`JobNameConverter` reads one from the rest of the job page's path.
"""

from __future__ import annotations

from django.urls import path, register_converter

from batchboard.cursors import MAX_NAME_BYTES
from batchboard.explorer import exports, views
from batchboard.explorer.links import job_name_from_path, job_segment


class JobNameConverter:
    """
    Read a job name (any text up to 128 bytes) from the job page's path.

    The server has decoded the path before it is matched, so ``a%2Fb`` and
    ``a/b`` both arrive as ``a/b``: the name may span several segments.
    Pages link with ``/`` percent-encoded (:class:`.links.Links`), one
    segment, so a name holding ``/../`` survives the browser's path
    normalisation. ``to_url`` serves ``reverse()``, which keeps ``/`` as is.
    """

    # Any character, newline and other control characters included, so that
    # the page's guard refuses such a name with a 400 rather than no route
    # answering with a 404.
    regex = r"[\s\S]+"

    def to_python(self, value: str) -> str:
        name = job_name_from_path(value)
        if len(name.encode("utf-8")) > MAX_NAME_BYTES:
            raise ValueError("not a job name")
        return name

    def to_url(self, value: str) -> str:
        return job_segment(value)


register_converter(JobNameConverter, "batchboard_job_name")


# The pages of one record, by its id.
EXECUTION = "executions/<int:execution_id>/"
STEP = "steps/<int:step_id>/"

urlpatterns = [
    path("", views.index, name="index"),
    path("attention/", views.attention, name="attention"),
    path("jobs/<batchboard_job_name:job_name>/", views.job, name="job"),
    path(
        "history/<batchboard_job_name:job_name>/",
        views.job_history,
        name="job_history",
    ),
    path("instances/<int:instance_id>/", views.instance, name="instance"),
    path("executions/", views.executions, name="executions"),
    path("executions/export/", exports.executions_export, name="executions_export"),
    path(EXECUTION, views.execution, name="execution"),
    path(f"{EXECUTION}live/", views.execution_live, name="execution_live"),
    path(f"{EXECUTION}row/", views.execution_row, name="execution_row"),
    path(f"{EXECUTION}flow/", views.flow_decisions, name="flow_decisions"),
    path(f"{EXECUTION}recovery/", views.recovery_decisions, name="recovery_decisions"),
    path(f"{EXECUTION}requests/", views.operator_requests, name="operator_requests"),
    path(STEP, views.step, name="step"),
    path(f"{STEP}live/", views.step_live, name="step_live"),
    path(f"{STEP}row/", views.step_row, name="step_row"),
    path(
        "partitions/<int:partition_id>/row/", views.partition_row, name="partition_row"
    ),
    path("unresolved/", views.unresolved, name="unresolved"),
    path("jump/", views.jump, name="jump"),
    path("job-names/", views.job_names, name="job_names"),
    path("audit/", views.audit, name="audit"),
    path("compare/", views.compare_selected, name="compare_selected"),
    path("compare/<int:a>/<int:b>/", views.compare, name="compare"),
    path("instances/search/", views.parameter_search, name="parameter_search"),
    path("audit/export/", exports.audit_export, name="audit_export"),
]
