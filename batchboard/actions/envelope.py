"""
The request envelope of spec 4.1: who asks, under which operation id, why.

ActorRef mapping
    The actor reference of a signed-in user is ``user:<username>`` when the
    username uses only the ActorRef alphabet (``A-Z a-z 0-9 . _ : @ -``) and
    the whole reference fits in 128 bytes; otherwise it is ``uid:<primary
    key>``. The two prefixes keep the mapping one-to-one: no username can
    produce another user's reference, and the reference never carries a
    credential (spec 9.2). Django's default username validator allows ``+``,
    which is outside the alphabet, so such users are recorded by id.

Operation ids
    A fresh id (``bb-`` and 32 hex digits) is generated into every action
    form when it is rendered. Submitting the same form twice therefore sends
    the same id, and the second submission replays the recorded outcome
    instead of acting again.

Service actors
    A process acting without a signed-in user (the demo seeder, a
    scheduler) passes a :class:`ServiceActor` as the user: an ActorRef of
    its own and the authorization classes it is granted, both explicit. Its
    reference may not start with ``user:`` or ``uid:``, so it can never be
    taken for a console user's, and it holds no Django permission.

Reason codes
    Operators pick a reason from :data:`REASON_CODES`; they never type one.
    The list is batchboard's own (oxide-batch defines none, spec 11.5); only
    ``UNKNOWN_EFFECT`` carries meaning in the contract: it is the one reason
    that lets recovery mark an execution with an unknown commit as failed
    (spec 5.4). STOP carries no reason, as in oxide-batch, so its request
    digest equals the one oxide-batch computes.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext_lazy as _

from batchboard.actions.results import InvalidRequest
from batchboard.vocabulary import (
    AUTHORIZATION_CLASSES,
    parse_whole_number,
    reasons_for,
)

# Use with ``fullmatch``: ``$`` also matches before a trailing newline, so
# ``re.match`` let "bb-1\n" pass as an operation id distinct from "bb-1".
ACTOR_REF_RE = re.compile(r"[A-Za-z0-9._:@-]{1,128}")
OPERATION_ID_RE = re.compile(r"[A-Za-z0-9._:-]{1,64}")
REASON_CODE_RE = re.compile(r"[A-Z0-9_]{1,64}")


def _field(value: object, pattern: re.Pattern[str], what: str, limit: int) -> str:
    if not isinstance(value, str) or value == "":
        raise InvalidRequest(_("The %(what)s is empty.") % {"what": what})
    if len(value.encode("utf-8")) > limit:
        raise InvalidRequest(
            _("The %(what)s is longer than %(limit)s bytes.")
            % {"what": what, "limit": limit}
        )
    if not pattern.fullmatch(value):
        raise InvalidRequest(
            _("The %(what)s contains a character that is not allowed.") % {"what": what}
        )
    return value


def whole_numbers(*values: object, invalid: Any) -> list[int]:
    """Return ``values`` as ints; raise InvalidRequest(``invalid``) if one is not."""
    numbers = []
    for value in values:
        if isinstance(value, bool):
            raise InvalidRequest(invalid)
        if isinstance(value, int):
            numbers.append(value)
            continue
        # Text (a form field): ASCII digits only, a bigint's worth at most.
        number = (
            parse_whole_number(value, maximum=None) if isinstance(value, str) else None
        )
        if number is None:
            raise InvalidRequest(invalid)
        numbers.append(number)
    return numbers


def validate_operation_id(value: object) -> str:
    """Return ``value`` if it is a valid OperationId, else raise InvalidRequest."""
    return _field(value, OPERATION_ID_RE, str(_("operation id")), 64)


def validate_actor_ref(value: object) -> str:
    """Return ``value`` if it is a valid ActorRef, else raise InvalidRequest."""
    return _field(value, ACTOR_REF_RE, str(_("actor reference")), 128)


def validate_reason(value: object, action: str) -> str:
    """Return ``value`` if it is a valid ReasonCode offered for ``action``."""
    code = _field(value, REASON_CODE_RE, str(_("reason code")), 64)
    if code not in {reason.code for reason in reasons_for(action)}:
        raise InvalidRequest(
            _("%(code)s is not one of the reasons offered for %(action)s.")
            % {"code": code, "action": action}
        )
    return code


def new_operation_id() -> str:
    """Return a fresh operation id for a form about to be rendered."""
    return f"bb-{uuid.uuid4().hex}"


#: The prefixes of console users' references, which a ServiceActor may not use.
USER_PREFIXES = ("user:", "uid:")


@dataclass(frozen=True)
class ServiceActor:
    """
    A non-human actor with its own ActorRef and explicit authorization classes.

    The service functions accept it where they take ``user``; the checks of
    :mod:`batchboard.actions.permissions` grant it exactly ``classes`` (a
    subset of READ, LIFECYCLE, DESTRUCTIVE) and nothing else.
    """

    actor_ref: str
    classes: frozenset[str]

    def __init__(self, actor_ref: str, classes: Iterable[str]) -> None:
        validate_actor_ref(actor_ref)
        if actor_ref.startswith(USER_PREFIXES):
            raise InvalidRequest(
                _("A service actor's reference may not start with user: or uid:.")
            )
        granted = frozenset(classes)
        if not granted <= set(AUTHORIZATION_CLASSES):
            raise InvalidRequest(_("A service actor names an unknown class."))
        object.__setattr__(self, "actor_ref", actor_ref)
        object.__setattr__(self, "classes", granted)


def actor_ref_for(user: Any) -> str:
    """Return the ActorRef recorded for ``user`` (see the module docstring)."""
    if isinstance(user, ServiceActor):
        return user.actor_ref
    username = str(user.get_username())
    candidate = f"user:{username}"
    if username and ACTOR_REF_RE.fullmatch(candidate):
        return candidate
    return f"uid:{user.pk}"
