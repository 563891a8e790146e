"""Stamps render a partial once per shape; filled, they are the partial rendered."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import Client, override_settings
from django.urls import reverse

from batchboard.explorer import stamps
from batchboard.explorer.presenters import Presenter
from batchboard.vocabulary import STATUSES
from tests.explorer.conftest import NOW, History, execution_row


def test_a_stamp_places_each_slot_wherever_its_template_does() -> None:
    chip = stamps.stamp(
        "batchboard/partials/strip_chip.html",
        {
            "tone": "good",
            "mark": "✓",
            "status": "a&b",
            "url": stamps.slot(0),
            "title": stamps.slot(1),
            "id": stamps.slot(0),
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
            execution_row(
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
    # Recovered: its end declared, no exit code recorded, duration unknown.
    rows.append(
        execution_row(
            id=len(rows) + 1,
            status="FAILED",
            job_name="recovered",
            ended_at=ended,
            exit_code="UNKNOWN",
            failure_category="STALE_RECOVERED",
            failure_id=77,
        )
    )
    return rows


@pytest.mark.parametrize("triage", [False, True])
@pytest.mark.parametrize("may", [False, True])
@pytest.mark.parametrize("linked", [False, True])
def test_stamped_execution_rows_are_the_row_template_rendered(
    triage: bool, may: bool, linked: bool
) -> None:
    """execution_lines gives what rendering execution_row.html with the rows gives."""
    from django.template.loader import render_to_string

    present = Presenter(NOW)
    # With a FAILURE_LINK, failed rows carry their cause link (cause.py).
    link = "https://logs.example.org/?job={job}&id={failure_id}"
    with override_settings(BATCHBOARD={"FAILURE_LINK": link} if linked else {}):
        rows = present.executions(_shaped_rows(), triage=triage)
    assert any("failure_link" in row for row in rows) is linked
    present.restarts(rows, {5: {"id": 99, "status": "COMPLETED"}})
    settings = {"triage": triage, "may_stop": may, "may_recover": may}
    expected = render_to_string(
        "batchboard/partials/execution_row.html",
        {"rows": rows, "poll_seconds": 3, **settings},
    )
    stamped = stamps.execution_lines(rows, poll_seconds=3, **settings)

    def rows_of(markup: str) -> str:
        # Each stamped row keeps the template's trailing newline.
        return re.sub(r"</tr>\s*<tr", "</tr><tr", markup).strip()

    assert rows_of(stamped) == rows_of(expected)
    assert stamped.count("<tr ") == len(rows) == expected.count("<tr ")
    assert "&lt;job &amp; 1&gt;" in stamped and "bbslot" not in stamped
    assert 'by a recovery, not by the run">unknown</td>' in stamped


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
    stamped = stamps.instance_lines(rows)

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
    stamped = stamps.job_lines(rows)

    def rows_of(markup: str) -> str:
        return re.sub(r"</tr>\s*<tr", "</tr><tr", markup).strip()

    assert rows_of(stamped) == rows_of(expected)
    assert stamped.count("<tr>") == 3 and "bbslot" not in stamped
    # Braces in a value are placed as they are (the stamp's pattern escapes its own).
    assert "&lt;busy &amp; {x}&gt;" in stamped and "2 running" in stamped
    assert "no executions" in stamped


#: A site's execution row breaking every rule a stamp relies on: a filter on
#: a value, arithmetic on an id, a field outside the slots, a decision on a
#: value, the loop's counter, and slots repeated out of order.
RULE_BREAKING_ROW = (
    '{% for row in rows %}<tr id="bb-execution-{{ row.id }}" data-n="{{ forloop.counter }}">'
    "<td>{{ row.job_name|upper }}</td>"
    "<td>{{ row.id|add:1 }}</td>"
    "<td>{{ row.exit_code }}</td>"
    "<td>{% if row.failure_id %}failure {{ row.failure_id }}{% else %}none{% endif %}</td>"
    "<td>{{ row.attempt }}{{ row.url }}{{ row.attempt }}</td>"
    "</tr>{% endfor %}"
)


@pytest.fixture
def site_templates(tmp_path: Path, settings: Any) -> Any:
    """Return a function placing site templates ahead of the package's."""
    templates = [dict(settings.TEMPLATES[0])]
    templates[0]["DIRS"] = [tmp_path, *templates[0]["DIRS"]]

    def place(**files: str) -> Any:
        for name, text in files.items():
            path = tmp_path / "batchboard" / "partials" / f"{name}.html"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return override_settings(TEMPLATES=templates)

    return place


