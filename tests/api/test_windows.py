"""The API's executions list takes the executions page's time window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client

from batchboard.api import tokens
from batchboard.vocabulary import READ
from tests import factories

pytestmark = pytest.mark.django_db

NIGHT = datetime(2026, 3, 1, 2, 0, tzinfo=UTC)


def _get(secret: str, **params: str) -> Any:
    response = Client().get(
        "/api/v1/executions/", params, HTTP_AUTHORIZATION=f"Bearer {secret}"
    )
    return response.status_code, response.json()


@pytest.fixture
def secret() -> str:
    _token, value = tokens.create_token(factories.administrator(), "reader", [READ])
    return value


def test_a_window_lists_by_last_update_and_pages_with_its_cursor(secret: str) -> None:
    factories.definition("nightly")
    runs = [
        factories.execution(
            factories.instance("nightly"),
            "COMPLETED",
            created_at=NIGHT - timedelta(minutes=30),
            updated_at=NIGHT + timedelta(minutes=minutes),
        )
        for minutes in (50, 10, 30, 70)
    ]
    window = {"since": "2026-03-01T02:00Z", "until": "2026-03-01T03:00Z"}
    status, body = _get(secret, page_size="2", **window)
    assert status == 200, body
    shown = [row["execution_id"] for row in body["data"]]
    cursor = body["page"]["next_cursor"]
    assert cursor
    status, body = _get(secret, page_size="2", cursor=cursor, **window)
    assert status == 200, body
    shown += [row["execution_id"] for row in body["data"]]
    # Updated 02:50, 02:30, 02:10; 03:10 is outside.
    assert shown == [runs[0].pk, runs[2].pk, runs[1].pk]
    # The cursor is bound to the window.
    status, body = _get(secret, page_size="2", cursor=cursor, since="2h")
    assert status == 409, body
    assert [each["code"] for each in body["diagnostics"]] == ["CURSOR_REJECTED"]


@pytest.mark.parametrize(
    "params",
    [{"since": "soon"}, {"since": "2026-03-01T03:00Z", "until": "2026-03-01T02:00Z"}],
)
def test_a_bad_window_is_refused_with_its_code(
    secret: str, params: dict[str, str]
) -> None:
    status, body = _get(secret, **params)
    assert status == 400
    assert [each["code"] for each in body["diagnostics"]] == ["INVALID_WINDOW"]
