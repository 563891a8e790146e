"""
The operator's view: a coherent execution page, partitions, lineage, lists.

Each test names the defect it keeps away: a page that contradicts itself, a
worker step shown by its generated name, a parent without its partitions'
counters, a failure that does not say it was restarted.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any
from unittest import mock

import django.urls
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from batchboard.digests import JobParameter
from batchboard.explorer import links, presenters, relations, trends
from batchboard.models import JobExecution, StepExecution
from batchboard.vocabulary import PARTITION_WORKER_PREFIX
from tests import factories
from tests.explorer.conftest import READ_MODELS

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
WORKER_HEX = "ab" * 32


def _admin() -> Client:
    """Return a client signed in with Read, Lifecycle and Destructive."""
    client = Client()
    views = [f"view_{model}" for model in READ_MODELS]
    account = factories.user(
        "administrator", *views, "operate_lifecycle", "operate_destructive"
    )
    client.force_login(account)
    return client


def _other(n: int) -> dict[str, Any]:
    """Return identifying parameters that make another instance."""
    return {"n": JobParameter.u64(n)}


def _get(client: Client, url: str, **headers: str) -> str:
    response = client.get(url, **headers)
    assert response.status_code == 200, url
    return response.content.decode()


def partitioned_run(status: str = "STARTED") -> dict[str, Any]:
    """An execution with a parent step, six partitions (one FAILED) and workers."""
    factories.definition("fan")
    instance = factories.instance("fan")
    execution = factories.execution(instance, status)
    parent = factories.step(execution, "split", "STARTED")
    workers = []
    for ordinal in range(1, 7):
        state = "FAILED" if ordinal == 6 else "COMPLETED"
        worker = factories.step(
            execution,
            f"{PARTITION_WORKER_PREFIX}{ordinal:02d}{WORKER_HEX}",
            state,
            counts={"read_count": 1000 + ordinal, "write_count": 1000 + ordinal},
        )
        factories.partition(
            parent,
            f"region-{ordinal}",
            ordinal,
            state,
            worker=worker,
            counts={"read_count": 1000 + ordinal, "write_count": 1000 + ordinal},
        )
        workers.append(worker)
    return {"execution": execution, "parent": parent, "workers": workers}


# -- partitions ---------------------------------------------------------------------


def test_execution_page_shows_partition_keys_never_worker_names(
    reader: Client,
) -> None:
    run = partitioned_run()
    body = _get(reader, reverse("batchboard:execution", args=[run["execution"].pk]))
    assert PARTITION_WORKER_PREFIX not in body
    # Grouped under the parent, collapsed, labelled by key, linked to the worker.
    group = body[body.index(f'id="bb-partitions-{run["parent"].pk}"') :]
    assert group.startswith(f'id="bb-partitions-{run["parent"].pk}" class=')
    assert re.search(
        r"<details id=\"bb-partitions-\d+\" class=\"bb-partitions\">", body
    )
    for ordinal, worker in enumerate(run["workers"], start=1):
        assert f"region-{ordinal}" in group
        assert reverse("batchboard:step", args=[worker.pk]) in group
        # Worker steps are not rows of their own beside the parent.
        assert f'id="bb-step-{worker.pk}"' not in body
    assert "6 partitions of split" in body


def test_parent_step_rolls_up_its_partitions(reader: Client) -> None:
    run = partitioned_run()
    body = _get(reader, reverse("batchboard:execution", args=[run["execution"].pk]))
    row = body[body.index(f'id="bb-step-{run["parent"].pk}"') :]
    row = row[: row.index("</tr>")]
    total = sum(1000 + ordinal for ordinal in range(1, 7))
    assert f"{total:,}".replace(",", "\u2009") in row
    # Segments: five completed, one failed; never one full bar.
    assert (
        'class="bb-segment bb-segment--completed" x="0.00" y="0" width="83.33"' in row
    )
    assert 'class="bb-segment bb-segment--failed" x="83.33" y="0" width="16.67"' in row
    assert "5 completed" in body and "1 failed" in body


def test_timeline_groups_partitions_under_their_parent(reader: Client) -> None:
    run = partitioned_run()
    body = _get(reader, reverse("batchboard:execution", args=[run["execution"].pk]))
    timeline = body[body.index('id="bb-timeline"') : body.index('id="bb-steps"')]
    assert f'id="bb-timeline-partitions-{run["parent"].pk}"' in timeline
    assert "6 partitions" in timeline and "region-3" in timeline
    assert PARTITION_WORKER_PREFIX not in timeline


def test_worker_step_page_is_labelled_by_its_partition(reader: Client) -> None:
    run = partitioned_run()
    worker = run["workers"][1]
    body = _get(reader, reverse("batchboard:step", args=[worker.pk]))
    assert PARTITION_WORKER_PREFIX not in body
    assert "region-2" in body
    assert reverse("batchboard:step", args=[run["parent"].pk]) in body


def test_parent_step_page_draws_segments(reader: Client) -> None:
    run = partitioned_run()
    body = _get(reader, reverse("batchboard:step", args=[run["parent"].pk]))
    assert "bb-segment--failed" in body and "<progress" not in body
    assert "partitions read 6\u2009021" in body


def test_relations_read_partitions_of_one_execution_only(db: None) -> None:
    run = partitioned_run()
    other = partitioned_run()
    rollups = relations.partition_rollups([run["parent"].pk])
    assert rollups[run["parent"].pk].total == 6
    assert rollups[run["parent"].pk].segments["failed"] == 1
    assert rollups[run["parent"].pk].counters["write_count"] == 6021
    found = relations.worker_partition(run["execution"].pk, run["workers"][0].pk)
    assert found is not None and found["partition_key"] == "region-1"
    assert (
        relations.worker_partition(run["execution"].pk, other["workers"][0].pk) is None
    )
    assert relations.partitions_of(run["execution"].pk, [], []) == []
    assert relations.partition_rollups([]) == {}


def test_execution_page_statements_do_not_grow_with_partitions(
    reader: Client,
) -> None:
    small = partitioned_run()
    large = partitioned_run()
    for ordinal in range(7, 40):
        factories.partition(large["parent"], f"extra-{ordinal}", ordinal, "STARTING")
    counts = []
    for run in (small, large):
        url = reverse("batchboard:execution", args=[run["execution"].pk])
        with CaptureQueriesContext(connection) as captured:
            _get(reader, url)
        counts.append(len(captured.captured_queries))
    assert counts[0] == counts[1]


# -- a coherent, honest live page ------------------------------------------------------


def test_failed_recovered_execution_shows_no_running_step(reader: Client) -> None:
    factories.definition("batch")
    execution = factories.execution(factories.instance("batch"), "STARTED")
    step = factories.step(execution, "load", "STARTED")
    StepExecution.objects.filter(pk=step.pk).update(status="UNKNOWN")
    factories.advance(
        execution, "FAILED", failure_category="STALE_RECOVERED", failure_id=9
    )
    body = _get(reader, reverse("batchboard:execution", args=[execution.pk]))
    row = body[body.index(f'id="bb-step-{step.pk}"') :]
    row = row[: row.index("</tr>")]
    assert "UNKNOWN" in row
    assert "<progress" not in row and "bb-live" not in row
    assert 'hx-trigger="every' not in body
    step_page = _get(reader, reverse("batchboard:step", args=[step.pk]))
    assert "so far" not in step_page and "live, refreshing" not in step_page


def test_stale_unknown_execution_does_not_claim_to_be_live(reader: Client) -> None:
    factories.definition("batch")
    long_ago = factories.ago(days=59)
    execution = factories.execution(
        factories.instance("batch"), "STARTED", created_at=long_ago, updated_at=long_ago
    )
    JobExecution.objects.filter(pk=execution.pk).update(status="UNKNOWN")
    body = _get(reader, reverse("batchboard:execution", args=[execution.pk]))
    assert "live, refreshing" not in body
    assert 'hx-trigger="every' not in body
    assert "only a recovery resolves it" in body
    # UNKNOWN always qualifies for a recovery proposal.
    assert reverse("batchboard:recovery_proposal", args=[execution.pk]) in body


def test_recovery_proposal_only_for_executions_that_qualify(reader: Client) -> None:
    factories.definition("batch")
    healthy = factories.execution(factories.instance("batch"), "STARTED")
    body = _get(reader, reverse("batchboard:execution", args=[healthy.pk]))
    assert "live, refreshing" in body
    assert reverse("batchboard:recovery_proposal", args=[healthy.pk]) not in body
    idle = factories.ago(hours=2)
    stale = factories.execution(
        factories.instance("batch"), "STARTED", created_at=idle, updated_at=idle
    )
    body = _get(reader, reverse("batchboard:execution", args=[stale.pk]))
    assert reverse("batchboard:recovery_proposal", args=[stale.pk]) in body
    assert "stale, a recovery candidate" in body and "live, refreshing" not in body
    # Still polled: its owner may yet move it.
    assert 'hx-trigger="every' in body


def test_staleness_costs_no_statement_of_its_own(reader: Client) -> None:
    """A running execution's live region reads as much as a finished one's."""
    factories.definition("batch")
    running = factories.execution(factories.instance("batch"), "STARTED")
    done = factories.execution(factories.instance("batch"), "COMPLETED")
    counts = []
    for execution in (running, done):
        url = reverse("batchboard:execution_live", args=[execution.pk])
        reader.get(url, **HTMX)
        with CaptureQueriesContext(connection) as captured:
            assert reader.get(url, **HTMX).status_code == 200
        counts.append(len(captured))
    assert counts[0] == counts[1]


def test_actions_offered_only_where_they_change_something(db: None) -> None:
    client = _admin()
    factories.definition("batch")
    instance = factories.instance("batch")
    failed = factories.execution(instance, "FAILED")
    latest = _get(client, reverse("batchboard:execution", args=[failed.pk]))
    assert "Abandon…" in latest and "Stop…" not in latest
    restart = factories.execution(instance, "COMPLETED", restart_of=failed)
    restarted = _get(client, reverse("batchboard:execution", args=[failed.pk]))
    assert "Abandon…" not in restarted and "Stop…" not in restarted
    completed = _get(client, reverse("batchboard:execution", args=[restart.pk]))
    assert "Abandon…" not in completed and "Stop…" not in completed
    running = factories.execution(factories.instance("batch", _other(2)), "STARTED")
    page = _get(client, reverse("batchboard:execution", args=[running.pk]))
    assert "Stop…" in page
    factories.advance(
        running,
        "STARTED",
        stop_requested_at=factories.now(),
        stop_requested_by="user:x",
    )
    page = _get(client, reverse("batchboard:execution", args=[running.pk]))
    assert "Stop…" not in page and "requested" in page


# -- lineage ------------------------------------------------------------------------------


def test_attempts_link_before_and_after(reader: Client) -> None:
    factories.definition("batch")
    instance = factories.instance("batch")
    first = factories.execution(instance, "FAILED")
    second = factories.execution(instance, "COMPLETED", restart_of=first)
    failed_page = _get(reader, reverse("batchboard:execution", args=[first.pk]))
    assert re.search(
        rf'restarted as <a href="{reverse("batchboard:execution", args=[second.pk])}"'
        r' rel="next">#\d+</a> <span class="bb-status bb-status--good">COMPLETED',
        failed_page,
    )
    restart_page = _get(reader, reverse("batchboard:execution", args=[second.pk]))
    assert f'href="{reverse("batchboard:execution", args=[first.pk])}" rel="prev"' in (
        restart_page
    )
    assert "latest attempt" in restart_page
    instance_page = _get(reader, reverse("batchboard:instance", args=[instance.pk]))
    chain = instance_page[instance_page.index('class="bb-chain"') :]
    assert chain.index(f"#{first.pk}") < chain.index(f"#{second.pk}")


def test_failures_say_which_attempt_restarted_them(reader: Client) -> None:
    factories.definition("batch")
    instance = factories.instance("batch")
    first = factories.execution(instance, "FAILED")
    second = factories.execution(instance, "COMPLETED", restart_of=first)
    lonely = factories.execution(factories.instance("batch", _other(2)), "FAILED")
    expected = f"restarted as #{second.pk} (COMPLETED)"
    failures = _get(reader, reverse("batchboard:executions") + "?status=FAILED")
    assert expected in failures
    attention = _get(reader, reverse("batchboard:attention"), **HTMX)
    assert expected in attention
    following = relations.next_attempts(
        [
            {"id": first.pk, "job_instance_id": instance.pk, "attempt": 1},
            {"id": lonely.pk, "job_instance_id": lonely.job_instance_id, "attempt": 1},
        ]
    )
    assert list(following) == [first.pk]
    assert relations.next_attempts([]) == {}


# -- lists ----------------------------------------------------------------------------


def test_executions_list_rows_are_plain_and_one_line(reader: Client) -> None:
    factories.definition("a-very-long-job-name-that-would-wrap-the-row")
    instance = factories.instance("a-very-long-job-name-that-would-wrap-the-row")
    running = factories.execution(instance, "STARTED")
    failed = factories.execution(
        factories.instance("a-very-long-job-name-that-would-wrap-the-row", _other(1)),
        "FAILED",
        failure=("USER_COMPONENT", 4242),
    )
    body = _get(reader, reverse("batchboard:executions"))
    table = body[body.index('<table class="bb-table bb-table--lines"') :]
    running_row = table[table.index(f'id="bb-execution-{running.pk}"') :]
    running_row = running_row[: running_row.index("</tr>")]
    assert "<code>UNKNOWN</code>" not in running_row and "running" in running_row
    failed_row = table[table.index(f'id="bb-execution-{failed.pk}"') :]
    failed_row = failed_row[: failed_row.index("</tr>")]
    assert "#4242" not in failed_row and "failure 4242" in failed_row
    assert (
        'class="bb-cut"' in failed_row and 'title="a-very-long-job-name' in failed_row
    )


def test_unresolved_triage_links_reverse_no_url_per_row(db: None) -> None:
    client = _admin()
    factories.definition("batch")
    idle = factories.ago(hours=2)

    def stuck(count: int, offset: int) -> None:
        for n in range(count):
            factories.execution(
                factories.instance("batch", _other(offset + n)),
                "STARTED",
                created_at=idle,
                updated_at=idle,
            )

    url = reverse("batchboard:unresolved") + "?age=60"
    calls = []
    for count, offset in ((2, 0), (8, 100)):
        stuck(count, offset)
        links._pattern.cache_clear()
        with (
            mock.patch.object(
                django.urls,
                "reverse",
                wraps=django.urls.reverse,
            ) as in_templates,
            mock.patch.object(links, "reverse", wraps=links.reverse) as in_code,
        ):
            body = _get(client, url)
        calls.append(in_templates.call_count + in_code.call_count)
        names = [call.args[0] for call in in_code.call_args_list]
        names += [call.args[0] for call in in_templates.call_args_list]
        # Each action's link is reversed once per page, whatever its rows.
        assert names.count("batchboard:action_stop") == 1
        assert names.count("batchboard:recovery_proposal") == 1
        assert body.count("Stop…") == body.count("Recover…") > 0
    # Eight rows cost no more reversing than two (fixed parts are cached).
    assert calls[1] <= calls[0]


def test_triage_rows_offer_stop_where_the_execution_offers_it(db: None) -> None:
    """
    The unresolved list's Stop… follows the eligibility rule: a STARTING or
    STARTED run without a stop request, never STOPPING, UNKNOWN or a run
    whose stop is requested already.
    """
    client = _admin()
    factories.definition("batch")
    idle = factories.ago(hours=2)
    rows = {}
    for n, (status, requested) in enumerate(
        [
            ("STARTED", False),
            ("STARTING", False),
            ("STARTED", True),
            ("STOPPING", False),
            ("UNKNOWN", False),
        ]
    ):
        rows[(status, requested)] = factories.execution(
            factories.instance("batch", _other(500 + n)),
            status,
            created_at=idle,
            updated_at=idle,
            stop_requested_by="user:x" if requested else None,
        )
    body = _get(client, reverse("batchboard:unresolved") + "?age=60")
    for (status, requested), execution in rows.items():
        row = body[body.index(f'id="bb-execution-{execution.pk}"') :]
        row = row[: row.index("</tr>")]
        offered = status in ("STARTING", "STARTED") and not requested
        assert ("Stop…" in row) is offered, (status, requested)
        assert "Recover…" in row


def test_shortcuts_dialog_is_on_every_page(reader: Client) -> None:
    body = _get(reader, reverse("batchboard:index"))
    assert '<dialog id="bb-shortcuts"' in body and "<script>" not in body


def test_timeline_of_a_long_finished_run_ends_with_it(db: None) -> None:
    factories.definition("batch")
    execution = factories.execution(factories.instance("batch"), "FAILED")
    step = factories.step(execution, "load", "STARTED")
    present = presenters.Presenter(now=factories.now() + timedelta(days=10))
    found: dict[str, Any] = {
        "status": "FAILED",
        "started_at": execution.started_at,
        "created_at": execution.created_at,
        "ended_at": execution.ended_at,
        "updated_at": execution.updated_at,
    }
    rows = present.steps(
        [
            {
                **{f: getattr(step, f) for f in ("id", "status", "step_name")},
                "started_at": step.started_at,
                "ended_at": None,
                "partitions_total": 0,
                "partitions_done": 0,
                **dict.fromkeys(presenters._ROW_COUNTERS, 0),
            }
        ],
        found,
    )
    assert rows[0]["live"] is False
    assert "d" not in str(rows[0]["duration"])
    bars = present.timeline(found, rows)
    assert bars[0].width <= 100.0


def test_execution_summary_shows_no_exit_code_until_finished(reader: Client) -> None:
    """The summary follows the list's rule: "running", a dash, then the code."""
    factories.definition("batch")
    running = factories.execution(factories.instance("batch"), "STARTED")
    step = factories.step(running, "load", "STARTED")

    def exit_cell(body: str) -> str:
        cell = body[body.index("Exit code</dt><dd>") :]
        return cell[: cell.index("</dd>")]

    page = _get(reader, reverse("batchboard:execution", args=[running.pk]))
    assert '<span class="bb-muted">running</span>' in exit_cell(page)
    assert "UNKNOWN" not in exit_cell(page)
    step_page = _get(reader, reverse("batchboard:step", args=[step.pk]))
    assert '<span class="bb-muted">running</span>' in exit_cell(step_page)
    JobExecution.objects.filter(pk=running.pk).update(status="UNKNOWN")
    page = _get(reader, reverse("batchboard:execution", args=[running.pk]))
    assert '<span class="bb-muted">—</span>' in exit_cell(page)
    factories.advance(running, "COMPLETED", exit_code="DONE")
    page = _get(reader, reverse("batchboard:execution", args=[running.pk]))
    assert "<code>" in exit_cell(page)
    # The step it left STARTED is not running any more.
    row = page[page.index(f'id="bb-step-{step.pk}"') :]
    row = row[: row.index("</tr>")]
    assert "running" not in row and '<span class="bb-muted">—</span>' in row


