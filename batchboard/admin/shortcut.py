"""
The admin's "view on site" shortcut for batchboard's rows, without payloads.

Django's shortcut (``<admin>/r/<content type>/<id>/``, open to every staff
user) loads the whole row, payloads and parameter values included, before
it looks for an address. :func:`view_on_site` answers that address for
batchboard's models instead: it reads the row without the columns its admin
defers and asks the admin for the dashboard page (an id the row holds), so
no payload is ever read. Rows of other apps go on to Django's own shortcut.

A site routes the address to it ahead of its admin's URLs (the standalone
site does; ``docs/embedding.md`` gives the line for a host site).
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.contenttypes.models import ContentType
from django.contrib.contenttypes.views import shortcut
from django.db.models import Model
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect

from batchboard.routers import APP_LABEL
from batchboard.vocabulary import parse_whole_number


def view_on_site(
    request: HttpRequest, content_type_id: int, object_id: str
) -> HttpResponse:
    """Redirect to the dashboard page of a batchboard row, reading no payload."""
    content_type = ContentType.objects.filter(pk=content_type_id).first()
    model: type[Model] | None = content_type.model_class() if content_type else None
    if model is None or model._meta.app_label != APP_LABEL:
        return shortcut(request, content_type_id, object_id)
    model_admin = admin.site._registry.get(model)
    # Composite and boolean keys name no page; every other key is a bigint.
    pk = parse_whole_number(object_id)
    if model_admin is None or pk is None or model._meta.pk.name != "id":
        raise Http404
    # Whether a row exists is itself something to be allowed to see.
    if not model_admin.has_view_permission(request):
        raise Http404
    deferred = [
        name for name in getattr(model_admin, "deferred", ()) if "__" not in name
    ]
    row = model._base_manager.defer(*deferred).filter(pk=pk).first()
    address = model_admin.get_view_on_site_url(row) if row is not None else None
    if address is None:
        raise Http404
    return HttpResponseRedirect(address)
