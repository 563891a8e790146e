"""The audit log: merged, keyset-paged, filtered only where an index serves."""

from __future__ import annotations

import re
from datetime import timedelta
from itertools import count
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from batchboard.explorer import audit
from batchboard.models import JobInstance, OperatorRequest, RetentionAction
from tests import factories
from tests.explorer.conftest import make_user
from tests.explorer.test_performance import _plan_of
from tests.explorer.test_sqlite_plans import _plan, _unbounded

HTMX = {"HTTP_HX_REQUEST": "true"}
_ops = count(1)
ROW = re.compile(r"(request|retention) <span class=\"bb-muted\">#(\d+)</span>")


@pytest.fixture
def auditor(db: None) -> Client:
    user = make_user("auditor")
    user.user_permissions.add(
        Permission.objects.get(
            content_type__app_label="batchboard", codename="view_retentionaction"
        )
    )
    client = Client()
    client.force_login(user)
    return client


def _retention(
    action: str = "HOLD", instance: JobInstance | None = None, **fields: Any
) -> RetentionAction:
    purge = action == "APPLY_PURGE"
    return RetentionAction.objects.create(
        job_instance=instance,
        action=action,
        operation_id=fields.pop("operation_id", f"bb-{next(_ops):032x}"),
        actor_ref="user:administrator",
        reason_code="AUDIT" if not purge else "RETENTION_POLICY",
        plan_digest=b"\xab" * 32 if purge else None,
        batch_bound=100 if purge else None,
        outcome_class="APPLIED",
        applied_at=fields.pop("applied_at", factories.now()),
        **fields,
    )


def _history() -> tuple[Any, Any]:
    now = factories.now()
    instance = factories.instance("nightly")
    execution = factories.execution(instance, "FAILED")
    other = factories.execution(factories.instance("billing"), "FAILED")
    for minutes in range(12):
        at = now - timedelta(minutes=60 - 3 * minutes)
        if minutes % 3 == 0:
            _retention("HOLD", instance, applied_at=at)
        else:
            target = execution if minutes % 2 else other
            factories.operator_request(target, "ABANDON", requested_at=at)
    return instance, execution


def _walk(client: Client, url: str, between: Any = None) -> list[tuple[str, int]]:
    seen: list[tuple[str, int]] = []
    response = client.get(url)
    while True:
        assert response.status_code == 200
        body = response.content.decode()
        seen += [(kind, int(pk)) for kind, pk in ROW.findall(body)]
        found = re.search(r'hx-get="([^"]*cursor=[^"]+)"', body)
        if found is None:
            return seen
        if between is not None:
            between()
        response = client.get(found.group(1).replace("&amp;", "&"), **HTMX)


def test_paged_end_to_end_across_inserts_without_repeats(
    auditor: Client, db: None
) -> None:
    instance, execution = _history()
    expected = {("request", r.pk) for r in OperatorRequest.objects.all()} | {
        ("retention", r.pk) for r in RetentionAction.objects.all()
    }

    def insert() -> None:
        factories.operator_request(execution, "STOP")
        _retention("RELEASE_HOLD", instance)

    seen = _walk(auditor, reverse("batchboard:audit") + "?size=3", insert)
    assert len(seen) == len(set(seen))
    assert set(seen) == expected
    # Newest first across both tables.
    times = [
        (OperatorRequest if kind == "request" else RetentionAction)
        .objects.values_list(
            "requested_at" if kind == "request" else "applied_at", flat=True
        )
        .get(pk=pk)
        for kind, pk in seen
    ]
    assert times == sorted(times, reverse=True)


def test_tables_whose_times_run_against_their_ids_lose_no_row(
    auditor: Client, db: None
) -> None:
    """Requests recorded back-dated (ids rising, times falling) are all listed."""
    _instance, execution = _history()
    now = factories.now()
    for minutes in range(9):
        factories.operator_request(
            execution, "STOP", requested_at=now - timedelta(days=1, minutes=minutes)
        )
    _retention("HOLD", None, applied_at=now)
    expected = {("request", r.pk) for r in OperatorRequest.objects.all()} | {
        ("retention", r.pk) for r in RetentionAction.objects.all()
    }
    seen = _walk(auditor, reverse("batchboard:audit") + "?size=4")
    assert len(seen) == len(set(seen)) and set(seen) == expected


def test_merge_takes_a_prefix_of_each_table() -> None:
    first = [{"id": 3, "at": 1}, {"id": 2, "at": 5}, {"id": 1, "at": 9}]
    second = [{"id": 8, "at": 4}]
    merged = audit.merge(first, second, 3)
    assert [row["id"] for row in merged] == [8, 3, 2]


