"""
batchboard's Django admin: read-only registrations of every model, the
keyset changelist and the operator actions (holds, stops, abandons).

Django's admin autodiscovery imports this package; the registrations run
on import.
"""

from __future__ import annotations

from batchboard.admin import registrations, tokens  # noqa: F401
