"""The API under an embedding site's own prefix, in the same envelope."""

from __future__ import annotations

import json

import pytest
from django.test import Client, override_settings

from batchboard.api import tokens
from batchboard.vocabulary import LIFECYCLE, READ
from tests.factories import actions as factories

pytestmark = pytest.mark.django_db


@override_settings(ROOT_URLCONF="tests.embedding.host.hostsite.urls")
def test_an_embedding_site_serves_the_api_under_its_prefix() -> None:
    _token, secret = tokens.create_token(factories.operator(), "t", [READ, LIFECYCLE])
    execution = factories.execution("STARTED")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    shown = client.get(f"/ops/batch/api/v1/executions/{execution.pk}/")
    assert shown.status_code == 200
    assert json.loads(shown.content)["data"]["execution_id"] == execution.pk
    index = json.loads(client.get("/ops/batch/api/v1/").content)
    assert index["command"] == "api index"
    stopped = client.post(
        f"/ops/batch/api/v1/executions/{execution.pk}/stop/",
        json.dumps({"expected_version": 3, "operation_id": "embedded-1"}),
        content_type="application/json",
    )
    assert json.loads(stopped.content)["data"]["outcome"] == "APPLIED"
    assert client.get("/api/v1/jobs/").status_code == 404
