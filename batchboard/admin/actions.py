"""
Operator actions in the Django admin: stop and abandon executions, place and
release holds on instances.

Each action follows ``delete_selected``: the first POST renders a
confirmation page that names every object, the authorization class and what
will happen, asks for the reason (picked from the documented list) and fixes
one operation id per object; the second POST calls the same service as the
dashboard, object by object, and renders what happened to each: applied,
replayed or rejected, and why, with a link to its audit row. Re-posting the
confirmation page replays rather than acting twice.

:class:`OperatorActionsAdminMixin` supplies the ``has_<action>_permission``
methods the admin calls for ``@admin.action(permissions=[...])``; recovery
is not an admin action but a link to the dashboard's proposal
(:meth:`OperatorActionsAdminMixin.recovery_proposal_link`).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from batchboard import actions, schema, vocabulary
from batchboard.actions import envelope, permissions
from batchboard.models import JobExecution, JobInstance

#: More objects than this in one admin action are refused: each is its own
#: transaction, and select-across on a history table must not run unbounded.
MAX_OBJECTS = 100


class OperatorActionsAdminMixin:
    """Permission checks of the operator actions, for a ``ModelAdmin``."""

    def has_stop_permission(self, request: HttpRequest) -> bool:
        return permissions.may(request.user, vocabulary.STOP)

    def has_abandon_permission(self, request: HttpRequest) -> bool:
        return permissions.may(request.user, vocabulary.ABANDON)

    def has_hold_permission(self, request: HttpRequest) -> bool:
        return permissions.may(request.user, vocabulary.HOLD)

    def has_release_permission(self, request: HttpRequest) -> bool:
        return permissions.may(request.user, vocabulary.RELEASE_HOLD)

    @admin.display(description=gettext_lazy("recovery"))
    def recovery_proposal_link(self, obj: JobExecution) -> str:
        """Link an unresolved execution to the dashboard's recovery proposal."""
        if obj.status not in schema.UNRESOLVED:
            return "—"
        try:
            url = reverse("batchboard:recovery_proposal", args=[obj.pk])
        except NoReverseMatch:
            return "—"
        return format_html('<a href="{}">{}</a>', url, _("Recovery proposal"))


_CONSEQUENCES = {
    vocabulary.STOP: gettext_lazy(
        "A stop request is recorded on each running execution; its owning "
        "process moves it to STOPPING. Stopping or finished executions are "
        "left as they are."
    ),
    vocabulary.ABANDON: gettext_lazy(
        "Each STOPPED or FAILED execution becomes ABANDONED, which is final: "
        "its instance can never be restarted again."
    ),
    vocabulary.HOLD: gettext_lazy(
        "Purges skip each held instance and its executions until released."
    ),
    vocabulary.RELEASE_HOLD: gettext_lazy(
        "Purges may delete each instance's history again once it is old enough."
    ),
}


def _templates(opts: Any, name: str) -> list[str]:
    return [
        f"admin/{opts.app_label}/{opts.model_name}/{name}",
        f"admin/{opts.app_label}/{name}",
    ]


def _audit_url(result: actions.ActionResult) -> str | None:
    try:
        return reverse(
            f"admin:batchboard_{result.audit_model}_change", args=[result.audit_id]
        )
    except NoReverseMatch:
        return None


