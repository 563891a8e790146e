"""
Saved views and time-zone preferences: batchboard's own state.

A saved view keeps a list's address without its continuation (the URL's
name, its path arguments and its filters); its id never changes, so links
to it survive a rename. Users and groups are named by id: the rows live
in batchboard's state database, which need not be the one holding Django's
auth tables.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from batchboard.state import OwnState

#: The longest name of a saved view.
MAX_VIEW_NAME = 100

#: The longest time-zone preference: an IANA name (the longest is 32).
MAX_ZONE_NAME = 64


class SavedView(OwnState):
    """A list's address under a name, private or shared with one group."""

    owner_id = models.BigIntegerField()
    name = models.CharField(max_length=MAX_VIEW_NAME)
    # The list's URL name in the batchboard namespace (personal.lists.LISTS).
    url_name = models.CharField(max_length=64)
    # The URL's path arguments as a JSON object (a job's name).
    arguments = models.TextField(default="{}")
    # The filters as a query string, without any continuation key.
    query = models.TextField(blank=True, default="")
    # The auth group it is shared with; null: private to its owner.
    group_id = models.BigIntegerField(null=True, blank=True)
    is_default = models.BooleanField(default=False)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta(OwnState.Meta):
        db_table = "batchboard_saved_view"
        verbose_name = _("saved view")
        constraints = [
            models.UniqueConstraint(
                fields=["owner_id", "name"], name="bb_saved_view_name"
            ),
            # One default per user.
            models.UniqueConstraint(
                fields=["owner_id"],
                condition=Q(is_default=True),
                name="bb_saved_view_default",
            ),
        ]
        indexes = [
            models.Index(fields=["group_id", "name", "id"], name="bb_saved_view_group"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def path_arguments(self) -> dict[str, Any]:
        """Return the list URL's path arguments."""
        value = json.loads(self.arguments or "{}")
        return value if isinstance(value, dict) else {}


class UserPreference(OwnState):
    """How a user wants times shown: UTC, the browser's zone, or a named one."""

    user_id = models.BigIntegerField(unique=True)
    time_zone = models.CharField(max_length=MAX_ZONE_NAME, default="UTC")

    class Meta(OwnState.Meta):
        db_table = "batchboard_user_preference"
        verbose_name = _("user preference")

    def __str__(self) -> str:
        return f"preferences {self.user_id}"
