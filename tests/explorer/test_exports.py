"""The executions list's and the audit log's downloads."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from batchboard import export
from batchboard.digests import JobParameter
from tests import factories
from tests.explorer.conftest import make_user
from tests.explorer.test_audit import _retention

SECRET = "hunter2-parameter-value"
PAYLOAD = "payload-never-shown"


def _body(response: Any) -> str:
    assert response.streaming
    return b"".join(response.streaming_content).decode()


def _csv(response: Any) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(_body(response))))


def _ndjson(response: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in _body(response).splitlines()]


def _history(job: str = "nightly-import", count: int = 3) -> list[Any]:
    rows = []
    for run in range(count):
        instance = factories.instance(
            job, {"token": JobParameter.string(SECRET), "run": JobParameter.u64(run)}
        )
        rows.append(
            factories.execution(instance, "FAILED", context_payload={"note": PAYLOAD})
        )
    return rows


@pytest.fixture
def auditor(db: None) -> Client:
    user = make_user("auditor", values=True)
    user.user_permissions.add(
        Permission.objects.get(
            content_type__app_label="batchboard", codename="view_retentionaction"
        )
    )
    client = Client()
    client.force_login(user)
    return client


URL = reverse("batchboard:executions_export")


def test_the_executions_list_downloads_as_csv(value_reader: Client) -> None:
    executions = _history()
    response = value_reader.get(URL, {"status": "FAILED", "format": "csv"})
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    disposition = response["Content-Disposition"]
    assert disposition.startswith('attachment; filename="batchboard-executions-')
    assert disposition.endswith('.csv"')
    rows = _csv(response)
    assert [int(row["execution_id"]) for row in rows] == sorted(
        (e.pk for e in executions), reverse=True
    )
    first = rows[0]
    assert first["status"] == "FAILED"
    assert first["failure.category"] == "user_component"
    # ISO-8601 UTC, to the millisecond.
    assert first["timestamps.ended_at"].endswith("Z")
    assert first["timestamps.ended_at"][10] == "T"
    assert first["context.kind"] == "execution_context"


def test_the_executions_list_downloads_as_ndjson(value_reader: Client) -> None:
    executions = _history()
    response = value_reader.get(URL, {"format": "ndjson", "job": "nightly-import"})
    assert response["Content-Type"].startswith("application/x-ndjson")
    records = _ndjson(response)
    assert {record["execution_id"] for record in records} == {e.pk for e in executions}
    assert records[0]["job_name"] == "nightly-import"
    assert records[0]["timestamps"]["created_at"].endswith("Z")


def test_the_export_follows_the_page_s_filters_never_its_cursor(
    reader: Client,
) -> None:
    _history("nightly-import", 2)
    other = _history("weekly-report", 1)
    factories.execution(factories.instance("weekly-report"), "COMPLETED")
    query = {"status": "FAILED", "job": "weekly-report", "size": "1", "cursor": "x"}
    rows = _ndjson(reader.get(URL, {**query, "format": "ndjson"}))
    assert [row["execution_id"] for row in rows] == [other[0].pk]


def test_nothing_redacted_reaches_a_file(value_reader: Client) -> None:
    """Parameter values and payloads stay out, even for a value reader."""
    _history()
    for form in export.FORMATS:
        body = _body(value_reader.get(URL, {"format": form}))
        assert SECRET not in body
        assert PAYLOAD not in body
        assert "token" not in body


def test_a_formula_job_name_is_neutralised(reader: Client) -> None:
    name = "=cmd|' /C calc'!A0"
    factories.execution(factories.instance(name), "FAILED")
    rows = _csv(reader.get(URL, {"format": "csv"}))
    assert [row["job_name"] for row in rows] == [f"'{name}"]
    # NDJSON is data, not a spreadsheet: the name is as recorded.
    assert _ndjson(reader.get(URL, {"format": "ndjson"}))[0]["job_name"] == name


@override_settings(BATCHBOARD={"EXPORT_MAX_ROWS": 2})
def test_a_truncated_export_says_so(reader: Client) -> None:
    _history(count=3)
    lines = _body(reader.get(URL, {"format": "csv"})).splitlines()
    assert len(lines) == 4
    assert lines[-1] == "# truncated: the file stops at 2 rows (EXPORT_MAX_ROWS)"
    records = _ndjson(reader.get(URL, {"format": "ndjson"}))
    assert records[-1] == {"limit": 2, "rows": 2, "truncated": True}


@override_settings(BATCHBOARD={"EXPORT_MAX_ROWS": 3})
def test_a_list_of_exactly_the_bound_is_not_truncated(
    reader: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export, "PAGE_SIZE", 3)
    _history(count=3)
    records = _ndjson(reader.get(URL, {"format": "ndjson"}))
    assert len(records) == 3
    assert "truncated" not in records[-1]


def test_bad_input_answers_400_before_streaming(reader: Client) -> None:
    for query in ({"status": "NOPE"}, {"format": "xlsx"}, {"job": "x" * 200}):
        response = reader.get(URL, query)
        assert response.status_code == 400, query
        assert not response.streaming


def test_the_export_needs_the_page_s_permissions(db: None) -> None:
    _history(count=1)
    anonymous = Client().get(URL)
    assert anonymous.status_code == 302
    assert reverse("login") in anonymous["Location"] or "login" in anonymous["Location"]
    nobody = Client()
    nobody.force_login(factories.user("nobody"))
    assert nobody.get(URL).status_code == 403
    audit = Client()
    audit.force_login(make_user("no-retention"))
    assert audit.get(reverse("batchboard:audit_export")).status_code == 403


def _streamed_queries(client: Client, count: int, size: int) -> int:
    """Return the statements an export of ``count`` rows runs while streaming."""
    export.PAGE_SIZE = size  # type: ignore[misc]
    response = client.get(URL, {"format": "ndjson"})
    with CaptureQueriesContext(connection) as streamed:
        records = _ndjson(response)
    assert len(records) == count
    return len(streamed)


def test_the_export_reads_one_page_per_statement_group(
    reader: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The statements grow with the pages read, never with the rows."""
    monkeypatch.setattr(export, "PAGE_SIZE", export.PAGE_SIZE)
    _history(count=12)
    # The first page is read by the view; the rest while the file is sent.
    three_pages_of_four = _streamed_queries(reader, 12, 4)
    three_pages_of_six = _streamed_queries(reader, 12, 6)
    one_page_of_twelve = _streamed_queries(reader, 12, 12)
    two_more_pages = three_pages_of_four - one_page_of_twelve
    assert two_more_pages > 0
    assert three_pages_of_six - one_page_of_twelve == two_more_pages // 2
    # Each further page costs the same statements, whatever its rows.
    per_page = two_more_pages // 2
    assert per_page <= 6


