"""
Authorization classes (spec 4.1, 9) mapped onto Django permissions.

Read is the models' view permissions; Lifecycle and Destructive are the two
custom permissions declared on ``JobExecution``. Every service function
checks its class itself, so no front end can forget to.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied

from batchboard.actions import envelope
from batchboard.vocabulary import ACTION_CLASSES, DESTRUCTIVE, LIFECYCLE, READ

#: The Django permission that grants each authorization class.
CLASS_PERMISSIONS: dict[str, tuple[str, ...]] = {
    READ: ("batchboard.view_jobexecution", "batchboard.view_jobinstance"),
    LIFECYCLE: ("batchboard.operate_lifecycle",),
    DESTRUCTIVE: ("batchboard.operate_destructive",),
}


def has_class(user: Any, authorization_class: str) -> bool:
    """Return whether ``user`` (or a ServiceActor) holds ``authorization_class``."""
    if isinstance(user, envelope.ServiceActor):
        return authorization_class in user.classes
    if user is None or not getattr(user, "is_authenticated", False):
        return False
    if not getattr(user, "is_active", False):
        return False
    return bool(user.has_perms(CLASS_PERMISSIONS[authorization_class]))


def may(user: Any, action: str) -> bool:
    """Return whether ``user`` may use ``action`` (e.g. ``"STOP"``)."""
    return has_class(user, ACTION_CLASSES[action])


def require(user: Any, action: str) -> None:
    """Raise PermissionDenied unless ``user`` may use ``action``."""
    if not may(user, action):
        raise PermissionDenied(
            f"{action} needs the {ACTION_CLASSES[action]} authorization class"
        )


def action_permissions(user: Any) -> dict[str, bool]:
    """Return ``{action: allowed}`` for templates deciding which buttons to show."""
    return {action.lower(): may(user, action) for action in ACTION_CLASSES}
