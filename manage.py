#!/usr/bin/env python3
"""Run administrative tasks for batchboard's standalone site."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "batchboard.site.settings")
    from django.core.management import execute_from_command_line

    from batchboard.site.database import SiteConfigurationError

    try:
        execute_from_command_line(sys.argv)
    except SiteConfigurationError as exc:
        sys.stderr.write(f"batchboard: {exc}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
