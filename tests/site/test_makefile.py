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
        "manage.py migrate --no-input",
        "JobExecution.objects.exists()",
        "manage.py batchboard_seed --seed 42",
        "manage.py batchboard_demo_login --address http://127.0.0.1:8000/",
        "manage.py batchboard_simulate >",
        "simulate.log 2>&1 &",
        "manage.py runserver --noreload 127.0.0.1:8000",
        'trap "kill $simulator $server',
        "http://127.0.0.1:8000/  login: demo / demo",
        "wait $server",
    )
    assert f"DATABASE_URL=sqlite:///{CHECKOUT}/db.sqlite3" in plan
    assert "BATCHBOARD_DEMO=1 DJANGO_DEBUG=1" in plan
    # Every demo command runs behind the demo gate, which that variable opens.
    demo_lines = [line for line in plan.splitlines() if "manage.py batchboard_" in line]
    assert len(demo_lines) == 3
    assert all("BATCHBOARD_DEMO=1 " in line for line in demo_lines)


def test_test_runs_pytest_in_the_virtual_environment(tmp_path: Path) -> None:
    """``make test`` prepares the environment, then runs pytest."""
    venv = tmp_path / "venv"
    _in_order(_dry_run("test", venv), "-m venv", f"{venv}/bin/python -m pytest")
