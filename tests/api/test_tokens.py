"""API tokens: scope, expiry, revocation, the owner's permissions now, throttle, CSRF."""

from __future__ import annotations

import json
import logging
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client, override_settings
from django.utils import timezone

from batchboard.api import tokens
from batchboard.models import OperatorRequest
from batchboard.vocabulary import LIFECYCLE, READ
from tests.factories import actions as factories

pytestmark = pytest.mark.django_db


def _call(secret: str, method: str, url: str, body: object = None) -> tuple[int, dict]:  # type: ignore[type-arg]
    client = Client()
    headers = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    if method == "POST":
        response = client.post(
            url, json.dumps(body), content_type="application/json", **headers
        )
    else:
        response = client.get(url, **headers)
    assert response["Content-Type"] == "application/json"
    assert response.content.endswith(b"}\n")
    return response.status_code, json.loads(response.content)


def _stop(
    secret: str, execution_id: int, operation_id: str = "op-1"
) -> tuple[int, dict]:  # type: ignore[type-arg]
    return _call(
        secret,
        "POST",
        f"/api/v1/executions/{execution_id}/stop/",
        {"expected_version": 3, "operation_id": operation_id},
    )


def test_a_read_token_cannot_stop_an_execution() -> None:
    owner = factories.operator()
    _token, secret = tokens.create_token(owner, "reader", [READ])
    execution = factories.execution("STARTED")
    status, body = _stop(secret, execution.pk)
    assert status == 403
    assert body["outcome"] == "error"
    assert body["diagnostics"][0]["code"] == "PERMISSION_DENIED"
    assert not OperatorRequest.objects.exists()
    # It still reads.
    status, body = _call(secret, "GET", f"/api/v1/executions/{execution.pk}/")
    assert status == 200 and body["data"]["execution_id"] == execution.pk


def test_a_lifecycle_token_of_an_operator_stops() -> None:
    _token, secret = tokens.create_token(factories.operator(), "ops", [READ, LIFECYCLE])
    execution = factories.execution("STARTED")
    status, body = _stop(secret, execution.pk)
    assert status == 200
    assert body["data"]["outcome"] == "APPLIED"
    assert body["data"]["record"]["actor"] == "user:operator"


def test_a_token_never_does_more_than_its_owner() -> None:
    # A viewer's LIFECYCLE token: the class is named, the owner lacks it.
    _token, secret = tokens.create_token(factories.viewer(), "v", [READ, LIFECYCLE])
    status, body = _stop(secret, factories.execution("STARTED").pk)
    assert status == 403


