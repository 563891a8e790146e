"""Two executions side by side: runs, definitions, steps, flow, parameters."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from batchboard.digests import JobParameter
from batchboard.explorer import compare as comparing
from batchboard.explorer import queries
from batchboard.models import DefinitionUpgrade, JobExecution
from tests import factories
from tests.explorer.conftest import History


def _url(a: int, b: int) -> str:
    return reverse("batchboard:compare", args=[a, b])


def _restarted(
    steps: int = 2, job: str = "ledger"
) -> tuple[JobExecution, JobExecution]:
    """A failed attempt on v1 and its completed restart on v2 (an upgrade)."""
    old = factories.definition(job, "v1")
    new = factories.definition(job, "v2")
    DefinitionUpgrade.objects.create(
        from_definition=old,
        to_definition=new,
        upgrade_key="ledger-fix",
        step_mapping={},
        registered_at=factories.now(),
    )
    instance = factories.instance(
        job, {"day": JobParameter.string("secret-day-2026-02-03")}
    )
    failed = factories.execution(
        instance, "FAILED", job_definition=old, duration=timedelta(minutes=4)
    )
    restart = factories.execution(
        instance,
        "COMPLETED",
        job_definition=new,
        restart_of=failed,
        duration=timedelta(minutes=9),
    )
    factories.step(failed, "extract", "COMPLETED", counts={"read_count": 500})
    factories.step(failed, "load", "FAILED", counts={"read_retry_count": 3})
    factories.step(restart, "load", "COMPLETED", counts={"write_count": 480})
    for index in range(steps - 2):
        factories.step(restart, f"extra-{index:03}", "COMPLETED")
    factories.flow_decision(failed, 1, "extract", target="load")
    factories.flow_decision(
        failed, 2, "load", outcome="FAILED", target=None, terminal="FAIL"
    )
    factories.flow_decision(restart, 1, "load", target=None, terminal="COMPLETE")
    return failed, restart


def test_a_failed_attempt_beside_its_restart(value_reader: Client) -> None:
    failed, restart = _restarted()
    response = value_reader.get(_url(failed.pk, restart.pk))
    assert response.status_code == 200
    body = response.content.decode()
    runs = body[
        body.index('id="bb-compare-runs"') : body.index('id="bb-compare-steps"')
    ]
    assert "FAILED" in runs and "COMPLETED" in runs
    assert "v1" in runs and "v2" in runs
    assert "4 min" in runs and "9 min" in runs
    assert "v1 → v2 (upgrade key ledger-fix)" in runs
    steps = body[
        body.index('id="bb-compare-steps"') : body.index('id="bb-compare-flow"')
    ]
    # Steps matched by logical id: load ran in both, extract only in the first.
    assert steps.index(">extract<") < steps.index(">load<")
    assert "not run" in steps
    assert "retries 3" in steps
    flow = body[
        body.index('id="bb-compare-flow"') : body.index('id="bb-compare-parameters"')
    ]
    assert "extract" in flow and "→ load" in flow
    parameters = body[body.index('id="bb-compare-parameters"') :]
    assert ">day<" in parameters and "same" in parameters
    # The value is compared, never shown, even to a reader who may see values.
    assert "secret-day" not in body


def test_parameters_are_marked_by_name_without_values(reader: Client) -> None:
    factories.definition("ledger")
    first = factories.instance(
        "ledger",
        {"day": JobParameter.string("hidden-a"), "shard": JobParameter.u64(1)},
    )
    second = factories.instance(
        "ledger",
        {"day": JobParameter.string("hidden-b"), "region": JobParameter.string("eu")},
    )
    left = factories.execution(first, "FAILED")
    right = factories.execution(second, "COMPLETED")
    pairs = {pair.name: pair for pair in comparing.parameters(left.pk, right.pk)}
    assert pairs["day"].sameness == "different"
    assert pairs["shard"].sameness == "only_left"
    assert pairs["region"].sameness == "only_right"
    assert (pairs["shard"].left_kind, pairs["shard"].right_kind) == ("U64", None)
    body = reader.get(_url(left.pk, right.pk)).content.decode()
    assert "different" in body and "hidden-" not in body and ">eu<" not in body


def test_the_same_id_twice_is_a_400_and_an_unknown_id_a_404(
    reader: Client, history: History
) -> None:
    same = reader.get(_url(history.failed.pk, history.failed.pk))
    assert same.status_code == 400
    assert f"#{history.failed.pk} was given twice" in same.content.decode()
    unknown = reader.get(_url(history.failed.pk, 987654))
    assert unknown.status_code == 404
    assert "execution #987654" in unknown.content.decode()


def test_a_list_selection_opens_the_comparison(
    reader: Client, history: History
) -> None:
    url = reverse("batchboard:compare_selected")
    pair = [history.restart.pk, history.failed.pk]
    response = reader.get(url, {"execution": pair})
    assert response.status_code == 302
    assert response["Location"] == _url(history.failed.pk, history.restart.pk)
    for chosen in ([history.failed.pk], [1, 2, 3], ["x", "1"], [5, 5], []):
        refused = reader.get(url, {"execution": chosen})
        assert refused.status_code == 400, chosen
        assert "two" in refused.content.decode()


def test_lists_offer_the_selection_and_lineage_links_the_comparison(
    reader: Client, history: History
) -> None:
    listing = reader.get(reverse("batchboard:executions")).content.decode()
    assert 'id="bb-compare"' in listing
    assert f'name="execution" value="{history.failed.pk}" form="bb-compare"' in listing
    compare = _url(history.failed.pk, history.restart.pk)
    instance = reader.get(reverse("batchboard:instance", args=[history.instance.pk]))
    assert compare in instance.content.decode()
    for execution in (history.failed, history.restart):
        page = reader.get(reverse("batchboard:execution", args=[execution.pk]))
        assert compare in page.content.decode()


def test_statements_do_not_grow_with_the_steps(value_reader: Client) -> None:
    def statements(steps: int, job: str) -> int:
        failed, restart = _restarted(steps, job)
        with CaptureQueriesContext(connection) as captured:
            response = value_reader.get(_url(failed.pk, restart.pk))
        assert response.status_code == 200
        return len(captured.captured_queries)

    assert statements(2, "few") == statements(40, "many")


def test_steps_past_the_bound_are_not_compared(
    history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(comparing, "COMPARED_STEPS", 2)
    for name in ("a", "b", "c"):
        factories.step(history.failed, name, "COMPLETED")
    one = queries.execution(history.failed.pk)
    other = queries.execution(history.restart.pk)
    assert one is not None and other is not None
    found = comparing.compare(one, other, partitions=True)
    assert found.left.more_steps is True
    assert list(found.left.steps) == ["a", "b"]
    assert found.right.more_steps is False
    # The parent step's partitions are rolled up in one grouped read.
    fan_out = next(pair for pair in found.steps if pair.logical_id == "fan-out")
    assert fan_out.right is not None
    assert found.rollups[int(fan_out.right["id"])].total == 4
