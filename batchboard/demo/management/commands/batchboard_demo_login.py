"""
Create the demo site's logins: ``demo`` and one user per group.

``demo`` reads everything (and may use the admin); ``viewer``, ``operator``
and ``administrator`` belong to the groups of the same names that
``batchboard_groups`` creates. Each password equals the user name.
"""

from __future__ import annotations

from io import StringIO
from typing import Any

from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command
from django.core.management.base import CommandError, CommandParser
from django.db import router, transaction

from batchboard.demo.commands import DemoCommand

USERNAME = "demo"
PASSWORD = "demo"


# (user name = password = group, staff, what the login may do), in the order
# the command prints them. Only the administrator is staff: the viewer and the
# operator show that the dashboard needs no admin access.
ROLE_USERS: tuple[tuple[str, bool, str], ...] = (
    (
        "viewer",
        False,
        "browses every page; parameter values stay hidden; no action buttons",
    ),
    (
        "operator",
        False,
        "browses, and stops running executions (Lifecycle)",
    ),
    (
        "administrator",
        True,
        "also abandons, recovers, holds, releases and purges (Destructive), "
        "sees parameter values, and uses the admin's actions",
    ),
)
DEMO_SUMMARY = "browses every page and the read-only admin; no actions"


def view_permissions() -> list[Permission]:
    """Return the view permission of every batchboard model, nothing more."""
    codenames = {
        f"view_{model._meta.model_name}"
        for model in apps.get_app_config("batchboard").get_models()
    }
    return list(
        Permission.objects.filter(
            content_type__app_label="batchboard", codename__in=codenames
        )
    )


class Command(DemoCommand):
    help = (
        "Create or reset the demo logins: demo (staff with the view "
        "permissions of batchboard's models) and viewer, operator and "
        "administrator, one in each of batchboard's groups; every password "
        "equals the user name."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--address",
            default="http://127.0.0.1:8000/",
            help="Address printed for the logins (default: %(default)s).",
        )

    def target_alias(self) -> str:
        # Well-known passwords are acceptable only on a throwaway demo: the
        # gate names the database the users would be written to.
        return router.db_for_write(get_user_model())

    def run(self, **options: Any) -> None:
        address = options["address"]
        permissions = view_permissions()
        if not permissions:
            raise CommandError(
                "batchboard's permissions do not exist yet: run "
                "'manage.py migrate' first."
            )
        with transaction.atomic():
            # The groups command resets each group's exact permissions, so a
            # demo whose groups were edited gets the documented roles back.
            call_command("batchboard_groups", stdout=StringIO())
            demo = _reset_user(USERNAME, PASSWORD, staff=True)
            demo.groups.clear()
            demo.user_permissions.set(permissions)
            for name, staff, _summary in ROLE_USERS:
                user = _reset_user(name, name, staff=staff)
                user.user_permissions.clear()
                user.groups.set([Group.objects.get(name=name)])
        self.stdout.write(f"Demo logins for {address} (user / password):")
        self.stdout.write(f"  {USERNAME} / {PASSWORD}: {DEMO_SUMMARY}")
        for name, _staff, summary in ROLE_USERS:
            self.stdout.write(f"  {name} / {name}: {summary}")


def _reset_user(username: str, password: str, *, staff: bool) -> Any:
    """Create ``username`` or restore it: active, never superuser, ``password``."""
    user_model = get_user_model()
    # The user model may name its login field anything: look it up by name.
    lookup: dict[str, Any] = {user_model.USERNAME_FIELD: username}
    user, _created = user_model._default_manager.get_or_create(**lookup)
    user.is_staff = staff
    user.is_superuser = False
    user.is_active = True
    user.set_password(password)
    user.save()
    return user
