"""
The API's OpenAPI 3.1 document, served at ``api/v1/schema/``.

Every answer, success or failure, is the CLI's envelope; the document
describes it once (``Envelope``) and each path by its command, parameters
and body. Tests validate the document and every response against it.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from batchboard.api import output
from batchboard.api.exits import CATEGORIES
from batchboard.api.requests import TIMEOUT_PARAM

DIAGNOSTIC = {
    "type": "object",
    "required": ["code", "detail"],
    "additionalProperties": False,
    "properties": {"code": {"type": "string"}, "detail": {"type": "string"}},
}
PAGE = {
    "type": "object",
    "required": ["next_cursor", "page_size", "returned"],
    "additionalProperties": False,
    "properties": {
        "next_cursor": {"type": ["string", "null"], "pattern": "^[0-9a-f]+$"},
        "page_size": {"type": "integer", "minimum": 1, "maximum": 500},
        "returned": {"type": "integer", "minimum": 0},
    },
}
ENVELOPE = {
    "type": "object",
    "required": [
        "command",
        "data",
        "diagnostics",
        "outcome",
        "schema_version",
        "truncated",
    ],
    "additionalProperties": False,
    "properties": {
        "command": {"type": "string"},
        "data": {},
        "diagnostics": {
            "type": "array",
            "items": {"$ref": "#/components/schemas/Diagnostic"},
        },
        "outcome": {"enum": ["success", "rejected", "conflict", "unknown", "error"]},
        "page": {"$ref": "#/components/schemas/Page"},
        "schema_version": {"const": 1},
        "truncated": {"type": "boolean"},
    },
}

LIST = ["page_size", "cursor"]

#: path, method, command, query parameters, body fields (required, optional).
OPERATIONS: list[
    tuple[str, str, str, list[str], tuple[list[str], list[str]] | None]
] = [
    ("/jobs/", "get", "job list", LIST, None),
    ("/jobs/{job_name}/", "get", "job show", [], None),
    ("/jobs/{job_name}/instances/", "get", "instance list", LIST, None),
    ("/instances/{instance_id}/", "get", "instance show", [], None),
    ("/instances/{instance_id}/executions/", "get", "execution list", LIST, None),
    ("/unresolved/", "get", "execution list", [*LIST, "unresolved_age"], None),
    (
        "/executions/",
        "get",
        "execution recent",
        [*LIST, "status", "job", "since", "until"],
        None,
    ),
    ("/executions/{execution_id}/", "get", "execution show", [], None),
    ("/executions/{execution_id}/steps/", "get", "execution steps", LIST, None),
    (
        "/executions/{execution_id}/history/",
        "get",
        "execution history",
        [*LIST, "record"],
        None,
    ),
    ("/executions/{execution_id}/recovery/", "get", "recovery propose", [], None),
    ("/steps/{step_id}/", "get", "step show", [], None),
    ("/steps/{step_id}/partitions/", "get", "execution partitions", LIST, None),
    (
        "/executions/{execution_id}/stop/",
        "post",
        "execution stop",
        [],
        (["expected_version", "operation_id"], []),
    ),
    (
        "/executions/{execution_id}/abandon/",
        "post",
        "execution abandon",
        [],
        (["expected_version", "operation_id", "reason"], []),
    ),
    (
        "/executions/{execution_id}/recover/",
        "post",
        "execution recover",
        [],
        (
            [
                "directive",
                "evidence_digest",
                "expected_version",
                "operation_id",
                "reason",
            ],
            ["failure_category", "failure_id"],
        ),
    ),
    (
        "/instances/{instance_id}/hold/",
        "post",
        "retention hold",
        [],
        (["operation_id", "reason"], []),
    ),
    (
        "/instances/{instance_id}/release/",
        "post",
        "retention release",
        [],
        (["operation_id", "reason"], []),
    ),
    ("/audit/", "get", "audit list", [*LIST, "action", "job", "operation"], None),
    ("/bulk/", "get", "bulk list", LIST, None),
    (
        "/bulk/plan/",
        "post",
        "bulk plan",
        [],
        (
            ["action", "list"],
            [
                "status",
                "job",
                "age",
                "directive",
                "reason",
                "failure_category",
                "failure_id",
            ],
        ),
    ),
    (
        "/bulk/apply/",
        "post",
        "bulk apply",
        [],
        (
            ["action", "digest", "filters", "items"],
            ["bulk_id", "reason", "directive", "failure_category", "failure_id"],
        ),
    ),
    (
        "/retention/plan/",
        "post",
        "retention plan",
        [],
        (["job", "older_than"], ["batch", "status"]),
    ),
    (
        "/retention/apply/",
        "post",
        "retention apply",
        [],
        (
            ["job", "older_than", "operation_id", "plan_digest", "reason"],
            ["batch", "status", "dry_run"],
        ),
    ),
]

FIELD_TYPES: dict[str, Any] = {
    "expected_version": {"type": "integer", "minimum": 0},
    "failure_id": {"type": "integer", "minimum": 1},
    "batch": {"type": "integer", "minimum": 1, "maximum": 1000},
    "status": {"type": ["array", "string"], "items": {"type": "string"}},
    "age": {"type": "integer", "minimum": 60},
    "dry_run": {"type": "boolean"},
    "filters": {"type": "object"},
    "items": {"type": "array", "items": {"type": "object"}},
}


def _responses() -> dict[str, Any]:
    statuses = sorted({row.status for row in CATEGORIES.values()} | {405})
    return {
        str(status): {
            "description": "the CLI's envelope",
            "content": {
                "application/json": {
                    "schema": {"$ref": "#/components/schemas/Envelope"}
                }
            },
        }
        for status in statuses
    }


def document() -> dict[str, Any]:
    """Return the OpenAPI document (paths relative to the API's root)."""
    paths: dict[str, Any] = {}
    for route, method, command, params, fields in OPERATIONS:
        parameters = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            for name in _path_names(route)
        ] + [
            {
                "name": name,
                "in": "query",
                "required": name == "unresolved_age",
                "schema": {"type": "string"},
            }
            # Every read takes the CLI's global timeout.
            for name in [*params, *([TIMEOUT_PARAM] if method == "get" else [])]
        ]
        operation: dict[str, Any] = {
            "operationId": f"{method}:{route}",
            "summary": command,
            "parameters": parameters,
            "responses": _responses(),
            "security": [{"bearer": []}, {"session": []}],
        }
        if fields is not None:
            required, optional = fields
            operation["requestBody"] = {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": required,
                            "properties": {
                                name: FIELD_TYPES.get(name, {"type": "string"})
                                for name in [*required, *optional]
                            },
                        }
                    }
                },
            }
        paths.setdefault(route, {})[method] = operation
    return {
        "openapi": "3.1.0",
        "info": {"title": "batchboard API", "version": "1"},
        "servers": [{"url": "."}],
        "paths": paths,
        "components": {
            "schemas": {"Envelope": ENVELOPE, "Diagnostic": DIAGNOSTIC, "Page": PAGE},
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "session": {"type": "apiKey", "in": "cookie", "name": "sessionid"},
            },
        },
    }


def _path_names(route: str) -> list[str]:
    return [part[1:-1] for part in route.split("/") if part.startswith("{")]


@csrf_exempt
def openapi(request: HttpRequest) -> HttpResponse:
    """Serve the document as JSON (public: it describes, it reads nothing)."""
    if request.method not in ("GET", "HEAD"):
        response = output.failure(
            "schema", "USAGE", "METHOD_NOT_ALLOWED", "the method is not allowed"
        ).response()
        response.status_code = 405
        response["Allow"] = "GET, HEAD"
        return response
    response = HttpResponse(
        json.dumps(document(), sort_keys=True, indent=1),
        content_type="application/json",
    )
    response["Cache-Control"] = "private, no-store"
    return response