@pytest.mark.parametrize("triage", [False, True])
def test_a_site_row_template_breaking_the_rules_renders_as_django_would(
    triage: bool, site_templates: Any
) -> None:
    """An overriding execution_row.html is rendered plainly, never cut wrong."""
    from django.template.loader import render_to_string

    present = Presenter(NOW)
    rows = present.executions(_shaped_rows(), triage=triage)
    page = {"triage": triage, "may_stop": True, "may_recover": True}
    with site_templates(execution_row=RULE_BREAKING_ROW):
        stamped = stamps.execution_lines(rows, poll_seconds=3, **page)
        expected = render_to_string(
            "batchboard/partials/execution_row.html",
            {"rows": rows, "poll_seconds": 3, **page},
        )
    assert stamped == expected
    failed = next(row for row in rows if row["status"] == "FAILED")
    assert f"<td>{failed['id'] + 1}</td>" in stamped
    assert f"<td>failure {failed['failure_id']}</td>" in stamped
    assert "<td>&lt;JOB &amp; 1&gt;</td>" in stamped and "<td>none</td>" in stamped
    assert "<td>&lt;exit&gt;</td>" in stamped
    assert f'data-n="{len(rows)}"' in stamped and "bbslot" not in stamped.lower()


@pytest.mark.django_db
def test_a_list_page_shows_a_rule_breaking_site_row_as_written(
    reader: Client, history: History, site_templates: Any
) -> None:
    with site_templates(execution_row=RULE_BREAKING_ROW):
        body = reader.get(reverse("batchboard:executions")).content.decode()
    pk = history.failed.pk
    assert f'<tr id="bb-execution-{pk}" data-n="' in body
    assert f"<td>{pk + 1}</td>" in body and "bbslot" not in body.lower()
    assert f"<td>{history.failed.job_instance.job_name.upper()}</td>" in body


@pytest.mark.parametrize(
    ("partial", "lines"),
    [("instance_row", stamps.instance_lines), ("job_row", stamps.job_lines)],
)
def test_every_site_row_template_is_rendered_plainly(
    partial: str, lines: Any, site_templates: Any
) -> None:
    from django.template.loader import render_to_string

    present = Presenter(NOW)
    if partial == "job_row":
        run = {"id": 9, "status": "FAILED", "attempt": 2, "created_at": NOW}
        rows = present.jobs(["a&b", "c"], {"a&b": [run]}, {})
    else:
        base = {"job_name": "n", "created_at": NOW, "parameters": []}
        rows = present.instances(
            [
                {**base, "id": pk, "latest_id": None, "latest_attempt": None}
                | {"latest_status": None, "hold_actor": None, "hold_reason": None}
                for pk in (4, 5)
            ]
        )
    site = (
        "{% for row in rows %}<tr>{{ forloop.counter }} {{ row.url|length }}"
        "{% if row.url|length > 3 %} long{% endif %} {{ row.name|upper }}</tr>"
        "{% endfor %}"
    )
    with site_templates(**{partial: site}):
        stamped = lines(rows)
        expected = render_to_string(
            f"batchboard/partials/{partial}.html", {"rows": rows}
        )
    assert stamped == expected and "<tr>2 " in stamped
    assert "bbslot" not in stamped.lower()


def test_a_site_item_partial_is_rendered_per_item_with_its_values(
    site_templates: Any,
) -> None:
    """An overriding strip_chip.html gets each run's own values, filters and all."""
    from django.template.loader import render_to_string

    site = (
        '<li title="{{ title|upper }}">{{ id|add:1 }}'
        "{% if id > 10 %} big{% endif %} {{ url }}</li>"
    )
    runs = [
        {"id": 12, "status": "FAILED", "attempt": 2, "created_at": NOW},
        {"id": 8, "status": "FAILED", "attempt": 1, "created_at": NOW},
    ]
    with site_templates(strip_chip=site):
        chips = Presenter(NOW).jobs(["nightly"], {"nightly": runs}, {})[0]["chips"]
        expected = "".join(
            render_to_string(
                "batchboard/partials/strip_chip.html",
                {
                    "id": run["id"],
                    "url": reverse("batchboard:execution", args=[run["id"]]),
                    "title": f"#{run['id']} FAILED (attempt {run['attempt']})",
                },
            )
            for run in runs
        )
    assert chips == expected
    assert "<li" in chips and "13 big" in chips and "9 /" in chips


def test_only_the_package_s_own_partials_are_cut_into_pieces(
    site_templates: Any,
) -> None:
    context = {"tone": "bad", "mark": "x", "status": "FAILED", "url": "u"}
    chip = {**context, "title": stamps.slot(0), "id": stamps.slot(0)}
    assert isinstance(
        stamps.stamp("batchboard/partials/strip_chip.html", chip, 1), stamps.Cut
    )
    with site_templates(strip_chip="<li>{{ id }}</li>"):
        site = stamps.stamp("batchboard/partials/strip_chip.html", chip, 1)
    assert isinstance(site, stamps.PerItem) and site.fill(5) == "<li>5</li>"