# -- the live region keeps the rows a reader loaded --------------------------------


def _many_steps(count: int) -> JobExecution:
    factories.definition("long")
    execution = factories.execution(factories.instance("long"), "STARTED")
    for number in range(count):
        factories.step(execution, f"step-{number:03d}", "COMPLETED")
    return execution


def _step_ids(body: str) -> list[str]:
    return re.findall(r'<tr id="bb-step-(\d+)"', body)


def test_load_more_raises_what_the_live_region_re_reads(reader: Client) -> None:
    execution = _many_steps(12)
    page_url = reverse("batchboard:execution", args=[execution.pk])
    live_url = reverse("batchboard:execution_live", args=[execution.pk])
    first = _get(reader, f"{page_url}?size=5")
    assert len(_step_ids(first)) == 5
    assert '<input type="hidden" id="bb-steps-shown" name="shown" value="5">' in first
    assert 'hx-include="#bb-steps-shown"' in first
    more = re.search(r'class="bb-more" hx-get="([^"]+)"', first)
    assert more is not None
    next_url = more.group(1).replace("&amp;", "&")
    assert next_url.startswith(page_url + "?") and "shown=5" in next_url
    response = reader.get(next_url, **HTMX)
    body = response.content.decode()
    assert len(_step_ids(body)) == 5
    # The region learns the new count out of band; a reload shows the same rows.
    assert (
        '<input type="hidden" id="bb-steps-shown" name="shown" value="10"'
        ' hx-swap-oob="true">'
    ) in body
    assert response["HX-Replace-Url"] == f"{page_url}?shown=10"
    # The region's refresh, sending shown=10, keeps all ten rows.
    region = _get(reader, f"{live_url}?shown=10", **HTMX)
    assert _step_ids(region) == _step_ids(first) + _step_ids(body)
    # Its own "load more" continues on the page's address, not the region's.
    more = re.search(r'class="bb-more" hx-get="([^"]+)"', region)
    assert more is not None and more.group(1).startswith(page_url + "?")
    last = reader.get(more.group(1).replace("&amp;", "&"), **HTMX).content.decode()
    assert len(_step_ids(last)) == 2
    reloaded = _get(reader, f"{page_url}?shown=10")
    assert len(_step_ids(reloaded)) == 10


