"""
Work per page is bounded: a constant number of statements whatever the page
size and depth, no OFFSET, and on PostgreSQL the instances-of-a-job query
walks the ``(job_name, id DESC)`` index even for a rare job deep in history.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from batchboard import cursors, vocabulary
from batchboard.explorer import overview, queries, relations
from tests import factories

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def deep(db: None) -> dict[str, Any]:
    now = factories.now()
    for index in range(8):
        factories.definition(f"job-{index}")
    instance = factories.instance("job-0", created_at=now - timedelta(days=2))
    executions = [
        factories.execution(
            instance, "FAILED", attempt=attempt, created_at=now - timedelta(days=1)
        )
        for attempt in range(1, 9)
    ]
    for _ in range(8):
        factories.instance("job-0")
    parent = executions[-1]
    steps = [factories.step(parent, f"s{index}", "COMPLETED") for index in range(8)]
    for ordinal in range(1, 9):
        factories.partition(steps[0], f"p{ordinal}", ordinal)
    for sequence in range(1, 9):
        factories.flow_decision(parent, sequence, f"n{sequence}")
        factories.operator_request(parent)
    return {"instance": instance, "parent": parent, "step": steps[0]}


def _count(client: Client, url: str, **headers: str) -> tuple[int, list[str]]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, **headers)
    assert response.status_code == 200, url
    return len(captured.captured_queries), [query["sql"] for query in captured]


def _deep_cursor(fetch: Any, depth: int) -> str:
    token = None
    for _ in range(depth):
        token = fetch(token).next_cursor
        assert token
    return token


LISTS = {
    "overview": (
        lambda d: reverse("batchboard:index"),
        lambda d, t: queries.job_names(1, t),
    ),
    "job": (
        lambda d: reverse("batchboard:job", args=["job-0"]),
        lambda d, t: queries.instances("job-0", 1, t),
    ),
    "instance": (
        lambda d: reverse("batchboard:instance", args=[d["instance"].pk]),
        lambda d, t: queries.instance_executions(d["instance"].pk, 1, t),
    ),
    "executions": (
        lambda d: reverse("batchboard:executions"),
        lambda d, t: queries.recent_executions("", "", 1, t),
    ),
    "statuses": (
        lambda d: reverse("batchboard:executions") + "?status=failed&status=completed",
        lambda d, t: queries.recent_executions(("FAILED", "COMPLETED"), "", 1, t),
    ),
    "execution": (
        lambda d: reverse("batchboard:execution", args=[d["parent"].pk]),
        lambda d, t: queries.steps(d["parent"].pk, 1, t),
    ),
    "step": (
        lambda d: reverse("batchboard:step", args=[d["step"].pk]),
        lambda d, t: queries.partitions(d["step"].pk, 1, t),
    ),
    "flow": (
        lambda d: reverse("batchboard:flow_decisions", args=[d["parent"].pk]),
        lambda d, t: queries.flow_decisions(d["parent"].pk, 1, t),
    ),
    "requests": (
        lambda d: reverse("batchboard:operator_requests", args=[d["parent"].pk]),
        lambda d, t: queries.operator_requests(d["parent"].pk, 1, t),
    ),
}


@pytest.mark.parametrize("name", LISTS)
def test_statements_per_page_do_not_grow(
    reader: Client, deep: dict[str, Any], name: str
) -> None:
    url_of, fetch = LISTS[name]
    url = url_of(deep)
    reader.get(url)  # warm the session and permission caches alike for every run
    url += "&" if "?" in url else "?"
    small, _ = _count(reader, url + "size=1")
    large, statements = _count(reader, url + "size=500")
    assert small == large
    counts = set()
    for depth in (1, 3, 6):
        token = _deep_cursor(lambda t: fetch(deep, t), depth)
        count, more = _count(reader, f"{url}size=1&cursor={token}", **HTMX)
        counts.add(count)
        statements += more
        plain, more = _count(reader, f"{url}size=1&cursor={token}")
        counts.add(plain - small)
        statements += more
    assert len(counts) <= 2, counts
    assert max(counts) <= small
    for sql in statements:
        assert " OFFSET " not in sql.upper()


def test_each_list_page_is_one_statement(deep: dict[str, Any]) -> None:
    """The ceiling is captured inside the statement that reads the first page."""
    for name, (_, fetch) in LISTS.items():
        with CaptureQueriesContext(connection) as first:
            page = fetch(deep, None)
        with CaptureQueriesContext(connection) as later:
            fetch(deep, page.next_cursor)
        expected = 1
        assert len(first) == expected, name
        assert len(later) == expected, name


def _plans_of(run: Callable[[], object]) -> list[str]:
    """Run ``run``; return the plan of each statement it issued, in order."""
    with CaptureQueriesContext(connection) as captured:
        run()
    plans = []
    for statement in captured.captured_queries:
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN " + statement["sql"])
            plans.append("\n".join(row[0] for row in cursor.fetchall()))
    return plans


def _plan_of(run: Callable[[], object]) -> str:
    """Run ``run``, which issues one statement, and return that statement's plan."""
    (plan,) = _plans_of(run)
    return plan


