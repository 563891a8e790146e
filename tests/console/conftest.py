"""Fixtures of these tests: the action tests' users, one per group."""

from __future__ import annotations

from tests.actions.conftest import admin_user, operator_user, viewer_user

__all__ = ["admin_user", "operator_user", "viewer_user"]
