"""
Gunicorn settings of batchboard's standalone site (``gunicorn -c gunicorn.conf.py``).

Every value comes from the environment; docs/production.md lists them.
SIGTERM stops accepting connections and lets requests in flight finish for
up to ``GRACEFUL_TIMEOUT`` seconds before the workers exit.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

# Request metrics are counted per worker process: prometheus-client keeps
# each worker's values in files of this directory and /metrics adds them
# up (batchboard.metrics.requests). It must be set before prometheus-client
# is first imported, here in the master, so every worker inherits it.
_METRICS_DIR = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
_OWN_METRICS_DIR = not _METRICS_DIR
if _OWN_METRICS_DIR:
    _METRICS_DIR = tempfile.mkdtemp(
        prefix="batchboard-metrics-",
        dir="/dev/shm" if os.path.isdir("/dev/shm") else None,
    )
os.environ["PROMETHEUS_MULTIPROC_DIR"] = _METRICS_DIR
Path(_METRICS_DIR).mkdir(parents=True, exist_ok=True)

from prometheus_client import multiprocess  # noqa: E402

from batchboard.site import proxies  # noqa: E402

wsgi_app = "batchboard.site.wsgi:application"
bind = os.environ.get("BIND", "127.0.0.1:8000")
# Django is synchronous: a few processes per core serve many browsers.
workers = int(os.environ.get("WEB_CONCURRENCY", 2 * multiprocessing.cpu_count() + 1))
# Threads per worker (gthread workers when above 1): a thread waits on the
# database while another renders, and browsers keep their connection open.
threads = int(os.environ.get("GUNICORN_THREADS", "1"))
# Longer than the 30 s statement timeout, so a slow read ends as the 503
# page rather than a killed worker.
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
graceful_timeout = int(os.environ.get("GRACEFUL_TIMEOUT", "30"))
keepalive = 5
# batchboard logs one line per request itself (batchboard.request).
accesslog = None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")
# Heartbeat files in memory, not on a disk that may stall.
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None
# Restart workers now and then, so a slow leak cannot grow without bound.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "5000"))
max_requests_jitter = 500
# Gunicorn's control socket (gunicornc) is off unless GUNICORN_CONTROL_SOCKET
# names where to put it: by default gunicorn would create it under
# $XDG_RUNTIME_DIR or ~/.gunicorn/, which fails on a read-only home (a
# container's). Nothing in batchboard's operation needs it.
_control_socket = os.environ.get("GUNICORN_CONTROL_SOCKET", "")
if _control_socket:
    control_socket = _control_socket
else:
    control_socket_disable = True
# Proxies trusted for X-Forwarded-Proto (see SECURE_PROXY_SSL_HEADER); the
# site trusts the same ones for X-Forwarded-For (batchboard.site.proxies).
forwarded_allow_ips = proxies.allowed(os.environ)


def on_starting(server: Any) -> None:
    """Start counting from zero: drop the files of a previous run."""
    for stale in Path(_METRICS_DIR).glob("*.db"):
        stale.unlink(missing_ok=True)


def child_exit(server: Any, worker: Any) -> None:
    """Let prometheus-client drop the live values of a worker that exited."""
    multiprocess.mark_process_dead(worker.pid, _METRICS_DIR)


def on_exit(server: Any) -> None:
    """Remove the metrics directory this configuration created."""
    if _OWN_METRICS_DIR:
        shutil.rmtree(_METRICS_DIR, ignore_errors=True)
