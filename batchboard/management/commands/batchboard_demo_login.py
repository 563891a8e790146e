"""Create the demo site's login: user ``demo``, password ``demo``."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from batchboard import conf

USERNAME = "demo"
PASSWORD = "demo"


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


class Command(BaseCommand):
    help = (
        "Create or reset the demo login (user demo, password demo): staff with "
        "the view permissions of batchboard's models. Demo site only "
        "(BATCHBOARD_DEMO=1)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--address",
            default="http://127.0.0.1:8000/",
            help="Address printed for the login (default: %(default)s).",
        )

    def handle(self, *args: Any, address: str, **options: Any) -> None:
        # A well-known password is acceptable only on a throwaway demo.
        if not conf.get_config()["DEMO"]:
            raise CommandError(
                "The demo login exists only in the demo: run this with "
                "BATCHBOARD_DEMO=1, or create real users with "
                "'manage.py createsuperuser'."
            )
        permissions = view_permissions()
        if not permissions:
            raise CommandError(
                "batchboard's permissions do not exist yet: run "
                "'manage.py migrate' first."
            )
        user_model = get_user_model()
        with transaction.atomic():
            user, created = user_model._default_manager.get_or_create(
                **{user_model.USERNAME_FIELD: USERNAME}
            )
            user.is_staff = True
            user.is_superuser = False
            user.is_active = True
            user.set_password(PASSWORD)
            user.save()
            user.user_permissions.set(permissions)
        verb = "Created" if created else "Reset"
        self.stdout.write(
            f"{verb} the demo login. Open {address} and sign in as "
            f"user {USERNAME!r} with password {PASSWORD!r}."
        )
