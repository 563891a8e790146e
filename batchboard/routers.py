"""Route batchboard's models to the metadata database and guard its schema."""

from __future__ import annotations

from typing import Any

from django.db.models import Model

from batchboard import conf

APP_LABEL = "batchboard"


class BatchboardRouter:
    """
    Send every batchboard model to ``BATCHBOARD["DATABASE"]``.

    batchboard's migrations run only on that alias and Django's own apps
    never migrate onto it when it is a separate database, nor onto the
    aliases of ``ACTION_DATABASES`` and ``READ_DATABASES`` (replicas are
    read-only and follow the primary's schema). In attached mode
    batchboard's migration operations still run their state changes, but its
    schema operation issues no statement (see
    :class:`batchboard.schema.operations.CreateMetadataSchema`).
    """

    def db_for_read(self, model: type[Model], **hints: Any) -> str | None:
        if model._meta.app_label == APP_LABEL:
            return conf.database_alias()
        return None

    db_for_write = db_for_read

    def allow_relation(self, obj1: Model, obj2: Model, **hints: Any) -> bool | None:
        labels = {obj1._meta.app_label, obj2._meta.app_label}
        if labels == {APP_LABEL}:
            return True
        return None

    def allow_migrate(
        self, db: str, app_label: str, model_name: str | None = None, **hints: Any
    ) -> bool | None:
        alias = conf.database_alias()
        if app_label == APP_LABEL:
            return db == alias
        # The action aliases reach the same metadata database under other
        # logins: Django's own apps belong on none of them.
        others = conf.action_aliases() | set(conf.read_aliases())
        if db != "default" and (db == alias or db in others):
            return False
        return None
