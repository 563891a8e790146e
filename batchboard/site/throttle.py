"""
Sign-in throttling through Django's cache framework.

Failed sign-ins are counted per user name and per client address over a
window; once either count reaches its limit, further attempts are refused
without checking the password until the window has passed. A successful
sign-in clears its user name's count.

The cache framework rather than a package such as django-axes: the counts
are two cache keys per attempt, with no tables, migrations, admin screens
or signals to keep in step with batchboard's read-only admin. The site's
cache is shared by every worker process on the host (see the settings), so
the limits hold across workers.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.http import HttpResponse
from django.utils.translation import gettext_lazy as _

__all__ = [
    "ADDRESS_LIMIT",
    "USER_LIMIT",
    "WINDOW_SECONDS",
    "ThrottledAdminAuthenticationForm",
    "ThrottledAuthenticationForm",
    "ThrottledLoginView",
]

#: Failed sign-ins allowed per user name within the window.
USER_LIMIT = 5
#: Failed sign-ins allowed per client address within the window (several
#: people may share an address behind a NAT).
ADDRESS_LIMIT = 20
#: The window, in seconds, counted from the first failure.
WINDOW_SECONDS = 15 * 60

THROTTLED = "throttled"


def _key(kind: str, value: str) -> str:
    # Hashed: user names and addresses are not cache-key safe, and a cache
    # that someone reads should not list who failed to sign in.
    digest = hashlib.sha256(value.encode("utf-8", "replace")).hexdigest()
    return f"batchboard:signin:{kind}:{digest}"


class ThrottleMixin:
    """Count failures of an ``AuthenticationForm`` and refuse past the limits."""

    request: Any
    error_messages: dict[str, Any]

    def _keys(self, username: str) -> list[tuple[str, int]]:
        address = str(self.request.META.get("REMOTE_ADDR", "")) if self.request else ""
        return [
            (_key("user", username.strip().casefold()), USER_LIMIT),
            (_key("address", address), ADDRESS_LIMIT),
        ]

    def clean(self) -> dict[str, Any]:
        data: dict[str, Any] = getattr(self, "cleaned_data", {})
        username = str(data.get("username") or "")
        keys = self._keys(username)
        counts = cache.get_many([key for key, _limit in keys])
        if any(counts.get(key, 0) >= limit for key, limit in keys):
            raise ValidationError(
                _(
                    "Too many failed sign-in attempts. Wait %(minutes)s minutes "
                    "and try again."
                ),
                code=THROTTLED,
                params={"minutes": WINDOW_SECONDS // 60},
            )
        try:
            cleaned: dict[str, Any] = super().clean()  # type: ignore[misc]
        except ValidationError:
            for key, _limit in keys:
                # add() starts the window; incr() keeps its expiry.
                if not cache.add(key, 1, WINDOW_SECONDS):
                    try:
                        cache.incr(key)
                    except ValueError:
                        cache.add(key, 1, WINDOW_SECONDS)
            raise
        cache.delete(keys[0][0])
        return cleaned

    @property
    def throttled(self) -> bool:
        """Return whether the attempt was refused by the throttle."""
        form: Any = self
        return bool(form.has_error(NON_FIELD_ERRORS, code=THROTTLED))


class ThrottledAuthenticationForm(ThrottleMixin, AuthenticationForm):
    """The site's sign-in form, throttled."""


class ThrottledAdminAuthenticationForm(ThrottleMixin, AdminAuthenticationForm):
    """The admin's sign-in form (staff only), throttled alike."""


class ThrottledLoginView(LoginView):
    """The site's sign-in page: answers 429 while an attempt is refused."""

    authentication_form = ThrottledAuthenticationForm

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        response = super().form_invalid(form)
        if isinstance(form, ThrottleMixin) and form.throttled:
            response.status_code = 429
        return response
