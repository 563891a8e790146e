"""Presenters give templates values; the templates hold all the markup."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import Client, override_settings
from django.urls import reverse
from django.utils.safestring import SafeString

from batchboard.explorer import presenters
from batchboard.explorer.presenters import Clock, Presenter
from batchboard.vocabulary import STATUSES
from tests.explorer.conftest import History

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def test_every_status_has_a_look() -> None:
    assert set(presenters.LOOKS) == set(STATUSES)
    assert presenters.look("FAILED").tone == "bad"
    assert presenters.look(None) is presenters.NONE
    assert presenters.look("SOMETHING_NEW") is presenters.OTHER


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.25, "250 ms"),
        (3.21, "3.2 s"),
        (42, "42 s"),
        (243, "4 min 03 s"),
        (3600 + 120, "1 h 02 min"),
        (3 * 86400 + 7200, "3 d 2 h"),
        (-5, "0 ms"),
    ],
)
def test_spans_read_in_human_units(seconds: float, text: str) -> None:
    assert Clock(NOW).span(seconds) == text


def test_whole_spans_leave_out_a_zero_lower_unit() -> None:
    clock = Clock(NOW)
    assert clock.span(900, whole=True) == "15 min"
    assert clock.span(3600, whole=True) == "1 h"
    assert clock.span(930, whole=True) == "15 min 30 s"


def test_times_ages_and_durations_are_as_of_one_now() -> None:
    clock = Clock(NOW)
    moment = clock.moment(NOW - timedelta(minutes=4, seconds=3))
    assert moment == {
        "iso": "2026-03-01T11:55:57+00:00",
        "text": "2026-03-01 11:55:57Z",
        "ago": "4 min 03 s ago",
    }
    assert clock.moment(None) is None
    assert clock.age(NOW + timedelta(seconds=30)) == "in 30 s"
    assert clock.duration(NOW - timedelta(seconds=90), None) == "1 min 30 s"
    assert clock.duration(None, None) == "—"


def test_values_are_escaped_once_where_they_come_from_outside() -> None:
    present = Presenter(NOW)
    url = present.links.job("<b>&job</b>")
    assert isinstance(url, SafeString)
    assert "<b>" not in url and "&amp;" in url
    label = present.jobs(["<i>"], {"<i>": []}, {})[0]["strip_label"]
    assert "&lt;i&gt;" in label


def _execution_row(**values: Any) -> dict[str, Any]:
    row = {
        "id": 7,
        "job_instance_id": 3,
        "job_name": "nightly",
        "attempt": 1,
        "status": "STARTED",
        "created_at": NOW - timedelta(hours=1),
        "started_at": NOW - timedelta(minutes=59),
        "ended_at": None,
        "updated_at": NOW - timedelta(minutes=1),
    }
    row.update(values)
    return row


@pytest.mark.django_db
def test_execution_rows_get_links_tone_and_times() -> None:
    (row,) = Presenter(NOW).executions([_execution_row()], triage=True)
    assert row["url"] == reverse("batchboard:execution", args=[7])
    assert row["row_url"] == reverse("batchboard:execution_row", args=[7]) + "?triage=1"
    assert row["instance_url"] == reverse("batchboard:instance", args=[3])
    assert row["job_url"] == reverse("batchboard:job", args=["nightly"])
    assert row["live"] is True and row["tone"] == "active"
    assert row["duration"] == "59 min 00 s"
    assert row["updated_age"] == "1 min 00 s ago"


@pytest.mark.django_db
def test_parameter_chips_render_once_per_distinct_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rendered: list[Any] = []
    real = presenters.get_template

    def counting(name: str) -> Any:
        rendered.append(name)
        return real(name)

    monkeypatch.setattr(presenters, "get_template", counting)
    parameters = [("run_date", "STRING"), ("shard", "U64")]
    rows = [
        {
            "id": pk,
            "job_name": "nightly",
            "created_at": NOW,
            "latest_id": None,
            "latest_attempt": None,
            "latest_status": None,
            "parameters": list(parameters),
        }
        for pk in (1, 2, 3)
    ]
    Presenter(NOW).instances(rows)
    assert len(rendered) == 1
    assert rows[0]["parameter_chips"] is rows[2]["parameter_chips"]
    assert 'class="bb-param-name">run_date</span>' in rows[0]["parameter_chips"]


def test_a_trail_links_every_crumb_but_the_page_itself() -> None:
    present = Presenter(NOW)
    trail = present.trail("nightly", ("instance", 3), ("execution", 7))
    listed = present.trail("nightly", ("execution", 7), current="flow decisions")
    assert [label for label, _ in trail] == ["nightly", "instance #3", "execution #7"]
    assert trail[-1][1] is None and trail[1][1] == "/instances/3/"
    assert listed[-1] == ("flow decisions", None)
    assert listed[-2][1] == "/executions/7/"


OVERRIDDEN_ROW = (
    '{% for row in rows %}<tr id="bb-execution-{{ row.id }}">'
    '<td class="site-cell">run {{ row.id }} is {{ row.status|lower }}</td>'
    "</tr>{% endfor %}"
)


@pytest.mark.django_db
def test_overriding_the_row_template_changes_the_row(
    reader: Client, history: History, tmp_path: Path, settings: Any
) -> None:
    """A site's batchboard/partials/execution_row.html replaces every cell."""
    partials = tmp_path / "batchboard" / "partials"
    partials.mkdir(parents=True)
    (partials / "execution_row.html").write_text(OVERRIDDEN_ROW)
    templates = [dict(settings.TEMPLATES[0])]
    templates[0]["DIRS"] = [tmp_path, *templates[0]["DIRS"]]
    with override_settings(TEMPLATES=templates):
        body = reader.get(reverse("batchboard:executions")).content.decode()
    assert f'<td class="site-cell">run {history.failed.pk} is failed</td>' in body
    assert 'class="bb-status' not in body.split('id="bb-rows"', 1)[1]
    plain = reader.get(reverse("batchboard:executions")).content.decode()
    assert "site-cell" not in plain
    assert '<span class="bb-status bb-status--bad">FAILED</span>' in plain


