"""Everything works behind PgBouncer in transaction mode."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.scaleout.cluster import Cluster
from tests.scaleout.site import Browser, Site, applied, serving
from tests.site.commands import CHECKOUT, SITE_VARIABLES

pytestmark = [pytest.mark.slow, pytest.mark.scaleout]

# Statements a pooled connection must never leave behind on the server.
SESSION_STATEMENTS = (
    "SELECT query, calls FROM pg_stat_statements "
    "WHERE (query ILIKE 'SET %%' AND query NOT ILIKE 'SET LOCAL %%') "
    "OR query ILIKE 'DECLARE %%' OR query ILIKE 'PREPARE %%' "
    "OR query ILIKE 'LISTEN %%'"
)


@pytest.fixture(scope="module")
def pooled_site(
    cluster: Cluster,
    scale_env: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Site]:
    """A web worker whose primary connections all go through PgBouncer."""
    env = {**scale_env, "DATABASE_URL": cluster.bouncer_url()}
    with serving(env, tmp_path_factory, "pooled") as worker:
        yield worker


def test_pages_and_actions_set_nothing_on_the_session(
    cluster: Cluster, pooled_site: Site
) -> None:
    """Pages and an action through PgBouncer: no session SET, cursor or PREPARE."""
    cluster.primary.query("SELECT pg_stat_statements_reset()")
    operator = Browser(pooled_site.base)
    operator.login("operator")
    execution = cluster.running_execution()
    for page in ("/", "/executions/", f"/executions/{execution}/", "/unresolved/"):
        status, body = operator.get(page)
        assert status == 200, (page, body[:300])
    assert applied(operator.act(f"/executions/{execution}/stop/"))
    status, body = operator.get(f"/executions/{execution}/")
    assert status == 200 and "by user:operator" in body
    leftovers = cluster.primary.query(SESSION_STATEMENTS)
    assert leftovers == [], leftovers
    # The page's bound is a SET LOCAL, made through set_config(..., true).
    bounds = cluster.primary.query(
        "SELECT sum(calls) FROM pg_stat_statements WHERE query ILIKE %s",
        ["%set_config%"],
    )
    assert bounds[0][0] and bounds[0][0] > 0
    assert "Traceback" not in pooled_site.output()


@pytest.fixture(scope="module")
def pooled_database(cluster: Cluster) -> Iterator[str]:
    """The nested suite's test database, search_path set at the database."""
    name = "bbpool"
    cluster.primary.query(f'DROP DATABASE IF EXISTS "test_{name}"', database="postgres")
    cluster.primary.query(f'CREATE DATABASE "test_{name}"', database="postgres")
    cluster.primary.query(
        f'ALTER DATABASE "test_{name}" SET search_path = public, oxide_batch',
        database="postgres",
    )
    try:
        yield name
    finally:
        cluster.primary.query(
            f'DROP DATABASE IF EXISTS "test_{name}" WITH (FORCE)', database="postgres"
        )


def test_explorer_and_action_suite_through_pgbouncer(
    cluster: Cluster, pooled_database: str
) -> None:
    """The explorer, action and console tests pass with DATABASE_URL on PgBouncer."""
    base = {k: v for k, v in os.environ.items() if k not in SITE_VARIABLES}
    env = {
        **base,
        "DATABASE_URL": cluster.bouncer_url(pooled_database),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            # PgBouncer keeps server connections to the test database open,
            # so the database is kept and dropped by this test instead.
            "--reuse-db",
            "-m",
            "not browser",
            "tests/explorer",
            "tests/actions",
            "tests/console",
            # These drop and recreate their roles between tests: a pooled
            # server connection outlives DROP ROLE and keeps the old role's
            # (now empty) privileges. The least-privilege roles are served
            # through PgBouncer by tests/scaleout/test_roles.py instead.
            "--deselect",
            "tests/actions/test_roles.py",
        ],
        cwd=CHECKOUT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    tail = completed.stdout[-3000:] + completed.stderr[-2000:]
    assert completed.returncode == 0, tail
    assert " passed" in completed.stdout and " failed" not in completed.stdout, tail
