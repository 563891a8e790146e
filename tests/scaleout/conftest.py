"""Session fixtures: the cluster, the seeded site on it, and its web workers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.actions.test_roles import OPERATOR_ROLE, RETENTION_ROLE
from tests.scaleout import cluster as components
from tests.scaleout.site import Site, run_manage, serving, site_env

#: The three roles of spec 9.1 the role tests create on the cluster.
LEAST_PRIVILEGE = {
    "explorer": "bbs_explorer",
    "operator": "bbs_operator",
    "retention": "bbs_retention",
}


def _require_components() -> None:
    missing = components.missing_binaries()
    if missing and not components.on_ci():
        pytest.skip(f"needs PostgreSQL 15 and PgBouncer binaries: {', '.join(missing)}")


@pytest.fixture(scope="session")
def cluster() -> Iterator[components.Cluster]:
    """A primary, a streaming standby and PgBouncer, for the whole session."""
    _require_components()
    # PgBouncer admits the logins it lists: the suite's superuser, the roles
    # the action tests create, and the least-privilege roles of these tests.
    started = components.start_cluster(
        users=("postgres", OPERATOR_ROLE, RETENTION_ROLE, *LEAST_PRIVILEGE.values())
    )
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="session")
def scale_env(cluster: components.Cluster) -> dict[str, str]:
    """The site on the primary, reading from the standby; history seeded."""
    env = site_env(
        DATABASE_URL=cluster.primary.url(),
        BATCHBOARD_READ_DATABASE_URL=cluster.standby.url(),
    )
    run_manage("migrate", "--no-input", env=env)
    demo = {**env, "BATCHBOARD_DEMO": "1"}
    run_manage("batchboard_seed", "--instances", "16", env=demo)
    run_manage("batchboard_demo_login", env=demo)
    cluster.wait_for_replay()
    return env


@pytest.fixture(scope="session")
def site(
    scale_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Site]:
    """One web worker of that site."""
    with serving(scale_env, tmp_path_factory, "site") as worker:
        yield worker
