"""The load benchmark's arithmetic and its refusals (the run itself is manual)."""

from __future__ import annotations

import math
import shutil

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connections
from django.test import Client
from django.urls import reverse

from batchboard import conf
from batchboard.demo.loadtest import MIX_SCRIPT, Page, percentile, read_samples
from batchboard.demo.management.commands.batchboard_loadtest import Command
from batchboard.demo.replication import describe_lag, read_share
from tests import factories


def test_nearest_rank_percentiles() -> None:
    values = [float(n) for n in range(1, 101)]
    assert percentile(values, 0.50) == 50.0
    assert percentile(values, 0.95) == 95.0
    assert percentile(values, 0.99) == 99.0
    assert percentile([7.0], 0.99) == 7.0
    assert math.isnan(percentile([], 0.5))


def test_samples_become_rates_percentiles_and_errors() -> None:
    lines = [
        "overview\t200\t1000000\t1010000\n",
        "overview\t200\t1500000\t1530000\n",
        "overview\t302\t1600000\t1605000\n",
        "live\t200\t1700000\t1702000\n",
        "live\t503\t2000000\t3000000\n",
        "#errors\t1\t0\t0\t2\t1\n",
    ]
    report = read_samples(lines)
    assert report.requests == 5
    assert report.seconds == 2.0
    assert report.statuses == {200: 3, 302: 1, 503: 1}
    # A redirect fails as a 5xx does; socket errors count, wrk's status
    # count does not (the samples already hold every status).
    assert report.failures == {"overview": 1, "live": 1}
    assert report.errors == 2 + 3
    rows = {row[0]: row for row in report.rows()}
    assert rows["overview"][1:4] == (3, 1.5, 10.0)
    assert rows["overview"][5] == 30.0
    assert rows["live"][5] == 1000.0
    assert rows["all pages"][1] == 5
    assert rows["all pages"][2] == 2.5


def test_a_mix_line_is_what_mix_lua_reads() -> None:
    page = Page("execution live poll", 30, "/executions/7/live/", htmx=True)
    assert page.line() == "30\texecution live poll\t1\t/executions/7/live/"
    script = MIX_SCRIPT.read_text()
    assert "(%d+)\\t([^\\t]+)\\t(%d)\\t(.+)" in script
    assert "wrk.thread:stop()" in script


@pytest.mark.skipif(shutil.which("wrk") is None, reason="needs wrk")
@pytest.mark.django_db
def test_the_load_test_needs_postgresql() -> None:
    if connections[conf.database_alias()].vendor == "postgresql":
        pytest.skip("the refusal of SQLite")
    with pytest.raises(CommandError, match="PostgreSQL|postgresql"):
        call_command("batchboard_loadtest", "--requests", "100", "--seconds", "5")


@pytest.mark.parametrize(
    ("option", "value"),
    [("--requests", "10"), ("--seconds", "601"), ("--workers", "0")],
)
@pytest.mark.skipif(shutil.which("wrk") is None, reason="needs wrk")
def test_the_load_test_is_bounded(option: str, value: str) -> None:
    with pytest.raises(CommandError, match=option):
        call_command("batchboard_loadtest", option, value)


def test_the_read_share_is_each_servers_scans_over_the_run() -> None:
    share = read_share(
        "default",
        {"default": 10, "batchboard_read_1": 100},
        {"default": 12, "batchboard_read_1": 298},
    )
    assert share is not None
    assert share.scans == {"default": 2, "batchboard_read_1": 198}
    assert share.total == 200
    assert share.percent("default") == 1.0
    # A server that did not answer either sample leaves no share to tell.
    assert read_share("default", {"default": None}, {"default": 3}) is None
    assert read_share("default", {"default": 1}, {}) is None


def test_the_lag_is_told_as_max_median_and_samples_behind() -> None:
    assert describe_lag([0.0, 0.0, 0.05]) == (
        "max 0.05 s, median 0.00 s over 3 samples (1 above zero)"
    )
    assert describe_lag([]) == "not sampled"


@pytest.mark.django_db
def test_every_page_of_the_mix_answers_the_load_user(client: Client) -> None:
    """The mix, browser pages and API reads alike, is what a session reads."""
    for job in ("payroll-run", "ledger-close"):
        instance = factories.instance(job)
        factories.step(factories.execution(instance, "FAILED"))
    factories.execution(factories.instance("payroll-run"), "STARTED")
    user = factories.administrator()
    client.force_login(user)
    pages = Command()._mix(conf.database_alias())
    api = reverse("batchboard:api-executions").removesuffix("executions/")
    assert {page.name for page in pages if page.path.startswith(api)} >= {
        "api executions first",
        "api executions deep",
        "api unresolved",
    }
    for page in pages:
        headers = {"HX-Request": "true"} if page.htmx else {}
        response = client.get(page.path, headers=headers)
        assert response.status_code == 200, page
        if page.path.startswith(api):
            assert response["Content-Type"] == "application/json"
