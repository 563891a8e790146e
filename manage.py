#!/usr/bin/env python3
"""Run administrative tasks for batchboard's standalone site."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "batchboard.site.settings")
    try:
        import django  # noqa: F401
    except ModuleNotFoundError:
        sys.stderr.write(
            "batchboard: Django is not installed for this Python; run 'make venv' "
            "in the checkout, then use .venv/bin/python manage.py (or run "
            "'make demo').\n"
        )
        sys.exit(2)
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line
    from django.db import DatabaseError

    from batchboard.site.database import explain_database_error

    # Configuration and database faults are the operator's to fix: one
    # sentence naming the setting serves better than a traceback.
    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        sys.stderr.write(f"batchboard: {exc}\n")
        sys.exit(2)
    except DatabaseError as exc:
        sys.stderr.write(f"batchboard: {explain_database_error(exc)}\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