@pytest.mark.parametrize(
    ("status", "exit_code", "running", "text", "pending"),
    [
        ("STARTED", "UNKNOWN", True, "running", True),
        ("STOPPING", "UNKNOWN", True, "running", True),
        ("UNKNOWN", "UNKNOWN", False, "—", True),
        # A step left STARTED by a finished execution is not running.
        ("STARTED", "UNKNOWN", False, "—", True),
        ("COMPLETED", "COMPLETED", False, "COMPLETED", False),
        ("FAILED", "NOOP", False, "NOOP", False),
        # A finished partition may have no exit code at all.
        ("COMPLETED", None, False, "—", False),
    ],
)
def test_an_unresolved_run_shows_no_exit_code(
    status: str, exit_code: str | None, running: bool, text: str, pending: bool
) -> None:
    row = Presenter().exit({"status": status, "exit_code": exit_code}, running=running)
    assert (row["exit_text"], row["exit_pending"]) == (text, pending)


def test_job_filtered_links_have_one_builder() -> None:
    assert presenters.job_filter_url("batchboard:executions", "a/b c&d") == (
        f"{reverse('batchboard:executions')}?job=a%2Fb+c%26d"
    )
    assert presenters.job_filter_url("batchboard:audit", "nightly") == (
        f"{reverse('batchboard:audit')}?job=nightly"
    )


def test_outcomes_have_one_tone_each() -> None:
    assert [
        presenters.outcome_tone(outcome)
        for outcome in ("APPLIED", "REJECTED", "REPLAYED", "NEWER")
    ] == ["good", "bad", "muted", "muted"]