def test_rows_link_to_targets_by_id_and_show_no_digest(
    auditor: Client, db: None
) -> None:
    _instance, execution = _history()
    purge = _retention(
        "APPLY_PURGE", deleted_job_executions=3, deleted_step_executions=4
    )
    body = auditor.get(reverse("batchboard:audit")).content.decode()
    assert f'href="{reverse("batchboard:execution", args=[execution.pk])}"' in body
    assert f"#{purge.pk}" in body and "7 rows purged" in body
    assert "ab" * 32 not in body
    for digest in OperatorRequest.objects.values_list("request_digest", flat=True):
        assert bytes(digest).hex() not in body


def test_action_and_job_filters_are_exact(auditor: Client, db: None) -> None:
    _history()
    holds = auditor.get(reverse("batchboard:audit"), {"action": "HOLD"})
    kinds = {kind for kind, _pk in ROW.findall(holds.content.decode())}
    assert kinds == {"retention"}
    job = auditor.get(reverse("batchboard:audit"), {"job": "nightly"}).content.decode()
    nightly = set(
        OperatorRequest.objects.filter(
            job_execution__job_instance__job_name="nightly"
        ).values_list("pk", flat=True)
    )
    shown = {int(pk) for kind, pk in ROW.findall(job) if kind == "request"}
    assert shown == nightly


def test_filters_without_an_index_are_said_not_applied(
    auditor: Client, db: None
) -> None:
    _history()
    assert audit.served("action") and audit.served("job")
    assert not audit.served("actor") and not audit.served("outcome")
    assert not audit.served("time")
    plain = auditor.get(reverse("batchboard:audit")).content.decode()
    response = auditor.get(reverse("batchboard:audit"), {"actor": "user:nobody"})
    body = response.content.decode()
    assert response.status_code == 200
    assert "Not applied: Actor." in body
    # Plain words: no schema column names on the page.
    assert "ob_operator_request" not in body and "actor_ref" not in body
    assert ROW.findall(body) == ROW.findall(plain)


@pytest.mark.parametrize(
    "params", [{"action": "DELETE"}, {"outcome": "MAYBE"}, {"cursor": "zz"}]
)
def test_bad_filters_get_400(auditor: Client, db: None, params: dict[str, str]) -> None:
    assert auditor.get(reverse("batchboard:audit"), params).status_code == 400


def test_a_cursor_of_another_filter_gets_400(auditor: Client, db: None) -> None:
    _history()
    body = auditor.get(reverse("batchboard:audit") + "?size=2").content.decode()
    cursor = re.search(r"cursor=([0-9a-f]+)", body)
    assert cursor is not None
    response = auditor.get(
        reverse("batchboard:audit"),
        {"size": 2, "cursor": cursor.group(1), "action": "HOLD"},
    )
    assert response.status_code == 400


def test_read_permission_required(reader: Client, db: None) -> None:
    assert reader.get(reverse("batchboard:audit")).status_code == 403
    anonymous = Client().get(reverse("batchboard:audit"))
    assert anonymous.status_code == 302
    nobody = Client()
    nobody.force_login(User.objects.create_user("nobody"))
    assert nobody.get(reverse("batchboard:audit")).status_code == 403


def test_execution_and_instance_pages_link_to_the_audit_log(
    auditor: Client, db: None
) -> None:
    instance, execution = _history()
    link = f'href="{reverse("batchboard:audit")}?job=nightly"'
    for url in (
        reverse("batchboard:execution", args=[execution.pk]),
        reverse("batchboard:instance", args=[instance.pk]),
    ):
        assert link in auditor.get(url).content.decode()
    header = auditor.get(reverse("batchboard:index")).content.decode()
    assert f'href="{reverse("batchboard:audit")}"' in header


def test_the_page_says_in_one_sentence_why_the_other_filters_are_left_out(
    auditor: Client, db: None
) -> None:
    body = auditor.get(reverse("batchboard:audit")).content.decode()
    assert (
        "Outcome, actor and time cannot be filtered: the audit tables have no "
        "index on them, so such a filter would read the whole audit history. "
        "Filter by job, action or operation id, then read the outcome, actor "
        "and time in the rows, newest first."
    ) in body
    # Left out, not shown disabled; no schema column names.
    for name in ("outcome", "actor", "since", "until"):
        assert not re.search(rf'<(?:input|select) name="{name}"', body)
    assert "disabled" not in body.split("</form>", 1)[0]
    assert "ob_operator_request" not in body and "applied_at" not in body


