"""
Operator actions in the Django admin: stop and abandon executions, place and
release holds on instances.

Each action follows ``delete_selected``: the first POST renders a
confirmation page that names every object, the authorization class and what
will happen, asks for the reason (picked from the documented list) and fixes
one operation id per object; the second POST applies the confirmed objects
as a bulk operation, through the same service as the dashboard's bulk
actions (:func:`batchboard.actions.apply_bulk`, each object through its
single action), and shows the dashboard's bulk result page: what happened
to each, applied, rejected or stale, and why, with a link to its audit row.
An object that does not offer the action (:mod:`batchboard.actions.eligibility`)
is listed with the reason and left out of the confirmed form; the service
decides on the others as they are when it runs. Re-posting the confirmation
page replays rather than acting twice. What an
action will do is told in the dashboard's words
(:mod:`batchboard.console.consequences`).

:class:`OperatorActionsAdminMixin` supplies the ``has_<action>_permission``
methods the admin calls for ``@admin.action(permissions=[...])``; recovery
is not an admin action but a link to the dashboard's proposal
(:meth:`OperatorActionsAdminMixin.recovery_proposal_link`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from batchboard import actions, vocabulary
from batchboard.actions import eligibility, permissions
from batchboard.admin.readonly import EMPTY, changelist_url
from batchboard.console import forms
from batchboard.console.consequences import consequence
from batchboard.explorer import surveys
from batchboard.models import JobExecution, JobInstance

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

    #: An admin action: called with the model admin, the request and the rows.
    AdminAction = Callable[
        [admin.ModelAdmin[Any], HttpRequest, QuerySet[Any]], HttpResponse | None
    ]

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
        if obj.status not in vocabulary.UNRESOLVED:
            return EMPTY
        try:
            url = reverse("batchboard:recovery_proposal", args=[obj.pk])
        except NoReverseMatch:
            return EMPTY
        return format_html('<a href="{}">{}</a>', url, _("Recovery proposal"))


def _answer(obj: Model, action: str) -> eligibility.Eligibility:
    """Return whether ``obj`` (an execution or an instance) offers ``action``."""
    if isinstance(obj, JobExecution):
        return eligibility.of_execution(obj)[action]
    assert isinstance(obj, JobInstance)
    return eligibility.of_instance(obj)[action]


def _templates(opts: Any, name: str) -> list[str]:
    return [
        f"admin/{opts.app_label}/{opts.model_name}/{name}",
        f"admin/{opts.app_label}/{name}",
    ]


def _run_action(
    modeladmin: admin.ModelAdmin[Any],
    request: HttpRequest,
    queryset: QuerySet[Any],
    action: str,
    function_name: str,
) -> HttpResponse | None:
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
    form_class = forms.ACTION_FORMS[action]
    base_context = {
        **modeladmin.admin_site.each_context(request),
        "opts": opts,
        "action": action,
        "action_name": function_name,
        "auth_class": vocabulary.ACTION_CLASSES[action],
        "consequence": consequence(action),
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "changelist_url": changelist_url(modeladmin),
    }
    if request.POST.get("post") != "yes":
        listed = [
            {
                "obj": obj,
                "version": getattr(obj, "version", None),
                "eligibility": _answer(obj, action),
            }
            for obj in objects
        ]
        offered = [item for item in listed if item["eligibility"].offered]
        picked = [item["obj"].pk for item in offered]
        plan = actions.plan_bulk(
            user=request.user,
            action=action,
            survey=surveys.selection("execution", picked)
            if modeladmin.model is JobExecution
            else surveys.selection("instance", picked),
        )
        context = {
            **base_context,
            "title": _("Confirm %(action)s") % {"action": action.lower()},
            "objects": listed,
            "offered": offered,
            "plan": plan,
            "operation_id": actions.bulk.new_bulk_id(),
            "reasons": form_class.reasons(),
        }
        return TemplateResponse(
            request, _templates(opts, "action_confirmation.html"), context
        )
    return _apply(modeladmin, request, action)


def _apply(
    modeladmin: admin.ModelAdmin[Any], request: HttpRequest, action: str
) -> HttpResponse | None:
    """
    Apply the confirmed plan through the bulk service, then show its result.

    The confirmation page fixed the plan (its items, versions and digest)
    and the bulk id; the service checks the digest, applies what it can in
    one chunk and the dashboard's bulk page shows the rest applying and
    every item's outcome. Re-posting the page resumes the same bulk id, so
    nothing is applied twice.
    """
    form = forms.BulkApplyForm(
        {
            "action": action,
            "filters": request.POST.get("bulk_filters", ""),
            "items": request.POST.get("bulk_items", ""),
            "digest": request.POST.get("bulk_digest", ""),
            "bulk_id": request.POST.get("operation_id", ""),
            "reason_code": request.POST.get("reason_code", ""),
        }
    )
    try:
        result = form.perform(
            request.user, limit=None, seconds=actions.bulk.CHUNK_SECONDS
        )
    except actions.InvalidRequest as error:
        modeladmin.message_user(
            request,
            _("%(action)s was not applied: %(why)s") % {"action": action, "why": error},
            messages.ERROR,
        )
        return None
    modeladmin.message_user(
        request,
        _("%(action)s: %(applied)s applied, %(replayed)s replayed so far.")
        % {
            "action": action,
            "applied": result.counts[actions.APPLIED],
            "replayed": result.counts[actions.REPLAYED],
        },
        messages.INFO,
    )
    url = reverse("batchboard:bulk_operation", args=[result.bulk_id])
    return HttpResponseRedirect(url, status=303)


def _operator_action(
    action: str, name: str, permission: str, description: StrOrPromise
) -> AdminAction:
    """
    Return the admin action ``name``, which runs ``action`` on the rows.

    ``permission`` names the ``has_<permission>_permission`` method of
    :class:`OperatorActionsAdminMixin` that offers it.
    """

    @admin.action(permissions=[permission], description=description)
    def run(
        modeladmin: admin.ModelAdmin[Any],
        request: HttpRequest,
        queryset: QuerySet[Any],
    ) -> HttpResponse | None:
        return _run_action(modeladmin, request, queryset, action, name)

    # The admin names an action after its function.
    run.__name__ = run.__qualname__ = name
    return run


stop_executions = _operator_action(
    vocabulary.STOP, "stop_executions", "stop", gettext_lazy("Stop selected executions")
)
abandon_executions = _operator_action(
    vocabulary.ABANDON,
    "abandon_executions",
    "abandon",
    gettext_lazy("Abandon selected executions"),
)
place_holds = _operator_action(
    vocabulary.HOLD,
    "place_holds",
    "hold",
    gettext_lazy("Place a hold on selected instances"),
)
release_holds = _operator_action(
    vocabulary.RELEASE_HOLD,
    "release_holds",
    "release",
    gettext_lazy("Release holds on selected instances"),
)