def test_rows_shown_stop_at_the_page_bound(reader: Client) -> None:
    execution = _many_steps(301)
    page_url = reverse("batchboard:execution", args=[execution.pk])
    assert reader.get(f"{page_url}?shown=501").status_code == 400
    assert reader.get(f"{page_url}?shown=x", **HTMX).status_code == 400
    first = _get(reader, f"{page_url}?size=300")
    more = re.search(r'class="bb-more" hx-get="([^"]+)"', first)
    assert more is not None
    body = _get(reader, more.group(1).replace("&amp;", "&"), **HTMX)
    assert len(_step_ids(body)) == 1
    # 600 rows would be shown; the region re-reads at most MAX_PAGE_SIZE.
    assert 'name="shown" value="500" hx-swap-oob="true"' in body


def test_the_live_region_reads_its_rows_in_one_statement(reader: Client) -> None:
    execution = _many_steps(40)
    live_url = reverse("batchboard:execution_live", args=[execution.pk])
    counts = []
    for shown in (5, 40):
        with CaptureQueriesContext(connection) as captured:
            body = _get(reader, f"{live_url}?shown={shown}", **HTMX)
        assert len(_step_ids(body)) == shown
        counts.append(len(captured.captured_queries))
    assert counts[0] == counts[1]


def test_job_instance_and_execution_pages_link_the_jobs_audit_log(
    reader: Client,
) -> None:
    factories.definition("ops/nightly")
    instance = factories.instance("ops/nightly")
    execution = factories.execution(instance, "COMPLETED")
    audit = f'href="{reverse("batchboard:audit")}?job=ops%2Fnightly"'
    for url in (
        links.job_url("ops/nightly"),
        reverse("batchboard:instance", args=[instance.pk]),
        reverse("batchboard:execution", args=[execution.pk]),
    ):
        assert audit in _get(reader, url), url


