"""
An admin site wired as ``batchboard.admin`` will be: the read-only admins
with the operator-action mixin and actions, under the ``admin`` namespace.
"""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from batchboard import action_urls
from batchboard import admin as batchboard_admin
from batchboard import urls as explorer_urls
from batchboard.admin_actions import (
    OperatorActionsAdminMixin,
    abandon_executions,
    place_holds,
    release_holds,
    stop_executions,
)
from batchboard.models import (
    JobExecution,
    JobInstance,
    OperatorRequest,
    RetentionAction,
)

site = admin.AdminSite(name="admin")


class ExecutionAdmin(OperatorActionsAdminMixin, batchboard_admin.JobExecutionAdmin):
    actions = [stop_executions, abandon_executions]


class InstanceAdmin(OperatorActionsAdminMixin, batchboard_admin.JobInstanceAdmin):
    actions = [place_holds, release_holds]


site.register(JobExecution, ExecutionAdmin)
site.register(JobInstance, InstanceAdmin)
site.register(OperatorRequest, batchboard_admin.OperatorRequestAdmin)
site.register(RetentionAction, batchboard_admin.RetentionActionAdmin)

urlpatterns = [
    path("admin/", site.urls),
    path(
        "",
        include((explorer_urls.urlpatterns + action_urls.urlpatterns, "batchboard")),
    ),
]
