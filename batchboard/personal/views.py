"""
Saved views and the time-zone page.

A view is visible to its owner and, when shared, to the members of its
group; only its owner renames, shares, makes default or deletes it. Each
needs only the Read class: anyone who may read the explorer. Opening a view
redirects to its list; the list reads its filters as from any link.
"""

from __future__ import annotations

from typing import Any, Final

from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import (
    require_http_methods,
    require_POST,
    require_safe,
)

from batchboard import conf
from batchboard.actions.permissions import CLASS_PERMISSIONS
from batchboard.console.forms import first_error
from batchboard.explorer.inputs import (
    Continuation,
    ExplorerForm,
    WholeNumberField,
    read,
)
from batchboard.personal import lists, zones
from batchboard.personal.forms import EditViewForm, SaveViewForm, TimeZoneForm
from batchboard.personal.models import SavedView
from batchboard.vocabulary import MAX_BIGINT, READ
from batchboard.web import BadInput, ErrorPage, NotFound, ReadGate, guarded

#: How many views the navigation's menu lists, by name; the rest are on the
#: views page.
MENU_VIEWS: Final = 20

_READ = ReadGate(CLASS_PERMISSIONS[READ])


class Refused(ErrorPage):
    """Someone other than a view's owner tried to change it."""

    status = 403


def _views() -> QuerySet[SavedView]:
    return SavedView.objects.using(conf.state_alias())


def _groups(request: HttpRequest) -> dict[int, str]:
    """Return the signed-in user's groups, by id (a user is in a few)."""
    return dict(request.user.groups.values_list("id", "name"))


def visible(request: HttpRequest, group_ids: Any = None) -> QuerySet[SavedView]:
    """Return the views the signed-in user may open: theirs and their groups'."""
    groups = list(_groups(request)) if group_ids is None else list(group_ids)
    return _views().filter(Q(owner_id=request.user.pk or 0) | Q(group_id__in=groups))


def _view_or_404(request: HttpRequest, view_id: int) -> SavedView:
    found = visible(request).filter(pk=view_id).first()
    if found is None:
        raise NotFound(_("saved view #%(id)s") % {"id": view_id})
    return found


def _page_url(saved: int | None = None) -> str:
    url = reverse("batchboard:saved_views")
    return f"{url}?saved={saved}" if saved else url


class ViewPositionField(Continuation, WholeNumberField):
    """Where the views page continues: the id of the last view shown."""

    def __init__(self) -> None:
        super().__init__(1, MAX_BIGINT)


class ViewsPageForm(ExplorerForm):
    """The views page: where it continues, and the view just saved."""

    after = ViewPositionField()
    saved = WholeNumberField(1, MAX_BIGINT)

    titles = {
        "after": gettext_lazy("This link cannot continue the list"),
        "saved": gettext_lazy("Unknown view"),
    }


@guarded(_READ)
@require_safe
def saved_views(request: HttpRequest) -> HttpResponse:
    """List every view the user may open, newest first, a page at a time."""
    form = read(ViewsPageForm, request)
    size = int(conf.get_config()["PAGE_SIZE"])
    groups = _groups(request)
    rows = visible(request, groups)
    after = form.cleaned_data["after"]
    if after is not None:
        rows = rows.filter(pk__lt=after)
    found = list(rows.order_by("-id")[: size + 1])
    shown = found[:size]
    next_url = None
    if len(found) > size:
        next_url = f"{reverse('batchboard:saved_views')}?after={shown[-1].pk}"
    me = request.user.pk or 0
    return render(
        request,
        "batchboard/personal/views.html",
        {
            "views": [
                {
                    "view": view,
                    "mine": view.owner_id == me,
                    "group_name": groups.get(view.group_id or 0, ""),
                }
                for view in shown
            ],
            "groups": sorted(groups.items(), key=lambda item: item[1]),
            "saved": form.cleaned_data["saved"],
            "next_url": next_url,
        },
    )


@guarded(_READ)
@require_safe
def saved_views_menu(request: HttpRequest) -> HttpResponse:
    """The navigation's menu of views: the default first, then up to MENU_VIEWS."""
    me = request.user.pk or 0
    views = list(visible(request).order_by("name", "id")[: MENU_VIEWS + 1])
    default = _views().filter(owner_id=me, is_default=True).first()
    return render(
        request,
        "batchboard/personal/menu.html",
        {
            "views": views[:MENU_VIEWS],
            "more": len(views) > MENU_VIEWS,
            "default": default,
        },
    )


