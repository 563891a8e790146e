"""
``manage.py batchboard_loadtest``: requests per second and latency per page
under gunicorn with DEBUG off, driven by ``wrk`` on loopback.

The history must be on PostgreSQL. The command tops it up when it is short
(bulk executions, job names, unresolved executions: demo only), collects
the static files, starts gunicorn on a free loopback port with the
production settings (DEBUG off, WhiteNoise) and the simulator beside it,
then runs ``wrk`` with the operators' page mix, bounded by ``--requests``
and ``--seconds``. It prints the mix's requests per second and, per page,
p50, p95 and p99 and the errors. Every process it started is stopped before
it returns.

When the site reads from replicas (``BATCHBOARD_READ_DATABASE_URL``), it
also prints where the metadata reads went, the scans each server started on
the ``ob_*`` tables over the run (``pg_stat_user_tables``, sampled before
the run and after the server stopped), and each replica's lag, sampled
every half second while wrk runs (:mod:`batchboard.demo.replication`).
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Final

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import Permission, User
from django.contrib.sessions.backends.db import SessionStore
from django.core.management import call_command
from django.core.management.base import CommandError, CommandParser
from django.db import connections
from django.test.utils import override_settings
from django.urls import reverse

from batchboard import conf, cursors
from batchboard.demo.commands import add_seed_argument, check_bounds
from batchboard.demo.gate import require_demo
from batchboard.demo.loadtest import MIX_SCRIPT, Page, Report, read_samples
from batchboard.demo.measure import (
    BenchmarkCommand,
    landmarks,
    unresolved_executions,
)
from batchboard.demo.replication import (
    LAG_SAMPLE_SECONDS,
    LagSampler,
    ReadShare,
    describe_lag,
    read_share,
    table_scans,
)
from batchboard.digests import JobParameter
from batchboard.repository import JobRepository

LOAD_USER = "loadtest"
PAGE_SIZE = 50
#: At most this long, the servers' scan counts are read until they settle
#: once the site has stopped (its sessions flush their counts as they end).
SETTLE_SECONDS = 10.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


#: Worker processes by default: one per core. On one machine the workers,
#: PostgreSQL, the simulator and wrk share the cores; more sync workers than
#: cores only queue for them (2 workers: 210 requests/s, p99 93 ms; 3: 192
#: and 107 ms; 4: 165 and 133 ms on the 2-core reference machine).
CORES: Final = os.cpu_count() or 1


class Command(BenchmarkCommand):
    help = (
        "Serve the site under gunicorn (DEBUG off) and drive it with wrk on "
        "loopback while the simulator writes; print requests per second and "
        "p50/p95/p99 per page. Topping up the history is demo only "
        "(BATCHBOARD_DEMO=1)."
    )

    def postgresql_alias(self) -> str:
        """Return the metadata alias, refusing any database but PostgreSQL."""
        alias = conf.database_alias()
        if connections[alias].vendor != "postgresql":
            raise CommandError(
                "The load test needs the metadata on PostgreSQL: set "
                "BATCHBOARD_DATABASE_URL (or DATABASE_URL) to a postgresql:// URL."
            )
        return alias

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--executions",
            type=int,
            default=2_000_000,
            help="Executions the history must hold (default 2000000).",
        )
        parser.add_argument(
            "--job-names",
            type=int,
            default=40,
            help="Job names the history must hold (default 40).",
        )
        parser.add_argument(
            "--unresolved",
            type=int,
            default=300,
            help="Unresolved executions it must hold (default 300).",
        )
        parser.add_argument(
            "--requests",
            type=int,
            default=20_000,
            help="Stop after this many requests (default 20000).",
        )
        parser.add_argument(
            "--seconds",
            type=int,
            default=60,
            help="Stop after this many seconds (default 60, at most 600).",
        )
        parser.add_argument(
            "--concurrency",
            type=int,
            default=8,
            help="Connections, one per wrk thread (default 8).",
        )
        parser.add_argument(
            "--workers",
            type=int,
            default=CORES,
            help=(
                "Gunicorn worker processes (default one per core: the site, the "
                f"database, the simulator and wrk share them; {CORES} here)."
            ),
        )
        parser.add_argument(
            "--threads",
            type=int,
            default=1,
            help="Threads per gunicorn worker (default 1: sync workers).",
        )
        parser.add_argument(
            "--no-simulator",
            action="store_true",
            help="Measure without the simulator writing.",
        )
        add_seed_argument(parser, 2026, of="Random seed of a bulk load")

    def handle(self, *args: Any, **options: Any) -> None:
        wrk = shutil.which("wrk")
        if wrk is None:
            raise CommandError("wrk is not installed: apt-get install -y wrk.")
        check_bounds("requests", options["requests"], 100, 5_000_000)
        check_bounds("seconds", options["seconds"], 5, 600)
        check_bounds("concurrency", options["concurrency"], 1, 64)
        check_bounds("workers", options["workers"], 1, 32)
        check_bounds("threads", options["threads"], 1, 16)
        alias = self.postgresql_alias()
        self._prepare(alias, options)
        mix = self._mix(alias)
        with tempfile.TemporaryDirectory(prefix="batchboard-load-") as scratch:
            self._run(Path(scratch), wrk, mix, options)

    # -- the history ---------------------------------------------------------

    def _scalar(self, alias: str, sql: str) -> int:
        with connections[alias].cursor() as cursor:
            cursor.execute(sql)
            return int(cursor.fetchone()[0] or 0)

    def _prepare(self, alias: str, options: dict[str, Any]) -> None:
        executions = self._scalar(alias, "SELECT count(*) FROM ob_job_execution")
        names = self._scalar(
            alias, "SELECT count(DISTINCT job_name) FROM ob_job_definition"
        )
        unresolved = unresolved_executions(alias)
        short = (
            executions < options["executions"]
            or names < options["job_names"]
            or unresolved < options["unresolved"]
        )
        if short:
            require_demo("batchboard_loadtest", alias)
        if executions < options["executions"]:
            self.stdout.write(
                f"Seeding {options['executions'] - executions:,} executions in bulk…"
            )
            call_command(
                "batchboard_seed",
                bulk=True,
                seed=options["seed"],
                executions=options["executions"] - executions,
                stdout=self.stdout,
            )
        repo = JobRepository(using=alias)
        missing_names = max(0, options["job_names"] - names)
        missing_unresolved = max(0, options["unresolved"] - unresolved)
        launches = max(missing_names, missing_unresolved)
        for number in range(launches):
            # Names load-01... first, then more running instances over them.
            name = f"load-{number % max(missing_names, 1) + 1:02d}"
            if missing_names == 0:
                name = "load-running"
            execution = repo.launch(
                name,
                {
                    "shard": JobParameter.u64(number),
                    "nonce": JobParameter.string(secrets.token_hex(4)),
                },
            )
            if number < missing_unresolved:
                repo.transition_execution(execution.pk, execution.version, "STARTED")
            else:
                started = repo.transition_execution(
                    execution.pk, execution.version, "STARTED"
                )
                repo.transition_execution(started.pk, started.version, "COMPLETED")
        if short:
            with connections[alias].cursor() as cursor:
                cursor.execute("ANALYZE")
        self.stdout.write(
            "History: "
            f"{self._scalar(alias, 'SELECT count(*) FROM ob_job_execution'):,} executions, "
            f"{self._scalar(alias, 'SELECT count(DISTINCT job_name) FROM ob_job_definition')} job names, "
            f"{unresolved_executions(alias)} unresolved."
        )

    def _mix(self, alias: str) -> list[Page]:
        """Return the operators' page mix over this history."""
        marks = landmarks(alias)
        top = marks.max_execution
        with connections[alias].cursor() as cursor:
            cursor.execute(
                "SELECT id FROM ob_job_execution WHERE status = 'STARTED' "
                "ORDER BY id DESC LIMIT 1"
            )
            running = cursor.fetchone()
        busy, rare = marks.jobs[0][0], marks.jobs[-1][0]
        deep = cursors.encode(
            cursors.recent_executions("", ""),
            PAGE_SIZE,
            cursors.Identity(max(1, top // 2)),
            top,
        )
        live = running[0] if running else top
        detail = marks.execution or top
        from urllib.parse import quote

        return [
            Page("overview", 10, "/"),
            Page("executions first", 8, "/executions/"),
            Page("executions deep", 5, f"/executions/?cursor={deep}"),
            Page("executions filtered", 7, "/executions/?status=FAILED"),
            Page("job busy", 6, f"/jobs/{quote(busy, safe='')}/"),
            Page("job rare", 4, f"/jobs/{quote(rare, safe='')}/"),
            Page("execution page", 8, f"/executions/{detail}/"),
            Page("execution live poll", 30, f"/executions/{live}/live/", htmx=True),
            Page("unresolved", 8, "/unresolved/"),
            Page("admin changelist", 6, "/admin/batchboard/jobexecution/"),
            # Automation beside the browsers: the API's reads of the same
            # lists, in a browser session as a script's token would read them.
            Page("api executions first", 4, reverse("batchboard:api-executions")),
            Page(
                "api executions deep",
                2,
                f"{reverse('batchboard:api-executions')}?cursor={deep}",
            ),
            Page(
                "api executions filtered",
                3,
                f"{reverse('batchboard:api-executions')}?status=FAILED",
            ),
            Page(
                "api unresolved",
                3,
                f"{reverse('batchboard:api-unresolved')}?unresolved_age=15m",
            ),
            Page(
                "api execution", 3, reverse("batchboard:api-execution", args=[detail])
            ),
        ]

    # -- the run -------------------------------------------------------------

    def _session_cookie(self, secret: str) -> str:
        """Return the cookie of a signed-in staff reader (every batchboard permission)."""
        user, _created = User.objects.get_or_create(
            username=LOAD_USER, defaults={"is_staff": True}
        )
        user.is_staff = True
        user.set_unusable_password()
        user.save()
        user.user_permissions.set(
            Permission.objects.filter(content_type__app_label="batchboard")
        )
        # The server signs and checks sessions with its own key.
        with override_settings(SECRET_KEY=secret):
            session = SessionStore()
            session[SESSION_KEY] = str(user.pk)
            session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
            session[HASH_SESSION_KEY] = user.get_session_auth_hash()
            session.save()
        return f"{settings.SESSION_COOKIE_NAME}={session.session_key}"

    def _server_env(
        self, scratch: Path, port: int, workers: int, threads: int, secret: str
    ) -> dict[str, str]:
        # The served site is production's, not the demo's.
        env = {k: v for k, v in os.environ.items() if k != "BATCHBOARD_DEMO"}
        env.update(
            DJANGO_SETTINGS_MODULE="batchboard.site.settings",
            DJANGO_DEBUG="0",
            SECRET_KEY=secret,
            ALLOWED_HOSTS="127.0.0.1",
            SECURE_SSL_REDIRECT="0",
            STATIC_ROOT=str(scratch / "static"),
            BIND=f"127.0.0.1:{port}",
            WEB_CONCURRENCY=str(workers),
            GUNICORN_THREADS=str(threads),
            GUNICORN_MAX_REQUESTS="0",
        )
        return env

    def _run(
        self, scratch: Path, wrk: str, mix: list[Page], options: dict[str, Any]
    ) -> None:
        primary = self.postgresql_alias()
        require_demo("batchboard_loadtest", primary)
        readers = conf.read_aliases()
        port = _free_port()
        secret = secrets.token_urlsafe(50)
        env = self._server_env(
            scratch, port, options["workers"], options["threads"], secret
        )
        manage = [sys.executable, "-m", "django"]
        subprocess.run(
            [*manage, "collectstatic", "--no-input", "--verbosity", "0"],
            env=env,
            check=True,
        )
        cookie = self._session_cookie(secret)
        # This process's own reads of the history end here: its sessions
        # close, so the servers count them before the run's first sample.
        connections.close_all()
        gunicorn = str(Path(sys.executable).with_name("gunicorn"))
        started: list[subprocess.Popen[bytes]] = []
        try:
            server = subprocess.Popen(
                [gunicorn, "-c", str(Path(settings.BASE_DIR) / "gunicorn.conf.py")],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            started.append(server)
            self._wait_ready(f"http://127.0.0.1:{port}/readyz", server)
            before = {alias: table_scans(alias) for alias in (primary, *readers)}
            if not options["no_simulator"]:
                started.append(
                    subprocess.Popen(
                        [
                            *manage,
                            "batchboard_simulate",
                            "--max-seconds",
                            str(options["seconds"] + 30),
                        ],
                        env={**env, "BATCHBOARD_DEMO": "1"},
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                )
            mix_file = scratch / "mix.tsv"
            mix_file.write_text("\n".join(page.line() for page in mix) + "\n")
            samples = scratch / "samples.tsv"
            threads = options["concurrency"]
            self.stdout.write(
                f"wrk: {threads} connections, at most {options['requests']:,} requests "
                f"or {options['seconds']} s, gunicorn {options['workers']} workers "
                f"x {options['threads']} threads, "
                f"simulator {'off' if options['no_simulator'] else 'on'}."
            )
            with LagSampler(readers) as sampler:
                ran = self._wrk(wrk, port, mix_file, samples, cookie, options)
            told = [
                line.strip()
                for line in ran.stdout.splitlines()
                if "requests in" in line or "Non-2xx" in line or "Socket errors" in line
            ]
            self.stdout.write("wrk says: " + "; ".join(told))
            with samples.open() as lines:
                report = read_samples(lines)
        finally:
            for process in reversed(started):
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            for process in reversed(started):
                try:
                    process.wait(timeout=40)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        self._print(report)
        if readers:
            after = self._settled_scans(before)
            self._print_replication(read_share(primary, before, after), sampler.lags)

    def _wrk(
        self,
        wrk: str,
        port: int,
        mix_file: Path,
        samples: Path,
        cookie: str,
        options: dict[str, Any],
    ) -> subprocess.CompletedProcess[str]:
        """Run wrk with the page mix; return what it printed."""
        threads = options["concurrency"]
        return subprocess.run(
            [
                wrk,
                "-t",
                str(threads),
                "-c",
                str(threads),
                "-d",
                f"{options['seconds']}s",
                "--timeout",
                "10s",
                "-s",
                str(MIX_SCRIPT),
                f"http://127.0.0.1:{port}",
            ],
            env={
                **os.environ,
                "BB_MIX_FILE": str(mix_file),
                "BB_SAMPLES_FILE": str(samples),
                "BB_COOKIE": cookie,
                "BB_THREADS": str(threads),
                "BB_MAX_REQUESTS": str(options["requests"]),
            },
            check=True,
            capture_output=True,
            text=True,
            timeout=options["seconds"] + 60,
        )

    def _settled_scans(self, before: dict[str, int | None]) -> dict[str, int | None]:
        """
        Return each server's ``ob_*`` scans once the counts stop moving.

        A session's counts reach the server's statistics when it ends, which
        follows the site's stop by a moment; so read them until two reads
        half a second apart agree, for at most :data:`SETTLE_SECONDS`.
        """
        deadline = time.monotonic() + SETTLE_SECONDS
        last = {alias: table_scans(alias) for alias in before}
        while time.monotonic() < deadline:
            time.sleep(LAG_SAMPLE_SECONDS)
            now = {alias: table_scans(alias) for alias in before}
            if now == last:
                break
            last = now
        return last

    def _print_replication(
        self, share: ReadShare | None, lags: dict[str, list[float]]
    ) -> None:
        write = self.stdout.write
        if share is None:
            write("\nMetadata reads: a server did not answer its scan count.")
        else:
            write(
                f"\nMetadata reads: {share.total:,} scans of the ob_* tables "
                "(sequential and index scans started, pg_stat_user_tables, from "
                "just before the run until the site stopped)."
            )
            for alias, scans in share.scans.items():
                role = "primary" if alias == share.primary else "replica"
                write(f"  {role} {alias}: {scans:,} ({share.percent(alias):.2f} %)")
            write(
                "  With nobody writing, each of the primary's is a page's read "
                "(the admin's pages read the primary by design); with the "
                "simulator on, its writes' own scans count there too."
            )
        write(
            f"Replica lag ({LAG_SAMPLE_SECONDS:g} s samples of "
            "batchboard.replicas.LAG_SQL while wrk ran):"
        )
        for alias, sampled in lags.items():
            write(f"  {alias}: {describe_lag(sampled)}")

    def _wait_ready(self, url: str, server: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise CommandError(
                    f"gunicorn exited: {server.stderr.read().decode()[-2000:] if server.stderr else ''}"
                )
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        raise CommandError("gunicorn did not become ready within 60 s.")

    def _print(self, report: Report) -> None:
        header = f"{'page':<22} {'requests':>9} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'errors':>7}"
        statuses = ", ".join(
            f"{status}: {count:,}" for status, count in sorted(report.statuses.items())
        )
        self.stdout.write(
            f"\n{report.requests:,} requests in {report.seconds:.1f} s "
            f"(statuses {statuses}; socket errors {report.socket_errors}).\n"
        )
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        for name, count, rate, p50, p95, p99, errors in report.rows():
            self.stdout.write(
                f"{name:<22} {count:>9,} {rate:>8.1f} {p50:>8.1f} {p95:>8.1f} {p99:>8.1f} {errors:>7}"
            )
