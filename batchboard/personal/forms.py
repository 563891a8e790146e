"""The forms of saved views and of the time-zone choice."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from batchboard.personal import lists, zones
from batchboard.personal.models import MAX_VIEW_NAME
from batchboard.vocabulary import parse_whole_number

#: The longest list address a save may post (a long filter is still short).
MAX_LOCATION = 4096

#: What the edit form may do to a view, each by its owner only.
EDITS = ("rename", "share", "default", "undefault", "delete")


class ViewNameField(forms.CharField):
    """A saved view's name: 1 to MAX_VIEW_NAME characters, trimmed."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            max_length=MAX_VIEW_NAME,
            error_messages={
                "required": _("Give the view a name."),
                "max_length": _(
                    "A view's name holds at most %(limit_value)d characters."
                ),
            },
            **kwargs,
        )


class SaveViewForm(forms.Form):
    """Save a list page under a name: its address (filters) and the name."""

    name = ViewNameField()
    location = forms.CharField(
        max_length=MAX_LOCATION,
        error_messages={"max_length": _("The list's address is too long to save.")},
    )

    def clean_location(self) -> lists.ListAddress:
        try:
            return lists.address(str(self.cleaned_data["location"]))
        except lists.NotAList as error:
            raise forms.ValidationError(
                _(
                    "Only a list page of batchboard, with filters the list "
                    "accepts, can be saved as a view."
                ),
                code="not_a_list",
            ) from error


class EditViewForm(forms.Form):
    """Rename, share, make default or delete one of the user's views."""

    action = forms.ChoiceField(choices=[(edit, edit) for edit in EDITS])
    name = ViewNameField(required=False)
    # A group's id, or blank for private; checked against the user's groups.
    group = forms.CharField(required=False, max_length=20)

    def __init__(self, *args: Any, groups: dict[int, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.groups = groups

    def clean_group(self) -> int | None:
        raw = str(self.cleaned_data["group"]).strip()
        if not raw:
            return None
        ident = parse_whole_number(raw)
        if ident is None or ident not in self.groups:
            raise forms.ValidationError(
                _("A view can be shared only with a group you belong to."),
                code="invalid_choice",
            )
        return ident

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("action") == "rename" and not cleaned.get("name"):
            self.add_error("name", _("Give the view a name."))
        return cleaned


class TimeZoneForm(forms.Form):
    """The time zone times are shown in: UTC, the browser's, or a named zone."""

    time_zone = forms.CharField(max_length=64)

    def clean_time_zone(self) -> str:
        chosen = str(self.cleaned_data["time_zone"]).strip()
        if not zones.is_choice(chosen):
            raise forms.ValidationError(
                _("Choose UTC, your browser's zone, or a time zone from the list."),
                code="invalid_choice",
            )
        return chosen
