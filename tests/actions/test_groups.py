"""The batchboard_groups command: three groups, one class more each."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command

from batchboard.actions import permissions

pytestmark = pytest.mark.django_db


def _member(name: str) -> User:
    user = User.objects.create_user(f"in-{name}", password="x")
    user.groups.add(Group.objects.get(name=name))
    return User.objects.get(pk=user.pk)


def test_groups_grant_one_class_more_each() -> None:
    out = StringIO()
    call_command("batchboard_groups", stdout=out)
    assert "Created group 'viewer'" in out.getvalue()
    members = {name: _member(name) for name in ("viewer", "operator", "administrator")}
    classes = {
        name: {
            cls: permissions.has_class(member, cls)
            for cls in ("READ", "LIFECYCLE", "DESTRUCTIVE")
        }
        for name, member in members.items()
    }
    assert classes == {
        "viewer": {"READ": True, "LIFECYCLE": False, "DESTRUCTIVE": False},
        "operator": {"READ": True, "LIFECYCLE": True, "DESTRUCTIVE": False},
        "administrator": {"READ": True, "LIFECYCLE": True, "DESTRUCTIVE": True},
    }
    assert not members["operator"].has_perm("batchboard.view_parameter_values")
    assert members["administrator"].has_perm("batchboard.view_parameter_values")


def test_running_again_restores_exact_permissions() -> None:
    call_command("batchboard_groups", stdout=StringIO())
    viewer = Group.objects.get(name="viewer")
    extra = Group.objects.get(name="administrator").permissions.get(
        codename="operate_destructive"
    )
    viewer.permissions.add(extra)
    out = StringIO()
    call_command("batchboard_groups", stdout=out)
    assert "Reset group 'viewer'" in out.getvalue()
    assert not viewer.permissions.filter(codename="operate_destructive").exists()
    assert (
        Group.objects.filter(name__in=["viewer", "operator", "administrator"]).count()
        == 3
    )
