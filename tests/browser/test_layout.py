"""
Layout in a real browser: every page fits a 1,280 px window and a 390 px
phone, in light and dark mode; the job trend stays readable beside an
outlier, the steps grid is labelled, and "Needs attention" leads with what
is still broken.

The pages come from the URL resolver: a new page of the ``batchboard``
namespace fails :func:`test_every_page_of_the_namespace_is_measured` until
it is measured here or named among the ones that are not pages.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import get_resolver, reverse

from batchboard import actions
from batchboard.actions.bulk.plan import bulk_digest
from batchboard.models import JobExecution
from tests import factories
from tests.browser.test_operator_history import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = (1280, 390)
LONG_JOB = "Rapports mensuels / Région Île-de-France — consolidation trimestrielle"

#: Names of the namespace that are not pages of their own: fragments a page
#: polls or loads, redirects and the action dialogs' endpoints (their pages
#: are measured by tests/browser/test_actions.py's flows).
NOT_PAGES = {
    "attention",
    "job_history",
    "execution_live",
    "execution_row",
    "step_live",
    "step_row",
    "partition_row",
    "jump",
    "compare_selected",
    "purge_apply",
    "action_stop",
    "action_abandon",
    "action_recover",
    "action_hold",
    "action_release",
    "recovery_proposal",
    # POSTs and fragments of bulk actions, alerts and tokens.
    "bulk_apply",
    "bulk_continue",
    "inbox_count",
    "job_names",
    "api_token_revoke",
    # Saved views: the menu's fragment, the POSTs and the redirects to a list.
    "saved_views_menu",
    "save_view",
    "edit_view",
    "saved_view",
    "default_view",
    # Not HTML: /metrics (its text format) and the lists' downloads.
    "metrics",
    "executions_export",
    "audit_export",
    "purge_export",
    "bulk_plan_export",
}

# The page is too wide if the document scrolls sideways, or if an element
# reaches past the window's right edge without an ancestor clipping it.
OVERFLOW = """() => {
  const width = window.innerWidth;
  const clippedInside = (element) => {
    for (let up = element.parentElement; up && up !== document.body; up = up.parentElement) {
      if (getComputedStyle(up).overflowX !== "visible") {
        return up.getBoundingClientRect().right <= width + 1;
      }
    }
    return false;
  };
  const wide = [];
  for (const element of document.body.querySelectorAll("*")) {
    const box = element.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    if (box.right > width + 1 && !clippedInside(element)) {
      wide.push(`${element.tagName}.${element.getAttribute("class")} ${Math.round(box.right)}`);
    }
  }
  return {scroll: document.documentElement.scrollWidth, width, wide: wide.slice(0, 5)};
}"""


def seed_everything() -> dict[str, Any]:
    """A history whose cells are as wide as they get: long names, flags, ids."""
    now = factories.now()
    factories.definition(LONG_JOB)
    first = factories.instance(LONG_JOB, created_at=now - timedelta(days=2))
    failed = factories.execution(
        first,
        "FAILED",
        created_at=now - timedelta(days=2),
        failure=("TRANSIENT_INFRASTRUCTURE", 9_223_372_036_854_775_000),
    )
    factories.execution(first, "COMPLETED", restart_of=failed)
    stuck = factories.execution(
        factories.instance(LONG_JOB, created_at=now - timedelta(hours=3)),
        "STARTED",
        created_at=now - timedelta(hours=3),
        updated_at=now - timedelta(hours=2),
        owner_token=b"\x01" * 16,
        stop_requested_by="user:operator-with-a-long-name",
    )
    step = factories.step(stuck, "load-every-region-of-the-ledger", "STARTED")
    factories.step(failed, "extract", "FAILED")
    for index in range(12):
        factories.operator_request(
            stuck if index % 2 else failed,
            "STOP" if index % 2 else "ABANDON",
            requested_at=now - timedelta(minutes=30 - index),
            rejection=None if index % 3 else "INVALID_STATE",
        )
    owner = User.objects.create_user("layout-owner")
    channel = factories.alert_channel(owner, "https://hooks.example.org/" + "x" * 80)
    channel.policies.add(
        factories.retention_policy(owner, LONG_JOB, name="keep-" + "x" * 90)
    )
    # A bulk operation that changes nothing: releasing an unheld instance.
    items = [(first.pk, 0)]
    filters = {"list": "instances", "job": LONG_JOB}
    actions.apply_bulk(
        user=User.objects.create_superuser("layout-bulk"),
        action="RELEASE_HOLD",
        filters=filters,
        items=items,
        digest=bulk_digest("RELEASE_HOLD", filters, items),
        bulk_id="layout-bulk-with-a-long-identifier",
        reason_code="HOLD_NO_LONGER_NEEDED",
    )
    return {
        "failed": failed,
        "stuck": stuck,
        "step": step,
        "instance": first,
        "channel": channel,
        "policy": channel.policies.get(),
        "bulk_id": "layout-bulk-with-a-long-identifier",
    }


def pages(seeded: dict[str, Any]) -> dict[str, str]:
    """Every page of the namespace, by name, with a record of the seeded history."""
    execution = seeded["failed"].pk
    return {
        "index": reverse("batchboard:index"),
        "executions": reverse("batchboard:executions"),
        "failures": reverse("batchboard:executions") + "?status=FAILED",
        "unresolved": reverse("batchboard:unresolved") + "?age=60",
        "job": reverse("batchboard:job", args=[LONG_JOB]),
        "instance": reverse("batchboard:instance", args=[seeded["instance"].pk]),
        "execution": reverse("batchboard:execution", args=[seeded["stuck"].pk]),
        "step": reverse("batchboard:step", args=[seeded["step"].pk]),
        "flow_decisions": reverse("batchboard:flow_decisions", args=[execution]),
        "recovery_decisions": reverse(
            "batchboard:recovery_decisions", args=[execution]
        ),
        "operator_requests": reverse("batchboard:operator_requests", args=[execution]),
        "audit": reverse("batchboard:audit"),
        "compare": reverse("batchboard:compare", args=[execution, seeded["stuck"].pk]),
        "parameter_search": reverse("batchboard:parameter_search") + "?job=" + LONG_JOB,
        "purge_plan": reverse("batchboard:purge_plan") + "?job_name=" + LONG_JOB,
        "bulk_plan": reverse("batchboard:bulk_plan", args=["executions", "ABANDON"])
        + "?status=FAILED",
        "bulk_operation": reverse(
            "batchboard:bulk_operation", args=[seeded.get("bulk_id", "none")]
        ),
        "alert_rules": reverse("batchboard:alert_rules"),
        "alert_channel": reverse(
            "batchboard:alert_channel", args=[getattr(seeded.get("channel"), "pk", 1)]
        ),
        "inbox": reverse("batchboard:inbox"),
        "overdue": reverse("batchboard:overdue"),
        "api_tokens": reverse("batchboard:api_tokens"),
        "saved_views": reverse("batchboard:saved_views"),
        "time_zone": reverse("batchboard:time_zone"),
        "retention_policies": reverse("batchboard:retention_policies"),
        "retention_policy": reverse(
            "batchboard:retention_policy", args=[getattr(seeded.get("policy"), "pk", 1)]
        ),
    }


def namespace_names() -> set[str]:
    """Every URL name of the namespace but the JSON API's (no HTML page)."""
    _, resolver = get_resolver().namespace_dict["batchboard"]
    return {
        name
        for name in resolver.reverse_dict
        if isinstance(name, str) and not name.startswith("api-")
    }