def test_a_revoked_or_expired_token_gets_401() -> None:
    owner = factories.operator()
    revoked, revoked_secret = tokens.create_token(owner, "r", [READ])
    tokens.revoke(revoked)
    expired, expired_secret = tokens.create_token(owner, "e", [READ])
    tokens.ApiToken.objects.filter(pk=expired.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    for secret in (revoked_secret, expired_secret, "bbt_unknown", "garbage"):
        status, body = _call(secret, "GET", "/api/v1/jobs/")
        assert status == 401
        assert body["diagnostics"][0]["code"] == "TOKEN_REJECTED"


def test_an_owner_who_loses_a_permission_is_refused_on_the_next_call() -> None:
    owner = factories.operator()
    _token, secret = tokens.create_token(owner, "ops", [READ, LIFECYCLE])
    first, second = factories.execution("STARTED"), factories.execution("STARTED")
    assert _stop(secret, first.pk, "op-a")[0] == 200
    owner.groups.clear()
    owner.user_permissions.remove(
        *Permission.objects.filter(codename="operate_lifecycle")
    )
    assert not User.objects.get(pk=owner.pk).has_perm("batchboard.operate_lifecycle")
    status, body = _stop(secret, second.pk, "op-b")
    assert status == 403
    assert body["diagnostics"][0]["code"] == "PERMISSION_DENIED"


def test_an_inactive_owner_is_refused() -> None:
    owner = factories.operator()
    _token, secret = tokens.create_token(owner, "ops", [READ])
    User.objects.filter(pk=owner.pk).update(is_active=False)
    assert _call(secret, "GET", "/api/v1/jobs/")[0] == 401


@override_settings(BATCHBOARD={"API_TOKEN_RATE": 2})
def test_each_token_is_throttled() -> None:
    owner = factories.operator()
    _a, first = tokens.create_token(owner, "a", [READ])
    _b, second = tokens.create_token(owner, "b", [READ])
    assert _call(first, "GET", "/api/v1/jobs/")[0] == 200
    assert _call(first, "GET", "/api/v1/jobs/")[0] == 200
    status, body = _call(first, "GET", "/api/v1/jobs/")
    assert status == 429 and body["diagnostics"][0]["code"] == "TOKEN_THROTTLED"
    # Another token of the same owner has its own count.
    assert _call(second, "GET", "/api/v1/jobs/")[0] == 200
    assert tokens.ApiToken.objects.get(pk=_a.pk).window_count == 2


def test_the_secret_is_stored_hashed() -> None:
    token, secret = tokens.create_token(factories.operator(), "x", [READ])
    stored = tokens.ApiToken.objects.filter(pk=token.pk).values().get()
    assert secret not in json.dumps(stored, default=str)
    assert stored["label"] == secret[:12]
    assert len(secret) > 40


def test_a_session_write_needs_the_csrf_token() -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(factories.operator())
    execution = factories.execution("STARTED")
    response = client.post(
        f"/api/v1/executions/{execution.pk}/stop/",
        json.dumps({"expected_version": 3, "operation_id": "op-c"}),
        content_type="application/json",
    )
    assert response.status_code == 403
    assert json.loads(response.content)["diagnostics"][0]["code"] == "CSRF_FAILED"
    # A session read needs none, and a token call carries no cookie.
    assert client.get("/api/v1/jobs/").status_code == 200
    _token, secret = tokens.create_token(
        factories.administrator(), "t", [READ, LIFECYCLE]
    )
    assert _stop(secret, execution.pk, "op-d")[0] == 200


def test_an_anonymous_call_gets_401() -> None:
    response = Client().get("/api/v1/jobs/")
    assert response.status_code == 401
    assert json.loads(response.content)["outcome"] == "error"


def test_the_token_never_reaches_the_request_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from batchboard.site.middleware import RequestLogMiddleware

    _token, secret = tokens.create_token(factories.operator(), "t", [READ])
    with (
        override_settings(
            MIDDLEWARE=[
                "batchboard.site.middleware.RequestLogMiddleware",
                *_middleware(),
            ]
        ),
        caplog.at_level(logging.INFO),
    ):
        _call(secret, "GET", "/api/v1/jobs/?cursor=zz")
        _call("bbt_" + "x" * 43, "GET", "/api/v1/jobs/")
    assert RequestLogMiddleware
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "/api/v1/jobs/" in logged
    assert secret not in logged and "bbt_" not in logged and "Bearer" not in logged


def _middleware() -> list[str]:
    from django.conf import settings

    return list(settings.MIDDLEWARE)


def test_the_token_page_shows_the_secret_once_and_revokes() -> None:
    user = factories.viewer()
    client = Client()
    client.force_login(user)
    response = client.post(
        "/tokens/", {"name": "bot", "classes": ["READ"], "days": "7"}
    )
    assert response.status_code == 200
    token = tokens.ApiToken.objects.get(user=user)
    page = response.content.decode()
    assert "data-bb-secret" in page
    secret = page.split("<code data-bb-secret>")[1].split("</code>")[0]
    assert tokens.find(secret) == token
    listing = client.get("/tokens/").content.decode()
    assert "data-bb-secret" not in listing and token.label in listing
    # Another user cannot revoke it; its owner can.
    other = Client()
    other.force_login(factories.operator())
    assert other.post("/tokens/revoke/", {"token": token.pk}).status_code == 302
    assert tokens.find(secret) == token
    assert client.post("/tokens/revoke/", {"token": token.pk}).status_code == 302
    assert tokens.find(secret) is None


def test_an_administrator_creates_and_revokes_tokens_in_the_admin() -> None:
    admin = User.objects.create_superuser("root", "root@example.com", "pw")
    owner = factories.operator()
    client = Client()
    client.force_login(admin)
    response = client.post(
        "/admin/batchboard/apitoken/add/",
        {"user": owner.pk, "name": "ci", "scope": ["READ", "LIFECYCLE"], "days": "30"},
        follow=True,
    )
    assert response.status_code == 200
    token = tokens.ApiToken.objects.get(user=owner)
    assert token.class_set == {"READ", "LIFECYCLE"}
    shown = [str(m) for m in response.context["messages"]]
    assert any("bbt_" in message for message in shown)
    assert client.get("/admin/batchboard/apitoken/").status_code == 200
    client.post(
        "/admin/batchboard/apitoken/",
        {"action": "revoke_tokens", "_selected_action": [token.pk]},
    )
    token.refresh_from_db()
    assert token.revoked_at is not None


@pytest.mark.parametrize("rate", [0, -1, True, "600", 100_001])
def test_a_bad_token_rate_fails_its_check(rate: object) -> None:
    from batchboard.checks import _api_errors

    with override_settings(BATCHBOARD={"API_TOKEN_RATE": rate}):
        assert [error.id for error in _api_errors()] == ["batchboard.E020"]
    assert _api_errors() == []


def test_every_page_links_to_the_token_page() -> None:
    client = Client()
    client.force_login(factories.viewer())
    assert 'href="/tokens/"' in client.get("/audit/").content.decode()