def _seed_history_in_bulk(rare_at: int, total: int) -> None:
    """Insert ``total`` instances of a busy job with a rare job's few early on."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO ob_job_instance (job_name, instance_key, "
            "identifying_parameters, created_at) "
            "SELECT CASE WHEN g BETWEEN %s AND %s + 4 THEN 'rare-job' "
            "ELSE 'busy-job' END, "
            "sha256(g::text::bytea), '{}'::jsonb, now() FROM generate_series(1, %s) g",
            [rare_at, rare_at, total],
        )
        cursor.execute("ANALYZE ob_job_instance")


@pytest.mark.postgresql
def test_instances_of_a_rare_job_use_the_name_index(db: None) -> None:
    _seed_history_in_bulk(rare_at=100, total=30000)
    first = queries.instances("rare-job", 2)
    assert len(first.rows) == 2 and first.next_cursor
    for token in (None, first.next_cursor):
        plan = _plan_of(lambda token=token: queries.instances("rare-job", 2, token))
        assert "ob_job_instance_name_identity" in plan, plan
        assert "Seq Scan on ob_job_instance" not in plan, plan
        assert "Sort" not in plan.split("->")[0], plan


@pytest.mark.postgresql
def test_executions_of_a_rare_job_walk_the_instance_index(db: None) -> None:
    """The job filter never hashes the whole execution table."""
    _seed_history_in_bulk(rare_at=100, total=30000)
    definition = factories.definition("busy-job")
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO ob_job_execution (job_instance_id, definition_id, attempt, "
            "status, exit_code, parameters, context_format, context_schema, "
            "context_schema_version, context_payload, created_at, started_at, "
            "ended_at, updated_at, version) SELECT id, %s, 1, 'COMPLETED', "
            "'COMPLETED', '{}'::jsonb, 1, 'x', 1, '{}'::jsonb, now(), now(), now(), "
            "now(), 0 FROM ob_job_instance",
            [definition.pk],
        )
        cursor.execute("ANALYZE ob_job_execution")
    first = queries.recent_executions("", "rare-job", 2)
    assert len(first.rows) == 2 and first.next_cursor
    for token in (None, first.next_cursor):
        plan = _plan_of(
            lambda token=token: queries.recent_executions("", "rare-job", 2, token)
        )
        assert "ob_job_instance_name_identity" in plan, plan
        assert "Hash Join" not in plan and "Seq Scan" not in plan, plan


@pytest.mark.postgresql
def test_overview_strip_of_a_rare_job_uses_the_name_index(db: None) -> None:
    _seed_history_in_bulk(rare_at=100, total=30000)
    plan = _plan_of(lambda: overview.job_strips(["rare-job"]))
    assert "ob_job_instance_name_identity" in plan, plan
    assert "ob_job_instance_pkey" not in plan, plan


@pytest.mark.postgresql
def test_running_counts_read_the_unresolved_executions_and_no_instance(
    db: None,
) -> None:
    _seed_history_in_bulk(rare_at=100, total=30000)
    plan = _plan_of(lambda: overview.running_counts(["rare-job", "busy-job"]))
    assert "ob_job_execution_one_unresolved" in plan, plan
    assert "Seq Scan on ob_job_execution" not in plan, plan
    assert "ob_job_instance" not in plan, plan


@pytest.mark.postgresql
@pytest.mark.parametrize(
    "statuses",
    [("STARTED", "UNKNOWN"), ("STOPPED", "COMPLETED")],
    ids=["rare", "common"],
)
def test_several_statuses_walk_each_status_and_stop(
    db: None, statuses: tuple[str, ...]
) -> None:
    """
    Each status is a limited walk of its own, merged by id: a rare set never
    reads the common rows, nor a common set sorts all of them.
    """
    _seed_history_in_bulk(rare_at=100, total=30000)
    definition = factories.definition("busy-job")
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO ob_job_execution (job_instance_id, definition_id, attempt, "
            "status, exit_code, parameters, context_format, context_schema, "
            "context_schema_version, context_payload, created_at, started_at, "
            "ended_at, updated_at, version) SELECT id, %s, 1, s, s, "
            "'{}'::jsonb, 1, 'x', 1, '{}'::jsonb, now(), now(), "
            "CASE WHEN id %% 1000 IN (0, 1) THEN NULL ELSE now() END, now(), 0 "
            "FROM (SELECT id, CASE WHEN id %% 1000 = 0 THEN 'STARTED' "
            "WHEN id %% 1000 = 1 THEN 'UNKNOWN' WHEN id %% 7 = 0 THEN 'STOPPED' "
            "ELSE 'COMPLETED' END AS s FROM ob_job_instance) AS i",
            [definition.pk],
        )
        cursor.execute("ANALYZE ob_job_execution")
    first = queries.recent_executions(statuses, "", 2)
    assert len(first.rows) == 2 and first.next_cursor
    for token in (None, first.next_cursor):
        plan = _plan_of(
            lambda token=token: queries.recent_executions(statuses, "", 2, token)
        )
        assert "Seq Scan on ob_job_execution" not in plan, plan
        # The walks, appended, each under its own limit; the page's rows
        # are the newest of their few ids.
        assert plan.startswith("Limit") and "Append" in plan, plan
        walks = plan.split("Append", 1)[1]
        assert walks.count("status)::text = ") == len(statuses), plan


@pytest.mark.postgresql
def test_a_failure_s_latest_attempt_is_an_index_lookup(db: None) -> None:
    """The attention panel asks each failure shown for its instance's last attempt."""
    _seed_history_in_bulk(rare_at=100, total=30000)
    definition = factories.definition("busy-job")
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO ob_job_execution (job_instance_id, definition_id, attempt, "
            "status, exit_code, parameters, context_format, context_schema, "
            "context_schema_version, context_payload, failure_category, failure_id, "
            "created_at, started_at, ended_at, updated_at, version) SELECT id, %s, "
            "1, 'FAILED', 'FAILED', '{}'::jsonb, 1, 'x', 1, '{}'::jsonb, "
            "'USER_COMPONENT', id, now(), now(), now(), now(), 0 "
            "FROM ob_job_instance",
            [definition.pk],
        )
        cursor.execute("ANALYZE ob_job_execution")
    failures = queries.recent_failures(50)
    assert len(failures) == 50
    plan = _plan_of(lambda: relations.latest_attempts(failures))
    assert "Seq Scan on ob_job_execution" not in plan, plan
    assert "ob_job_execution_instance_latest" in plan, plan


