"""Presenters give templates values; the templates hold all the markup."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils.safestring import SafeString

from batchboard.explorer import presenters
from batchboard.explorer.presenters import Clock, Presenter
from batchboard.vocabulary import STATUSES
from tests.explorer.conftest import NOW, execution_row


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
        "utc": "2026-03-01 11:55:57Z",
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


@pytest.mark.django_db
def test_execution_rows_get_links_tone_and_times() -> None:
    (row,) = Presenter(NOW).executions([execution_row()], triage=True)
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
        # A recovered execution keeps the creation placeholder: not a status.
        ("FAILED", "UNKNOWN", False, "no exit code recorded", True),
    ],
)
def test_an_unresolved_run_shows_no_exit_code(
    status: str, exit_code: str | None, running: bool, text: str, pending: bool
) -> None:
    row = Presenter().exit({"status": status, "exit_code": exit_code}, running=running)
    assert (row["exit_text"], row["exit_pending"]) == (text, pending)


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