def test_the_audit_log_downloads_as_csv_and_ndjson(auditor: Client) -> None:
    execution = factories.execution(factories.instance("nightly-import"), "STARTED")
    request = factories.operator_request(execution, "STOP")
    hold = _retention("HOLD", execution.job_instance)
    url = reverse("batchboard:audit_export")
    rows = _csv(auditor.get(url, {"format": "csv"}))
    assert {row["record"] for row in rows} == {"operator_request", "retention_action"}
    by_record = {row["record"]: row for row in rows}
    assert by_record["operator_request"]["request_id"] == str(request.pk)
    assert by_record["operator_request"]["requested_at"].endswith("Z")
    assert by_record["retention_action"]["action_id"] == str(hold.pk)
    records = _ndjson(auditor.get(url, {"format": "ndjson", "action": "HOLD"}))
    assert [record["action_id"] for record in records] == [hold.pk]
    assert auditor.get(url, {"action": "NOPE"}).status_code == 400


def test_the_pages_link_their_downloads_with_their_filters(
    reader: Client, auditor: Client
) -> None:
    _history(count=1)
    page = reader.get(
        reverse("batchboard:executions"), {"status": "FAILED", "size": "5"}
    ).content.decode()
    assert f"{URL}?status=FAILED&amp;format=csv" in page
    assert f"{URL}?status=FAILED&amp;format=ndjson" in page
    audit = auditor.get(
        reverse("batchboard:audit"), {"action": "HOLD"}
    ).content.decode()
    assert f"{reverse('batchboard:audit_export')}?action=HOLD&amp;format=csv" in audit
