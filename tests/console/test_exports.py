"""The purge plan's and a bulk plan's downloads: the plan the page shows."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings
from django.urls import reverse

from tests.factories import actions as factories

PURGE = reverse("batchboard:purge_export")


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _body(response: Any) -> str:
    assert response.status_code == 200, response.status_code
    return b"".join(response.streaming_content).decode()


def _digest(page: str) -> str:
    found = re.search(r'<code class="bb-hex"[^>]*>([0-9a-f]{64})</code>', page)
    assert found is not None
    return found.group(1)


def test_the_purge_plan_downloads_with_its_digest(viewer_user: User) -> None:
    old = [
        factories.execution("FAILED", updated_at=factories.ago(days=40))
        for _ in range(2)
    ]
    client = _client(viewer_user)
    query = {"job_name": "nightly-import"}
    digest = _digest(
        client.get(reverse("batchboard:purge_plan"), query).content.decode()
    )
    rows = list(csv.DictReader(io.StringIO(_body(client.get(PURGE, query)))))
    assert sorted(int(row["execution_id"]) for row in rows) == sorted(e.pk for e in old)
    assert {row["plan_digest"] for row in rows} == {digest}
    assert {row["status"] for row in rows} == {"FAILED"}
    assert all(row["updated_at"].endswith("Z") for row in rows)
    lines = _body(client.get(PURGE, {**query, "format": "ndjson"})).splitlines()
    records = [json.loads(line) for line in lines]
    assert {record["plan_digest"] for record in records} == {digest}


@override_settings(BATCHBOARD={"EXPORT_MAX_ROWS": 1})
def test_a_purge_plan_over_the_bound_is_truncated(viewer_user: User) -> None:
    for _ in range(2):
        factories.execution("FAILED", updated_at=factories.ago(days=40))
    query = {"job_name": "nightly-import", "format": "ndjson"}
    lines = _body(_client(viewer_user).get(PURGE, query)).splitlines()
    assert json.loads(lines[-1]) == {"limit": 1, "rows": 1, "truncated": True}


def test_the_purge_export_needs_the_page_s_permission(db: None) -> None:
    query = {"job_name": "nightly-import"}
    assert Client().get(PURGE, query).status_code == 302
    nobody = _client(factories.user("nobody"))
    assert nobody.get(PURGE, query).status_code == 403


def test_bad_purge_criteria_answer_400(viewer_user: User) -> None:
    client = _client(viewer_user)
    assert client.get(PURGE).status_code == 400
    bad_age = {"job_name": "nightly-import", "min_age_seconds": "5"}
    assert client.get(PURGE, bad_age).status_code == 400


def _bulk(source: str = "executions", action: str = "ABANDON") -> tuple[str, str]:
    return (
        reverse("batchboard:bulk_plan", args=[source, action]),
        reverse("batchboard:bulk_plan_export", args=[source, action]),
    )


def test_a_bulk_plan_downloads_with_its_digest(admin_user: User) -> None:
    name = "=cmd|' /C calc'!A0"
    failed = [
        factories.execution("FAILED", job_instance=factories.instance(name))
        for _ in range(3)
    ]
    client = _client(admin_user)
    page_url, url = _bulk()
    query = {"status": "FAILED", "job": name}
    page = client.get(page_url, query).content.decode()
    digest = _digest(page)
    assert f"{url}?status=FAILED&amp;job=" in page
    rows = list(csv.DictReader(io.StringIO(_body(client.get(url, query)))))
    assert [int(row["target_id"]) for row in rows] == [e.pk for e in failed]
    assert {row["plan_digest"] for row in rows} == {digest}
    assert {row["action"] for row in rows} == {"ABANDON"}
    assert {row["expected"] for row in rows} == {"APPLIED"}
    response = client.get(url, {**query, "format": "ndjson", "after": "99"})
    assert "bulk-plan-executions-abandon" in response["Content-Disposition"]
    records = [json.loads(line) for line in _body(response).splitlines()]
    assert len(records) == 3
    assert {record["plan_digest"] for record in records} == {digest}


def test_a_bulk_plan_export_refuses_what_the_review_refuses(
    admin_user: User, db: None
) -> None:
    client = _client(admin_user)
    _page, url = _bulk("instances", "ABANDON")
    assert client.get(url, {"job": "x"}).status_code == 400
    _page, url = _bulk("executions", "NOPE")
    assert client.get(url).status_code == 404
    _page, url = _bulk()
    assert client.get(url, {"status": "NOPE"}).status_code == 400
    nobody = _client(factories.user("nobody"))
    assert nobody.get(url).status_code == 403
    assert Client().get(url).status_code == 302


@pytest.mark.django_db
def test_the_purge_page_links_its_download(viewer_user: User) -> None:
    factories.execution("FAILED", updated_at=factories.ago(days=40))
    page = (
        _client(viewer_user)
        .get(reverse("batchboard:purge_plan"), {"job_name": "nightly-import"})
        .content.decode()
    )
    assert f"{PURGE}?job_name=nightly-import&amp;format=csv" in page
