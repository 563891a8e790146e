"""
API tokens: a user's bearer secrets for the JSON API, in batchboard's own state.

A token is ``bbt_`` and 43 URL-safe characters: 32 random bytes. It is shown
once, when it is created; the table keeps only its HMAC-SHA256 under a key
derived from ``SECRET_KEY``. A slow password hash would add nothing here:
the secret has 256 bits of entropy, so no guess list reaches it, and the
keyed hash (a leaked table without the site's key gives nothing to test
guesses against) is cheap enough to check on every call. The first twelve
characters are kept in clear as the token's label in lists.

A token names the authorization classes it may use (READ, LIFECYCLE,
DESTRUCTIVE) and an expiry. Each call checks the owner's permissions as they
are at that moment (:class:`ScopedUser`): a token never does more than its
owner, nor more than its classes. Each token is throttled by a fixed
one-minute window counted in its own row, one atomic UPDATE a call.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.db import models
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from batchboard import conf
from batchboard.actions.permissions import CLASS_PERMISSIONS
from batchboard.state import OwnState
from batchboard.vocabulary import AUTHORIZATION_CLASSES, READ

PREFIX = "bbt_"
#: Characters of a token kept in clear to tell tokens apart in lists.
LABEL_LENGTH = 12
#: Whole days a new token lives unless its creator picks fewer.
DEFAULT_DAYS = 30
MAX_DAYS = 365


def classes_field() -> forms.MultipleChoiceField:
    """Return the form field choosing a new token's authorization classes."""
    return forms.MultipleChoiceField(
        label=_("Authorization classes"),
        choices=[(name, name) for name in AUTHORIZATION_CLASSES],
        widget=forms.CheckboxSelectMultiple,
        initial=[READ],
    )


def days_field() -> forms.IntegerField:
    """Return the form field choosing a new token's lifetime in days."""
    return forms.IntegerField(
        label=_("Expires after (days)"),
        min_value=1,
        max_value=MAX_DAYS,
        initial=DEFAULT_DAYS,
    )


def _digest(secret: str) -> str:
    key = hashlib.sha256(
        f"batchboard.api-token:{settings.SECRET_KEY}".encode()
    ).digest()
    return hmac.new(key, secret.encode("utf-8", "surrogatepass"), "sha256").hexdigest()


class ApiToken(OwnState):
    """One bearer token of one user: its hash, classes, expiry and throttle window."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.CASCADE, related_name="batchboard_api_tokens"
    )
    name = models.CharField(_("name"), max_length=64)
    label = models.CharField(max_length=LABEL_LENGTH)
    digest = models.CharField(max_length=64, unique=True)
    # Space-separated authorization classes, e.g. "READ LIFECYCLE".
    classes = models.CharField(max_length=40)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    # The throttle: the minute (epoch seconds // 60) counted and its count.
    window = models.BigIntegerField(default=0)
    window_count = models.IntegerField(default=0)

    class Meta(OwnState.Meta):
        db_table = "batchboard_api_token"
        verbose_name = _("API token")
        indexes = [models.Index(fields=["user", "-id"], name="bb_api_token_user")]

    def __str__(self) -> str:
        return f"{self.name} ({self.label}…)"

    @property
    def class_set(self) -> frozenset[str]:
        return frozenset(self.classes.split())

    def active(self, at: datetime | None = None) -> bool:
        moment = at or timezone.now()
        return self.revoked_at is None and self.expires_at > moment


def create_token(
    user: Any, name: str, classes: Iterable[str], days: int = DEFAULT_DAYS
) -> tuple[ApiToken, str]:
    """Create a token for ``user``; return it and its secret (shown once)."""
    chosen = [c for c in AUTHORIZATION_CLASSES if c in set(classes)]
    if not chosen:
        raise ValueError("a token needs at least one authorization class")
    if not 1 <= days <= MAX_DAYS:
        raise ValueError("a token lives 1 to 365 days")
    secret = PREFIX + secrets.token_urlsafe(32)
    created = timezone.now()
    token = ApiToken.objects.create(
        user=user,
        name=name[:64] or "token",
        label=secret[:LABEL_LENGTH],
        digest=_digest(secret),
        classes=" ".join(chosen),
        created_at=created,
        expires_at=created + timedelta(days=days),
    )
    return token, secret


def revoke(token: ApiToken) -> None:
    """Revoke ``token`` now (a revoked token stays listed, refused)."""
    if token.revoked_at is None:
        ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )


def find(secret: str) -> ApiToken | None:
    """Return the active token whose secret is ``secret``, else ``None``."""
    if not secret.startswith(PREFIX) or len(secret) > 128:
        return None
    token = (
        ApiToken.objects.select_related("user").filter(digest=_digest(secret)).first()
    )
    if token is None or not token.active() or not token.user.is_active:
        return None
    return token


def rate_per_minute() -> int:
    """Return ``API_TOKEN_RATE``: calls a token may make in one minute."""
    return int(conf.get_config()["API_TOKEN_RATE"])


def admit(token: ApiToken) -> bool:
    """
    Count one call of ``token``; return False when its minute is used up.

    Two conditional UPDATEs on the token's row: count up within the current
    minute while under the rate, or start a new minute. Concurrent calls
    serialise on the row, so the count never passes the rate.
    """
    minute = int(timezone.now().timestamp()) // 60
    rows = ApiToken.objects.filter(pk=token.pk)

    def count_up() -> bool:
        return bool(
            rows.filter(window=minute, window_count__lt=rate_per_minute()).update(
                window_count=F("window_count") + 1, last_used_at=timezone.now()
            )
        )

    if count_up():
        return True
    if rows.filter(window__lt=minute).update(
        window=minute, window_count=1, last_used_at=timezone.now()
    ):
        return True
    # Another call started this minute between the two updates: count in it.
    return count_up()


#: The Django permissions each class grants, and the class that grants each.
_CLASS_OF = {
    permission: name
    for name, permissions in CLASS_PERMISSIONS.items()
    for permission in permissions
}


class ScopedUser:
    """
    A token's owner, limited to the token's classes.

    It stands for the owner wherever a user is taken (the action services,
    the read checks), so every check asks the owner's permissions as they
    are now and grants one only if the token's classes cover it: a class's
    own permissions need that class, every other permission (the view
    permissions) needs READ.
    """

    def __init__(self, user: Any, classes: frozenset[str]) -> None:
        self._user = user
        self._classes = classes

    def __getattr__(self, name: str) -> Any:
        return getattr(self._user, name)

    def _covers(self, permission: str) -> bool:
        return _CLASS_OF.get(permission, READ) in self._classes

    def has_perm(self, permission: str, obj: Any = None) -> bool:
        return self._covers(permission) and bool(self._user.has_perm(permission, obj))

    def has_perms(self, permissions: Iterable[str], obj: Any = None) -> bool:
        return all(self.has_perm(permission, obj) for permission in permissions)

    def get_username(self) -> str:
        return str(self._user.get_username())