def _seed_timed_executions() -> None:
    """
    Give each of 30,000 instances an execution updated a second apart (one
    in 500 FAILED), the newest now: a busy week behind a night's hour.
    """
    _seed_history_in_bulk(rare_at=100, total=30000)
    definition = factories.definition("busy-job")
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO ob_job_execution (job_instance_id, definition_id, attempt, "
            "status, exit_code, parameters, context_format, context_schema, "
            "context_schema_version, context_payload, created_at, started_at, "
            "ended_at, updated_at, version) SELECT id, %s, 1, s, s, "
            "'{}'::jsonb, 1, 'x', 1, '{}'::jsonb, t, t, t, t, 0 "
            "FROM (SELECT id, now() - ((SELECT max(id) FROM ob_job_instance) - id) "
            "* interval '1 second' AS t, "
            "CASE WHEN id %% 500 = 0 THEN 'FAILED' ELSE 'COMPLETED' END AS s "
            "FROM ob_job_instance) AS i",
            [definition.pk],
        )
        cursor.execute("ANALYZE ob_job_execution")


def _time_window(since: str, until: str = "") -> cursors.TimeWindow:
    from django.http import QueryDict

    from batchboard.explorer import inputs

    data = QueryDict(mutable=True)
    data.update({"since": since, **({"until": until} if until else {})})
    form = inputs.ExecutionsForm(data)
    assert form.is_valid(), form.errors
    assert form.window is not None
    return form.window