def test_rows_name_their_job_and_a_purge_says_it_records_none(
    auditor: Client, db: None
) -> None:
    instance, execution = _history()
    orphan = factories.operator_request(execution, "STOP")
    OperatorRequest.objects.filter(pk=orphan.pk).update(job_instance=None)
    _retention("APPLY_PURGE", None)
    body = auditor.get(reverse("batchboard:audit")).content.decode()
    assert '<th scope="col">Job</th>' in body
    rows = {
        (kind, int(pk)): row
        for row in body.split("<tr>")[2:]
        for kind, pk in ROW.findall(row)
    }
    url = reverse("batchboard:audit")
    for (kind, pk), row in rows.items():
        if kind == "request":
            request = OperatorRequest.objects.get(pk=pk)
            name = request.job_execution.job_instance.job_name
        else:
            action = RetentionAction.objects.get(pk=pk)
            if action.action == "APPLY_PURGE":
                assert "not recorded" in row and "rows purged" in row
                continue
            name = action.job_instance.job_name
        assert f'<a class="bb-cut" href="{url}?job={name}"' in row, row
    # A request that names only its execution still names its job.
    assert 'href="/audit/?job=nightly"' in rows[("request", orphan.pk)]


def test_the_job_column_costs_no_statement(auditor: Client, db: None) -> None:
    _history()
    url = reverse("batchboard:audit")
    auditor.get(url)
    with CaptureQueriesContext(connection) as captured:
        auditor.get(url)
    audit_reads = [
        query["sql"]
        for query in captured
        if "ob_operator_request" in query["sql"]
        or "ob_retention_action" in query["sql"]
    ]
    assert len(audit_reads) == 2


# -- the operation id -------------------------------------------------------------


def _request(target: Any, action: str, operation_id: str) -> OperatorRequest:
    request = factories.operator_request(target, action)
    OperatorRequest.objects.filter(pk=request.pk).update(operation_id=operation_id)
    return request


def _operations() -> dict[str, Any]:
    """One operation id recorded by three actions in both tables, and its kin."""
    instance, execution = _history()
    return {
        "cli-42": {
            ("request", _request(execution, "STOP", "cli-42").pk),
            ("request", _request(execution, "ABANDON", "cli-42").pk),
            ("retention", _retention("HOLD", instance, operation_id="cli-42").pk),
        },
        "others": {
            ("request", _request(execution, "STOP", "cli-420").pk),
            ("request", _request(execution, "RECOVER", "CLI-42").pk),
            ("request", _request(execution, "RESTART", "cli-4").pk),
            ("retention", _retention("HOLD", instance, operation_id="xcli-42").pk),
        },
    }


def test_the_log_shows_each_rows_operation_id_as_a_filter_link(
    auditor: Client, db: None
) -> None:
    _operations()
    body = auditor.get(reverse("batchboard:audit")).content.decode()
    assert '<th scope="col">Operation id</th>' in body
    link = f'href="{reverse("batchboard:audit")}?operation=cli-42"'
    assert body.count(link) == 3
    assert "<code>CLI-42</code>" in body and "<code>cli-420</code>" in body


def test_the_operation_filter_is_exact(auditor: Client, db: None) -> None:
    """Neither a prefix, a longer id, another case nor a substring matches."""
    recorded = _operations()
    url = reverse("batchboard:audit")
    body = auditor.get(url, {"operation": "cli-42"}).content.decode()
    assert {(kind, int(pk)) for kind, pk in ROW.findall(body)} == recorded["cli-42"]
    assert 'name="operation" value="cli-42"' in body
    # With the action filter: the one row of that action.
    stop = auditor.get(url, {"operation": "cli-42", "action": "STOP"})
    (only,) = ROW.findall(stop.content.decode())
    assert ("request", int(only[1])) in recorded["cli-42"]
    assert OperatorRequest.objects.get(pk=only[1]).action == "STOP"
    holds = auditor.get(url, {"operation": "cli-42", "action": "HOLD"})
    assert [kind for kind, _pk in ROW.findall(holds.content.decode())] == ["retention"]


def test_an_operation_id_paged_one_row_at_a_time_lists_each_once(
    auditor: Client, db: None
) -> None:
    recorded = _operations()
    seen = _walk(auditor, reverse("batchboard:audit") + "?size=1&operation=cli-42")
    assert len(seen) == len(set(seen)) == 3
    assert set(seen) == recorded["cli-42"]


def test_an_unknown_operation_id_says_nothing_was_recorded_with_it(
    auditor: Client, db: None
) -> None:
    _operations()
    response = auditor.get(reverse("batchboard:audit"), {"operation": "bb-unknown"})
    assert response.status_code == 200
    body = response.content.decode()
    assert ROW.findall(body) == []
    assert (
        "No operator request or retention action was recorded with the operation "
        "id <code>bb-unknown</code>." in body
    )
    assert "Operation ids match exactly, case included" in body
    assert "Nothing recorded." not in body


