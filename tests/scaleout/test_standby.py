"""
Pages from a real streaming standby: which server reads, read-your-writes
under paused replay, the lag notice, the read timeout and a stopped standby.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

from tests.scaleout.cluster import Cluster
from tests.scaleout.site import Browser, Site, any_value, applied

pytestmark = [pytest.mark.slow, pytest.mark.scaleout]

STATEMENTS = (
    "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements "
    "WHERE query ILIKE %s AND query NOT ILIKE %s"
)


def _reads_of_history(server: object) -> int:
    """Statements that touched the executions table since the last reset."""
    return int(any_value(server.query(STATEMENTS, ["%ob_job_execution%", "%pg_stat%"])))  # type: ignore[attr-defined]


def _reset_statements(cluster: Cluster) -> None:
    for server in (cluster.primary, cluster.standby):
        server.query("SELECT pg_stat_statements_reset()")


def _finished_execution(cluster: Cluster) -> tuple[int, str]:
    rows = cluster.primary.query(
        "SELECT e.id, i.job_name FROM oxide_batch.ob_job_execution e "
        "JOIN oxide_batch.ob_job_instance i ON i.id = e.job_instance_id "
        "WHERE e.status = 'COMPLETED' ORDER BY e.id LIMIT 1"
    )
    return int(rows[0][0]), str(rows[0][1])


def _pages(cluster: Cluster) -> list[str]:
    execution, job = _finished_execution(cluster)
    return [
        "/",
        "/executions/",
        "/executions/?status=FAILED",
        f"/executions/{execution}/",
        f"/jobs/{job}/",
        "/unresolved/",
    ]


@pytest.fixture
def viewer(site: Site) -> Browser:
    browser = Browser(site.base)
    browser.login("viewer")
    return browser


@pytest.fixture
def operator(site: Site) -> Browser:
    browser = Browser(site.base)
    browser.login("operator")
    return browser


def test_pages_are_read_on_the_standby(cluster: Cluster, viewer: Browser) -> None:
    """The standby runs the explorer's statements; the primary runs none of them."""
    pages = _pages(cluster)
    _reset_statements(cluster)
    for page in pages:
        status, body = viewer.get(page)
        assert status == 200, (page, body[:300])
    assert _reads_of_history(cluster.standby) >= len(pages)
    assert _reads_of_history(cluster.primary) == 0
    # The standby's sessions are the explorer's: pg_stat_activity lists them
    # while a page is served (sampled while a burst of pages runs).
    seen = _sample_standby_activity(cluster, viewer, pages)
    assert seen, "no batchboard session seen on the standby"


def _sample_standby_activity(
    cluster: Cluster, viewer: Browser, pages: list[str]
) -> bool:
    done = threading.Event()

    def burst() -> None:
        for _ in range(15):
            for page in pages:
                viewer.get(page)
        done.set()

    worker = threading.Thread(target=burst)
    worker.start()
    seen = False
    with cluster.standby.connect() as connection:
        while not done.is_set() and not seen:
            (count,) = connection.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s "
                "AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
                ["bbscale"],
            ).fetchone()
            seen = count > 0
            time.sleep(0.005)
    worker.join(60)
    return seen


@contextmanager
def _paused(cluster: Cluster) -> Iterator[None]:
    cluster.standby.query("SELECT pg_wal_replay_pause()")
    try:
        yield
    finally:
        cluster.standby.query("SELECT pg_wal_replay_resume()")


def test_paused_replay_reads_your_writes(
    cluster: Cluster, operator: Browser, viewer: Browser
) -> None:
    """
    The operator who stopped an execution sees the stop on their next page
    (the primary serves them); another user sees the standby's older state
    and the lag notice; after replay resumes both agree.
    """
    execution = cluster.running_execution()
    page = f"/executions/{execution}/"
    with _paused(cluster):
        _stop_while_paused(cluster, operator, viewer, execution, page)
    cluster.wait_for_replay()
    _reset_statements(cluster)
    for browser in (operator, viewer):
        status, body = browser.get(page)
        assert status == 200
        assert "by user:operator" in body
        assert "Data as of" not in body
    # Both were served by the standby once it had replayed the stop.
    assert _reads_of_history(cluster.primary) == 0


def _stop_while_paused(
    cluster: Cluster, operator: Browser, viewer: Browser, execution: int, page: str
) -> None:
    time.sleep(1.1)  # the standby's last replayed commit is now over a second old
    result = operator.act(f"/executions/{execution}/stop/")
    assert applied(result), result[:800]

    status, mine = operator.get(page)
    assert status == 200
    assert "by user:operator" in mine
    assert "Data as of" not in mine  # read from the primary: nothing to say

    status, theirs = viewer.get(page)
    assert status == 200
    assert "by user:operator" not in theirs
    assert "Data as of" in theirs


def _wait_for_standby_lock(cluster: Cluster) -> None:
    """Wait until the standby's startup process holds the replayed lock."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        rows = cluster.standby.query(
            "SELECT 1 FROM pg_locks WHERE mode = 'AccessExclusiveLock' "
            "AND granted AND relation = 'oxide_batch.ob_job_execution'::regclass"
        )
        if rows:
            return
        time.sleep(0.05)
    raise TimeoutError("the standby never took the primary's lock")


def test_a_read_past_the_timeout_gets_the_503_page(
    cluster: Cluster, viewer: Browser
) -> None:
    """A read held up longer than STATEMENT_TIMEOUT_MS is a 503 page, not a 500."""
    with psycopg.connect(cluster.primary.url(), autocommit=False) as locker:
        # An ACCESS EXCLUSIVE lock replays on the standby too and blocks its
        # readers until the primary's transaction ends.
        locker.execute(
            "LOCK TABLE oxide_batch.ob_job_execution IN ACCESS EXCLUSIVE MODE"
        )
        # Another transaction's commit flushes the lock's WAL record to the standby.
        cluster.primary.query("SELECT txid_current()")
        cluster.wait_for_replay()
        _wait_for_standby_lock(cluster)
        started = time.monotonic()
        status, body = viewer.get("/executions/")
        waited = time.monotonic() - started
        locker.rollback()
    assert status == 503, (waited, body[body.find("<main") :][:600])
    assert "Traceback" not in body
    assert 1.0 <= waited < 30
    assert viewer.get("/executions/")[0] == 200


def test_stopped_standby_falls_back_to_the_primary(
    cluster: Cluster, viewer: Browser
) -> None:
    """With the standby down every page still answers, from the primary."""
    pages = _pages(cluster)
    cluster.standby.stop()
    try:
        _reset_statements_primary = cluster.primary.query(
            "SELECT pg_stat_statements_reset()"
        )
        assert _reset_statements_primary is not None
        for _ in range(2):
            for page in pages:
                status, body = viewer.get(page)
                assert status == 200, (page, status, body[:300])
                assert "Data as of" not in body
        assert _reads_of_history(cluster.primary) >= len(pages)
    finally:
        cluster.standby.start()
        cluster.wait_for_replay()