def test_every_page_of_the_namespace_is_measured(db: None) -> None:
    seeded = {
        "failed": JobExecution(pk=1),
        "stuck": JobExecution(pk=2),
        "step": JobExecution(pk=3),
        "instance": JobExecution(pk=4),
    }
    measured = {name for name in pages(seeded) if name != "failures"}
    assert namespace_names() - NOT_PAGES == measured


def measure(page: Any, url: str) -> dict[str, Any]:
    page.goto(url)
    page.wait_for_load_state("networkidle")
    result: dict[str, Any] = page.evaluate(OVERFLOW)
    return result


def test_no_page_scrolls_sideways_at_1280_or_390_px_light_or_dark(
    page: Any, live_server: Any
) -> None:
    seeded = seed_everything()
    sign_in(page, live_server, "/", destructive=True)
    # The alert pages, for the operator who manages alerts.
    User.objects.get(username="operator").user_permissions.add(
        Permission.objects.get(codename="manage_alerts")
    )
    backgrounds = set()
    too_wide = []
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            for name, path in pages(seeded).items():
                found = measure(page, f"{live_server.url}{path}")
                if found["scroll"] > width or found["wide"]:
                    too_wide.append((scheme, width, name, found))
        backgrounds.add(
            page.evaluate("getComputedStyle(document.body).backgroundColor")
        )
    assert too_wide == []
    # Dark mode was in force: the page's background changed with the scheme.
    assert len(backgrounds) == 2


