"""
The production site under gunicorn, as docs/production.md starts it.

One live server per module (slow): collectstatic, ``check --deploy``, then
gunicorn with DEBUG off on loopback. Every static asset answers 200 with a
year-long cache, the probes answer, and SIGTERM stops the server gracefully.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.site.commands import SITE_VARIABLES, manage, start_gunicorn

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("gunicorn", path=str(Path(sys.executable).parent)) is None,
        reason="needs gunicorn in the virtual environment",
    ),
]

YEAR = 365 * 24 * 3600


@dataclass
class Server:
    url: str
    process: subprocess.Popen[str]
    static_root: Path
    home: Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(tmp: Path, port: int) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k not in SITE_VARIABLES}
    return {
        **base,
        "DJANGO_DEBUG": "0",
        "SECRET_KEY": "k2Vh0JpZ8wq3N7xYcR5tL1mB9sD4fG6hJ0kQ2wE8rT3yU7iO5pA1sD9fG4hJ6kL",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "0",
        "DATABASE_URL": f"sqlite:///{tmp}/site.sqlite3",
        "STATIC_ROOT": str(tmp / "static"),
        "BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": "2",
        "GRACEFUL_TIMEOUT": "5",
    }


def _get(url: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("serving")
    port = _free_port()
    env = _env(tmp, port)
    for command in (
        ("migrate", "--no-input", "--verbosity", "0"),
        ("collectstatic", "--no-input", "--verbosity", "0"),
    ):
        done = manage(*command, env=_only_site(env), timeout=120)
        assert done.returncode == 0, done.output
    # A read-only home, as in a container: gunicorn must not write there
    # (its control socket is off, gunicorn.conf.py).
    home = tmp / "home"
    home.mkdir()
    home.chmod(0o555)
    env = {**env, "HOME": str(home)}
    env.pop("XDG_RUNTIME_DIR", None)
    url, process = start_gunicorn(env, port)
    yield Server(url, process, tmp / "static", home)
    if process.poll() is None:
        process.kill()
        process.communicate()
    home.chmod(0o755)


def _only_site(env: dict[str, str]) -> dict[str, str]:
    names = (
        "DJANGO_DEBUG",
        "SECRET_KEY",
        "ALLOWED_HOSTS",
        "SECURE_SSL_REDIRECT",
        "DATABASE_URL",
        "STATIC_ROOT",
    )
    return {name: env[name] for name in names}


def test_every_asset_is_served_hashed_and_cached_for_a_year(server: Server) -> None:
    manifest = json.loads((server.static_root / "staticfiles.json").read_text())
    hashed = sorted(manifest["paths"].values())
    assert any(name.startswith("batchboard/batchboard.") for name in hashed)
    assert "site.css" in manifest["paths"]
    for name in hashed:
        status, headers, body = _get(f"{server.url}/static/{name}")
        assert status == 200, name
        assert body, name
        cache = headers["Cache-Control"]
        max_age = int(cache.split("max-age=")[1].split(",")[0])
        assert max_age >= YEAR, (name, cache)


def test_collectstatic_writes_gzip_and_brotli_variants(server: Server) -> None:
    manifest = json.loads((server.static_root / "staticfiles.json").read_text())
    for source in ("batchboard/batchboard.css", "batchboard/batchboard.js"):
        hashed = server.static_root / manifest["paths"][source]
        assert hashed.with_name(hashed.name + ".gz").is_file(), source
        assert hashed.with_name(hashed.name + ".br").is_file(), source
    status, headers, _body = _get_encoded(
        f"{server.url}/static/{manifest['paths']['batchboard/batchboard.css']}", "br"
    )
    assert (status, headers.get("Content-Encoding")) == (200, "br")


def _get_encoded(url: str, encoding: str) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers={"Accept-Encoding": encoding})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, dict(response.headers), response.read()


def test_gunicorn_serves_with_a_read_only_home(server: Server) -> None:
    """The server of the fixture runs with HOME read-only and writes nothing there."""
    assert _get(f"{server.url}/healthz")[0] == 200
    assert list(server.home.iterdir()) == []
    assert server.process.poll() is None


def test_pages_link_the_hashed_assets(server: Server) -> None:
    status, headers, body = _get(f"{server.url}/login/")
    assert status == 200
    page = body.decode()
    manifest = json.loads((server.static_root / "staticfiles.json").read_text())
    for source in ("batchboard/batchboard.css", "batchboard/batchboard.js", "site.css"):
        assert f"/static/{manifest['paths'][source]}" in page, source
    assert "Content-Security-Policy" in headers
    assert headers["Referrer-Policy"] == "same-origin"


def test_probes_and_head(server: Server) -> None:
    assert _get(f"{server.url}/healthz")[0] == 200
    status, _headers, body = _get(f"{server.url}/readyz")
    assert (status, body) == (200, b"ready\n")
    assert _get(f"{server.url}/login/", method="HEAD")[0] == 200


def test_check_deploy_is_clean_with_the_production_environment(
    tmp_path: Path,
) -> None:
    env = {
        "DJANGO_DEBUG": "0",
        "SECRET_KEY": "k2Vh0JpZ8wq3N7xYcR5tL1mB9sD4fG6hJ0kQ2wE8rT3yU7iO5pA1sD9fG4hJ6kL",
        "ALLOWED_HOSTS": "batch.example.org",
        "BATCHBOARD_METRICS_ALLOWED_NETWORKS": "10.0.0.0/8",
        "DATABASE_URL": f"sqlite:///{tmp_path}/d.sqlite3",
    }
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=env)
    assert result.returncode == 0, result.output
    assert "no issues" in result.stdout


def test_sigterm_stops_gracefully(server: Server) -> None:
    """Runs last in this module: the server exits cleanly on SIGTERM."""
    server.process.send_signal(signal.SIGTERM)
    _out, err = server.process.communicate(timeout=30)
    assert server.process.returncode == 0, err
    assert "Handling signal: term" in err
    assert "Shutting down: Master" in err
