"""Fixtures of the security tests: the explorer's readers and small history."""

from __future__ import annotations

from tests.explorer.conftest import History, history, make_user, reader

__all__ = ["History", "history", "make_user", "reader"]
