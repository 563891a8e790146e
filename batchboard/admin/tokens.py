"""
API tokens in the admin: an administrator creates, lists and revokes any user's.

The add form asks for the owner, a name, the classes and the lifetime;
saving creates the token through :func:`batchboard.api.tokens.create_token`
and shows its secret once, in the confirmation message. A token is never
edited afterwards, only revoked.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from batchboard.api import tokens


class TokenAddForm(forms.ModelForm):  # type: ignore[type-arg]
    scope = tokens.classes_field()
    days = tokens.days_field()

    class Meta:
        model = tokens.ApiToken
        fields = ("user", "name")


@admin.register(tokens.ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("name", "label", "user", "classes", "expires_at", "revoked_at")

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> Any:
        """Return the token; an empty ``?_to_field=`` means its key, not a 500."""
        return super().get_object(request, object_id, from_field or None)

    list_filter = ("revoked_at",)
    actions = ("revoke_tokens",)
    readonly_fields = (
        "user",
        "name",
        "label",
        "classes",
        "created_at",
        "expires_at",
        "revoked_at",
        "last_used_at",
    )
    exclude = ("digest", "window", "window_count")

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        if obj is None:
            kwargs["form"] = TokenAddForm
            kwargs["fields"] = ("user", "name", "scope", "days")
        return super().get_form(request, obj, change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.readonly_fields if obj is not None else ()

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Viewing is allowed; editing a token is not (revoke it instead).
        return False

    def save_model(
        self, request: HttpRequest, obj: Any, form: Any, change: bool
    ) -> None:
        made, secret = tokens.create_token(
            form.cleaned_data["user"],
            form.cleaned_data["name"],
            form.cleaned_data["scope"],
            form.cleaned_data["days"],
        )
        obj.pk = made.pk
        self.message_user(
            request,
            _("Copy the token now; it is shown only once: %(secret)s")
            % {"secret": secret},
            messages.WARNING,
        )

    @admin.action(description=_("Revoke the selected tokens"))
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for token in queryset:
            tokens.revoke(token)
