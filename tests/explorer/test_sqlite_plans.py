"""
On SQLite every page reads through an index that bounds it.

The companion of the PostgreSQL EXPLAIN tests in ``test_performance``: each
statement a page runs is planned with ``EXPLAIN QUERY PLAN`` and must
neither ``SCAN`` a history table (a full read of the table or of one of its
indexes) nor sort rows it has not bounded first. SQLite plans without
column statistics unless ``ANALYZE`` ran, so these plans are the ones a
fresh embedded database of any size gets.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from batchboard import cursors, vocabulary
from batchboard.actions import purge
from batchboard.explorer import overview, queries, relations, trends
from batchboard.models import JobExecution, JobInstance
from tests import factories

pytestmark = pytest.mark.django_db

#: Tables that grow with history: none may be scanned.
HISTORY = (
    "ob_job_instance",
    "ob_job_execution",
    "ob_step_execution",
    "ob_flow_decision",
    "ob_recovery_decision",
    "ob_operator_request",
    "ob_step_partition",
    "ob_component_state",
    "ob_retention_action",
)
# A SCAN of anything but a subquery's rows or a constant: a table or one of
# its indexes read from end to end (the ORM's aliases, U0 or T5, hide which).
_SCAN = re.compile(r"^SCAN (?!\(subquery-\d+\)|CONSTANT ROW|\d+ CONSTANT ROWS)(\S+)")
#: Small tables that do not grow with history may be scanned.
_SMALL = ("ob_job_definition", "django_", "auth_", "json_each")
#: A partial index holding unresolved executions only (at most one per
#: instance): reading it whole reads what a search of the unresolved
#: statuses would, not the history.
_UNRESOLVED_INDEX = "USING INDEX ob_job_execution_one_unresolved"


@pytest.fixture(autouse=True)
def _sqlite_only() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's plans; PostgreSQL's are tested in test_performance")


#: The history's busy job has 21 instances and its rare one 3: with this
#: bound the busy job's window walks the statuses' ranges, the rare job's
#: is read from its instances, as at the real bound on real histories.
_RARE_BELOW = 5


@pytest.fixture(autouse=True)
def _rare_job_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queries, "RARE_JOB_INSTANCES", _RARE_BELOW)


@pytest.fixture
def history(db: None) -> dict[str, Any]:
    """Two jobs, one busy and one rare, over every status and a few restarts."""
    factories.definition("busy-job")
    factories.definition("rare-job")
    old = factories.ago(days=40)
    created = old - timedelta(hours=1)
    statuses = [*vocabulary.FINISHED, "STARTED", "UNKNOWN"]
    for index in range(24):
        name = "rare-job" if index % 8 == 3 else "busy-job"
        job_instance = factories.instance(name, created_at=created)
        status = statuses[index % len(statuses)]
        if status == "FAILED":
            failed = factories.execution(
                job_instance, "FAILED", created_at=created, updated_at=old
            )
            factories.execution(job_instance, "COMPLETED", restart_of=failed)
        else:
            factories.execution(
                job_instance, status, created_at=created, updated_at=old
            )
    return {
        "max_execution": JobExecution.objects.order_by("-id").values_list(
            "id", flat=True
        )[0],
        "max_instance": JobInstance.objects.order_by("-id").values_list(
            "id", flat=True
        )[0],
    }


def _plan(sql: str, params: Any = None) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
        return [str(row[3]) for row in cursor.fetchall()]


def _unbounded(lines: list[str]) -> list[str]:
    """Return the plan lines that read a history table or index whole."""
    bad = []
    # A list of constant rows the statement carries (VALUES), materialized
    # under its alias: reading it is bounded by the statement's own length.
    constants = {
        line.split()[1]
        for line, following in zip(lines, lines[1:], strict=False)
        if line.startswith("MATERIALIZE ") and "CONSTANT ROW" in following
    }
    for line in lines:
        match = _SCAN.match(line)
        if (
            match
            and not match.group(1).startswith(_SMALL)
            and match.group(1) not in constants
            and _UNRESOLVED_INDEX not in line
        ):
            bad.append(line)
    return bad


def _statements(run: Any) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        run()
    return [
        query["sql"]
        for query in captured.captured_queries
        if any(table in query["sql"] for table in HISTORY)
    ]


def _assert_bounded(run: Any, *, sorts: bool = False) -> list[list[str]]:
    """Plan every history statement ``run`` issues; return the plans."""
    plans = []
    statements = _statements(run)
    assert statements
    for sql in statements:
        lines = _plan(sql)
        assert not _unbounded(lines), (sql, lines)
        if not sorts:
            assert not any("TEMP B-TREE FOR ORDER BY" in line for line in lines), (
                sql,
                lines,
            )
        plans.append(lines)
    return plans


def _get(client: Client, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 200, url


def test_overview_strips_walk_each_job_s_instances(
    reader: Client, history: dict[str, Any]
) -> None:
    (plan,) = _assert_bounded(lambda: overview.job_strips(["busy-job", "rare-job"]))
    text = "\n".join(plan)
    assert text.count("USING COVERING INDEX ob_job_instance_name_identity") == 2
    assert "ob_job_execution_instance_latest (job_instance_id=?)" in text
    assert not any("qualify" in line for line in plan)
    _assert_bounded(lambda: _get(reader, reverse("batchboard:index")))


def test_running_counts_read_the_unresolved_index_outward(
    history: dict[str, Any],
) -> None:
    (plan,) = _assert_bounded(lambda: overview.running_counts(["busy-job", "rare-job"]))
    # The unresolved executions outside, each one's definition looked up by
    # id: not the definitions outside, each probing the executions.
    assert plan[0] == f"SCAN x {_UNRESOLVED_INDEX}"
    assert plan[1] == "SEARCH d USING INTEGER PRIMARY KEY (rowid=?)"


@pytest.mark.parametrize("status", vocabulary.STATUSES)
def test_every_status_filter_reads_one_index_range(
    reader: Client, history: dict[str, Any], status: str
) -> None:
    """Rare (UNKNOWN, STARTING) and common (COMPLETED) statuses alike."""
    url = f"{reverse('batchboard:executions')}?status={status}"
    deep = cursors.encode(
        cursors.recent_executions(status, ""),
        50,
        cursors.Identity(history["max_execution"] // 2),
        history["max_execution"],
    )
    for page in (url, f"{url}&cursor={deep}"):
        plans = _assert_bounded(lambda page=page: _get(reader, page))
        listed = [
            p for p in plans if any("bb_execution_status_identity" in x for x in p)
        ]
        assert listed, plans
        assert "bb_execution_status_identity (status=? AND id<?)" in "\n".join(
            listed[0]
        )


@pytest.mark.parametrize("job", ["busy-job", "rare-job"])
@pytest.mark.parametrize("status", ["", "FAILED", "COMPLETED", "FAILED,COMPLETED"])
def test_the_job_filter_walks_the_job_s_instances(
    reader: Client, history: dict[str, Any], job: str, status: str
) -> None:
    url = f"{reverse('batchboard:executions')}?job={job}&status={status}"
    # Several statuses are compared unindexed too, as an IN list.
    chosen = tuple(status.split(",")) if status else ()
    deep = cursors.encode(
        cursors.recent_executions(chosen, job),
        50,
        cursors.Ordered(history["max_instance"] - 3, 1),
        history["max_execution"],
    )
    for page in (url, f"{url}&cursor={deep}"):
        with CaptureQueriesContext(connection) as captured:
            queries.recent_executions(chosen, job, 50, None if page == url else deep)
        (statement,) = captured.captured_queries
        lines = _plan(statement["sql"])
        assert not _unbounded(lines), lines
        assert "TEMP B-TREE" not in "\n".join(lines), lines
        assert "ob_job_instance_name_identity (job_name=?" in lines[0], lines
        _assert_bounded(lambda page=page: _get(reader, page))


def test_the_job_page_reads_its_instances_by_name(
    reader: Client, history: dict[str, Any]
) -> None:
    for job in ("busy-job", "rare-job"):
        _assert_bounded(
            lambda job=job: _get(reader, reverse("batchboard:job", args=[job]))
        )


def test_the_job_trend_walks_the_job_s_newest_instances(
    history: dict[str, Any],
) -> None:
    """The trend's runs come off the name index, newest instance first."""
    for job in ("busy-job", "rare-job"):
        (plan,) = _assert_bounded(lambda job=job: trends.recent_runs(job))
        text = "\n".join(plan)
        assert "USING COVERING INDEX ob_job_instance_name_identity" in text, plan
        assert "ob_job_execution_instance_latest (job_instance_id=?)" in text, plan