@pytest.mark.parametrize(
    ("row", "text"),
    [
        (
            {"action": "STOP", "outcome_class": "APPLIED", "prior_status": "STARTED"},
            "stop requested while STARTED",
        ),
        (
            {
                "action": "STOP",
                "outcome_class": "APPLIED",
                "prior_status": "STOPPING",
                "result_status": "STOPPING",
            },
            "STOPPING, unchanged",
        ),
        (
            {
                "action": "ABANDON",
                "outcome_class": "APPLIED",
                "prior_status": "FAILED",
                "result_status": "ABANDONED",
            },
            "FAILED → ABANDONED",
        ),
        ({"action": "HOLD", "outcome_class": "APPLIED", "prior_status": None}, "—"),
    ],
)
def test_a_request_says_what_it_did_to_the_status(
    row: dict[str, Any], text: str
) -> None:
    assert presenters.status_change(row) == text


def test_a_strip_s_chips_are_its_template_filled_per_run() -> None:
    """Each chip is partials/strip_chip.html as a plain render would give it."""
    from django.template.loader import render_to_string

    runs = [
        {"id": 12, "status": "FAILED", "attempt": 2, "created_at": NOW},
        {"id": 9, "status": "<COMPLETED>", "attempt": 1, "created_at": NOW},
        {"id": 8, "status": "FAILED", "attempt": 1, "created_at": NOW},
    ]
    job = Presenter(NOW).jobs(["nightly"], {"nightly": runs}, {})[0]
    expected = ""
    for run in runs:
        seen = presenters.look(run["status"])
        execution = reverse("batchboard:execution", args=[run["id"]])
        expected += render_to_string(
            "batchboard/partials/strip_chip.html",
            {
                "tone": seen.tone,
                "mark": seen.mark,
                "status": run["status"],
                "url": execution,
                "title": f"#{run['id']} {run['status']} (attempt {run['attempt']})",
                "id": run["id"],
            },
        )
    assert job["chips"] == expected
    assert "&lt;COMPLETED&gt;" in job["chips"] and "<COMPLETED>" not in job["chips"]


def test_a_stamp_places_each_slot_wherever_its_template_does() -> None:
    chip = presenters.stamp(
        "batchboard/partials/strip_chip.html",
        {
            "tone": "good",
            "mark": "✓",
            "status": "a&b",
            "url": presenters.slot(0),
            "title": presenters.slot(1),
            "id": presenters.slot(0),
        },
        2,
    )
    filled = chip.fill(41, "t")
    assert filled.count("41") == 2 and 'title="t"' in filled
    assert "a&amp;b" in filled and "bbslot" not in filled


def _shaped_rows() -> list[dict[str, Any]]:
    """Execution rows of every shape the row template decides on."""
    ended = NOW - timedelta(minutes=30)
    rows = []
    for pk, status in enumerate(STATUSES, 1):
        finished = status in ("STOPPED", "FAILED", "COMPLETED", "ABANDONED")
        rows.append(
            _execution_row(
                id=pk,
                status=status,
                job_name=f"<job & {pk}>",
                ended_at=ended if finished else None,
                exit_code="<exit>" if finished else "UNKNOWN",
                failure_category="USER_COMPONENT" if status == "FAILED" else None,
                failure_id=40 + pk if status == "FAILED" else None,
                stop_requested_at=NOW if status == "STOPPING" else None,
                owner_recorded=pk % 2 == 0,
            )
        )
    return rows


@pytest.mark.parametrize("triage", [False, True])
@pytest.mark.parametrize("may", [False, True])
def test_stamped_execution_rows_are_the_row_template_rendered(
    triage: bool, may: bool
) -> None:
    """execution_lines gives what rendering execution_row.html with the rows gives."""
    from django.template.loader import render_to_string

    present = Presenter(NOW)
    rows = present.executions(_shaped_rows(), triage=triage)
    present.restarts(rows, {5: {"id": 99, "status": "COMPLETED"}})
    settings = {"triage": triage, "may_stop": may, "may_recover": may}
    expected = render_to_string(
        "batchboard/partials/execution_row.html",
        {"rows": rows, "poll_seconds": 3, **settings},
    )
    stamped = presenters.execution_lines(rows, poll_seconds=3, **settings)

    def rows_of(markup: str) -> str:
        # Each stamped row keeps the template's trailing newline.
        return re.sub(r"</tr>\s*<tr", "</tr><tr", markup).strip()

    assert rows_of(stamped) == rows_of(expected)
    assert stamped.count("<tr ") == len(rows) == expected.count("<tr ")
    assert "&lt;job &amp; 1&gt;" in stamped and "bbslot" not in stamped


