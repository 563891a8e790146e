"""Every explorer page: full page, htmx fragment and history restore."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client
from django.urls import reverse

from tests.explorer.conftest import History

HTMX = {"HTTP_HX_REQUEST": "true"}
RESTORE = {"HTTP_HX_REQUEST": "true", "HTTP_HX_HISTORY_RESTORE_REQUEST": "true"}

PAGES: dict[str, Callable[[History], str]] = {
    "overview": lambda h: reverse("batchboard:index"),
    "job": lambda h: reverse("batchboard:job", args=["nightly-import"]),
    "instance": lambda h: reverse("batchboard:instance", args=[h.instance.pk]),
    "executions": lambda h: reverse("batchboard:executions"),
    "failed executions": lambda h: reverse("batchboard:executions") + "?status=FAILED",
    "executions of a job": lambda h: (
        reverse("batchboard:executions") + "?job=nightly-import"
    ),
    "execution": lambda h: reverse("batchboard:execution", args=[h.restart.pk]),
    "finished execution": lambda h: reverse("batchboard:execution", args=[h.failed.pk]),
    "step": lambda h: reverse("batchboard:step", args=[h.partitioned.pk]),
    "unresolved": lambda h: reverse("batchboard:unresolved") + "?age=60",
    "flow decisions": lambda h: reverse(
        "batchboard:flow_decisions", args=[h.failed.pk]
    ),
    "recovery decisions": lambda h: reverse(
        "batchboard:recovery_decisions", args=[h.failed.pk]
    ),
    "operator requests": lambda h: reverse(
        "batchboard:operator_requests", args=[h.failed.pk]
    ),
}


@pytest.mark.parametrize("name", PAGES)
def test_full_page(reader: Client, history: History, name: str) -> None:
    """A plain request gets the whole page, with htmx loaded from the package."""
    response = reader.get(PAGES[name](history))
    assert response.status_code == 200
    body = response.content.decode()
    assert body.startswith("<!doctype html>")
    assert "django_htmx/htmx" in body
    assert "<script>" not in body and "<style>" not in body
    assert "HX-Request" in response["Vary"]


@pytest.mark.parametrize("name", PAGES)
def test_htmx_request_gets_a_fragment(
    reader: Client, history: History, name: str
) -> None:
    response = reader.get(PAGES[name](history), **HTMX)
    assert response.status_code == 200
    body = response.content.decode()
    assert "<html" not in body and "<body" not in body
    assert body.strip()
    assert "HX-Request" in response["Vary"]


@pytest.mark.parametrize("name", PAGES)
def test_history_restore_gets_the_full_page(
    reader: Client, history: History, name: str
) -> None:
    response = reader.get(PAGES[name](history), **RESTORE)
    assert response.status_code == 200
    assert response.content.decode().startswith("<!doctype html>")


def test_overview_shows_jobs_strip_and_attention(
    reader: Client, history: History
) -> None:
    overview = reader.get(reverse("batchboard:index")).content.decode()
    assert "nightly-import" in overview and "billing.export" in overview
    assert "1 running" in overview
    # The page asks for its attention panel as soon as it is shown.
    attention_url = reverse("batchboard:attention")
    assert f'hx-get="{attention_url}" hx-trigger="load"' in overview
    assert 'aria-busy="true"' in overview and "Checking for stuck runs" in overview
    body = reader.get(attention_url, **HTMX).content.decode()
    assert 'id="bb-attention"' in body and "aria-busy" not in body
    assert "Recent failures" in body and "USER_COMPONENT" in body
    # The restart has not been updated for an hour: older than the 15 min bound.
    assert (
        f'#{history.restart.pk}</a> <a href="/jobs/nightly-import/">nightly-import</a>'
        in body
    )


def test_execution_page_shows_steps_timeline_and_decisions(
    reader: Client, history: History
) -> None:
    body = reader.get(
        reverse("batchboard:execution", args=[history.failed.pk])
    ).content.decode()
    assert "Timeline" in body and "bb-bar--bad" in body
    assert "→ reconcile" in body
    assert "HOST_LOST" in body
    assert "STOP" in body and "APPLIED" in body
    assert "restart of" not in body


def test_running_execution_polls_and_finished_does_not(
    reader: Client, history: History
) -> None:
    running = reader.get(
        reverse("batchboard:execution", args=[history.restart.pk])
    ).content.decode()
    # One region polls for the whole page; rows do not poll on their own. No
    # trigger filter: htmx would need eval; batchboard.js skips hidden tabs.
    assert running.count('hx-trigger="every') == 1
    assert 'hx-trigger="every 3s, batchboard:changed from:body"' in running
    assert reverse("batchboard:execution_live", args=[history.restart.pk]) in running
    assert reverse("batchboard:step_row", args=[history.running_step.pk]) not in running
    finished = reader.get(
        reverse("batchboard:execution", args=[history.failed.pk])
    ).content.decode()
    assert 'hx-trigger="every' not in finished
    # A finished page still follows an action's result.
    assert 'hx-trigger="batchboard:changed from:body"' in finished


def test_live_endpoints_render_fragments_and_redirect_plain_requests(
    reader: Client, history: History
) -> None:
    for name, pk, polls in (
        ("execution_live", history.restart.pk, True),
        ("execution_row", history.restart.pk, True),
        ("step_live", history.partitioned.pk, True),
        ("step_row", history.running_step.pk, False),
    ):
        url = reverse(f"batchboard:{name}", args=[pk])
        fragment = reader.get(url, **HTMX)
        assert fragment.status_code == 200
        assert "<html" not in fragment.content.decode()
        assert ("every 3s" in fragment.content.decode()) is polls
        assert reader.get(url).status_code == 302


def test_step_page_shows_partition_progress(reader: Client, history: History) -> None:
    body = reader.get(
        reverse("batchboard:step", args=[history.partitioned.pk])
    ).content.decode()
    assert "2 of 4 partitions finished (50 %)" in body
    assert "part-1" in body and "unassigned" in body
    assert "payloads are never shown" in body


def test_jump_box_opens_records(reader: Client, history: History) -> None:
    for kind, pk, name in (
        ("execution", history.failed.pk, "execution"),
        ("instance", history.instance.pk, "instance"),
        ("step", history.step.pk, "step"),
    ):
        response = reader.get(
            reverse("batchboard:jump"), {"kind": kind, "id": f"#{pk}"}
        )
        assert response.status_code == 302
        assert response["Location"] == reverse(f"batchboard:{name}", args=[pk])
    bad = reader.get(reverse("batchboard:jump"), {"kind": "execution", "id": "abc"})
    assert bad.status_code == 400


@pytest.mark.parametrize("name", PAGES)
def test_anonymous_is_sent_to_login(
    client: Client, history: History, name: str
) -> None:
    response = client.get(PAGES[name](history))
    assert response.status_code == 302
    assert "/login/" in response["Location"]


def test_signed_in_without_read_class_is_refused(db: None, history: History) -> None:
    from django.contrib.auth.models import User

    client = Client()
    client.force_login(User.objects.create_user("nobody"))
    response = client.get(reverse("batchboard:index"))
    assert response.status_code == 403
    assert "Permission needed" in response.content.decode()


def test_live_region_lists_steps_created_after_the_page_opened(
    reader: Client, history: History
) -> None:
    from tests import factories

    url = reverse("batchboard:execution_live", args=[history.restart.pk])
    before = reader.get(url, **HTMX).content.decode()
    new = factories.step(history.restart, "reconcile", "STARTING")
    assert f'id="bb-step-{new.pk}"' not in before
    after = reader.get(url, **HTMX).content.decode()
    assert f'id="bb-step-{new.pk}"' in after and "No steps yet." not in after
    factories.advance_step(new, "FAILED")
    factories.advance(history.restart, "FAILED")
    done = reader.get(url, **HTMX).content.decode()
    assert 'hx-trigger="every' not in done
    assert "live, refreshing" not in done


def test_attention_panel_polls_while_something_is_stuck(
    reader: Client, history: History
) -> None:
    from tests import factories

    url = reverse("batchboard:attention")
    assert reader.get(url).status_code == 302
    stuck = reader.get(url, **HTMX).content.decode()
    assert "<html" not in stuck
    assert f"#{history.restart.pk}" in stuck and 'hx-trigger="every' in stuck
    factories.advance(history.restart, "FAILED")
    calm = reader.get(url, **HTMX).content.decode()
    assert "Nothing is stuck." in calm and "hx-trigger" not in calm


def test_job_page_shortens_long_parameter_lists(reader: Client, db: None) -> None:
    from batchboard.digests import JobParameter
    from tests import factories

    factories.definition("wide")
    factories.instance(
        "wide", {f"p{index:02d}": JobParameter.u64(index) for index in range(11)}
    )
    body = reader.get(reverse("batchboard:job", args=["wide"])).content.decode()
    assert "p07" in body and "p08" not in body
    assert "+3 more" in body
