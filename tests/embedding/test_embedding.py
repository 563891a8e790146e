"""Build batchboard's wheel and run it inside another Django site."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CHECKOUT = Path(__file__).resolve().parents[2]
HOST = Path(__file__).resolve().parent / "host"


def _run(*command: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    completed = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return completed.stdout


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Copy the package sources, so that the build leaves the checkout clean."""
    source = tmp_path_factory.mktemp("source")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(CHECKOUT / "batchboard", source / "batchboard", ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(CHECKOUT / name, source / name)
    return source


@pytest.fixture(scope="module")
def wheel(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the wheel as a packager would, without dependencies."""
    dist = tmp_path_factory.mktemp("dist")
    _run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "-q",
        "-w",
        dist,
        source,
        cwd=source,
    )
    (built,) = dist.glob("batchboard-*.whl")
    return built


def test_wheel_ships_templates_static_and_migrations(source: Path, wheel: Path) -> None:
    """Every file the app needs at run time is inside the wheel."""
    names = set(zipfile.ZipFile(wheel).namelist())
    package = source / "batchboard"
    expected = {
        path.relative_to(source).as_posix()
        for folder in ("templates", "static", "migrations")
        for path in (package / folder).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }
    assert "batchboard/migrations/0001_initial.py" in expected
    assert expected <= names, sorted(expected - names)
    assert "batchboard/py.typed" in names
    assert "batchboard/demo/management/commands/batchboard_demo_login.py" in names
    assert not any(name.startswith("tests/") for name in names)


def test_host_site_serves_the_admin_from_the_installed_wheel(
    wheel: Path, tmp_path: Path
) -> None:
    """A fresh virtual environment with only the wheel runs the host site."""
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    _run(python, "-m", "pip", "install", "-q", wheel, cwd=tmp_path)
    host = tmp_path / "host"
    shutil.copytree(HOST, host, ignore=shutil.ignore_patterns("__pycache__"))
    env = {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "HOST_DATABASE": str(tmp_path / "host.sqlite3"),
    }
    output = _run(python, "smoke.py", cwd=host, env=env)
    assert f"batchboard from {venv}" in output
    assert "changelist 200" in output
    assert "/ops/batch/ 200" in output
    # A reader who is not staff signs in and out on the pages the wheel ships.
    assert (
        "reader: sent to /accounts/login/ 200; signed in 302 to /ops/batch/; "
        "/ops/batch/ 200; signed out 200 batchboard\n"
    ) in output
    # Only batchboard's own command: no seed, simulator, demo login or benchmark.
    assert "batchboard commands: batchboard_groups batchboard_watch\n" in output
