"""
The read-only base of batchboard's admins and the columns they share.

:class:`ReadOnlyAdmin` shows a metadata table without any way to change it:
no add, change or delete permission, payload columns never loaded, the
keyset changelist of :mod:`batchboard.admin.changelist`, no facets and no
column sorting. The column factories render what several tables hold alike:
moments in UTC, digests as hex, payloads by their descriptor only.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

from django.contrib import admin
from django.contrib.admin import helpers
from django.contrib.admin.exceptions import (
    DisallowedModelAdminLookup,
    DisallowedModelAdminToField,
)
from django.contrib.admin.filters import FieldListFilter, SimpleListFilter
from django.contrib.admin.utils import flatten_fieldsets, get_fields_from_path
from django.contrib.admin.views.main import ChangeList
from django.db.models import BigAutoField, DateTimeField, Model, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext, gettext_lazy

from batchboard.admin.changelist import (
    KEYSET_VAR,
    KeysetChangeList,
    KeysetInvalid,
    LookaheadPaginator,
    SelectionInvalid,
    selected_ids,
)
from batchboard.explorer.presenters import exit_text, utc_text
from batchboard.vocabulary import (
    ACTIVE,
    CONTROL_CHARACTERS,
    MAX_BIGINT,
    parse_whole_number,
)

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

__all__ = [
    "ReadOnlyAdmin",
    "changelist_url",
    "descriptor_field",
    "hex_field",
    "utc_column",
]


logger = logging.getLogger("batchboard.admin")

#: Shown for an empty value, as the admin shows one.
EMPTY = "—"


def changelist_url(model_admin: admin.ModelAdmin[Any]) -> str:
    """Return the URL of ``model_admin``'s changelist on its own site."""
    opts = model_admin.model._meta
    return reverse(
        f"admin:{opts.app_label}_{opts.model_name}_changelist",
        current_app=model_admin.admin_site.name,
    )


def utc_column(name: str, description: StrOrPromise) -> Callable[[Any], str]:
    """
    Return a changelist column showing the timestamp ``name`` in UTC.

    The text is the dashboard's (``2026-11-30 08:00:00Z``), so both consoles
    show a moment alike; formatting it directly costs a fraction of the
    admin's localized date format, which on a 50-row page of executions was
    a quarter of the render time.
    """

    @admin.display(description=description)
    def column(obj: Any) -> str:
        moment = getattr(obj, name)
        if moment is None:
            return EMPTY
        moment = moment.astimezone(dt.UTC)
        # Digits and separators only: nothing here needs escaping.
        return SafeString(
            f'<time datetime="{moment.isoformat()}" title="{utc_text(moment)}">'
            f"{moment:%Y-%m-%d}\u00a0{moment:%H:%M:%S}Z</time>"
        )

    column.__name__ = name
    return column


def exit_column(description: StrOrPromise) -> Callable[[Any], str]:
    """
    Return a column showing a run's exit code as the dashboard does.

    "running" or a dash while the run is unresolved (the column then holds
    a placeholder), "no exit code recorded" for a finished execution that
    never reported one, else the code: presenters.exit_text's one rule.
    """

    @admin.display(description=description)
    def column(obj: Any) -> str:
        text, _pending = exit_text(
            obj.status, obj.exit_code, running=obj.status in ACTIVE
        )
        return text

    column.__name__ = "exit_code_shown"
    return column


#: The suffix of the read-only field that shows a timestamp column in UTC
#: on a change page (ReadOnlyAdmin adds one per timestamp of its model).
UTC_SUFFIX = "_utc"


def _utc_names(spec: Sequence[Any], stamps: frozenset[str]) -> tuple[Any, ...]:
    """Return ``fields`` with each timestamp column named by its UTC field."""
    return tuple(
        _utc_names(name, stamps)
        if isinstance(name, list | tuple)
        else (f"{name}{UTC_SUFFIX}" if name in stamps else name)
        for name in spec
    )


def hex_field(name: str, description: StrOrPromise) -> staticmethod[[Any], str]:
    """
    Return a read-only field showing the digest column ``name`` as hex.

    Assign it to a ``ModelAdmin`` attribute and name that attribute in
    ``readonly_fields``: the admin calls it with the object.
    """

    @admin.display(description=description)
    def field(obj: Any) -> str:
        value: bytes | memoryview | None = getattr(obj, name)
        return EMPTY if value is None else bytes(value).hex()

    return staticmethod(field)