def _run_action(
    modeladmin: admin.ModelAdmin[Any],
    request: HttpRequest,
    queryset: QuerySet[Any],
    action: str,
    function_name: str,
) -> TemplateResponse | None:
    opts = modeladmin.model._meta
    objects = list(queryset.order_by("pk")[: MAX_OBJECTS + 1])
    if len(objects) > MAX_OBJECTS:
        modeladmin.message_user(
            request,
            _("Select at most %(max)s objects for one operator action.")
            % {"max": MAX_OBJECTS},
            messages.ERROR,
        )
        return None
    base_context = {
        **modeladmin.admin_site.each_context(request),
        "opts": opts,
        "action": action,
        "action_name": function_name,
        "auth_class": vocabulary.ACTION_CLASSES[action],
        "consequence": _CONSEQUENCES[action],
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
    }
    if request.POST.get("post") != "yes":
        context = {
            **base_context,
            "title": _("Confirm %(action)s") % {"action": action.lower()},
            "objects": [
                {"obj": obj, "version": getattr(obj, "version", None)}
                for obj in objects
            ],
            "operation_id": envelope.new_operation_id(),
            "reasons": []
            if action == vocabulary.STOP
            else vocabulary.reasons_for(action),
        }
        return TemplateResponse(
            request, _templates(opts, "action_confirmation.html"), context
        )
    base = request.POST.get("operation_id", "")
    rows = []
    for obj in objects:
        rows.append(_apply_one(request, action, obj, base))
    applied = sum(1 for row in rows if row["outcome"] == actions.APPLIED)
    modeladmin.message_user(
        request,
        _("%(action)s: %(applied)s of %(total)s applied; see each result below.")
        % {"action": action, "applied": applied, "total": len(rows)},
        messages.INFO,
    )
    context = {
        **base_context,
        "title": _("Results of %(action)s") % {"action": action.lower()},
        "rows": rows,
        "changelist_url": reverse(
            f"admin:{opts.app_label}_{opts.model_name}_changelist"
        ),
    }
    return TemplateResponse(request, _templates(opts, "action_results.html"), context)


def _apply_one(
    request: HttpRequest, action: str, obj: Any, base: str
) -> dict[str, Any]:
    """Call the service for one object and describe its outcome."""
    # One operation id per object, derived from the id fixed on the
    # confirmation page: a re-posted page replays object by object.
    operation_id = f"{base}:{obj.pk}"
    reason = request.POST.get("reason_code", "")
    try:
        if action == vocabulary.STOP:
            result = actions.stop_execution(
                user=request.user,
                execution_id=obj.pk,
                expected_version=request.POST.get(f"version_{obj.pk}"),
                operation_id=operation_id,
            )
        elif action == vocabulary.ABANDON:
            result = actions.abandon_execution(
                user=request.user,
                execution_id=obj.pk,
                expected_version=request.POST.get(f"version_{obj.pk}"),
                reason_code=reason,
                operation_id=operation_id,
            )
        elif action == vocabulary.HOLD:
            result = actions.place_hold(
                user=request.user,
                instance_id=obj.pk,
                reason_code=reason,
                operation_id=operation_id,
            )
        else:
            result = actions.release_hold(
                user=request.user,
                instance_id=obj.pk,
                reason_code=reason,
                operation_id=operation_id,
            )
    except actions.ActionError as error:
        return {
            "object": obj,
            "outcome": _("NOT DONE"),
            "code": error.code,
            "why": error.message,
            "audit_url": None,
            "audit_id": None,
        }
    return {
        "object": obj,
        "outcome": result.outcome,
        "code": result.rejection_code or "",
        "why": result.explanation(),
        "audit_url": _audit_url(result),
        "audit_id": result.audit_id,
    }


@admin.action(
    permissions=["stop"], description=gettext_lazy("Stop selected executions")
)
def stop_executions(
    modeladmin: admin.ModelAdmin[Any],
    request: HttpRequest,
    queryset: QuerySet[JobExecution],
) -> TemplateResponse | None:
    return _run_action(
        modeladmin, request, queryset, vocabulary.STOP, "stop_executions"
    )


@admin.action(
    permissions=["abandon"], description=gettext_lazy("Abandon selected executions")
)
def abandon_executions(
    modeladmin: admin.ModelAdmin[Any],
    request: HttpRequest,
    queryset: QuerySet[JobExecution],
) -> TemplateResponse | None:
    return _run_action(
        modeladmin, request, queryset, vocabulary.ABANDON, "abandon_executions"
    )


@admin.action(
    permissions=["hold"], description=gettext_lazy("Place a hold on selected instances")
)
def place_holds(
    modeladmin: admin.ModelAdmin[Any],
    request: HttpRequest,
    queryset: QuerySet[JobInstance],
) -> TemplateResponse | None:
    return _run_action(modeladmin, request, queryset, vocabulary.HOLD, "place_holds")


@admin.action(
    permissions=["release"],
    description=gettext_lazy("Release holds on selected instances"),
)
def release_holds(
    modeladmin: admin.ModelAdmin[Any],
    request: HttpRequest,
    queryset: QuerySet[JobInstance],
) -> TemplateResponse | None:
    return _run_action(
        modeladmin, request, queryset, vocabulary.RELEASE_HOLD, "release_holds"
    )
