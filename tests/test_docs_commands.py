"""
Every shell command in the docs runs as written on a fresh clone.

The ``sh`` code blocks of README.md and docs/*.md are run, file by file, in
a copy of the checkout whose ``.venv`` is the suite's own virtual
environment, with an environment that names nothing but ``PATH`` and
``HOME``. A block runs in a shell of its own; one that exports nothing
continues the environment of the block before it (production.md's list of
what ``make serve-production`` runs continues its fresh-clone block). A
command that starts a server runs briefly: until ``/healthz`` answers on a
free port, then SIGTERM. The commands CI cannot run are in :data:`SKIPPED`,
each with its reason; a skip that matches no command fails, so the list
stays true.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[1]
DOCS = (CHECKOUT / "README.md", *sorted((CHECKOUT / "docs").glob("*.md")))

pytestmark = pytest.mark.slow

PG_BENCHMARK = "needs a PostgreSQL server of its own and runs for minutes"

#: (file, start of a command, why CI does not run it).
SKIPPED: tuple[tuple[str, str, str], ...] = (
    ("README.md", "make demo", "serves until interrupted, after a 2-3 minute seed"),
    ("README.md", "make test", "runs this very suite"),
    ("benchmarks-reference.md", "createdb", PG_BENCHMARK),
    ("benchmarks-reference.md", "python manage.py migrate", PG_BENCHMARK),
    ("benchmarks-reference.md", "python manage.py batchboard_benchmark", PG_BENCHMARK),
    (
        "api.md",
        "curl ",
        "talks to the example's server (tests/api/test_script.py runs the "
        "guide's script against a live one)",
    ),
    (
        "benchmarks.md",
        "python manage.py migrate",
        "migrates the benchmark's own databases: /var/tmp and PostgreSQL",
    ),
    ("benchmarks.md", "python manage.py batchboard_benchmark", "runs for hours"),
    ("benchmarks.md", "createdb", PG_BENCHMARK),
    (
        "configuration.md",
        "python manage.py migrate",
        "connects to the production database the example names",
    ),
    (
        "embedding.md",
        'pip install "/path/to/batchboard',
        "installs into the reader's project (tests/embedding builds and "
        "installs the package)",
    ),
    (
        "jobs.md",
        "make venv",
        "installs from the network; the copy's .venv is the suite's",
    ),
    (
        "jobs.md",
        ".venv/bin/python manage.py batchboard_example_job --execution 42",
        "needs a STARTING execution 42 created elsewhere",
    ),
    (
        "operator-view.md",
        "BATCHBOARD_SCREENSHOTS=1",
        "the browser tests themselves (tests/browser)",
    ),
    (
        "production.md",
        "make venv",
        "installs from the network; the copy's .venv is the suite's",
    ),
    ("production.md", "git clone", "the copy under test is the clone"),
    (
        "production.md",
        ".venv/bin/python manage.py migrate                      #",
        "connects to the production database the example names",
    ),
    (
        "production.md",
        ".venv/bin/python manage.py createsuperuser              #",
        "asks for a password, in the production database",
    ),
    (
        "production.md",
        "make serve-production",
        "needs the production database the example names (its three commands "
        "run in the next block)",
    ),
    ("production.md", ".venv/bin/python manage.py batchboard_loadtest", PG_BENCHMARK),
    (
        "production.md",
        ".venv/bin/python manage.py migrate\n",
        "migrates the load benchmark's PostgreSQL database",
    ),
    (
        "scaling-out.md",
        "python manage.py check --database",
        "connects to the primary, PgBouncer and standbys the example names",
    ),
    ("scaling-out.md", "python manage.py batchboard_loadtest", PG_BENCHMARK),
)

#: Starts of commands that start a server, run until it answers.
SERVERS = (".venv/bin/gunicorn",)


@dataclass
class Block:
    path: Path
    line: int
    commands: list[str]

    @property
    def exports(self) -> bool:
        return any(command.startswith("export ") for command in self.commands)


def _blocks(path: Path) -> list[Block]:
    """Return the ``sh`` blocks of a Markdown file, as commands."""
    blocks, lines, start, inside = [], [], 0, False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not inside and line.strip() == "```sh":
            inside, lines, start = True, [], number
        elif inside and line.startswith("```"):
            inside = False
            blocks.append(Block(path, start, _commands("\n".join(lines))))
        elif inside:
            lines.append(line)
    return blocks


def _commands(text: str) -> list[str]:
    """Split a block into commands: continued lines joined, comments dropped."""
    commands = []
    for command in re.sub(r"\\\n", " ", text).splitlines():
        if command.strip() and not command.lstrip().startswith("#"):
            commands.append(command.strip() + "\n")
    return commands


def _skip(path: Path, command: str) -> str | None:
    for name, start, reason in SKIPPED:
        if path.name == name and command.startswith(start):
            return reason
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


#: Runs a server in the background until /healthz answers (with the first
#: of ALLOWED_HOSTS as Host), then stops it with SIGTERM.
SERVE_BRIEFLY = r"""
serve_briefly() {
  "$@" > "$BB_LOGS/server.log" 2>&1 &
  server=$!
  host="${ALLOWED_HOSTS%%,*}"
  for _ in $(seq 1 150); do
    if curl -sf -o /dev/null -H "Host: ${host:-127.0.0.1}" "http://$BB_BIND/healthz"; then
      kill -TERM "$server"; wait "$server" || true
      return 0
    fi
    if ! kill -0 "$server" 2>/dev/null; then break; fi
    sleep 0.2
  done
  kill -KILL "$server" 2>/dev/null; cat "$BB_LOGS/server.log"; return 1
}
"""


def _script(block: Block, port: int, env_file: Path, inherit: bool) -> str:
    lines = ["set -e", SERVE_BRIEFLY]
    if inherit:
        lines.append(f". {env_file}")
    for command in block.commands:
        reason = _skip(block.path, command)
        if reason is not None:
            lines.append(f": skipped {_quote(reason)}")
            continue
        command = command.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
        if command.startswith(SERVERS):
            command = f"serve_briefly {command}"
        lines.append(f'echo "+ "{_quote(command.strip())}')
        lines.append(command.rstrip("\n"))
    lines.append(f"export -p > {env_file}")
    return "\n".join(lines) + "\n"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _copy(target: Path) -> Path:
    """Copy the checkout's files (tracked and new) as a fresh clone has them."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=CHECKOUT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = CHECKOUT / name
        if source.is_file():
            destination = target / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)
    (target / ".venv").symlink_to(Path(sys.executable).parents[1])
    return target


def test_every_skip_names_a_command_of_the_docs() -> None:
    commands = [
        (block.path, command) for path in DOCS for block in _blocks(path)
        for command in block.commands
    ]  # fmt: skip
    for name, start, _reason in SKIPPED:
        assert any(
            path.name == name and command.startswith(start)
            for path, command in commands
        ), (name, start)


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
@pytest.mark.parametrize(
    "path",
    [path for path in DOCS if _blocks(path)],
    ids=lambda path: path.name,
)
def test_the_commands_of_the_docs_run_as_written(path: Path, tmp_path: Path) -> None:
    clone = _copy(tmp_path / "batchboard")
    home = tmp_path / "home"
    home.mkdir()
    port = _free_port()
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "BB_BIND": f"127.0.0.1:{port}",
        "BB_LOGS": str(tmp_path),
        # gunicorn.conf.py's default address, were a block to name none.
        "BIND": f"127.0.0.1:{port}",
    }
    env_file = tmp_path / "env.sh"
    previous = False
    for block in _blocks(path):
        script = _script(block, port, env_file, inherit=previous and not block.exports)
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, (
            f"{path.name}:{block.line} failed\n{done.stdout}\n{done.stderr}"
        )
        previous = True
