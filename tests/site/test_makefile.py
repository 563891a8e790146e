"""The README's two commands do what it says, in that order."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.site.commands import CHECKOUT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _dry_run(target: str, venv: Path) -> str:
    completed = subprocess.run(
        ["make", "--dry-run", "--no-print-directory", target, f"VENV={venv}"],
        cwd=CHECKOUT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def _in_order(text: str, *parts: str) -> None:
    position = 0
    for part in parts:
        found = text.find(part, position)
        assert found >= 0, f"{part!r} missing after position {position}"
        position = found + len(part)


def test_demo_installs_migrates_seeds_logs_in_and_serves(tmp_path: Path) -> None:
    """``make demo`` runs every step of the README's first command."""
    plan = _dry_run("demo", tmp_path / "venv")
    _in_order(
        plan,
        "sys.version_info >= (3, 11)",
        "-m venv",
        "pip install --quiet -r requirements.txt",
        "pip install --quiet --no-deps -e .",
        "holds an unfinished seed; starting it again",
        "manage.py migrate --no-input",
        "db.sqlite3.seeded",
        "manage.py batchboard_seed --seed 42 && touch",
        "manage.py batchboard_demo_login --address http://127.0.0.1:8000/",
        "manage.py batchboard_demo_alerts",
        "manage.py batchboard_simulate >",
        "simulate.log 2>&1 &",
        "manage.py batchboard_watch --every 2 >",
        "watch.log 2>&1 &",
        "manage.py runserver --noreload 127.0.0.1:8000",
        'trap "kill $simulator $watcher $server',
        "http://127.0.0.1:8000/  login: demo / demo",
        "wait $server",
    )
    assert f"DATABASE_URL=sqlite:///{CHECKOUT}/db.sqlite3" in plan
    assert "BATCHBOARD_DEMO=1 DJANGO_DEBUG=1" in plan
    # Every demo command runs behind the demo gate, which that variable opens.
    demo_lines = [line for line in plan.splitlines() if "manage.py batchboard_" in line]
    assert len(demo_lines) == 4
    assert all("BATCHBOARD_DEMO=1 " in line for line in demo_lines)


def test_test_runs_pytest_in_the_virtual_environment(tmp_path: Path) -> None:
    """``make test`` prepares the environment, then runs pytest."""
    venv = tmp_path / "venv"
    _in_order(_dry_run("test", venv), "-m venv", f"{venv}/bin/python -m pytest")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=CHECKOUT,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "batch.example.org", "::"])
def test_demo_refuses_a_host_beyond_loopback(host: str) -> None:
    """The demo's DEBUG pages and known passwords stay on this machine."""
    refused = _run("refuse-remote", f"HOST={host}")
    assert refused.returncode != 0
    assert f"HOST={host} is not loopback" in refused.stdout
    assert _run("refuse-remote", f"HOST={host}", "ALLOW_REMOTE=1").returncode == 0


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
def test_demo_serves_on_loopback(host: str) -> None:
    assert _run("refuse-remote", f"HOST={host}").returncode == 0


def test_demo_and_serve_check_the_host_first(tmp_path: Path) -> None:
    for target in ("demo", "serve"):
        completed = subprocess.run(
            [
                "make",
                "--no-print-directory",
                target,
                "HOST=0.0.0.0",
                f"VENV={tmp_path}",
            ],
            cwd=CHECKOUT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert completed.returncode != 0
        assert "is not loopback" in completed.stdout
        # Refused before anything is installed.
        assert not (tmp_path / "bin").exists()


def test_an_unfinished_seed_is_started_again(tmp_path: Path) -> None:
    """Only a finished seed leaves the marker that keeps the database."""
    plan = _dry_run("demo", tmp_path / "venv")
    keep = plan.index('if [ -f "')
    assert '[ ! -f "' + str(CHECKOUT / "db.sqlite3.seeded") + '" ]' in plan[keep:]
    assert 'rm -f "' + str(CHECKOUT / "db.sqlite3") + '"' in plan
    reset = _dry_run("demo-reset", tmp_path / "venv")
    assert str(CHECKOUT / "db.sqlite3.seeded") in reset


def test_serve_production_collects_checks_then_serves(tmp_path: Path) -> None:
    plan = _dry_run("serve-production", tmp_path / "venv")
    _in_order(
        plan,
        "manage.py collectstatic --no-input",
        "manage.py check --deploy --fail-level WARNING",
        "bin/gunicorn -c gunicorn.conf.py",
    )
