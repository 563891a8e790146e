"""
Gunicorn settings of batchboard's standalone site (``gunicorn -c gunicorn.conf.py``).

Every value comes from the environment; docs/production.md lists them.
SIGTERM stops accepting connections and lets requests in flight finish for
up to ``GRACEFUL_TIMEOUT`` seconds before the workers exit.
"""

from __future__ import annotations

import multiprocessing
import os

from batchboard.site import proxies

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
