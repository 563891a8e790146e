"""
The least-privilege roles of spec 9.1, for real.

Two PostgreSQL roles get exactly the grants of the operator-writer and the
retention classes; ``BATCHBOARD["ACTION_DATABASES"]`` points each writing
class at an alias that connects as its role. Every action then works, and
the operator role cannot purge.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.db import connections
from django.db.utils import load_backend
from django.test import override_settings

from batchboard import actions
from batchboard.models import FlowDecision, JobExecution, JobInstance, RetentionAction
from tests.factories import actions as factories

OPERATOR_ROLE = "bb_actions_operator"
RETENTION_ROLE = "bb_actions_retention"

GRANTS = {
    OPERATOR_ROLE: [
        "GRANT INSERT ON ob_operator_request, ob_recovery_decision TO {role}",
        "GRANT UPDATE (status, exit_code, failure_category, failure_id, started_at,"
        " ended_at, updated_at, version, stop_requested_at, stop_requested_by)"
        " ON ob_job_execution TO {role}",
    ],
    RETENTION_ROLE: [
        "GRANT INSERT, UPDATE ON ob_retention_action TO {role}",
        "GRANT UPDATE (hold_actor, hold_reason, hold_placed_at) ON ob_job_instance"
        " TO {role}",
        "GRANT UPDATE (reused_decision_id) ON ob_flow_decision TO {role}",
        "GRANT DELETE ON ob_flow_decision, ob_recovery_decision, ob_operator_request,"
        " ob_step_partition, ob_component_state, ob_step_execution, ob_job_execution,"
        " ob_job_instance TO {role}",
    ],
}


@pytest.fixture
def role_aliases(transactional_db: None) -> Iterator[dict[str, str]]:
    """Create both roles with their grants and an alias connecting as each."""
    default = connections["default"]
    aliases = {OPERATOR_ROLE: "bb_operator", RETENTION_ROLE: "bb_retention"}
    with default.cursor() as cursor:
        for role, grants in GRANTS.items():
            cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role])
            if cursor.fetchone() is None:
                cursor.execute(
                    f"CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE"
                )
            cursor.execute(f"GRANT USAGE ON SCHEMA oxide_batch TO {role}")
            cursor.execute(
                f"GRANT SELECT ON ALL TABLES IN SCHEMA oxide_batch TO {role}"
            )
            cursor.execute(
                f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA oxide_batch TO {role}"
            )
            for grant in grants:
                cursor.execute(grant.format(role=role))
    # Connections made here rather than in DATABASES, as a deployment's
    # extra aliases would be; the test runner lets a test use those.
    wrappers = {}
    for role, alias in aliases.items():
        backend = load_backend(default.settings_dict["ENGINE"])
        wrappers[alias] = backend.DatabaseWrapper(
            {**default.settings_dict, "USER": role}, alias
        )
        connections[alias] = wrappers[alias]
    try:
        yield {"OPERATOR": aliases[OPERATOR_ROLE], "RETENTION": aliases[RETENTION_ROLE]}
    finally:
        for alias, wrapper in wrappers.items():
            wrapper.close()
            del connections[alias]
        with default.cursor() as cursor:
            for role in GRANTS:
                cursor.execute(f"DROP OWNED BY {role}")
                cursor.execute(f"DROP ROLE {role}")


@pytest.mark.postgresql
def test_each_writing_class_works_as_its_role(
    role_aliases: dict[str, str], admin_user: User
) -> None:
    running = factories.execution("STARTED")
    failed = factories.execution("FAILED")
    stale = factories.execution("UNKNOWN")
    old = factories.execution("COMPLETED", updated_at=factories.ago(days=40))
    with override_settings(BATCHBOARD={"ACTION_DATABASES": role_aliases}):
        assert (
            actions.stop_execution(
                user=admin_user,
                execution_id=running.pk,
                expected_version=3,
                operation_id="op-stop",
            ).outcome
            == "APPLIED"
        )
        assert (
            actions.abandon_execution(
                user=admin_user,
                execution_id=failed.pk,
                expected_version=3,
                reason_code="OPERATOR_DECISION",
                operation_id="op-ab",
            ).outcome
            == "APPLIED"
        )
        proposal = actions.propose(stale.pk)
        assert (
            actions.recover_execution(
                user=admin_user,
                execution_id=stale.pk,
                expected_version=3,
                evidence_digest=proposal.digest,
                unknown_commit=True,
                directive=actions.Directive.abandon(),
                reason_code="HOST_LOST",
                operation_id="op-rec",
            ).outcome
            == "APPLIED"
        )
        assert (
            actions.place_hold(
                user=admin_user,
                instance_id=running.job_instance_id,
                reason_code="AUDIT",
                operation_id="op-hold",
            ).outcome
            == "APPLIED"
        )
        plan = actions.plan_purge(user=admin_user, job_name="nightly-import")
        assert old.pk in [e for _i, e, _v in plan.candidates]
        result = actions.apply_purge(
            user=admin_user,
            criteria=plan.criteria,
            candidates=plan.candidates,
            plan_digest_hex=plan.digest_hex,
            reason_code="RETENTION_POLICY",
            operation_id="op-purge",
        )
        assert result.outcome == "APPLIED"
    assert not JobExecution.objects.filter(pk=old.pk).exists()
    assert JobInstance.objects.get(pk=running.job_instance_id).hold_actor is not None


@pytest.mark.postgresql
def test_the_operator_role_cannot_purge(
    role_aliases: dict[str, str], admin_user: User
) -> None:
    old = factories.execution("COMPLETED", updated_at=factories.ago(days=40))
    plan = actions.plan_purge(user=admin_user, job_name="nightly-import")
    wrong = {"RETENTION": role_aliases["OPERATOR"]}
    with (
        override_settings(BATCHBOARD={"ACTION_DATABASES": wrong}),
        pytest.raises(actions.Unavailable) as raised,
    ):
        actions.apply_purge(
            user=admin_user,
            criteria=plan.criteria,
            candidates=plan.candidates,
            plan_digest_hex=plan.digest_hex,
            reason_code="RETENTION_POLICY",
            operation_id="op-denied",
        )
    # A missing privilege is no race: retrying cannot help, and it says so.
    assert (raised.value.sqlstate, raised.value.retryable) == ("42501", False)
    assert "will not help" in raised.value.message
    assert JobExecution.objects.filter(pk=old.pk).exists()
    assert not RetentionAction.objects.exists()


@pytest.mark.postgresql
def test_the_retention_role_clears_citations_in_other_instances(
    role_aliases: dict[str, str], admin_user: User
) -> None:
    old = factories.execution("FAILED", updated_at=factories.ago(days=40))
    cited = factories.flow_decision(old)
    younger = factories.execution("COMPLETED", updated_at=factories.ago(days=1))
    citing = factories.flow_decision(younger, reused=cited)
    plan = actions.plan_purge(user=admin_user, job_name="nightly-import")
    assert [e for _i, e, _v in plan.candidates] == [old.pk]
    with override_settings(BATCHBOARD={"ACTION_DATABASES": role_aliases}):
        result = actions.apply_purge(
            user=admin_user,
            criteria=plan.criteria,
            candidates=plan.candidates,
            plan_digest_hex=plan.digest_hex,
            reason_code="RETENTION_POLICY",
            operation_id="op-cited",
        )
    assert result.counts["deleted_flow_decisions"] == 1
    assert not JobExecution.objects.filter(pk=old.pk).exists()
    assert FlowDecision.objects.get(pk=citing.pk).reused_decision_id is None
