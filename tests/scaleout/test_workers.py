"""
Many workers, many hosts: sessions and read-your-writes are not process-local;
psycopg's pool as the alternative to PgBouncer; the replica benchmark and the
load test's report of where the reads went.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator

import pytest

from tests.scaleout.cluster import Cluster
from tests.scaleout.site import Browser, Site, applied, run_manage, serving

pytestmark = [pytest.mark.slow, pytest.mark.scaleout]


@pytest.fixture(scope="module")
def second_site(
    scale_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Site]:
    """Another web worker (another host, as far as it knows) on the same databases."""
    env = {
        **scale_env,
        "DATABASE_URL": scale_env["DATABASE_URL"] + "?pool=1&pool_max_size=4",
    }
    with serving(env, tmp_path_factory, "second") as worker:
        yield worker


def test_a_session_and_its_commit_position_travel_between_workers(
    cluster: Cluster, site: Site, second_site: Site
) -> None:
    """
    Signed in on one worker, the operator stops an execution there while the
    standby's replay is paused; the other worker (pooled connections) knows
    the session and serves the next page from the primary, with the stop.
    """
    operator = Browser(site.base)
    operator.login("operator")
    execution = cluster.running_execution()
    cluster.standby.query("SELECT pg_wal_replay_pause()")
    try:
        assert applied(operator.act(f"/executions/{execution}/stop/"))
        elsewhere = Browser(second_site.base)
        elsewhere.jar = operator.jar  # the same cookies, sent to another host
        elsewhere.opener = operator.opener
        elsewhere.base = second_site.base
        status, page = elsewhere.get(f"/executions/{execution}/")
        assert status == 200
        assert "by user:operator" in page
        assert "Log out" in page
    finally:
        cluster.standby.query("SELECT pg_wal_replay_resume()")
        cluster.wait_for_replay()
    assert "Traceback" not in second_site.output()


def test_the_replica_benchmark_prints_its_figures(
    cluster: Cluster, scale_env: dict[str, str]
) -> None:
    """With nobody acting the primary serves under 5 % of the metadata reads."""
    result = run_manage(
        "batchboard_benchmark_replicas",
        "--threads",
        "2",
        "--seconds",
        "3",
        env=scale_env,
    )
    output = result.stdout
    assert re.search(r"requests\s+[\d,]+ \([\d.]+/s\)", output), output
    assert "p99" in output and "replica lag" in output
    share = re.search(r"primary [\d,]+ \(([\d.]+) %\)", output)
    assert share is not None, output
    assert float(share.group(1)) < 5.0, output
    assert re.search(r"statuses\s+200: \d+$", output, flags=re.M), output


@pytest.mark.skipif(shutil.which("wrk") is None, reason="needs wrk")
def test_the_load_test_reports_where_the_reads_went_and_the_lag(
    cluster: Cluster, scale_env: dict[str, str]
) -> None:
    """
    Under gunicorn and wrk, with the site reading from the standby and
    nobody writing, the standby's scans of the ob_* tables outnumber the
    primary's, and the lag is sampled while wrk runs.
    """
    result = run_manage(
        "batchboard_loadtest",
        *("--executions", "1", "--job-names", "1", "--unresolved", "0"),
        *("--requests", "300", "--seconds", "5"),
        *("--workers", "1", "--concurrency", "2", "--no-simulator"),
        env={**scale_env, "BATCHBOARD_DEMO": "1"},
    )
    output = result.stdout
    assert re.search(r"all pages\s+[\d,]+", output), output
    total = re.search(r"Metadata reads: ([\d,]+) scans of the ob_\* tables", output)
    primary = re.search(r"primary \S+: ([\d,]+) \(([\d.]+) %\)", output)
    replica = re.search(r"replica batchboard_read_1: ([\d,]+) \(([\d.]+) %\)", output)
    assert total and primary and replica, output
    scans = [int(found.group(1).replace(",", "")) for found in (primary, replica)]
    assert sum(scans) == int(total.group(1).replace(",", "")), output
    assert scans[1] > scans[0], output
    lag = re.search(
        r"batchboard_read_1: max [\d.]+ s, median [\d.]+ s over (\d+) samples", output
    )
    assert lag is not None and int(lag.group(1)) > 0, output
