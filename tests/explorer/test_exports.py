"""The executions list's and the audit log's downloads."""

from __future__ import annotations

import csv
import io
import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from batchboard import export, schema, vocabulary
from batchboard.api import projections
from batchboard.digests import JobParameter
from batchboard.explorer.exports import EXECUTION_COLUMNS
from batchboard.models import JobExecution
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


def test_a_page_of_the_executions_file_is_one_statement(
    reader: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """
    A page's rows come with their definitions and context descriptors
    (stored sizes, never the payloads), and on PostgreSQL with their times
    as text: one statement a page, and no second read by id.
    """
    monkeypatch.setattr(export, "PAGE_SIZE", 4)
    _history(count=12)
    response = reader.get(URL, {"format": "csv"})
    with CaptureQueriesContext(connection) as streamed:
        assert len(_csv(response)) == 12
    reads = [
        query["sql"]
        for query in streamed.captured_queries
        if '"ob_job_execution"' in query["sql"]
    ]
    # The second and third pages, then the empty page a full one leads to.
    assert len(reads) == 3
    payload = '"ob_job_execution"."context_payload"'
    stored_size = (
        f"pg_column_size({payload})"
        if connection.vendor == "postgresql"
        else f"length(CAST({payload} AS BLOB))"
    )
    for sql in reads:
        assert '"ob_job_definition"' in sql
        assert sql.count(payload) == sql.count(stored_size) == 1
        assert "owner_token" not in sql.replace(
            '"ob_job_execution"."owner_token" IS NOT NULL', ""
        )
        assert ("to_char(" in sql) is (connection.vendor == "postgresql")


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


# -- the file against the projection, on generated histories --------------------------

#: Job names a file must write with care: formula starts, CSV's delimiter
#: and quote, non-ASCII (a name holds no control and no outer whitespace).
NAMES = (
    "nightly-import",
    "=cmd|' /C calc'!A0",
    "+sum",
    "-dash",
    "@at",
    "comma,name",
    'quote"name',
    "ünïcødé ✓ 🚀",
    "back\\slash\u2028line",
)
#: Other recorded text (exit codes, revisions) may hold those too.
AWKWARD = (*NAMES, "\ttab", "\rreturn", "new\nline", "ctrl\x01", " space")
#: Before and after 1970, with and without a fraction of a second.
BASES = (
    datetime(2025, 6, 1, 12, 0, tzinfo=UTC),
    datetime(1999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
)


def _moment(rng: random.Random, base: datetime) -> datetime:
    """Return a time after ``base``: whole seconds, milliseconds or microseconds."""
    moment = base + timedelta(seconds=rng.randrange(86_400 * 30))
    precision = rng.choice(("second", "milli", "micro", "micro"))
    if precision == "milli":
        return moment + timedelta(milliseconds=rng.randrange(1000))
    if precision == "micro":
        return moment + timedelta(microseconds=rng.choice((999_999, 1, 500, 0)))
    return moment


def _generate(rng: random.Random) -> list[JobExecution]:
    """Record a history of awkward names, times and optional fields."""
    jobs = rng.sample(NAMES, 3)
    executions = []
    for job in jobs:
        revisions = [factories.definition(job, rng.choice(AWKWARD)) for _ in range(2)]
        for _ in range(rng.randint(1, 4)):
            instance = factories.instance(job)
            attempts = rng.randint(1, 3)
            for attempt in range(1, attempts + 1):
                status = rng.choice(
                    vocabulary.STATUSES if attempt == attempts else schema.FINISHED
                )
                failure = None
                if status == "FAILED" or rng.random() < 0.2:
                    failure = (
                        rng.choice(schema.FAILURE_CATEGORIES),
                        rng.randrange(1, 10**12),
                    )
                created = _moment(rng, rng.choice(BASES))
                execution = factories.execution(
                    instance,
                    status,
                    job_definition=rng.choice(revisions),
                    attempt=attempt,
                    created_at=created,
                    duration=_moment(rng, created) - created,
                    context_payload={"k": "v" * rng.randrange(300)},
                    exit_code=rng.choice(AWKWARD),
                    owner_token=rng.choice((None, rng.randbytes(16))),
                    stop_requested_by=rng.choice((None, "ops")),
                    version=rng.randrange(10**6),
                    failure=failure,
                )
                if rng.random() < 0.3:
                    # A later update, at another precision than the rest.
                    execution.updated_at = _moment(rng, execution.updated_at)
                    execution.save(update_fields=["updated_at"])
                executions.append(execution)
    return executions


def _projected(executions: list[JobExecution]) -> list[dict[str, Any]]:
    """Return the API's projections of the executions, read through the ORM."""
    extras = projections.execution_extras([execution.pk for execution in executions])
    records = []
    for execution in executions:
        row = {
            "id": execution.pk,
            "job_instance_id": execution.job_instance_id,
            "job_name": execution.job_instance.job_name,
            "owner_recorded": execution.owner_token is not None,
            **{
                name: getattr(execution, name)
                for name in (
                    "attempt",
                    "status",
                    "exit_code",
                    "failure_category",
                    "failure_id",
                    "created_at",
                    "started_at",
                    "ended_at",
                    "updated_at",
                    "stop_requested_at",
                    "version",
                )
            },
        }
        records.append(
            projections.execution(row, extras[execution.pk], projections.iso)
        )
    return records


def _listed(
    executions: list[JobExecution], query: dict[str, Any]
) -> list[JobExecution]:
    """Return the executions the list shows under ``query``, in its order."""
    statuses = query.get("status", ())
    statuses = (statuses,) if isinstance(statuses, str) else statuses
    job = query.get("job")
    kept = [
        execution
        for execution in executions
        if (not statuses or execution.status in statuses)
        and (job is None or execution.job_instance.job_name == job)
    ]
    if "since" in query:
        since = datetime.fromisoformat(query["since"])
        until = datetime.fromisoformat(query["until"])
        kept = [e for e in kept if since <= e.updated_at < until]
        return sorted(kept, key=lambda e: (e.updated_at, e.pk), reverse=True)
    if job is not None:
        return sorted(kept, key=lambda e: (e.job_instance_id, e.attempt), reverse=True)
    return sorted(kept, key=lambda e: e.pk, reverse=True)


def _bound(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("seed", range(6))
def test_the_executions_file_is_the_projection_s_on_generated_histories(
    reader: Client, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """
    Byte for byte, both formats, every filter shape, across pages and at
    the row bound: the file a download streams (its rows read flat, times
    written by the database) is the one the API's projection of each
    execution, read through the ORM, written by the default layout gives.
    """
    rng = random.Random(seed)
    executions = _generate(rng)
    for execution in executions:
        execution.refresh_from_db()
    job = rng.choice(executions).job_instance.job_name
    recent = sorted(e.updated_at for e in executions if e.updated_at.year > 2000)
    since, until = rng.sample(recent, 2) if len(recent) > 1 else (recent[0],) * 2
    since, until = min(since, until), max(since, until) + timedelta(seconds=1)
    window = {"since": _bound(since), "until": _bound(until)}
    queries_ = (
        {},
        {"status": "FAILED"},
        {"status": ["FAILED", "COMPLETED", "STARTED"]},
        {"job": job},
        {"job": job, "status": ["COMPLETED", "STOPPED"]},
        window,
        {**window, "job": job, "status": "COMPLETED"},
    )
    monkeypatch.setattr(export, "PAGE_SIZE", rng.choice((1, 2, 3, 7, 500)))
    for query in queries_:
        listed = _listed(executions, query)
        limit = rng.randint(1, len(listed) + 2)
        for form in export.FORMATS:
            expected = b"".join(
                export.encode(_projected(listed), form, EXECUTION_COLUMNS, limit)
            )
            with override_settings(BATCHBOARD={"EXPORT_MAX_ROWS": limit}):
                response = reader.get(URL, {**query, "format": form})
            assert b"".join(response.streaming_content) == expected, (query, form)