@pytest.mark.parametrize(
    "operation",
    [
        "x" * 65,
        "a" * 10_000,
        "cli-42\x00",
        "cli-42\n",
        "\x1b[31mred",
        "cli 42",
        "cli-42%",
        "caf\u00e9",
        "<script>",
        "cli-42' OR '1'='1",
    ],
)
def test_a_hostile_operation_id_gets_400_without_echo(
    auditor: Client, db: None, operation: str
) -> None:
    response = auditor.get(reverse("batchboard:audit"), {"operation": operation})
    assert response.status_code == 400
    body = response.content.decode()
    assert "<script>" not in body and "OR &#x27;1" not in body
    assert "x" * 65 not in body


def test_the_operation_filter_costs_what_an_unfiltered_page_does(
    auditor: Client, db: None
) -> None:
    _operations()
    url = reverse("batchboard:audit")
    auditor.get(url)

    def statements(params: dict[str, str]) -> list[str]:
        with CaptureQueriesContext(connection) as captured:
            assert auditor.get(url, params).status_code == 200
        return [
            query["sql"]
            for query in captured.captured_queries
            if "ob_operator_request" in query["sql"]
            or "ob_retention_action" in query["sql"]
        ]

    plain = statements({})
    filtered = statements({"operation": "cli-42"})
    assert len(filtered) == len(plain) == 2
    assert all("UNION ALL" in sql for sql in filtered)
    assert all("operation_id" in sql for sql in filtered)


def _lookup(
    model: Any, fields: tuple[str, ...], below: int | None = None, job: str = ""
) -> None:
    where = audit._filters({"job": job})[0 if model is OperatorRequest else 1]
    audit.lookup(model, fields, below, where, "cli-42", "", 50)


TABLES = {
    "ob_operator_request": (OperatorRequest, ("id", "action", "operation_id")),
    "ob_retention_action": (RetentionAction, ("id", "action", "operation_id")),
}


@pytest.mark.parametrize("table", TABLES)
def test_the_operation_lookup_searches_the_unique_index_on_sqlite(
    db: None, table: str
) -> None:
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's plan; PostgreSQL's is tested below")
    _operations()
    model, fields = TABLES[table]
    for below, job in ((None, ""), (10**6, ""), (None, "nightly")):
        with CaptureQueriesContext(connection) as captured:
            _lookup(model, fields, below, job)
        (statement,) = captured.captured_queries
        lines = _plan(statement["sql"])
        assert not _unbounded(lines), lines
        searches = [line for line in lines if line.startswith(f"SEARCH {table} ")]
        branches = len(audit.TABLE_ACTIONS[model])
        assert len(searches) == branches, lines
        assert all("(action=? AND operation_id=?)" in line for line in searches)


def _seed_audit_in_bulk(total: int) -> None:
    """Insert ``total`` rows into each audit table, every action in turn."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO ob_operator_request (action, authorization_class, "
            "operation_id, actor_ref, request_digest, outcome_class, requested_at) "
            "SELECT (ARRAY['LAUNCH','RESTART','STOP','ABANDON','RECOVER'])"
            "[1 + g %% 5], 'LIFECYCLE', 'bb-' || g, 'user:bulk', "
            "sha256(g::text::bytea), 'APPLIED', now() "
            "FROM generate_series(1, %s) g",
            [total],
        )
        cursor.execute(
            "INSERT INTO ob_retention_action (action, operation_id, actor_ref, "
            "reason_code, outcome_class, applied_at) "
            "SELECT (ARRAY['HOLD','RELEASE_HOLD'])[1 + g %% 2], 'bb-' || g, "
            "'user:bulk', 'AUDIT', 'APPLIED', now() "
            "FROM generate_series(1, %s) g",
            [total],
        )
        cursor.execute("ANALYZE ob_operator_request")
        cursor.execute("ANALYZE ob_retention_action")


@pytest.mark.postgresql
@pytest.mark.parametrize("table", TABLES)
def test_the_operation_lookup_uses_the_unique_index_on_postgresql(
    db: None, table: str
) -> None:
    _seed_audit_in_bulk(30000)
    model, fields = TABLES[table]
    for below, job in ((None, ""), (20000, ""), (None, "nightly")):
        plan = _plan_of(lambda below=below, job=job: _lookup(model, fields, below, job))
        assert f"{table}_identity_unique" in plan, plan
        assert plan.count(f"{table}_identity_unique") == len(
            audit.TABLE_ACTIONS[model]
        ), plan
        assert "Seq Scan" not in plan and f"{table}_pkey" not in plan, plan
