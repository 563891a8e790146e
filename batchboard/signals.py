"""
Refuse any migration run against an attached metadata database, keep a
user's time zone in their session when they sign in, and load timestamps
with the driver's compiled loader on batchboard's own connections.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.signals import user_logged_in
from django.core.management.base import CommandError
from django.db.backends.signals import connection_created
from django.db.models.signals import pre_migrate
from django.dispatch import receiver

from batchboard import conf


@receiver(pre_migrate, dispatch_uid="batchboard.attached_migration_guard")
def refuse_migrating_attached_database(*, using: str, **kwargs: Any) -> None:
    """
    Stop ``migrate`` on an attached metadata alias or an action alias.

    Django's migrate would at least create its ``django_migrations`` table in
    the database it runs against; an attached oxide-batch database must see
    no DDL at all. When the metadata alias is ``default`` the run goes on:
    the router and :class:`~batchboard.schema.operations.CreateMetadataSchema` keep
    batchboard's own operations from touching it. The aliases of
    ``ACTION_DATABASES`` are other logins to the metadata database and are
    never migrated in either mode.
    """
    alias = conf.database_alias()
    if using != "default" and using in conf.action_aliases() and using != alias:
        raise CommandError(
            f"The database alias {using!r} is one of BATCHBOARD['ACTION_DATABASES'], "
            "a login for operator actions' writes, and is never migrated. Run "
            "'manage.py migrate' without --database."
        )
    if conf.is_attached() and using == alias and alias != "default":
        raise CommandError(
            f"batchboard is attached to an existing oxide-batch database "
            f"(BATCHBOARD_SCHEMA=attached, database alias {alias!r}) and never "
            f"migrates it. Run 'manage.py migrate' without --database={alias}."
        )


@receiver(user_logged_in, dispatch_uid="batchboard.time_zone_on_sign_in")
def remember_time_zone(*, request: Any, user: Any, **kwargs: Any) -> None:
    """Keep the user's time-zone choice in the new session (see personal.zones)."""
    from batchboard.personal import zones

    zones.remember_on_sign_in(request, user)


@receiver(connection_created, dispatch_uid="batchboard.compiled_timestamps")
def load_timestamps_natively(*, connection: Any, **kwargs: Any) -> None:
    """Install the compiled timestamp loader (see :mod:`batchboard.driver`)."""
    from batchboard import driver

    driver.load_timestamps_natively(connection)
