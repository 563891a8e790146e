"""
/metrics under gunicorn with two workers, as docs/production.md starts it.

Whichever worker answers a scrape, the request counts are the server's
(gunicorn.conf.py shares prometheus-client's directory between workers),
and the database gauges are the same.
"""

from __future__ import annotations

import shutil
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.site.commands import manage, start_gunicorn
from tests.site.test_serving import _env, _free_port, _get

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("gunicorn", path=str(Path(sys.executable).parent)) is None,
        reason="needs gunicorn in the virtual environment",
    ),
]

TOKEN = "gunicorn-metrics-token"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("metrics")
    port = _free_port()
    env = {**_env(tmp, port), "BATCHBOARD_METRICS_TOKEN": TOKEN}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    done = manage("migrate", "--no-input", "--verbosity", "0", env=env, timeout=120)
    assert done.returncode == 0, done.output
    url, process = start_gunicorn(env, port)
    yield url
    process.terminate()
    process.communicate(timeout=30)


def _scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    request = urllib.request.Request(
        f"{url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_every_worker_answers_the_servers_totals(server: str) -> None:
    healthz = (
        "batchboard_http_requests_total",
        (("status", "200"), ("view", "healthz")),
    )
    before = _scrape(server).get(healthz, 0.0)
    for _ in range(40):
        assert _get(f"{server}/healthz")[0] == 200
    seen = {_scrape(server)[healthz] for _ in range(8)}
    assert seen == {before + 40}
    active = (
        "oxide_batch_active_executions",
        (("job", "__other__"), ("status", "STARTED"), ("step", "__other__")),
    )
    assert {_scrape(server)[active] for _ in range(4)} == {0.0}


def test_a_scrape_without_the_token_is_refused(server: str) -> None:
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{server}/metrics", timeout=10)
    assert refused.value.code == 401
