"""Route batchboard's models to their databases and guard the metadata schema."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.db.models import Model

from batchboard import conf

APP_LABEL = "batchboard"


def is_own_state(model: type[Model]) -> bool:
    """Return whether ``model`` is batchboard's own state (:mod:`batchboard.state`)."""
    from batchboard.state import OwnState

    return issubclass(model, OwnState)


def _own_state_name(app_label: str, model_name: str | None) -> bool:
    if app_label != APP_LABEL or model_name is None:
        return False
    try:
        model = apps.get_model(app_label, model_name)
    except LookupError:
        return False
    return is_own_state(model)


class BatchboardRouter:
    """
    Send the oxide-batch models to ``BATCHBOARD["DATABASE"]`` and batchboard's
    own state to ``BATCHBOARD["STATE_DATABASE"]``.

    batchboard's metadata migrations run only on the metadata alias; its own
    state's tables are created only on the state alias, so a separate
    metadata database never receives them. Django's own apps never migrate
    onto the metadata alias when it is a separate database, nor onto the
    aliases of ``ACTION_DATABASES`` and ``READ_DATABASES`` (replicas are
    read-only and follow the primary's schema). In attached mode
    batchboard's migration operations still run their state changes, but its
    schema operation issues no statement (see
    :class:`batchboard.schema.operations.CreateMetadataSchema`).
    """

    def db_for_read(self, model: type[Model], **hints: Any) -> str | None:
        if model._meta.app_label == APP_LABEL:
            if is_own_state(model):
                return conf.state_alias()
            return conf.database_alias()
        return None

    db_for_write = db_for_read

    def allow_relation(self, obj1: Model, obj2: Model, **hints: Any) -> bool | None:
        labels = {obj1._meta.app_label, obj2._meta.app_label}
        if labels == {APP_LABEL}:
            return is_own_state(type(obj1)) == is_own_state(type(obj2))
        return None

    def allow_migrate(
        self, db: str, app_label: str, model_name: str | None = None, **hints: Any
    ) -> bool | None:
        alias = conf.database_alias()
        state = conf.state_alias()
        if _own_state_name(app_label, model_name):
            return db == state
        if app_label == APP_LABEL:
            return db == alias
        # The action and replica aliases reach the same metadata database
        # under other logins: Django's own apps belong on none of them.
        if db != "default" and db in conf.metadata_aliases():
            return False
        return None
