"""Links to where a failure's cause lives: templates, their check, the pages."""

from __future__ import annotations

import html
import json
from datetime import UTC, datetime

import pytest
from django.core.checks import run_checks
from django.test import Client, override_settings
from django.urls import reverse

from batchboard.explorer import cause
from tests import factories

LOGS = "https://logs.example.org/search?job={job}&execution={execution_id}"
FAILURE = (
    "https://logs.example.org/failure/{failure_category}/{failure_id}"
    "?job={job}&instance={instance_id}&from={started_at}&to={ended_at}"
)
STEP_TRACE = "https://traces.example.org/{execution_id}/{step}"
JOB = "Q&A report/ünïcode run"
#: The job name as each link carries it: every reserved character encoded.
JOB_ENCODED = "Q%26A%20report%2F%C3%BCn%C3%AFcode%20run"


@pytest.mark.parametrize(
    ("template", "wrong"),
    [
        ("https://x.example/{job}", None),
        ("http://x.example/?q={failure_category}{{literal}}", None),
        ("https://x.example", None),
        ("https://x.example/{parameters}", "unknown field {parameters}"),
        ("https://x.example/{0}", "unknown field {0}"),
        ("https://x.example/{job.upper}", "unknown field {job.upper}"),
        ("https://x.example/{job", "malformed braces"),
        ("https://x.example/}", "malformed braces"),
        ("https://x.example/{job!r}", "formats the field {job}"),
        ("https://x.example/{job:>9}", "formats the field {job}"),
        ("javascript:alert(1)//{job}", "not an http:// or https:// URL"),
        ("ftp://x.example/{job}", "not an http:// or https:// URL"),
        ("{job}", "not an http:// or https:// URL"),
        ("https://{job}.example/", "does not write out its host"),
        ("https://x.example{job}", "does not write out its host"),
        (42, "is not a string"),
    ],
)
def test_problem_names_what_is_wrong(template: object, wrong: str | None) -> None:
    found = cause.problem(template)
    if wrong is None:
        assert found is None
    else:
        assert found is not None and wrong in found


def _ids(messages: list[object]) -> list[str]:
    return [str(getattr(message, "id", "")) for message in messages]


@override_settings(BATCHBOARD={"FAILURE_LINK": "https://logs.example.org/{trace}"})
def test_the_check_refuses_a_failure_link_naming_an_unknown_field() -> None:
    errors = [
        message
        for message in run_checks()
        if getattr(message, "id", "") == "batchboard.E030"
    ]
    assert len(errors) == 1
    assert "unknown field {trace}" in errors[0].msg
    assert "{execution_id}" in str(errors[0].hint)


@override_settings(
    BATCHBOARD={
        "EXECUTION_LINKS": [("Logs", LOGS), ("Traces", "ftp://t.example/{job}")]
    }
)
def test_the_check_refuses_an_execution_link_that_is_not_http() -> None:
    errors = [m for m in run_checks() if getattr(m, "id", "") == "batchboard.E031"]
    assert len(errors) == 1
    assert "'Traces'" in errors[0].msg


@override_settings(BATCHBOARD={"EXECUTION_LINKS": ["https://t.example/{job}"]})
def test_the_check_refuses_execution_links_that_are_not_pairs() -> None:
    assert "batchboard.E031" in _ids(run_checks())


@override_settings(
    BATCHBOARD={"FAILURE_LINK": FAILURE, "EXECUTION_LINKS": [("Logs", LOGS)]}
)
def test_sound_templates_pass_the_check() -> None:
    assert not {"batchboard.E030", "batchboard.E031"} & set(_ids(run_checks()))


def _href(url: str) -> str:
    return f'href="{html.escape(url)}"'


@pytest.fixture
def failed(db: None) -> factories.JobExecution:
    instance = factories.instance(JOB)
    return factories.execution(
        instance,
        "FAILED",
        failure=("TRANSIENT_INFRASTRUCTURE", 9_007_199_254_740_993),
        created_at=datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC),
    )


