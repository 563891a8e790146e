"""
Fixtures of the admin tests: the action tests' users, a small history, a
signed-in viewer, and what the changelists must never run.
"""

from __future__ import annotations

import re

import pytest
from django.apps import apps
from django.contrib.auth.models import Permission, User
from django.test import Client

from batchboard.models import DefinitionUpgrade
from batchboard.routers import is_own_state
from tests.actions.conftest import admin_user, operator_user, viewer_user
from tests.site.history import History, create_history

__all__ = [
    "REGISTERED",
    "admin_user",
    "count_statements",
    "history",
    "operator_user",
    "viewer",
    "viewer_user",
]

#: The models the admin registers: all but the composite-key upgrade edges
#: and batchboard's own state (bulk operations have their own pages).
REGISTERED = [
    model
    for model in apps.get_app_config("batchboard").get_models()
    if model is not DefinitionUpgrade and not is_own_state(model)
]


@pytest.fixture
def history(db: None) -> History:
    return create_history()


@pytest.fixture
def viewer(db: None) -> Client:
    """Log in a staff user holding only the view permissions of batchboard."""
    user = User.objects.create_user("viewer", password="viewer", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="batchboard", codename__startswith="view_"
        )
    )
    client = Client()
    assert client.login(username="viewer", password="viewer")
    return client


def count_statements(queries: list[dict[str, str]]) -> list[str]:
    """Return the captured statements that count rows."""
    return [q["sql"] for q in queries if re.search(r"\bCOUNT\s*\(", q["sql"], re.I)]
