"""
Real components for the scale-out tests: a primary, a streaming standby, PgBouncer.

Each runs from Debian's PostgreSQL 15 and PgBouncer binaries in a temporary
directory on free loopback ports, as the ``postgres`` OS user when the suite
runs as root (PostgreSQL and PgBouncer refuse to run as root). Without the
binaries the tests are skipped, except on CI (``CI`` set), where they must
run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

PG_BIN = Path(os.environ.get("BATCHBOARD_PG_BIN", "/usr/lib/postgresql/15/bin"))
PGBOUNCER = Path(shutil.which("pgbouncer") or "/usr/sbin/pgbouncer")

#: The database the tests' site uses on the cluster.
DATABASE = "bbscale"


def missing_binaries() -> list[str]:
    """Return the binaries these tests need and do not find."""
    needed = [
        PG_BIN / name for name in ("initdb", "pg_ctl", "pg_basebackup", "postgres")
    ]
    needed.append(PGBOUNCER)
    return [str(path) for path in needed if not path.is_file()]


def on_ci() -> bool:
    return bool(os.environ.get("CI"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_postgres(command: Sequence[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *command]
    return list(command)


def run(command: Sequence[str], *, timeout: float = 120) -> str:
    """Run ``command`` (as postgres when root); raise with its output on failure."""
    done = subprocess.run(
        _as_postgres(command), capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}"
        )
    return done.stdout


def _give_to_postgres(path: Path) -> None:
    if os.geteuid() == 0:
        shutil.chown(path, "postgres", "postgres")


@dataclass
class Server:
    """One PostgreSQL server of the cluster."""

    name: str
    data: Path
    port: int

    def url(self, database: str = DATABASE, user: str = "postgres") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    def connect(
        self, database: str = DATABASE, **kwargs: Any
    ) -> psycopg.Connection[Any]:
        return psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            user="postgres",
            dbname=database,
            autocommit=True,
            connect_timeout=5,
            **kwargs,
        )

    def query(
        self, sql: str, params: Sequence[Any] = (), database: str = DATABASE
    ) -> list[Any]:
        with self.connect(database) as connection:
            cursor = connection.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    def start(self) -> None:
        run(
            [
                str(PG_BIN / "pg_ctl"),
                "-D",
                str(self.data),
                "-l",
                str(self.data.parent / f"{self.name}.log"),
                "-w",
                "-t",
                "60",
                "start",
            ]
        )

    def stop(self) -> None:
        run([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"])

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()


@dataclass
class Cluster:
    """A primary and a streaming standby of it, and PgBouncer in front of the primary."""

    root: Path
    primary: Server
    standby: Server
    bouncer_port: int
    bouncer_config: Path
    started: list[str] = field(default_factory=list)

    def bouncer_url(self, database: str = DATABASE, user: str = "postgres") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.bouncer_port}/{database}"

    def primary_position(self) -> str:
        ((position,),) = self.primary.query("SELECT pg_current_wal_lsn()::text")
        return str(position)

    def wait_for_replay(self, position: str | None = None, timeout: float = 30) -> None:
        """Wait until the standby has replayed ``position`` (default: the primary's now)."""
        target = position or self.primary_position()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ((done,),) = self.standby.query(
                "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [target], "postgres"
            )
            if done:
                return
            time.sleep(0.05)
        raise TimeoutError(f"the standby did not replay {target}")

    def running_execution(self) -> int:
        """
        Return a STARTED execution without a stop request, replayed on the standby.

        Tests stop executions; the seed leaves only a few running, so the
        stop request of the lowest one is cleared for the next test.
        """
        ((execution,),) = self.primary.query(
            "UPDATE oxide_batch.ob_job_execution SET stop_requested_at = NULL, "
            "stop_requested_by = NULL WHERE id = (SELECT min(id) FROM "
            "oxide_batch.ob_job_execution WHERE status = 'STARTED') RETURNING id"
        )
        self.wait_for_replay()
        return int(execution)

    def stop(self) -> None:
        if "pgbouncer" in self.started:
            pid_file = self.root / "pgbouncer.pid"
            if pid_file.exists():
                pid = int(pid_file.read_text().strip())
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, 15)
        for server in (self.standby, self.primary):
            if server.running():
                with contextlib.suppress(RuntimeError):
                    server.stop()
        shutil.rmtree(self.root, ignore_errors=True)