def _failure_url(execution: factories.JobExecution) -> str:
    # Started 10:00:01, ended three minutes later (factories.execution).
    return (
        "https://logs.example.org/failure/TRANSIENT_INFRASTRUCTURE/"
        f"9007199254740993?job={JOB_ENCODED}&instance={execution.job_instance_id}"
        "&from=2026-03-01T10%3A00%3A01Z&to=2026-03-01T10%3A03%3A01Z"
    )


@override_settings(
    BATCHBOARD={"FAILURE_LINK": FAILURE, "EXECUTION_LINKS": [("Logs", LOGS)]}
)
def test_a_failed_execution_links_to_its_cause_with_encoded_values(
    reader: Client, failed: factories.JobExecution
) -> None:
    page = reader.get(reverse("batchboard:execution", args=[failed.pk]))
    assert page.status_code == 200
    content = page.content.decode()
    assert _href(_failure_url(failed)) in content
    logs = f"https://logs.example.org/search?job={JOB_ENCODED}&execution={failed.pk}"
    assert _href(logs) in content
    # The raw name never reaches a link: only its encoding does.
    links = content.split("bb-cause-links", 1)[1].split("</nav>", 1)[0]
    assert "Q&amp;A report/" not in links


@override_settings(BATCHBOARD={"FAILURE_LINK": FAILURE})
def test_the_failures_list_links_each_failure(
    reader: Client, failed: factories.JobExecution
) -> None:
    page = reader.get(reverse("batchboard:executions"), {"status": "FAILED"})
    assert page.status_code == 200
    assert _href(_failure_url(failed)) in page.content.decode()


@override_settings(
    BATCHBOARD={
        "FAILURE_LINK": FAILURE,
        "EXECUTION_LINKS": [("Step trace", STEP_TRACE), ("Logs", LOGS)],
    }
)
def test_a_link_naming_the_step_shows_on_step_pages_only(
    reader: Client, failed: factories.JobExecution
) -> None:
    step = factories.step(failed, "load & check", "COMPLETED")
    execution_page = reader.get(
        reverse("batchboard:execution", args=[failed.pk])
    ).content.decode()
    step_page = reader.get(reverse("batchboard:step", args=[step.pk])).content.decode()
    trace = f"https://traces.example.org/{failed.pk}/load%20%26%20check"
    assert _href(trace) not in execution_page
    assert _href(trace) in step_page
    assert "Step trace" in step_page
    # A step without a failure offers no failure link; the others stay.
    assert "Look up this failure" not in step_page
    assert (
        _href(
            f"https://logs.example.org/search?job={JOB_ENCODED}&execution={failed.pk}"
        )
        in step_page
    )


def test_without_configuration_no_link_shows(
    reader: Client, failed: factories.JobExecution
) -> None:
    page = reader.get(reverse("batchboard:execution", args=[failed.pk]))
    assert "bb-cause-links" not in page.content.decode()


@override_settings(BATCHBOARD={"FAILURE_LINK": FAILURE})
def test_a_running_execution_fills_its_missing_end_empty(db: None) -> None:
    instance = factories.instance("nightly")
    row = {
        "id": 5,
        "job_instance_id": instance.pk,
        "job_name": "nightly",
        "failure_category": "TIMEOUT",
        "failure_id": 3,
        "started_at": None,
        "ended_at": None,
    }
    link = cause.failure_link(row)
    assert link is not None and link.endswith(
        f"?job=nightly&instance={instance.pk}&from=&to="
    )


def test_the_standalone_site_reads_the_links_from_its_environment() -> None:
    from batchboard.site.database import SiteConfigurationError
    from tests.site.production import site_settings

    found = site_settings(
        BATCHBOARD_FAILURE_LINK=FAILURE,
        BATCHBOARD_EXECUTION_LINKS=json.dumps([["Logs", LOGS]]),
    )["BATCHBOARD"]
    assert found["FAILURE_LINK"] == FAILURE
    assert found["EXECUTION_LINKS"] == [["Logs", LOGS]]
    with override_settings(BATCHBOARD=found):
        assert not {"batchboard.E030", "batchboard.E031"} & set(_ids(run_checks()))
    assert "FAILURE_LINK" not in site_settings()["BATCHBOARD"]
    with pytest.raises(SiteConfigurationError, match="JSON list"):
        site_settings(BATCHBOARD_EXECUTION_LINKS="Logs=https://x.example/")
