"""
A host site that installs ``batchboard`` alone gets none of the demo's commands.

The demo (seeding, the simulator, demo logins, the example job and the
benchmarks) is the app ``batchboard.demo``, which only the standalone site
installs. Both sites' ``manage.py help`` are read as an operator would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.site.commands import CHECKOUT, SITE_VARIABLES, manage

HOST = Path(__file__).resolve().parent / "host"

DEMO_COMMANDS = (
    "batchboard_benchmark",
    "batchboard_benchmark_admin",
    "batchboard_benchmark_export",
    "batchboard_benchmark_replicas",
    "batchboard_demo_alerts",
    "batchboard_demo_login",
    "batchboard_example_job",
    "batchboard_loadtest",
    "batchboard_seed",
    "batchboard_simulate",
)
#: Words no command of an embedding site may carry from the demo.
DEMO_WORDS = ("demo", "seed", "simulate", "benchmark", "example_job", "loadtest")


def _host_help(tmp_path: Path) -> str:
    """Run ``django-admin help`` in the host site, with the checkout's batchboard."""
    base = {k: v for k, v in os.environ.items() if k not in SITE_VARIABLES}
    completed = subprocess.run(
        [sys.executable, "-m", "django", "help"],
        cwd=HOST,
        env={
            **base,
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": os.pathsep.join([str(HOST), str(CHECKOUT)]),
            "DJANGO_SETTINGS_MODULE": "hostsite.settings",
            "HOST_DATABASE": str(tmp_path / "host.sqlite3"),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return completed.stdout


def _commands(help_text: str) -> set[str]:
    return {
        line.strip()
        for line in help_text.splitlines()
        if line.startswith("    ") and line.strip()
    }


def test_a_host_site_with_batchboard_alone_lists_no_demo_command(
    tmp_path: Path,
) -> None:
    output = _host_help(tmp_path)
    commands = _commands(output)
    assert "batchboard_groups" in commands
    assert "migrate" in commands
    assert "[demo]" not in output
    demo = sorted(c for c in commands if any(word in c for word in DEMO_WORDS))
    assert demo == []
    assert not (tmp_path / "host.sqlite3").exists()


def test_the_standalone_site_lists_every_demo_command(tmp_path: Path) -> None:
    result = manage(
        "help",
        env={"DJANGO_DEBUG": "1", "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3"},
    )
    assert result.returncode == 0, result.output
    section = result.stdout.split("[demo]\n", 1)[1].split("\n\n", 1)[0]
    assert sorted(_commands(section)) == sorted(DEMO_COMMANDS)
    assert "batchboard_groups" in _commands(result.stdout)
