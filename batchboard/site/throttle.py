"""
Sign-in throttling: a growing delay per user name and address, never a lock.

Failed sign-ins are counted per (user name, client address) pair. The first
:data:`FREE_FAILURES` failures of a pair cost nothing; each further one makes
the pair wait before its next attempt is checked, twice as long as the last
time, up to :data:`MAX_DELAY`. An attempt during the wait is refused without
checking the password (429 on the site's page) and does not count. Counts
are forgotten :data:`WINDOW` after a pair's last failure, and a successful
sign-in clears its pair.

A second count per address bounds password spraying: once an address has
failed :data:`ADDRESS_LIMIT` times within the window, its pairs lose their
free failures, so every further name it tries waits from its first failure.
No count ever refuses a name that has not failed from the address asking,
so nobody elsewhere can keep a user out, and nobody behind the same proxy
can keep out another user (docs/decisions.md says why).

The client's address is the peer's, or, when the peer is a trusted proxy
(``FORWARDED_ALLOW_IPS``, :mod:`batchboard.site.proxies`), the address that
proxy saw. The counts are rows of :class:`batchboard.site.models.SignInCount`
in Django's database, changed by single ``UPDATE`` and ``INSERT`` statements,
so every worker and every host counts the same failures, exactly. An attempt
first claims its pair (a conditional ``UPDATE`` moves the pair's wait
forward): of simultaneous attempts of one pair only one is checked.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import (
    Case,
    DateTimeField,
    F,
    PositiveIntegerField,
    Q,
    Value,
    When,
)
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.translation import ngettext_lazy

from batchboard.signin import SignInView
from batchboard.site import proxies
from batchboard.site.models import SignInCount

__all__ = [
    "ADDRESS_LIMIT",
    "CLAIM",
    "FREE_FAILURES",
    "MAX_DELAY",
    "WINDOW",
    "ThrottledAdminAuthenticationForm",
    "ThrottledAuthenticationForm",
    "ThrottledLoginView",
    "clock",
    "delay",
    "record_failure",
]

#: Failures of one pair that cost no wait.
FREE_FAILURES = 3
#: The longest wait between two checked attempts of one pair.
MAX_DELAY = timedelta(minutes=1)
#: Failures of one address (every name together) before its pairs lose
#: their free failures.
ADDRESS_LIMIT = 20
#: How long a count is kept after its last failure.
WINDOW = timedelta(minutes=15)
#: How long a claimed attempt keeps its pair's other attempts waiting, should
#: the worker checking it die before it says how it went.
CLAIM = timedelta(seconds=30)

THROTTLED = "throttled"

#: The throttle's clock; the tests replace it.
clock: Callable[[], datetime] = timezone.now


def delay(failures: int, *, spraying: bool = False) -> timedelta:
    """Return how long a pair waits after its ``failures``-th failure."""
    free = 0 if spraying else FREE_FAILURES
    if failures <= free:
        return timedelta(0)
    doublings = min(failures - free - 1, 16)
    return min(timedelta(seconds=2**doublings), MAX_DELAY)


def _key(kind: str, *values: str) -> str:
    # Hashed: user names and addresses are neither key-safe nor for a table
    # that lists who failed to sign in.
    text = "\0".join(values)
    return f"{kind}:" + hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def _claim(key: str, now: datetime) -> bool:
    """Claim ``key`` for one attempt; return ``False`` while it must wait."""
    hold = now + CLAIM
    claimed = (
        SignInCount.objects.filter(key=key)
        .filter(Q(not_before__lte=now) | Q(expires__lte=now))
        .update(
            not_before=hold,
            # A count whose window passed starts again.
            failures=Case(
                When(expires__lte=now, then=Value(0)),
                default=F("failures"),
                output_field=PositiveIntegerField(),
            ),
            expires=Case(
                When(expires__lte=now, then=Value(hold)),
                default=F("expires"),
                output_field=DateTimeField(),
            ),
        )
    )
    if claimed:
        return True
    try:
        with transaction.atomic():
            SignInCount.objects.create(
                key=key, failures=0, not_before=hold, expires=hold
            )
    except IntegrityError:
        # The row exists and is waiting, or another attempt created it now.
        return False
    return True


def _seconds_left(key: str, now: datetime) -> int:
    """Return the whole seconds, at least 1, before ``key`` is checked again."""
    not_before = (
        SignInCount.objects.filter(key=key).values_list("not_before", flat=True).first()
    )
    left = (not_before - now).total_seconds() if not_before else 0
    return max(1, math.ceil(left))


def _release(key: str, now: datetime, wait: timedelta) -> None:
    SignInCount.objects.filter(key=key).update(not_before=now + wait)


def record_failure(key: str, now: datetime) -> int:
    """Count one failure of ``key`` and return its count, atomically."""
    expires = now + WINDOW
    while True:
        counted = SignInCount.objects.filter(key=key, expires__gt=now).update(
            failures=F("failures") + 1, expires=expires
        )
        if counted:
            failures = (
                SignInCount.objects.filter(key=key)
                .values_list("failures", flat=True)
                .first()
            )
            return failures or 1
        SignInCount.objects.filter(key=key, expires__lte=now).delete()
        try:
            with transaction.atomic():
                SignInCount.objects.create(
                    key=key, failures=1, not_before=now, expires=expires
                )
        except IntegrityError:
            continue
        return 1


def _client_address(request: HttpRequest) -> str:
    trusted = getattr(settings, "FORWARDED_ALLOW_IPS", proxies.DEFAULT)
    return proxies.client_address(request.META, proxies.trusted_networks(trusted))


class ThrottleMixin:
    """Delay failures of an ``AuthenticationForm`` per user name and address."""

    request: Any
    error_messages: dict[str, Any]
    user_cache: Any

    def clean(self) -> dict[str, Any]:
        data: dict[str, Any] = getattr(self, "cleaned_data", {})
        if not data.get("username") or not data.get("password"):
            # Nothing to check: the fields say what is missing.
            return super().clean()  # type: ignore[misc,no-any-return]
        username = str(data["username"]).strip().casefold()
        address = _client_address(self.request) if self.request else ""
        pair = _key("pair", username, address)
        now = clock()
        if not _claim(pair, now):
            raise ValidationError(
                ngettext_lazy(
                    "Too many failed sign-in attempts for this name. Try again "
                    "in %(seconds)s second.",
                    "Too many failed sign-in attempts for this name. Try again "
                    "in %(seconds)s seconds.",
                    "seconds",
                ),
                code=THROTTLED,
                params={"seconds": _seconds_left(pair, now)},
            )
        try:
            cleaned: dict[str, Any] = super().clean()  # type: ignore[misc]
        except ValidationError:
            if self.user_cache is not None:
                # The right password of an account that may not sign in
                # here (inactive, or not staff on the admin's page).
                _release(pair, now, timedelta(0))
                raise
            failures = record_failure(pair, now)
            sprayed = record_failure(_key("address", address), now)
            _release(pair, now, delay(failures, spraying=sprayed >= ADDRESS_LIMIT))
            self._collect(now)
            raise
        SignInCount.objects.filter(key=pair).delete()
        return cleaned

    @staticmethod
    def _collect(now: datetime) -> None:
        """Forget counts whose window has passed."""
        SignInCount.objects.filter(expires__lte=now).delete()

    @property
    def throttled(self) -> bool:
        """Return whether the attempt was refused by the throttle."""
        form: Any = self
        return bool(form.has_error(NON_FIELD_ERRORS, code=THROTTLED))


class ThrottledAuthenticationForm(ThrottleMixin, AuthenticationForm):
    """The site's sign-in form, throttled."""


class ThrottledAdminAuthenticationForm(ThrottleMixin, AdminAuthenticationForm):
    """The admin's sign-in form (staff only), throttled alike."""


class ThrottledLoginView(SignInView):
    """The site's sign-in page: answers 429 while an attempt must wait."""

    authentication_form = ThrottledAuthenticationForm

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        response = super().form_invalid(form)
        if isinstance(form, ThrottleMixin) and form.throttled:
            response.status_code = 429
        return response
