"""
The standalone site's security headers and error reports, defined once.

:data:`CONTENT_SECURITY_POLICY` is the one policy: Django 6 sends it through
its own ``ContentSecurityPolicyMiddleware`` (``SECURE_CSP``), Django 5.2
through :class:`batchboard.site.middleware.SecurityHeadersMiddleware`; the
header text is the same either way. batchboard's pages and Django's admin
need no inline script or style, so the policy allows none and needs no
nonce.
"""

from __future__ import annotations

import re

import django
from django.views.debug import SafeExceptionReporterFilter

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "PERMISSIONS_POLICY",
    "SiteExceptionReporterFilter",
    "builtin_csp",
    "csp_header",
]

#: Directive -> sources. Django 6's ``SECURE_CSP`` takes this shape as is
#: (its ``CSP.SELF`` and ``CSP.NONE`` are these quoted keywords).
CONTENT_SECURITY_POLICY: dict[str, list[str]] = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "img-src": ["'self'", "data:"],
    "object-src": ["'none'"],
    "base-uri": ["'none'"],
    "frame-ancestors": ["'none'"],
    "form-action": ["'self'"],
}

#: Browser features no batchboard page uses, switched off.
PERMISSIONS_POLICY = ", ".join(
    f"{feature}=()"
    for feature in (
        "accelerometer",
        "camera",
        "geolocation",
        "gyroscope",
        "magnetometer",
        "microphone",
        "payment",
        "usb",
    )
)


def csp_header(policy: dict[str, list[str]] = CONTENT_SECURITY_POLICY) -> str:
    """Return ``policy`` as the text of a ``Content-Security-Policy`` header."""
    return "; ".join(
        " ".join([directive, *sources]) for directive, sources in policy.items()
    )


def builtin_csp() -> bool:
    """Return whether this Django sends the policy itself (6.0 and later)."""
    return django.VERSION >= (6, 0)


class SiteExceptionReporterFilter(SafeExceptionReporterFilter):
    """
    Hide more than Django does on error reports and the debug page.

    Besides Django's own (keys, tokens, secrets, passwords, cookies), every
    setting or variable whose name ends in ``_URL`` is hidden: the site's
    database URLs carry the password in clear.
    """

    hidden_settings = re.compile(
        r"API|AUTH|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|_URL$",
        flags=re.IGNORECASE,
    )
