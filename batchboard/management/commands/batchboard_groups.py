"""Create batchboard's three groups: viewer, operator and administrator."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.contrib.auth.models import Group, Permission
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from batchboard.actions.permissions import CLASS_PERMISSIONS
from batchboard.vocabulary import DESTRUCTIVE, LIFECYCLE

APP_LABEL = "batchboard"
PARAMETER_VALUES = "view_parameter_values"


def _codenames(authorization_class: str) -> list[str]:
    """Return the codenames of the permissions that grant ``authorization_class``."""
    return [name.split(".", 1)[1] for name in CLASS_PERMISSIONS[authorization_class]]


def group_permissions() -> dict[str, list[str]]:
    """
    Return the codenames each group holds.

    viewer: Read (the view permission of every batchboard model; parameter
    values stay redacted). operator: Read and Lifecycle (stop).
    administrator: Read, Lifecycle and Destructive (abandon, recover, hold,
    release, purge), and parameter values.
    """
    read = sorted(
        f"view_{model._meta.model_name}"
        for model in apps.get_app_config(APP_LABEL).get_models()
    )
    lifecycle, destructive = _codenames(LIFECYCLE), _codenames(DESTRUCTIVE)
    return {
        "viewer": read,
        "operator": [*read, *lifecycle],
        "administrator": [*read, *lifecycle, *destructive, PARAMETER_VALUES],
    }


class Command(BaseCommand):
    help = (
        "Create or reset the groups viewer (Read), operator (Read, Lifecycle) "
        "and administrator (Read, Lifecycle, Destructive, parameter values). "
        "Running it again restores each group's exact permissions."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        wanted = group_permissions()
        codenames = {code for codes in wanted.values() for code in codes}
        found = {
            permission.codename: permission
            for permission in Permission.objects.filter(
                content_type__app_label=APP_LABEL, codename__in=codenames
            )
        }
        missing = sorted(codenames - set(found))
        if missing:
            raise CommandError(
                "batchboard's permissions do not exist yet (missing: "
                f"{', '.join(missing)}): run 'manage.py migrate' first."
            )
        with transaction.atomic():
            for name, codes in wanted.items():
                group, created = Group.objects.get_or_create(name=name)
                group.permissions.set([found[code] for code in codes])
                verb = "Created" if created else "Reset"
                self.stdout.write(
                    f"{verb} group {name!r} with {len(codes)} permissions."
                )