def test_unresolved_reads_the_unresolved_rows_only(
    reader: Client, history: dict[str, Any]
) -> None:
    # Read through the status index (never the whole history), unsorted.
    plans = _assert_bounded(
        lambda: _get(reader, f"{reverse('batchboard:unresolved')}?age=60")
    )
    assert any(
        "USING INDEX" in line and "status=?" in line for plan in plans for line in plan
    ), plans


def test_unresolved_walks_each_status_by_id_and_stops_at_the_page(
    history: dict[str, Any],
) -> None:
    """
    One walk of the (status, id) index per unresolved status, each limited.

    The page is the first of the walks' ids in id order, read off the
    primary key without sorting, first page and deep alike.
    """
    first = queries.unresolved(60, 50)
    assert first.rows
    deep = cursors.encode(
        cursors.unresolved_executions(60),
        50,
        cursors.Ordered(1, history["max_execution"] // 2),
        history["max_execution"],
    )
    for token, bound in ((None, "id<?"), (deep, "id>? AND id<?")):
        with CaptureQueriesContext(connection) as captured:
            queries.unresolved(60, 50, token)
        (statement,) = captured.captured_queries
        lines = _plan(statement["sql"])
        assert not _unbounded(lines), lines
        assert not any("TEMP B-TREE" in line for line in lines), lines
        walk = f"USING INDEX bb_execution_status_identity (status=? AND {bound})"
        walks = [line for line in lines if walk in line]
        assert len(walks) == len(vocabulary.UNRESOLVED), lines
        assert "ob_job_execution USING INTEGER PRIMARY KEY (rowid=?)" in lines[0]
        assert statement["sql"].count("LIMIT 50") == len(vocabulary.UNRESOLVED) + 1


def test_the_admin_changelist_filtered_by_status_reads_one_range(
    history: dict[str, Any],
) -> None:
    admin = Client()
    admin.force_login(factories.administrator())
    url = reverse("admin:batchboard_jobexecution_changelist")
    for page in (
        f"{url}?status__exact=FAILED",
        f"{url}?status__exact=UNKNOWN&after={history['max_execution'] // 2}",
    ):
        _assert_bounded(lambda page=page: _get(admin, page))


def test_the_purge_plan_and_its_revalidation_use_indexes(
    history: dict[str, Any],
) -> None:
    user = factories.administrator()
    for job in ("busy-job", "rare-job"):
        plans = _assert_bounded(
            lambda job=job: purge.plan_purge(
                user=user, job_name=job, min_age_seconds=3600, batch=1000
            ),
            # The survey sorts one instance's executions at a time.
            sorts=True,
        )
        survey = "\n".join(plans[0])
        assert "ob_job_instance_name_identity (job_name=?)" in survey, survey
        assert "TEMP B-TREE FOR ORDER BY" not in survey, survey
    plan = purge.plan_purge(user=user, job_name="busy-job", min_age_seconds=3600)
    assert plan.candidates
    criteria = plan.criteria
    _assert_bounded(
        lambda: purge._revalidate(
            criteria, plan.candidates, factories.now() + timedelta(seconds=1)
        )
    )


def test_the_purge_deletes_and_clears_citations_on_indexes(
    history: dict[str, Any],
) -> None:
    user = factories.administrator()
    plan = purge.plan_purge(user=user, job_name="busy-job", min_age_seconds=3600)
    assert plan.candidates
    statements = _statements(lambda: purge._delete(plan.candidates))
    plans = {sql: _plan(sql) for sql in statements}
    # The first statement clears the surviving citations of the planned
    # decisions, wherever they sit, on the embedded index of the column.
    cleared = "\n".join(plans[statements[0]])
    assert statements[0].startswith("UPDATE ob_flow_decision"), statements[0]
    assert "bb_flow_decision_reused (reused_decision_id=?)" in cleared, cleared
    for sql, lines in plans.items():
        assert not _unbounded(lines), (sql, lines)
    # Deleting an instance checks its operator requests on the embedded index.
    (instances,) = [
        sql for sql in plans if sql.startswith("DELETE FROM ob_job_instance")
    ]
    assert any("bb_operator_request_instance" in line for line in plans[instances])


@pytest.mark.parametrize("chosen", ["active", "finished", "failed,stopped"])
def test_several_statuses_walk_each_status_by_id_and_stop_at_the_page(
    reader: Client, history: dict[str, Any], chosen: str
) -> None:
    """
    One walk of the (status, id) index per status chosen, each limited.

    The page is the newest of the walks' ids, read off the primary key
    without sorting, first page and deep alike: a set of common statuses
    costs what one does, and a set of rare ones never walks the others.
    """
    statuses = tuple(
        status
        for status in vocabulary.STATUSES
        if status in vocabulary.STATUS_SETS.get(chosen, chosen.upper().split(","))
    )
    deep = cursors.encode(
        cursors.recent_executions(statuses, ""),
        50,
        cursors.Identity(history["max_execution"] // 2),
        history["max_execution"],
    )
    for token in (None, deep):
        with CaptureQueriesContext(connection) as captured:
            queries.recent_executions(statuses, "", 50, token)
        (statement,) = captured.captured_queries
        lines = _plan(statement["sql"])
        assert not _unbounded(lines), lines
        assert not any("TEMP B-TREE" in line for line in lines), lines
        walk = "USING COVERING INDEX bb_execution_status_identity (status=? AND id<?)"
        walks = [line for line in lines if walk in line]
        assert len(walks) == len(statuses), "\n".join(lines)
        assert statement["sql"].count("LIMIT 50") == len(statuses) + 1
    url = f"{reverse('batchboard:executions')}?status={chosen}"
    for page in (url, f"{url}&cursor={deep}"):
        _assert_bounded(lambda page=page: _get(reader, page))


def test_the_attention_panel_looks_up_each_failure_s_latest_attempt(
    reader: Client, history: dict[str, Any]
) -> None:
    """Whether a restart resolved a failure: index lookups per failure shown."""
    failures = queries.recent_failures(vocabulary.ATTENTION_FAILURES)
    assert failures
    (plan,) = _assert_bounded(lambda: relations.latest_attempts(failures))
    text = "\n".join(plan)
    assert "ob_job_execution_instance_latest (job_instance_id=?" in text, plan
    assert relations.latest_attempts(failures)

    def panel() -> None:
        response = reader.get(reverse("batchboard:attention"), HTTP_HX_REQUEST="true")
        assert response.status_code == 200

    _assert_bounded(panel)


def _time_window(since: str) -> cursors.TimeWindow:
    from django.http import QueryDict

    from batchboard.explorer import inputs

    form = inputs.ExecutionsForm(QueryDict(f"since={since}"))
    assert form.is_valid(), form.errors
    assert form.window is not None
    return form.window


@pytest.mark.parametrize("statuses", [(), ("UNKNOWN",), ("FAILED", "COMPLETED")])
@pytest.mark.parametrize("job", ["", "busy-job", "rare-job"])
def test_a_time_window_walks_the_status_time_index(
    reader: Client, history: dict[str, Any], statuses: tuple[str, ...], job: str
) -> None:
    """
    One range of ``(status, updated_at, id)`` per status, inside the window
    and below the position. Several are merged by the key as they are read,
    each range already in order, and the merge stops at the page: the one
    sort left is of the page's own rows, once joined.
    """
    window = _time_window("100d")
    deep = cursors.encode(
        cursors.windowed_executions(statuses, job, window),
        50,
        cursors.Windowed(
            window.upper - 10**12,
            history["max_execution"] // 2,
            window.lower,
            window.upper,
        ),
        history["max_execution"],
    )
    for token in (None, deep):
        with CaptureQueriesContext(connection) as captured:
            queries.windowed_executions(statuses, job, window, 50, token)
        lines = _plan(_history_statement(captured))
        assert not _unbounded(lines), lines
        if job == "rare-job":
            # Its few instances on their name index, each one's executions,
            # and a sort of those alone; no range of the statuses is read.
            assert any(
                "ob_job_instance_name_identity (job_name=?" in line for line in lines
            ), lines
            assert any("(job_instance_id=?)" in line for line in lines), lines
            assert not any("ob_job_execution_status_updated" in line for line in lines)
            continue
        walked = [line for line in lines if "ob_job_execution_status_updated" in line]
        assert len(walked) == len(statuses or vocabulary.STATUSES), lines
        assert all(
            "(status=? AND updated_at>? AND updated_at<?)" in line for line in walked
        ), lines
        sorts = [line for line in lines if "TEMP B-TREE" in line]
        if len(statuses) == 1:
            assert not sorts, lines
        else:
            merges = lines.count("MERGE (UNION ALL)")
            assert merges == len(walked) - 1, lines
            assert sorts == ["USE TEMP B-TREE FOR ORDER BY"], lines
    query = "&".join(f"status={status}" for status in statuses)
    url = f"{reverse('batchboard:executions')}?since=100d&job={job}&{query}"
    # A rare job's few runs are sorted; so are several statuses' page rows.
    sorts = len(statuses) != 1 or job == "rare-job"
    _assert_bounded(lambda: _get(reader, url), sorts=sorts)


@pytest.mark.parametrize("job", ["busy-job", "rare-job"])
def test_an_instance_window_walks_the_name_index(
    reader: Client, history: dict[str, Any], job: str
) -> None:
    window = _time_window("100d")
    plans = _assert_bounded(lambda: queries.windowed_instances(job, window, 2))
    assert len(plans) == 2
    for plan in plans:
        assert "ob_job_instance_name_identity (job_name=?" in "\n".join(plan), plan
    url = f"{reverse('batchboard:job', args=[job])}?since=100d"
    _assert_bounded(lambda: _get(reader, url))


def _history_statement(captured: CaptureQueriesContext) -> str:
    """Return the one statement that read executions (a job's size is not one)."""
    (statement,) = [
        query["sql"]
        for query in captured.captured_queries
        if "ob_job_execution" in query["sql"]
    ]
    return statement


def _read_plan(read: Any) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        read()
    return _plan(_history_statement(captured))


@pytest.mark.parametrize(
    ("statuses", "job", "since"),
    [
        ((), "", ""),
        (("FAILED",), "", ""),
        (("FAILED", "COMPLETED"), "", ""),
        ((), "busy-job", ""),
        (("FAILED", "COMPLETED"), "busy-job", ""),
        (("COMPLETED",), "", "100d"),
        ((), "busy-job", "100d"),
    ],
)
def test_a_download_reads_each_page_as_the_list_does(
    history: dict[str, Any], statuses: tuple[str, ...], job: str, since: str
) -> None:
    """
    A download's page is planned as the list's page is, first and later
    pages alike, with each row's definition looked up by its key: no other
    read, and nothing more sorted.
    """

    def read(token: str | None, exported: bool) -> queries.Page:
        if since:
            window = _time_window(since)
            return queries.windowed_executions(
                statuses,
                job,
                window,
                3,
                token,
                shape=queries.EXPORT if exported else queries.PAGE,
            )
        return queries.recent_executions(
            statuses, job, 3, token, shape=queries.EXPORT if exported else queries.PAGE
        )

    second = read(None, False).next_cursor
    assert second is not None
    for token in (None, second):
        listed = _read_plan(lambda token=token: read(token, False))
        exported = _read_plan(lambda token=token: read(token, True))
        added = [line for line in exported if line not in listed]
        assert [line for line in exported if line not in added] == listed
        assert len(added) == 1, added
        assert re.fullmatch(
            r"SEARCH \S+ USING INTEGER PRIMARY KEY \(rowid=\?\)", added[0]
        ), added
