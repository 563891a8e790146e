"""Fixtures of the action tests: one user per group and an audit-row reader."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from batchboard.models import OperatorRequest, RetentionAction
from tests.factories import actions as factories


@pytest.fixture
def admin_user(db: None) -> User:
    return factories.administrator()


@pytest.fixture
def operator_user(db: None) -> User:
    return factories.operator()


@pytest.fixture
def viewer_user(db: None) -> User:
    return factories.viewer()


def audit_row(action: str, operation_id: str) -> dict[str, Any]:
    """Return every column of the operator-request row, digests as bytes."""
    row = OperatorRequest.objects.filter(action=action, operation_id=operation_id)
    values = row.values().get()
    values["request_digest"] = bytes(values["request_digest"])
    return values


def retention_row(action: str, operation_id: str) -> dict[str, Any]:
    row = RetentionAction.objects.filter(action=action, operation_id=operation_id)
    values = row.values().get()
    if values["plan_digest"] is not None:
        values["plan_digest"] = bytes(values["plan_digest"])
    return values