@pytest.mark.postgresql
@pytest.mark.parametrize("statuses", [(), ("FAILED",), ("FAILED", "COMPLETED")])
@pytest.mark.parametrize("job", ["", "busy-job", "rare-job"])
def test_a_time_window_walks_the_status_time_index(
    db: None, statuses: tuple[str, ...], job: str
) -> None:
    """
    Every status is a walk down ``(status, updated_at, id)`` inside the
    window, first page and deep: the executions are never read whole.

    Without a job, the walk reads that index alone: it is planned once and
    run for each status (a lateral join over the statuses' values). With a
    job each status keeps its own walk, merged, after one bounded look at
    the job's newest instances: a busy job's walks probe each row's
    instance (a subplan on its primary key), another job's join the
    instances, the planner choosing where to start.
    """
    _seed_timed_executions()
    window = _time_window("7d")
    first = queries.windowed_executions(statuses, job, window, 2)
    if job != "rare-job":  # The rare job's five runs may all be COMPLETED.
        assert len(first.rows) == 2 and first.next_cursor
    for token in (None, first.next_cursor):
        queries._BUSY_JOBS.clear()  # so that the look at the job is seen
        plans = _plans_of(
            lambda token=token: queries.windowed_executions(
                statuses, job, window, 2, token
            )
        )
        several = job and len(statuses) != 1
        if several:
            probe, plan = plans
            assert "ob_job_instance_name_identity" in probe or (
                "ob_job_instance_pkey" in probe
            ), probe
            assert "Seq Scan" not in probe, probe
        else:
            (plan,) = plans
        assert "Seq Scan on ob_job_execution" not in plan, plan
        assert "Hash Join" not in plan, plan
        if job != "rare-job":
            assert "ob_job_execution_status_updated" in plan, plan
        if len(statuses) == 1:
            assert "bb_each" not in plan and "Append" not in plan, plan
        elif job == "busy-job":
            walks = plan.split("Append", 1)[1]
            count = len(statuses or vocabulary.STATUSES)
            assert walks.count("using ob_job_execution_status_updated") == count
            # Each walk probes its rows' instances; none joins them (the
            # page's own few rows are joined to theirs, past the walks).
            assert len(re.findall(r"^ *SubPlan \d+$", walks, re.MULTILINE)) == count
            assert "Join" not in walks and "Nested Loop" not in walks, plan
        elif job:
            # Joined, so that a rare job's walks may start from its instances.
            count = len(statuses or vocabulary.STATUSES)
            walks = plan.split("Append", 1)[1]
            assert "SubPlan" not in plan and walks.count("Nested Loop") >= count, plan
        else:
            # One walk, limited, run per value: a range of the index each.
            assert 'Values Scan on "*VALUES*"' in plan, plan
            lateral = plan.split("Values Scan", 1)[1]
            assert "Limit" in lateral, plan
            walk = lateral.split("using ob_job_execution_status_updated", 1)[1]
            condition = walk.split("Index Cond: ", 1)[1].split("\n", 1)[0]
            assert '= "*VALUES*".column1)' in condition, plan
            assert "updated_at >= " in condition and "updated_at <" in condition


