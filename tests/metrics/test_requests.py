"""batchboard's request metrics: by view name, summed over worker processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client, override_settings
from django.urls import reverse

from batchboard.metrics import requests
from tests import factories
from tests.metrics.conftest import labels, scrape, settings_with

MIDDLEWARE = [
    "batchboard.metrics.requests.RequestMetricsMiddleware",
    *settings.MIDDLEWARE,
]
CHECKOUT = Path(__file__).resolve().parents[2]


def _count(view: str, status: str) -> float:
    series, _families = scrape()
    found = series.get("batchboard_http_requests_total", {})
    return found.get(labels(view=view, status=status), 0.0)


@pytest.mark.django_db
@override_settings(MIDDLEWARE=MIDDLEWARE, BATCHBOARD=settings_with())
def test_requests_are_counted_by_view_name_never_by_path() -> None:
    factories.execution(factories.instance("secret-job-name"), "COMPLETED")
    client = Client()
    client.force_login(factories.viewer())
    before = _count("batchboard:job", "200")
    missing = _count("none", "404")
    assert (
        client.get(reverse("batchboard:job", args=["secret-job-name"])).status_code
        == 200
    )
    assert client.get("/no/such/page/4711").status_code == 404
    assert _count("batchboard:job", "200") == before + 1
    assert _count("none", "404") == missing + 1
    series, _families = scrape()
    values = {
        value
        for name in (
            "batchboard_http_requests_total",
            "batchboard_http_request_duration_seconds_bucket",
        )
        for key in series[name]
        for _label, value in key
    }
    assert not any("secret-job-name" in value or "/" in value for value in values)
    assert not any(name.endswith("_created") for name in series)
    durations = series["batchboard_http_request_duration_seconds_count"]
    assert durations[labels(view="batchboard:job", status="200")] >= 1


_WORKER = """
import sys
from batchboard.metrics import requests
for _ in range(int(sys.argv[1])):
    requests.record("batchboard:index", 200, 0.02)
requests.record("batchboard:job", 404, 0.3)
"""


def test_worker_processes_are_summed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two worker processes count apart; a scrape in any process sums both."""
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "PYTHONPATH": str(CHECKOUT)}
    for count in ("3", "4"):
        subprocess.run(
            [sys.executable, "-c", _WORKER, count], env=env, check=True, timeout=60
        )
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    found = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in requests.collect()
        for sample in family.samples
    }
    index = labels(view="batchboard:index", status="200")
    assert found[("batchboard_http_requests_total", index)] == 7
    job = labels(view="batchboard:job", status="404")
    assert found[("batchboard_http_requests_total", job)] == 2
    assert found[("batchboard_http_request_duration_seconds_count", index)] == 7
    bucket = labels(view="batchboard:index", status="200", le="0.025")
    assert found[("batchboard_http_request_duration_seconds_bucket", bucket)] == 7