def test_a_list_row_keeps_id_job_and_status_in_view_on_a_phone(
    page: Any, live_server: Any
) -> None:
    seeded = seed_everything()
    sign_in(page, live_server, "/executions/?status=FAILED")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.reload()
        row = page.locator(f"#bb-execution-{seeded['failed'].pk}")
        boxes = [
            row.locator(selector).bounding_box()
            for selector in ("th a", "a.bb-cut", ".bb-status")
        ]
        for box in boxes:
            assert box is not None
            assert box["x"] >= 0 and box["x"] + box["width"] <= width
        # On one line, the row's first.
        tops = [box["y"] for box in boxes if box is not None]
        assert max(tops) - min(tops) < 12


def test_trend_keeps_bars_readable_beside_a_20x_outlier_and_labels_the_grid(
    page: Any, live_server: Any
) -> None:
    now = factories.now()
    runs = 30
    outlier = None
    for index in range(runs):
        created = now - timedelta(days=runs - index)
        seconds = 1200 if index == 10 else 55 + (index * 7) % 11
        execution = factories.execution(
            factories.instance("nightly-import", created_at=created),
            "COMPLETED",
            created_at=created,
            duration=timedelta(seconds=seconds),
        )
        for step in ("extract", "load"):
            factories.step(execution, step, "COMPLETED")
        if index == 10:
            outlier = execution
    assert outlier is not None
    sign_in(page, live_server, "/jobs/nightly-import/")
    page.wait_for_selector("svg.bb-trend-chart")
    chart = page.locator("svg.bb-trend-chart").bounding_box()
    assert chart is not None
    heights = sorted(
        box["height"]
        for box in (
            bar.bounding_box() for bar in page.locator("rect.bb-trend-bar").all()
        )
        if box is not None
    )
    # A p50 run, measured on the screen, spans at least a quarter of the panel.
    assert heights[len(heights) // 2] >= 0.25 * chart["height"]
    clipped = page.locator("rect.bb-trend-bar--clipped")
    assert clipped.count() == 1
    title = clipped.locator("title").text_content() or ""
    assert title.startswith(f"#{outlier.pk} COMPLETED · 20 min 00 s")
    assert "clipped" in title
    assert "1 longer run clipped" in page.locator(".bb-trend figcaption").inner_text()
    axis = page.locator(".bb-trend-axis li").all_inner_texts()
    assert len(axis) == 5 and all(re.fullmatch(r"\d{4}-\d\d-\d\d", day) for day in axis)
    assert axis == sorted(axis)
    # The grid names its steps and labels each run with its id and day.
    assert page.locator("th.bb-grid-name").all_inner_texts() == ["extract", "load"]
    labels = page.locator(".bb-grid-label").all_inner_texts()
    assert len(labels) == 25
    assert all(re.fullmatch(r"#\d+ \d{4}-\d\d-\d\d", label) for label in labels)
    grid = page.locator("table.bb-grid").bounding_box()
    panel = page.locator(".bb-grid-wrap").bounding_box()
    assert grid is not None and panel is not None
    # The grid uses the panel's width.
    assert grid["width"] > 0.9 * (panel["width"] - 30)


def test_needs_attention_leads_with_what_is_still_broken(
    page: Any, live_server: Any
) -> None:
    now = factories.now()
    broken = factories.execution(
        factories.instance("payroll-run", created_at=now - timedelta(days=1)),
        "FAILED",
        created_at=now - timedelta(days=1),
    )
    fixed_instance = factories.instance("invoice-export")
    restarted = factories.execution(fixed_instance, "FAILED")
    completed = factories.execution(fixed_instance, "COMPLETED", restart_of=restarted)
    sign_in(page, live_server, "/")
    page.wait_for_selector("#bb-attention-title")
    panel = page.locator("#bb-attention")
    assert (
        panel.locator("h3")
        .first.inner_text()
        .startswith("Recent failures not resolved")
    )
    leading = panel.locator("#bb-attention-failures li").all_inner_texts()
    assert leading[0].startswith(f"#{broken.pk} payroll-run")
    assert all(f"#{restarted.pk} " not in text for text in leading)
    folded = panel.locator("details#bb-attention-resolved")
    assert folded.get_attribute("open") is None
    assert folded.locator("summary").inner_text() == (
        "1 recent failure already resolved by a restart"
    )
    assert not folded.locator(f"a:text('#{restarted.pk}')").is_visible()
    folded.locator("summary").click()
    assert folded.locator(f"a:text('#{restarted.pk}')").is_visible()
    assert f"restarted as #{completed.pk} (COMPLETED)" in folded.inner_text()