def recovered_run() -> tuple[JobExecution, StepExecution]:
    """
    An execution recovered as FAILED 40 days after it was created: its steps
    were last seen 2 h after the start, its exit code is still the one it
    was created with.
    """
    factories.definition("ledger")
    created = factories.now() - timedelta(days=40)
    execution = factories.execution(
        factories.instance("ledger"),
        "FAILED",
        created_at=created,
        duration=timedelta(days=40),
        exit_code="UNKNOWN",
        failure=("STALE_RECOVERED", 41),
    )
    factories.step(execution, "extract", "COMPLETED", duration=timedelta(minutes=20))
    left = factories.step(execution, "load", "STARTED")
    StepExecution.objects.filter(pk=left.pk).update(
        updated_at=left.started_at + timedelta(hours=2)
    )
    return execution, StepExecution.objects.get(pk=left.pk)


def test_a_recovered_execution_s_duration_is_unknown_with_its_bounds(
    reader: Client,
) -> None:
    execution, left = recovered_run()
    page = _get(reader, reverse("batchboard:execution", args=[execution.pk]))
    facts = page[page.index("Duration</dt><dd>") :]
    facts = facts[: facts.index("</dd>")]
    start = execution.started_at.strftime("%Y-%m-%d %H:%M:%SZ")
    end = execution.ended_at.strftime("%Y-%m-%d %H:%M:%SZ")
    assert facts == (
        f'Duration</dt><dd>unknown <span class="bb-muted">(started {start}; its end '
        f"was recorded at {end} by a recovery, not by the run)</span>"
    )
    exit_cell = page[page.index("Exit code</dt><dd>") :]
    assert exit_cell.startswith(
        'Exit code</dt><dd><span class="bb-muted">no exit code recorded</span>'
    )
    # The step it left STARTED says its duration is unknown, seen until when.
    row = page[page.index(f'id="bb-step-{left.pk}"') :]
    row = row[: row.index("</tr>")]
    seen = left.updated_at.strftime("%Y-%m-%d %H:%M:%SZ")
    assert (
        f'title="started {left.started_at.strftime("%Y-%m-%d %H:%M:%SZ")}; '
        f'last update {seen}, then left STARTED">unknown</td>'
    ) in row
    # Its timeline spans the steps' own two hours, not the 40 days.
    present = presenters.Presenter()
    found = JobExecution.objects.values().get(pk=execution.pk)
    steps = present.steps(
        [
            {
                **StepExecution.objects.values().get(pk=left.pk),
                "partitions_total": 0,
                "partitions_done": 0,
            }
        ],
        found,
    )
    (bar,) = present.timeline(found, steps)
    assert bar.width == 100.0 and bar.duration == "unknown"
    listed = _get(reader, reverse("batchboard:executions") + "?status=FAILED")
    cell = listed[listed.index(f'id="bb-execution-{execution.pk}"') :]
    assert (
        f'<td class="bb-num" title="started {start}; its end was recorded at '
        f'{end} by a recovery, not by the run">unknown</td>'
    ) in cell[: cell.index("</tr>")]


