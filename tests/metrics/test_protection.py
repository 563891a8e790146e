"""/metrics refuses a scraper without the token or outside the allowlist."""

from __future__ import annotations

import pytest
from django.test import Client, override_settings
from django.urls import reverse

from tests.metrics.conftest import TOKEN, settings_with

pytestmark = pytest.mark.django_db


def _get(address: str = "127.0.0.1", authorization: str | None = None) -> int:
    headers = {"Authorization": authorization} if authorization else {}
    response = Client(REMOTE_ADDR=address).get(
        reverse("batchboard:metrics"), headers=headers
    )
    if response.status_code != 200:
        # A refusal echoes nothing the request carried.
        assert TOKEN.encode() not in response.content
        assert b"wrong" not in response.content
    return response.status_code


@override_settings(BATCHBOARD=settings_with())
def test_the_token_is_required() -> None:
    assert _get() == 401
    assert _get(authorization="Bearer wrong") == 401
    assert _get(authorization=f"Basic {TOKEN}") == 401
    assert _get(authorization="Bearer ") == 401
    assert _get(authorization=f"Bearer {TOKEN}") == 200


@override_settings(BATCHBOARD=settings_with())
def test_a_refusal_asks_for_a_bearer_token() -> None:
    response = Client().get(reverse("batchboard:metrics"))
    assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert response["Content-Type"].startswith("text/plain")


@override_settings(
    BATCHBOARD=settings_with(
        METRICS_TOKEN="", METRICS_ALLOWED_NETWORKS=["10.0.0.0/8", "2001:db8::/32"]
    )
)
def test_the_network_allowlist() -> None:
    assert _get("10.1.2.3") == 200
    assert _get("2001:db8::7") == 200
    assert _get("192.0.2.1") == 403
    assert _get("not-an-address") == 403


@override_settings(BATCHBOARD=settings_with(METRICS_ALLOWED_NETWORKS=["10.0.0.0/8"]))
def test_with_both_set_both_must_admit() -> None:
    assert _get("10.1.2.3", f"Bearer {TOKEN}") == 200
    assert _get("10.1.2.3") == 401
    assert _get("192.0.2.1", f"Bearer {TOKEN}") == 403


@override_settings(BATCHBOARD=settings_with(METRICS_TOKEN=""))
def test_unprotected_it_answers_only_a_debug_site() -> None:
    assert _get() == 403
    with override_settings(DEBUG=True):
        assert _get() == 200


@override_settings(BATCHBOARD=settings_with())
def test_a_failing_database_is_a_503_naming_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from django.db import OperationalError

    from batchboard.metrics import database

    def fail() -> None:
        raise OperationalError("password=hunter2 host=db.internal")

    monkeypatch.setattr(database, "read", fail)
    response = Client().get(
        reverse("batchboard:metrics"), headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert response.status_code == 503
    assert response["Retry-After"] == "30"
    assert b"hunter2" not in response.content
    assert b"db.internal" not in response.content
