"""The standalone site's settings as production reads them, for in-process tests."""

from __future__ import annotations

import os
import runpy
from typing import Any
from unittest import mock

#: The variables a production deployment sets (docs/production.md).
PRODUCTION_ENV = {
    "DJANGO_DEBUG": "0",
    "SECRET_KEY": "k2Vh0JpZ8wq3N7xYcR5tL1mB9sD4fG6hJ0kQ2wE8rT3yU7iO5pA1sD9fG4hJ6kL",
    "ALLOWED_HOSTS": "testserver",
    "SECURE_SSL_REDIRECT": "0",
}


def site_settings(**extra: str) -> dict[str, Any]:
    """Return the names the site's settings module defines under production."""
    env = {**PRODUCTION_ENV, **extra}
    with mock.patch.dict(os.environ, env):
        return runpy.run_module("batchboard.site.settings")


def site_middleware() -> list[str]:
    """Return the site's middleware, for ``override_settings(MIDDLEWARE=...)``."""
    return list(site_settings()["MIDDLEWARE"])
