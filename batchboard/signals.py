"""Refuse any migration run against an attached metadata database."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError
from django.db.models.signals import pre_migrate
from django.dispatch import receiver

from batchboard import conf


@receiver(pre_migrate, dispatch_uid="batchboard.attached_migration_guard")
def refuse_migrating_attached_database(*, using: str, **kwargs: Any) -> None:
    """
    Stop ``migrate --database=<metadata alias>`` in attached mode.

    Django's migrate would at least create its ``django_migrations`` table in
    the database it runs against; an attached oxide-batch database must see
    no DDL at all. When the metadata alias is ``default`` the run goes on:
    the router and :class:`~batchboard.operations.CreateMetadataSchema` keep
    batchboard's own operations from touching it.
    """
    alias = conf.database_alias()
    if conf.is_attached() and using == alias and alias != "default":
        raise CommandError(
            f"batchboard is attached to an existing oxide-batch database "
            f"(BATCHBOARD_SCHEMA=attached, database alias {alias!r}) and never "
            f"migrates it. Run 'manage.py migrate' without --database={alias}."
        )
