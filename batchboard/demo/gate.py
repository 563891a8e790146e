"""
The demo's one gate: demo data is written only where ``BATCHBOARD_DEMO=1``.

Every demo command that writes (history, demo logins) asks :func:`require_demo`
first thing in ``handle()``, before it reads, migrates, creates or bumps
anything, so a command pointed at a production database by mistake leaves it
exactly as it was.
"""

from __future__ import annotations

import os

from django.conf import settings
from django.core.management.base import CommandError

#: The environment variable that marks a process as the throwaway demo.
VARIABLE = "BATCHBOARD_DEMO"


def demo_enabled() -> bool:
    """Return whether this process runs the demo (``BATCHBOARD_DEMO=1``)."""
    # Read on every call: the environment decides, never a cached setting.
    return os.environ.get(VARIABLE) == "1"


def require_demo(command: str, alias: str) -> None:
    """
    Raise :class:`CommandError` unless ``BATCHBOARD_DEMO=1``.

    The refusal is one sentence naming the variable and the target database
    by alias and ``NAME`` only (never a URL, user or password). It opens no
    connection: the name comes from the settings.
    """
    if demo_enabled():
        return
    name = settings.DATABASES.get(alias, {}).get("NAME") or "?"
    raise CommandError(
        f"{command} writes demo data and runs only with {VARIABLE}=1, so it "
        f"left the database {alias!r} (NAME {str(name)!r}) untouched."
    )