def test_a_recovered_execution_has_no_bar_in_the_trend(db: None) -> None:
    execution, _ = recovered_run()
    factories.execution(factories.instance("ledger"), "COMPLETED")
    history = trends.job_history("ledger", presenters.Clock())
    drawn = history["trend"]
    assert drawn.unknown == 1 and drawn.unstarted == 0
    recovered = next(bar for bar in drawn.bars if bar.run["id"] == execution.pk)
    assert recovered.height == 0 and recovered.duration == "unknown"
    assert drawn.p95 == "3 min 00 s"


def test_an_unknown_execution_s_duration_is_unknown_since_its_last_update(
    reader: Client,
) -> None:
    factories.definition("ledger")
    created = factories.now() - timedelta(days=3)
    execution = factories.execution(
        factories.instance("ledger"),
        "UNKNOWN",
        created_at=created,
        updated_at=created + timedelta(minutes=5),
    )
    page = _get(reader, reverse("batchboard:execution", args=[execution.pk]))
    facts = page[page.index("Duration</dt><dd>") :]
    seen = execution.updated_at.strftime("%Y-%m-%d %H:%M:%SZ")
    assert facts[: facts.index("</dd>")].endswith(
        f"last update {seen}, then left UNKNOWN)</span>"
    )
    assert facts.startswith("Duration</dt><dd>unknown ")
    listed = _get(reader, reverse("batchboard:executions") + "?status=UNKNOWN")
    cell = listed[listed.index(f'id="bb-execution-{execution.pk}"') :]
    assert ">unknown</td>" in cell[: cell.index("</tr>")]
