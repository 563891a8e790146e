"""
The OpenAPI document, and every answer checked against it, bad input included.

Whatever a caller sends (malformed JSON, wrong types, unknown fields, 64 KiB
strings, damaged cursors, bad tokens), the answer is the envelope with its
error object: JSON, below 500, never HTML or a traceback.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate

from batchboard.api import schema, tokens
from batchboard.api.urls import urlpatterns
from batchboard.vocabulary import DESTRUCTIVE, LIFECYCLE, READ
from tests.factories import actions as factories

pytestmark = pytest.mark.django_db

DOCUMENT = schema.document()
ENVELOPE = Draft202012Validator(
    {"$ref": "#/components/schemas/Envelope", "components": DOCUMENT["components"]}
)


def check(response: Any) -> dict[str, Any]:
    """Assert ``response`` is one envelope under 500; return it parsed."""
    assert response.status_code < 500, response.content[:300]
    assert response["Content-Type"] == "application/json"
    text = response.content.decode("utf-8")
    assert text.endswith("}\n") and "\n" not in text[:-1]
    body = json.loads(text)
    ENVELOPE.validate(body)
    assert list(body) == sorted(body)
    assert "Traceback" not in text and "<html" not in text.lower()
    return body


def test_the_document_is_valid_openapi_3_1(client: Client) -> None:
    validate(DOCUMENT)
    response = client.get("/api/v1/schema/")
    assert response.status_code == 200
    assert json.loads(response.content)["openapi"] == "3.1.0"


def test_every_route_is_in_the_document() -> None:
    routes = {str(p.pattern) for p in urlpatterns} - {"schema/", "^.*$"}
    documented = {
        route.strip("/").replace("{", "<str:").replace("}", ">") + "/"
        for route in DOCUMENT["paths"]
    }
    assert routes == documented


@pytest.fixture
def world(db: None) -> dict[str, Any]:
    execution = factories.execution("STARTED")
    _token, secret = tokens.create_token(
        factories.administrator(), "all", [READ, LIFECYCLE, DESTRUCTIVE]
    )
    return {
        "execution": execution,
        "instance": execution.job_instance,
        "job": execution.job_instance.job_name,
        "secret": secret,
    }


def _concrete(route: str, world: dict[str, Any], value: str | None = None) -> str:
    filled = route
    for name, fill in (
        ("{job_name}", world["job"]),
        ("{instance_id}", str(world["instance"].pk)),
        ("{execution_id}", str(world["execution"].pk)),
        ("{step_id}", "1"),
    ):
        filled = filled.replace(name, value if value is not None else fill)
    return "/api/v1" + filled


def _operations() -> list[tuple[str, str]]:
    return [
        (route, method)
        for route, methods in DOCUMENT["paths"].items()
        for method in methods
    ]


@pytest.mark.parametrize(("route", "method"), _operations())
def test_every_route_answers_good_and_bad_input_with_the_envelope(
    world: dict[str, Any], route: str, method: str
) -> None:
    client = Client()
    auth = {"HTTP_AUTHORIZATION": f"Bearer {world['secret']}"}
    url = _concrete(route, world)
    huge = "x" * 65536
    if method == "get":
        check(client.get(url, **auth))
        for params in (
            {"cursor": "zz"},
            {"cursor": "00" * 60},
            {"cursor": huge},
            {"page_size": "0"},
            {"page_size": huge},
            {"unknown": "1"},
            {"status": huge, "unresolved_age": huge, "record": huge, "job": huge},
        ):
            check(client.get(url, params, **auth))
    else:
        operation = DOCUMENT["paths"][route]["post"]
        fields = operation["requestBody"]["content"]["application/json"]["schema"]
        for raw in (
            b"{",
            b"[]",
            b"null",
            b"\xff\xfe",
            json.dumps(dict.fromkeys(fields["properties"], huge)).encode(),
            json.dumps({name: [1] for name in fields["properties"]}).encode(),
            json.dumps(dict.fromkeys(fields["properties"], True)).encode(),
            json.dumps({"surprise": 1}).encode(),
            b"{}",
            b'{"a":' * 5000,
            b"[" * 10000,
        ):
            check(client.post(url, raw, content_type="application/json", **auth))
    for bad in ("0", "-1", "9" * 30, "x" * 300, "²"):
        check(client.get(_concrete(route, world, bad), **auth))
    check(client.get(url, HTTP_AUTHORIZATION="Bearer " + huge))
    check(client.get(url, HTTP_AUTHORIZATION="Basic abc"))
    check(client.get(url))


def test_an_unknown_path_and_method_answer_with_the_envelope(
    world: dict[str, Any],
) -> None:
    auth = {"HTTP_AUTHORIZATION": f"Bearer {world['secret']}"}
    body = check(Client().get("/api/v1/nothing/here/", **auth))
    assert body["diagnostics"][0]["code"] == "UNKNOWN_COMMAND"
    index = check(Client().get("/api/v1/", **auth))
    assert {
        "command": "execution stop",
        "method": "POST",
        "path": "executions/{execution_id}/stop/",
    } in index["data"]
    response = Client().delete("/api/v1/jobs/", **auth)
    assert response.status_code == 405
    check(response)


def test_control_characters_get_the_envelope(world: dict[str, Any]) -> None:
    auth = {"HTTP_AUTHORIZATION": f"Bearer {world['secret']}"}
    client = Client()
    check(client.get("/api/v1/jobs/a%00b/instances/", **auth))
    check(client.get("/api/v1/executions/", {"job": "a\x00b"}, **auth))
    body = check(
        client.post(
            "/api/v1/bulk/plan/",
            json.dumps({"action": "STOP", "list": "executions", "job": "a\x00b"}),
            content_type="application/json",
            **auth,
        )
    )
    assert body["diagnostics"][0]["code"] == "INVALID_VALUE"


def test_the_site_refuses_control_characters_in_the_envelope() -> None:
    from django.http import HttpRequest, HttpResponse
    from django.test import RequestFactory

    from batchboard.site.middleware import ControlCharactersMiddleware

    def never(request: HttpRequest) -> HttpResponse:
        raise AssertionError("reached the view")

    middleware = ControlCharactersMiddleware(never)
    response = middleware(RequestFactory().get("/api/v1/jobs/", {"cursor": "\x00"}))
    assert check(response)["diagnostics"][0]["code"] == "INVALID_VALUE"


def test_a_job_name_over_128_bytes_is_refused_not_cut(world: dict[str, Any]) -> None:
    auth = {"HTTP_AUTHORIZATION": f"Bearer {world['secret']}"}
    long = "é" * 65
    for url in (f"/api/v1/jobs/{long}/instances/", f"/api/v1/jobs/{long}/"):
        body = check(Client().get(url, **auth))
        assert body["diagnostics"][0]["code"] == "INVALID_JOB"
    body = check(Client().get("/api/v1/executions/", {"job": long}, **auth))
    assert body["diagnostics"][0]["code"] == "INVALID_JOB"
