"""
The standalone site's sign-in backend: Django's, with the user's
permissions read in the same statement as the user.

Every page asks who the user is and whether they hold the page's view
permissions. Django's ``ModelBackend`` answers with three statements per
request: the user, their own permissions, their groups' permissions.
:class:`SiteBackend` reads the user and both permission sets in one
statement and keeps the set on the user object, where ``ModelBackend``
looks first (``_perm_cache``). Nothing outlives the request: a permission
revoked, a group left or a user deactivated counts from the next request
on, on every worker and host, exactly as with ``ModelBackend``.

Signing in, password checks and everything else are ``ModelBackend``'s.
On a database other than PostgreSQL and SQLite, or with a user model
without Django's permission fields, it behaves as ``ModelBackend``.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import FieldDoesNotExist
from django.db import connections, router

#: The extra column holding the user's permissions, as a JSON array of
#: ``[app_label, codename]`` pairs.
PERMISSIONS_COLUMN = "batchboard_permissions"

#: How each database aggregates the pairs into one JSON array.
_AGGREGATES = {
    "postgresql": "json_agg(json_build_array({app}, {code}))",
    "sqlite": "json_group_array(json_array({app}, {code}))",
}


def user_with_permissions_sql(vendor: str, quote: Any) -> str | None:
    """
    Return the statement reading one user (``%s``: its primary key) and the
    names of every permission it holds directly or through a group, or None
    where it cannot be written (another database, a user model without
    ``user_permissions`` and ``groups``).
    """
    aggregate = _AGGREGATES.get(vendor)
    if aggregate is None:
        return None
    user_model = get_user_model()
    try:
        own = user_model._meta.get_field("user_permissions")
        groups = user_model._meta.get_field("groups")
    except FieldDoesNotExist:
        return None
    granted = Group._meta.get_field("permissions")
    user = quote(user_model._meta.db_table)
    user_pk = quote(user_model._meta.pk.column)
    permission = quote(Permission._meta.db_table)
    content_type = quote(ContentType._meta.db_table)
    return (
        f"SELECT u.*, (SELECT {aggregate.format(app='ct.app_label', code='p.codename')} "
        f"FROM {permission} p INNER JOIN {content_type} ct "
        f"ON ct.{quote(ContentType._meta.pk.column)} = "
        f"p.{quote(Permission._meta.get_field('content_type').column)} "
        f"WHERE p.{quote(Permission._meta.pk.column)} IN ("
        f"SELECT up.{quote(own.m2m_reverse_name())} "
        f"FROM {quote(own.m2m_db_table())} up "
        f"WHERE up.{quote(own.m2m_column_name())} = u.{user_pk} "
        "UNION ALL "
        f"SELECT gp.{quote(granted.m2m_reverse_name())} "
        f"FROM {quote(granted.m2m_db_table())} gp "
        f"INNER JOIN {quote(groups.m2m_db_table())} ug "
        f"ON ug.{quote(groups.m2m_reverse_name())} = gp.{quote(granted.m2m_column_name())} "
        f"WHERE ug.{quote(groups.m2m_column_name())} = u.{user_pk})"
        f") AS {PERMISSIONS_COLUMN} "
        f"FROM {user} u WHERE u.{user_pk} = %s"
    )


def _permission_names(value: Any) -> set[str]:
    """Return ``app_label.codename`` names from the aggregated column."""
    if value is None:
        return set()
    pairs: list[list[str]] = (
        json.loads(value) if isinstance(value, (str, bytes)) else value
    )
    return {f"{app}.{code}" for app, code in pairs}


class SiteBackend(ModelBackend):
    """``ModelBackend`` reading a signed-in user's permissions with the user."""

    def get_user(self, user_id: Any) -> Any:
        user_model = get_user_model()
        alias = router.db_for_read(user_model)
        connection = connections[alias or "default"]
        sql = user_with_permissions_sql(connection.vendor, connection.ops.quote_name)
        if sql is None:
            return super().get_user(user_id)
        found = list(user_model._default_manager.db_manager(alias).raw(sql, [user_id]))
        if not found:
            return None
        user = found[0]
        permissions = _permission_names(getattr(user, PERMISSIONS_COLUMN))
        del user.__dict__[PERMISSIONS_COLUMN]
        if not self.user_can_authenticate(user):
            return None
        # ModelBackend grants a superuser every permission; only an
        # ordinary active user's set is exactly what was read here.
        if user.is_active and not user.is_superuser:
            # Where ModelBackend.get_all_permissions keeps what it read.
            user._perm_cache = permissions  # type: ignore[attr-defined]
        return user
