"""The site's sign-in backend reads a user and their permissions in one statement."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group, Permission, User
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext

from batchboard.explorer.access import VIEW_EXECUTION_PAGE, VIEW_OVERVIEW
from batchboard.site.auth import SiteBackend
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _site_backend() -> Iterator[None]:
    """Sign in through the site's backend, as batchboard.site.settings does."""
    with override_settings(
        AUTHENTICATION_BACKENDS=["batchboard.site.auth.SiteBackend"]
    ):
        yield


def _permissions(*codenames: str) -> list[Permission]:
    return list(
        Permission.objects.filter(
            content_type__app_label="batchboard", codename__in=codenames
        )
    )


def _group(name: str, *codenames: str) -> Group:
    group = Group.objects.create(name=name)
    group.permissions.set(_permissions(*codenames))
    return group


def _users() -> list[User]:
    """Users holding permissions directly, through groups, both, and none."""
    readers = _group("readers", "view_jobexecution", "view_jobinstance")
    auditors = _group("auditors", "view_operatorrequest", "view_jobinstance")
    own = User.objects.create_user("own")
    own.user_permissions.set(_permissions("view_jobdefinition", "view_stepexecution"))
    grouped = User.objects.create_user("grouped")
    grouped.groups.set([readers, auditors])
    both = User.objects.create_user("both")
    both.user_permissions.set(_permissions("view_jobexecution", "operate_lifecycle"))
    both.groups.set([readers])
    nothing = User.objects.create_user("nothing")
    boss = User.objects.create_superuser("boss")
    return [own, grouped, both, nothing, boss]


@pytest.mark.parametrize("name", ["own", "grouped", "both", "nothing", "boss"])
def test_permissions_are_django_s(name: str) -> None:
    """Each user holds exactly what ModelBackend says, superusers included."""
    users = {user.username: user for user in _users()}
    ours = SiteBackend().get_user(users[name].pk)
    theirs = ModelBackend().get_user(users[name].pk)
    assert ours == theirs
    assert ours.get_all_permissions() == theirs.get_all_permissions()
    for needed in (
        VIEW_OVERVIEW,
        VIEW_EXECUTION_PAGE,
        ("batchboard.operate_lifecycle",),
    ):
        assert ours.has_perms(needed) is theirs.has_perms(needed)


def test_user_and_permissions_cost_one_statement() -> None:
    both = _users()[2]
    with CaptureQueriesContext(connection) as queries:
        user = SiteBackend().get_user(both.pk)
        assert user.has_perms(VIEW_OVERVIEW) is False
        assert user.has_perms(("batchboard.view_jobinstance",)) is True
    assert len(queries) == 1


def test_missing_and_inactive_users_are_nobody() -> None:
    own = _users()[0]
    own.is_active = False
    own.save()
    assert SiteBackend().get_user(own.pk) is None
    assert SiteBackend().get_user(own.pk + 1000) is None


def _reader(client: Client) -> User:
    factories.definition("nightly-import")
    execution = factories.execution(factories.instance("nightly-import"), "STARTED")
    user = User.objects.create_user("reader", password="pw")
    user.groups.set([_group("viewers", *factories.VIEW)])
    client.force_login(user)
    assert client.session["_auth_user_backend"] == "batchboard.site.auth.SiteBackend"
    assert client.get(f"/executions/{execution.pk}/").status_code == 200
    return user


def test_a_revoked_group_permission_counts_from_the_next_request() -> None:
    client = Client()
    _reader(client)
    viewers = Group.objects.get(name="viewers")
    viewers.permissions.remove(*_permissions("view_jobexecution"))
    assert client.get("/executions/").status_code == 403


def test_a_user_removed_from_a_group_loses_its_permissions_at_once() -> None:
    client = Client()
    user = _reader(client)
    user.groups.clear()
    assert client.get("/executions/").status_code == 403


def test_a_deactivated_user_is_signed_out_at_once() -> None:
    """Even when the flag is changed without signals (a bulk update)."""
    client = Client()
    user = _reader(client)
    User.objects.filter(pk=user.pk).update(is_active=False)
    response = client.get("/executions/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_a_changed_password_ends_other_sessions() -> None:
    client = Client()
    user = _reader(client)
    user.set_password("new")
    user.save()
    assert client.get("/executions/").status_code == 302