@guarded(_READ)
@require_POST
def save_view(request: HttpRequest) -> HttpResponse:
    """Save the list page the form came from under a name; then show the views."""
    form = SaveViewForm(request.POST)
    if not form.is_valid():
        raise BadInput(_("The view was not saved"), first_error(form))
    where: lists.ListAddress = form.cleaned_data["location"]
    now = timezone.now()
    try:
        with transaction.atomic(using=conf.state_alias()):
            view = _views().create(
                owner_id=request.user.pk or 0,
                name=form.cleaned_data["name"],
                url_name=where.url_name,
                arguments=where.arguments_json,
                query=where.query,
                created_at=now,
                updated_at=now,
            )
    except IntegrityError:
        raise BadInput(
            _("The view was not saved"),
            _("You already have a view of that name; choose another name."),
        ) from None
    return HttpResponseRedirect(_page_url(view.pk))


def _apply(view: SavedView, form: EditViewForm) -> str | None:
    """Change ``view`` as the form says; return where to go if it is deleted."""
    action = form.cleaned_data["action"]
    alias = conf.state_alias()
    if action == "delete":
        view.delete(using=alias)
        return _page_url()
    if action == "rename":
        view.name = form.cleaned_data["name"]
    elif action == "share":
        view.group_id = form.cleaned_data["group"]
    elif action == "default":
        _views().filter(owner_id=view.owner_id, is_default=True).exclude(
            pk=view.pk
        ).update(is_default=False)
        view.is_default = True
    else:
        view.is_default = False
    view.updated_at = timezone.now()
    view.save(using=alias)
    return None


@guarded(_READ)
@require_POST
def edit_view(request: HttpRequest, view_id: int) -> HttpResponse:
    """Rename, share, make default or delete a view; its owner only."""
    view = _view_or_404(request, view_id)
    if view.owner_id != (request.user.pk or 0):
        raise Refused(
            _("Not your view"),
            _("Only the person who saved a view may change or delete it."),
        )
    form = EditViewForm(request.POST, groups=_groups(request))
    if not form.is_valid():
        raise BadInput(_("The view was not changed"), first_error(form))
    try:
        with transaction.atomic(using=conf.state_alias()):
            gone = _apply(view, form)
    except IntegrityError:
        raise BadInput(
            _("The view was not changed"),
            _("You already have a view of that name; choose another name."),
        ) from None
    return HttpResponseRedirect(gone or _page_url())


@guarded(_READ)
@require_safe
def open_view(request: HttpRequest, view_id: int) -> HttpResponse:
    """Open a view: its list, under its filters."""
    view = _view_or_404(request, view_id)
    return HttpResponseRedirect(_address_of(view))


def _address_of(view: SavedView) -> str:
    try:
        return lists.ListAddress(view.url_name, view.path_arguments, view.query).url()
    except (lists.NotAList, ValueError):
        raise NotFound(_("list this view was saved of")) from None


@guarded(_READ)
@require_safe
def default_view(request: HttpRequest) -> HttpResponse:
    """Open the user's default view, or the views page when they have none."""
    view = _views().filter(owner_id=request.user.pk or 0, is_default=True).first()
    if view is None:
        return HttpResponseRedirect(_page_url())
    return HttpResponseRedirect(_address_of(view))


@guarded(_READ)
@require_http_methods(["GET", "HEAD", "POST"])
def time_zone(request: HttpRequest) -> HttpResponse:
    """Choose the time zone times are shown in."""
    if request.method == "POST":
        form = TimeZoneForm(request.POST)
        if not form.is_valid():
            raise BadInput(_("Time zone not changed"), first_error(form))
        zones.store(request, form.cleaned_data["time_zone"])
        return HttpResponseRedirect(reverse("batchboard:time_zone"))
    chosen = zones.choice(request)
    context: dict[str, Any] = {
        "chosen": chosen,
        "named": chosen not in (zones.UTC, zones.BROWSER),
        "zones": zones.named_zones(),
        "UTC": zones.UTC,
        "BROWSER": zones.BROWSER,
    }
    return render(request, "batchboard/personal/time_zone.html", context)
