"""Run the standalone site's manage.py in a subprocess, as an operator would."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

from batchboard.site.database import parse_database_url

CHECKOUT = Path(__file__).resolve().parents[2]

# Variables of the standalone site, and Django switches other tests set
# (browser tests allow async-unsafe calls); each run starts without any of
# them so that the caller's environment cannot leak into the site under test.
SITE_VARIABLES = (
    "DJANGO_ALLOW_ASYNC_UNSAFE",
    "DJANGO_SETTINGS_MODULE",
    "DATABASE_URL",
    "BATCHBOARD_DATABASE_URL",
    "BATCHBOARD_SCHEMA",
    "BATCHBOARD_DEMO",
    "DJANGO_DEBUG",
    "SECRET_KEY",
    "ALLOWED_HOSTS",
    "CSRF_TRUSTED_ORIGINS",
    "BATCHBOARD_METRICS_TOKEN",
    "BATCHBOARD_METRICS_ALLOWED_NETWORKS",
    "BATCHBOARD_METRICS_JOBS",
)


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def manage(*args: str, env: dict[str, str], timeout: float = 60) -> Result:
    """Run ``manage.py <args>`` from the checkout with exactly ``env`` on top."""
    base = {k: v for k, v in os.environ.items() if k not in SITE_VARIABLES}
    completed = subprocess.run(
        [sys.executable, str(CHECKOUT / "manage.py"), *args],
        cwd=CHECKOUT,
        env={**base, "PYTHONDONTWRITEBYTECODE": "1", **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Result(completed.returncode, completed.stdout, completed.stderr)


def server_url() -> str:
    """Return the ``DATABASE_URL`` the suite runs on (PostgreSQL runs only)."""
    return os.environ["DATABASE_URL"]


def url_for(database: str, *, user: str | None = None) -> str:
    """Return a URL for ``database`` on the suite's server, as ``user`` if given."""
    parts = urlsplit(server_url())
    netloc = parts.netloc
    if user is not None:
        netloc = f"{user}@{netloc.rpartition('@')[2]}"
    return urlunsplit((parts.scheme, netloc, f"/{database}", parts.query, ""))


def scratch_name(suffix: str) -> str:
    """Return ``<suite database>_<suffix>``, a name the suite may drop."""
    entry = parse_database_url(server_url(), setting="DATABASE_URL", base_dir=CHECKOUT)
    return f"{entry['NAME']}_{suffix}"


def _admin_connection() -> psycopg.Connection[Any]:
    entry = parse_database_url(server_url(), setting="DATABASE_URL", base_dir=CHECKOUT)
    return psycopg.connect(
        dbname="postgres",
        user=entry["USER"] or None,
        password=entry["PASSWORD"] or None,
        host=entry["HOST"] or None,
        port=entry["PORT"] or None,
        autocommit=True,
    )


@contextmanager
def scratch_database(suffix: str) -> Iterator[str]:
    """Create an empty database for one test and drop it afterwards."""
    name = scratch_name(suffix)
    with _admin_connection() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with _admin_connection() as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def connect(database: str) -> psycopg.Connection[Any]:
    """Open a connection to ``database`` on the suite's server."""
    entry = parse_database_url(server_url(), setting="DATABASE_URL", base_dir=CHECKOUT)
    return psycopg.connect(
        dbname=database,
        user=entry["USER"] or None,
        password=entry["PASSWORD"] or None,
        host=entry["HOST"] or None,
        port=entry["PORT"] or None,
    )


def start_gunicorn(env: dict[str, str], port: int) -> tuple[str, subprocess.Popen[str]]:
    """
    Start the standalone site's gunicorn (``gunicorn.conf.py``) with ``env``
    on ``port``; return its address and process once ``/healthz`` answers.
    """
    import time
    import urllib.request

    import pytest

    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    process = subprocess.Popen(
        [gunicorn, "-c", str(CHECKOUT / "gunicorn.conf.py")],
        cwd=CHECKOUT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=10) as response:
                if response.status == 200:
                    return url, process
        except OSError:
            time.sleep(0.2)
    process.kill()
    pytest.fail(f"gunicorn did not start: {process.communicate()[1]}")