@pytest.mark.postgresql
def test_a_night_s_hour_reads_an_index_range(db: None) -> None:
    _seed_timed_executions()
    window = _time_window("10h", "9h")
    plan = _plan_of(lambda: queries.windowed_executions(("COMPLETED",), "", window, 50))
    assert "Index Scan Backward using ob_job_execution_status_updated" in plan, plan
    assert "updated_at >= " in plan and "updated_at < " in plan, plan
    assert "Sort" not in plan, plan


@pytest.mark.postgresql
@pytest.mark.parametrize("job", ["busy-job", "rare-job"])
def test_an_instance_window_examines_a_bounded_range(db: None, job: str) -> None:
    """
    Both statements walk an index, limited: the rare job's off its name
    index; the busy job's (nearly every instance) may walk the primary key.
    """
    _seed_history_in_bulk(rare_at=100, total=30000)
    window = _time_window("1h")
    first = queries.windowed_instances(job, window, 2)
    assert len(first.rows) == 2 and first.next_cursor
    for token in (None, first.next_cursor):
        with CaptureQueriesContext(connection) as captured:
            queries.windowed_instances(job, window, 2, token)
        assert len(captured.captured_queries) == 2
        for statement in captured.captured_queries:
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN " + statement["sql"])
                plan = "\n".join(row[0] for row in cursor.fetchall())
            if job == "rare-job":
                assert "ob_job_instance_name_identity" in plan, plan
            assert "Seq Scan on ob_job_instance" not in plan, plan
            assert "Index" in plan, plan


@pytest.mark.postgresql
@pytest.mark.parametrize(
    ("statuses", "job", "since"),
    [
        ((), "", ""),
        (("FAILED",), "", ""),
        (("FAILED", "COMPLETED"), "", ""),
        ((), "busy-job", ""),
        (("FAILED",), "", "7d"),
        ((), "busy-job", "7d"),
    ],
)
def test_a_download_reads_each_page_off_the_list_s_indexes(
    db: None, statuses: tuple[str, ...], job: str, since: str
) -> None:
    """
    A download's page (its definitions joined, its times as text) walks the
    indexes the list's page walks, first page and deep: the join adds a
    lookup of each row's definition, never a read of the history.
    """
    _seed_timed_executions()

    def read(token: str | None, exported: bool) -> queries.Page:
        if since:
            window = _time_window(since)
            return queries.windowed_executions(
                statuses,
                job,
                window,
                2,
                token,
                shape=queries.EXPORT if exported else queries.PAGE,
            )
        return queries.recent_executions(
            statuses, job, 2, token, shape=queries.EXPORT if exported else queries.PAGE
        )

    def indexes(plan: str) -> list[str]:
        return sorted(re.findall(r"using (\S+) on ob_job_(?:execution|instance)", plan))

    first = read(None, False)
    assert len(first.rows) == 2 and first.next_cursor
    for token in (None, first.next_cursor):
        # The page's statement: a busy job's window first looks at the job.
        listed = _plans_of(lambda token=token: read(token, False))[-1]
        exported = _plans_of(lambda token=token: read(token, True))[-1]
        assert indexes(exported) == indexes(listed), (listed, exported)
        assert "Seq Scan on ob_job_execution" not in exported, exported
        assert "Seq Scan on ob_job_instance" not in exported, exported
        assert "on ob_job_definition" in exported, exported