_PRIMARY_CONF = """
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{root}'
wal_level = replica
max_wal_senders = 4
hot_standby = on
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track_utility = on
timezone = 'UTC'
fsync = off
full_page_writes = off
max_connections = 100
shared_buffers = 32MB
"""

_BOUNCER_INI = """[databases]
* = host=127.0.0.1 port={primary}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {root}/userlist.txt
pool_mode = transaction
ignore_startup_parameters = options
max_client_conn = 200
default_pool_size = 20
server_reset_query =
logfile = {root}/pgbouncer.log
pidfile = {root}/pgbouncer.pid
"""


def start_cluster(users: Sequence[str] = ("postgres",)) -> Cluster:
    """Start a primary, a standby from ``pg_basebackup -R``, and PgBouncer."""
    root = Path(tempfile.mkdtemp(prefix="bb-scaleout-"))
    _give_to_postgres(root)
    primary = Server("primary", root / "primary", free_port())
    standby = Server("standby", root / "standby", free_port())
    cluster = Cluster(root, primary, standby, free_port(), root / "pgbouncer.ini")
    try:
        run(
            [
                str(PG_BIN / "initdb"),
                "-D",
                str(primary.data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ]
        )
        with (primary.data / "postgresql.conf").open("a") as conf:
            conf.write(_PRIMARY_CONF.format(port=primary.port, root=root))
        primary.start()
        cluster.started.append("primary")
        primary.query(f'CREATE DATABASE "{DATABASE}"', database="postgres")
        primary.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        # Behind PgBouncer the connection's options are dropped: the schema
        # goes on the database's search_path, as docs/scaling-out.md says.
        primary.query(
            f'ALTER DATABASE "{DATABASE}" SET search_path = public, oxide_batch',
            database="postgres",
        )
        run(
            [
                str(PG_BIN / "pg_basebackup"),
                "-h",
                "127.0.0.1",
                "-p",
                str(primary.port),
                "-U",
                "postgres",
                "-D",
                str(standby.data),
                "-R",
                "-X",
                "stream",
                "--checkpoint=fast",
                "--no-sync",
            ]
        )
        with (standby.data / "postgresql.conf").open("a") as conf:
            conf.write(f"\nport = {standby.port}\n")
        standby.start()
        cluster.started.append("standby")
        write_bouncer_users(cluster, users)
        cluster.bouncer_config.write_text(
            _BOUNCER_INI.format(
                primary=primary.port, port=cluster.bouncer_port, root=root
            )
        )
        _give_to_postgres(cluster.bouncer_config)
        run([str(PGBOUNCER), "-d", str(cluster.bouncer_config)])
        cluster.started.append("pgbouncer")
        _wait_for(lambda: _answers(cluster.bouncer_url("postgres")))
        _wait_for(
            lambda: bool(
                standby.query("SELECT pg_is_in_recovery()", (), "postgres")[0][0]
            )
        )
    except BaseException:
        cluster.stop()
        raise
    return cluster


def write_bouncer_users(cluster: Cluster, users: Sequence[str]) -> None:
    """List the logins PgBouncer admits (trust: names only)."""
    path = cluster.root / "userlist.txt"
    path.write_text("".join(f'"{user}" ""\n' for user in users))
    _give_to_postgres(path)


def _answers(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=2, autocommit=True) as connection:
            connection.execute("SELECT 1")
    except psycopg.Error:
        return False
    return True


def _wait_for(condition: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except psycopg.Error:
            pass
        time.sleep(0.1)
    raise TimeoutError("a component of the scale-out cluster did not come up")