def descriptor_field(
    prefix: str, description: StrOrPromise
) -> staticmethod[[Any], str]:
    """
    Return a read-only field describing a payload by its descriptor columns.

    A payload is shown by schema id, schema version and format (the columns
    ``<prefix>_schema``, ``<prefix>_schema_version`` and ``<prefix>_format``),
    never by its content.
    """

    @admin.display(description=description)
    def field(obj: Any) -> str:
        return gettext("%(schema)s v%(version)s (format %(format)s)") % {
            "schema": getattr(obj, f"{prefix}_schema"),
            "version": getattr(obj, f"{prefix}_schema_version"),
            "format": getattr(obj, f"{prefix}_format"),
        }

    return staticmethod(field)


# ModelAdmin is generic in the type stubs only.
class ReadOnlyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """
    Show a metadata table without any way to change it.

    Subclasses name the payload columns in ``deferred`` so that no admin
    query loads them, and list only displayable columns in ``fields``, every
    one of them read-only.
    """

    actions: Sequence[Any] | None = None
    paginator = LookaheadPaginator
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    list_per_page = 50
    list_max_show_all = 200
    list_select_related: ClassVar[tuple[str, ...]] = ()
    ordering = ("-id",)
    # Column sorting would order millions of rows by unindexed columns; the
    # newest-first order by primary key stays an index scan.
    sortable_by = ()
    deferred: tuple[str, ...] = ()
    #: When set, the changelist loads only these columns (rows stay models).
    list_columns: tuple[str, ...] = ()
    #: Page deep by keyset on the (integer) primary key.
    keyset = True
    #: The dashboard page "View on site" opens: its URL name (in the
    #: ``batchboard`` namespace) and the attribute of the row holding the id
    #: it takes. ``None``: the row has no page of its own.
    site_page: tuple[str, str] | None = None

    def filter_parameters(self, request: HttpRequest) -> frozenset[str]:
        """
        Return the query parameters the declared ``list_filter`` reads.

        A filter's parameters come from the filter itself
        (``expected_parameters``): ``status__exact`` and ``status__isnull``
        for a field with choices, ``parameter_name`` for a simple filter.
        """
        names: set[str] = set()
        for item in self.get_list_filter(request):
            if isinstance(item, type) and issubclass(item, SimpleListFilter):
                names.add(str(item.parameter_name))
                continue
            make: Callable[..., FieldListFilter]
            if isinstance(item, (tuple, list)):
                field_path, make = (
                    str(item[0]),
                    cast("Callable[..., FieldListFilter]", item[1]),
                )
            else:
                field_path, make = str(item), FieldListFilter.create
            field = get_fields_from_path(self.model, field_path)[-1]
            spec = make(field, request, {}, self.model, self, field_path=field_path)
            names.update(str(name) for name in spec.expected_parameters() or ())
        return frozenset(names)

    def lookup_allowed(
        self, lookup: str, value: str, request: HttpRequest | None = None
    ) -> bool:
        """
        Allow only the declared filters' parameters, with printable values.

        Django allows any lookup on the model's own fields, so a staff user
        could filter on parameter values, payloads and manifests
        (``identifying_parameters__period__value__startswith=2``) and read
        them by bisection, or run a catastrophic ``__regex`` on SQLite. Any
        other parameter is refused, which the admin answers with a 400.
        """
        if request is None:
            return False
        allowed = self.filter_parameters(request)
        return lookup in allowed and not CONTROL_CHARACTERS.search(str(value))

    def view_on_site(self, obj: Model) -> str | None:
        """
        Return the dashboard page of ``obj`` for the change page's "View on
        site", built from an id the row already holds: nothing is read.

        Django's default links to the admin site's ``view_on_site`` shortcut,
        which loads the whole row again, payloads and parameter values
        included, for any staff user; these models have no
        ``get_absolute_url`` for it to find anyway.
        """
        if self.site_page is None:
            return None
        name, attribute = self.site_page
        ident = getattr(obj, attribute)
        if ident is None:
            return None
        return reverse(f"batchboard:{name}", args=[ident])

    def has_add_permission(
        self, request: HttpRequest, obj: Model | None = None
    ) -> bool:
        """Refuse: runtimes and the service write metadata, admin forms never."""
        return False

    # Changing or deleting a row is refused for the same reason.
    has_change_permission = has_add_permission
    has_delete_permission = has_add_permission

    def __init__(self, model: type[Model], admin_site: admin.AdminSite) -> None:
        super().__init__(model, admin_site)
        # Each timestamp shows as the dashboard prints it (ISO, UTC) on the
        # change page too, not in the admin's localized date format.
        self._stamps = frozenset(
            field.name
            for field in model._meta.concrete_fields
            if isinstance(field, DateTimeField)
        )
        for field in model._meta.concrete_fields:
            if field.name in self._stamps:
                setattr(
                    self,
                    f"{field.name}{UTC_SUFFIX}",
                    utc_column(field.name, field.verbose_name),
                )

    def get_list_display(self, request: HttpRequest) -> list[Any]:
        """Return ``list_display``, each timestamp column shown in UTC."""
        return [
            getattr(self, f"{name}{UTC_SUFFIX}")
            if isinstance(name, str) and name in self._stamps
            else name
            for name in super().get_list_display(request)
        ]

    # The stubs' own alias for a fields spec is private; the shape is ``fields``'s.
    def get_fields(self, request: HttpRequest, obj: Model | None = None) -> Any:
        """Return ``fields``, each timestamp shown by its UTC field."""
        return _utc_names(self.fields or (), self._stamps)

    def get_readonly_fields(
        self, request: HttpRequest, obj: Model | None = None
    ) -> list[str]:
        """
        Return every field the page shows: nothing here is editable.

        Computed fields (a digest as hex, a payload's descriptor) need no
        declaration of their own beside ``fields``.
        """
        return flatten_fieldsets([(None, {"fields": self.get_fields(request, obj)})])

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        """Return the admin's rows with every payload column left unloaded."""
        queryset = super().get_queryset(request)
        if self.deferred:
            queryset = queryset.defer(*self.deferred)
        return queryset

    def change_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        """
        Return the rows a change page reads: the admin's own, each related
        row joined with its payload columns deferred as well.

        The page names its related rows (an execution's instance, a step's
        execution); loading them lazily would read every column of theirs,
        payloads included.
        """
        queryset = self.get_queryset(request)
        for field in self.model._meta.concrete_fields:
            if not field.is_relation or field.related_model is None:
                continue
            related_admin = self.admin_site._registry.get(field.related_model)
            payloads = getattr(related_admin, "deferred", ())
            queryset = queryset.select_related(field.name).defer(
                *(
                    f"{field.name}__{column}"
                    for column in payloads
                    if "__" not in column
                )
            )
        return queryset

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> Any:
        """
        Return a change page's row through :meth:`change_queryset`; an id
        that is not a plain bigint names no row.
        """
        # ``?_to_field=`` (empty) arrives as "": Django would look up a
        # field named "" and fail with a 500; no field means the key.
        from_field = from_field or None
        if from_field is not None or not isinstance(self.model._meta.pk, BigAutoField):
            return super().get_object(request, object_id, from_field)
        ident = parse_whole_number(object_id)
        if ident is None:
            return None
        return self.change_queryset(request).filter(pk=ident).first()

    def action_checkbox(self, obj: Model) -> SafeString:
        """
        Render a row's selection box as plain markup.

        Django renders a form widget per row, through the template engine;
        on a 50-row changelist that is a sixth of the page's time, for the
        same input.
        """
        return format_html(
            '<input type="checkbox" name="{}" value="{}" class="action-select" '
            'aria-label="{}">',
            helpers.ACTION_CHECKBOX_NAME,
            obj.pk,
            gettext("Select %(object)s for an action") % {"object": obj},
        )

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return KeysetChangeList if self.keyset else ChangeList

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """
        Show the changelist, or say plainly why its link or form is unusable.

        The rows selected for an action are read first, before Django's
        action machinery; a filter the admin refuses (Django raises a
        suspicious operation, which it would log with a traceback and the
        parameter's name) is logged here in one line naming neither.
        """
        try:
            if request.method == "POST" and self.has_view_permission(request):
                selected_ids(request.POST)
            return super().changelist_view(request, extra_context)
        except SelectionInvalid:
            return self._refused(
                request,
                "selection",
                gettext("Select rows with their checkboxes: each is a row id."),
            )
        except (DisallowedModelAdminLookup, DisallowedModelAdminToField):
            return self._refused(
                request,
                "filter",
                gettext(
                    "This list cannot be filtered that way: use the filters "
                    "offered beside it."
                ),
            )
        except KeysetInvalid:
            context = {
                **self.admin_site.each_context(request),
                "opts": self.model._meta,
                "title": gettext_lazy("This link to a page of the list is not valid"),
                "keyset_var": KEYSET_VAR,
                "max_key": MAX_BIGINT,
                "changelist_url": changelist_url(self),
            }
            return TemplateResponse(
                request, "admin/batchboard/keyset_invalid.html", context, status=400
            )

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """Show a row, or refuse a ``_to_field`` the admin does not allow."""
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except DisallowedModelAdminToField:
            return self._refused(
                request,
                "to_field",
                gettext("Rows are named by their id here, not by another field."),
            )

    def _refused(self, request: HttpRequest, what: str, message: str) -> HttpResponse:
        """Log one line (no value, no traceback) and answer a 400 page."""
        logger.warning(
            "batchboard admin refused a request: %s on %s is not valid",
            what,
            self.model._meta.label,
        )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": gettext_lazy("This request cannot be answered"),
            "message": message,
            "changelist_url": changelist_url(self),
        }
        return TemplateResponse(
            request, "admin/batchboard/refused.html", context, status=400
        )
