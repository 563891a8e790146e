"""
The three least-privilege roles of spec 9.1, created from the README's grants:
the explorer reads (on the standby), the operator writer stops, abandons and
recovers, the retention role holds and purges, all through PgBouncer; a role
missing a grant is named by the system check.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.scaleout.cluster import DATABASE, Cluster
from tests.scaleout.conftest import LEAST_PRIVILEGE
from tests.scaleout.site import Browser, Site, applied, run_manage, serving, site_env
from tests.site.commands import manage
from tests.site.test_roles import _readme_grants

pytestmark = [pytest.mark.slow, pytest.mark.scaleout]


@pytest.fixture(scope="module")
def roles(cluster: Cluster, scale_env: dict[str, str]) -> dict[str, str]:
    """Apply the README's statements, renamed, on the primary."""
    sql = _readme_grants().replace("DATABASE oxide ", f'DATABASE "{DATABASE}" ')
    for kind, name in LEAST_PRIVILEGE.items():
        sql = sql.replace(f"batchboard_{kind}", name)
    with cluster.primary.connect() as connection:
        connection.execute(sql)
    cluster.wait_for_replay()
    return LEAST_PRIVILEGE


@pytest.fixture(scope="module")
def role_env(
    cluster: Cluster, roles: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    """The site attached as the explorer, each writer as its own role."""
    folder = Path(tmp_path_factory.mktemp("roles"))
    env = site_env(
        DATABASE_URL=f"sqlite:///{folder}/site.sqlite3",
        BATCHBOARD_SCHEMA="attached",
        BATCHBOARD_DATABASE_URL=cluster.bouncer_url(user=roles["explorer"]),
        BATCHBOARD_READ_DATABASE_URL=cluster.standby.url(user=roles["explorer"]),
        BATCHBOARD_OPERATOR_DATABASE_URL=cluster.bouncer_url(user=roles["operator"]),
        BATCHBOARD_RETENTION_DATABASE_URL=cluster.bouncer_url(user=roles["retention"]),
    )
    run_manage("migrate", "--no-input", env=env)
    run_manage("batchboard_demo_login", env={**env, "BATCHBOARD_DEMO": "1"})
    return env


@pytest.fixture(scope="module")
def role_site(
    role_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Site]:
    with serving(role_env, tmp_path_factory, "role-site") as worker:
        yield worker


ALIASES = (
    "batchboard",
    "batchboard_operator",
    "batchboard_retention",
    "batchboard_read_1",
)


def _check(env: dict[str, str]) -> str:
    args = ["check"]
    for alias in ALIASES:
        args += ["--database", alias]
    result = manage(*args, env=env)
    return result.output + f"\n(exit {result.returncode})"


def test_every_login_holds_what_it_needs(role_env: dict[str, str]) -> None:
    """With the README's grants the check has nothing to say about privileges."""
    output = _check(role_env)
    assert "(exit 0)" in output, output
    assert "E016" not in output and "W016" not in output and "W020" not in output


def test_every_page_and_action_works(cluster: Cluster, role_site: Site) -> None:
    """Browse as the explorer; stop, abandon, recover, hold, release and purge."""
    admin = Browser(role_site.base)
    admin.login("administrator")

    def one(sql: str) -> int:
        rows = cluster.primary.query(sql)
        assert rows, sql
        return int(rows[0][0])

    running = cluster.running_execution()
    # A STOPPED latest attempt of its instance: an attempt already restarted
    # offers no abandon (actions.eligibility), and the history's finished
    # latest attempts all completed.
    failed = one(
        "SELECT e.id FROM oxide_batch.ob_job_execution e "
        "WHERE e.status = 'COMPLETED' AND NOT EXISTS (SELECT 1 FROM "
        "oxide_batch.ob_job_execution later WHERE later.job_instance_id = "
        "e.job_instance_id AND later.attempt > e.attempt) ORDER BY e.id DESC LIMIT 1"
    )
    cluster.primary.query(
        "UPDATE oxide_batch.ob_job_execution SET status = 'STOPPED', "
        "exit_code = 'STOPPED' WHERE id = %s",
        [failed],
    )
    # A running execution whose owner went silent two hours ago.
    stale = one(
        "SELECT id FROM oxide_batch.ob_job_execution WHERE status = 'STARTED' "
        f"AND id <> {running} ORDER BY id LIMIT 1"
    )
    cluster.primary.query(
        "UPDATE oxide_batch.ob_job_execution SET created_at = now() - interval "
        "'3 hours', started_at = now() - interval '3 hours', updated_at = now() - "
        "interval '2 hours' WHERE id = %s",
        [stale],
    )
    cluster.wait_for_replay()
    instance = one(
        f"SELECT job_instance_id FROM oxide_batch.ob_job_execution WHERE id = {running}"
    )
    step = one("SELECT id FROM oxide_batch.ob_step_execution ORDER BY id LIMIT 1")
    job = cluster.primary.query(
        "SELECT i.job_name FROM oxide_batch.ob_job_execution e JOIN "
        "oxide_batch.ob_job_instance i ON i.id = e.job_instance_id WHERE e.status "
        "= 'COMPLETED' AND e.updated_at < now() - interval '31 days' "
        "GROUP BY i.job_name ORDER BY count(*) DESC LIMIT 1"
    )[0][0]

    pages = [
        "/",
        "/executions/",
        f"/executions/{running}/",
        f"/executions/{stale}/",
        f"/executions/{stale}/recovery-proposal/",
        f"/instances/{instance}/",
        f"/steps/{step}/",
        f"/jobs/{job}/",
        "/unresolved/",
        "/retention/purge/",
    ]
    for page in pages:
        status, body = admin.get(page)
        assert status == 200, (page, status, body[:400])

    assert applied(admin.act(f"/executions/{running}/stop/"))
    assert applied(admin.act(f"/executions/{failed}/abandon/"))
    status, proposal = admin.get(f"/executions/{stale}/recovery-proposal/")
    start = proposal.find('class="bb-dialog')
    assert 'method="post" action="/executions/' in proposal, proposal[
        start : start + 1500
    ]
    recovered = admin.act(
        f"/executions/{stale}/recovery-proposal/",
        {"directive": "ABANDONED", "reason_code": "OPERATOR_DECISION"},
    )
    assert applied(recovered), recovered[recovered.find("<main") :][:1500]
    assert applied(admin.act(f"/instances/{instance}/hold/"))
    assert applied(admin.act(f"/instances/{instance}/release/"))
    plan = (
        f"/retention/purge/?job_name={job}&statuses=COMPLETED"
        "&min_age_seconds=2592000&batch=3"
    )
    assert applied(admin.act(plan, {"reason_code": "RETENTION_POLICY"}))
    assert "Traceback" not in role_site.output()


def test_a_missing_grant_is_named_by_the_check(
    cluster: Cluster, roles: dict[str, str], role_env: dict[str, str]
) -> None:
    """Revoking one column of the operator's grant: E016 names that privilege."""
    operator = roles["operator"]
    revoke = "UPDATE (stop_requested_by) ON oxide_batch.ob_job_execution"
    cluster.primary.query(f"REVOKE {revoke} FROM {operator}")
    try:
        output = _check(role_env)
    finally:
        cluster.primary.query(f"GRANT {revoke} TO {operator}")
    assert "batchboard.E016" in output, output
    assert (
        f"The login '{operator}' of the database alias 'batchboard_operator'" in output
    )
    assert revoke.replace("UPDATE", "UPDATE", 1) in output
    assert "stop, abandon and recover" in output
    assert f"GRANT {revoke} TO {operator};" in output


def test_a_replica_not_in_recovery_is_named(
    role_env: dict[str, str], cluster: Cluster
) -> None:
    """Pointing the read URL at the primary gives the warning W020."""
    env = {**role_env, "BATCHBOARD_READ_DATABASE_URL": cluster.primary.url()}
    result = manage("check", "--database", "batchboard_read_1", env=env)
    assert "batchboard.W020" in result.output, result.output
    assert "'batchboard_read_1' is not in recovery" in result.output