def test_parameter_values_are_escaped_and_cut_in_their_template() -> None:
    present = Presenter(NOW)
    long = "x" * 100
    chips = present.parameter_values(
        [("run", "STRING", "<b>"), ("note", "STRING", long)]
    )
    assert '<code class="bb-param-value">&lt;b&gt;</code>' in chips
    assert f'<code class="bb-param-value">{"x" * 79}…</code>' in chips
    assert '<span class="bb-param-name">note</span>' in chips
    again = present.parameter_values([("run", "STRING", "a"), ("note", "STRING", "b")])
    assert '<code class="bb-param-value">a</code>' in again and "bbslot" not in again


def test_stamped_instance_rows_are_the_row_template_rendered() -> None:
    """instance_lines gives what rendering instance_row.html with the rows gives."""
    from django.template.loader import render_to_string

    present = Presenter(NOW)
    base = {
        "job_name": "nightly",
        "created_at": NOW - timedelta(days=1),
        "hold_actor": None,
        "hold_reason": None,
        "hold_placed_at": None,
    }
    rows = present.instances(
        [
            {
                **base,
                "id": 1,
                "parameters": [("run", "STRING")],
                "latest_id": 10,
                "latest_attempt": 2,
                "latest_status": "FAILED",
            },
            {
                **base,
                "id": 2,
                "parameters": [(f"p{n}", "LONG") for n in range(10)],
                "hold_actor": "<ops>",
                "hold_reason": "a & b",
                "latest_id": None,
                "latest_attempt": None,
                "latest_status": None,
            },
            {
                **base,
                "id": 3,
                "parameters": [],
                "latest_id": 12,
                "latest_attempt": 1,
                "latest_status": "COMPLETED",
            },
        ]
    )
    rows[0]["parameter_values"] = [("run", "STRING", "<2026>")]
    rows[0]["parameter_value_chips"] = present.parameter_values(
        rows[0]["parameter_values"]
    )
    expected = render_to_string("batchboard/partials/instance_row.html", {"rows": rows})
    stamped = presenters.instance_lines(rows)

    def rows_of(markup: str) -> str:
        return re.sub(r"</tr>\s*<tr", "</tr><tr", markup).strip()

    assert rows_of(stamped) == rows_of(expected)
    assert "held by &lt;ops&gt;: a &amp; b" in stamped and "bbslot" not in stamped
    assert "&lt;2026&gt;" in stamped and "+2 more" in stamped


def test_stamped_job_rows_are_the_row_template_rendered() -> None:
    """job_lines gives what rendering job_row.html with the overview's rows gives."""
    from django.template.loader import render_to_string

    present = Presenter(NOW)

    def run(pk: int, status: str, created: bool = False) -> dict[str, Any]:
        return {
            "id": pk,
            "status": status,
            "attempt": 1 + pk % 3,
            "job_instance_id": pk,
            "created_at": NOW - timedelta(minutes=pk) if created else None,
        }

    strips = {
        "<busy & {x}>": [
            run(9, "STARTED", True),
            run(8, "FAILED"),
            run(7, "COMPLETED"),
        ],
        "quiet": [run(5, "COMPLETED", True)],
        "never": [],
    }
    rows = present.jobs(list(strips), strips, {"<busy & {x}>": 2})
    expected = render_to_string("batchboard/partials/job_row.html", {"rows": rows})
    stamped = presenters.job_lines(rows)

    def rows_of(markup: str) -> str:
        return re.sub(r"</tr>\s*<tr", "</tr><tr", markup).strip()

    assert rows_of(stamped) == rows_of(expected)
    assert stamped.count("<tr>") == 3 and "bbslot" not in stamped
    # Braces in a value are placed as they are (the stamp's pattern escapes its own).
    assert "&lt;busy &amp; {x}&gt;" in stamped and "2 running" in stamped
    assert "no executions" in stamped
