"""
Settings of batchboard's standalone site, read from the environment.

See the README's configuration table. With DEBUG off (the default) the site
refuses to start without SECRET_KEY and turns on Django's HTTPS protections.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import django

from batchboard.site import proxies
from batchboard.site.database import (
    SiteConfigurationError,
    action_databases,
    databases_from_environment,
    keep_connections,
    read_databases,
)
from batchboard.site.security import CONTENT_SECURITY_POLICY, builtin_csp
from batchboard.vocabulary import parse_whole_number


def _base_dir() -> Path:
    """Return the checkout holding manage.py, or the working directory."""
    if os.environ.get("BATCHBOARD_BASE_DIR"):
        return Path(os.environ["BATCHBOARD_BASE_DIR"]).resolve()
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "manage.py").is_file():
        return checkout
    return Path.cwd().resolve()


BASE_DIR = _base_dir()


def _flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise SiteConfigurationError(f"{name} must be 1 or 0, not {value!r}.")


DEMO = _flag("BATCHBOARD_DEMO", False)
DEBUG = _flag("DJANGO_DEBUG", DEMO)

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise SiteConfigurationError(
            "SECRET_KEY is not set. With DEBUG off batchboard needs a secret key "
            "in the environment, e.g. SECRET_KEY=$(python3 -c 'import secrets; "
            "print(secrets.token_urlsafe(50))'). For a local trial set "
            "DJANGO_DEBUG=1 instead."
        )
    SECRET_KEY = "insecure-local-development-key-never-use-in-production"

ALLOWED_HOSTS = [
    host.strip()
    for host in os.environ.get(
        "ALLOWED_HOSTS", "127.0.0.1,localhost" if DEBUG else ""
    ).split(",")
    if host.strip()
]
if not DEBUG and not ALLOWED_HOSTS:
    raise SiteConfigurationError(
        "ALLOWED_HOSTS is not set. With DEBUG off list the host names that serve "
        "batchboard, comma separated, e.g. ALLOWED_HOSTS=batch.example.org."
    )
CSRF_TRUSTED_ORIGINS = [
    origin.strip()
    for origin in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",")
    if origin.strip()
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # Before staticfiles: runserver serves static files as WhiteNoise does.
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "batchboard",
    # The demo app: seed, simulator, demo logins and benchmarks.
    "batchboard.demo",
    # The site's own table: the sign-in throttle's counts.
    "batchboard.site",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files are answered here, before sessions and the rest.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Counts every response below it by view name and status (/metrics).
    "batchboard.metrics.requests.RequestMetricsMiddleware",
    "batchboard.site.middleware.RequestLogMiddleware",
    "batchboard.site.middleware.SecurityHeadersMiddleware",
    *(
        ["django.middleware.csp.ContentSecurityPolicyMiddleware"]
        if builtin_csp()
        else []
    ),
    "batchboard.site.middleware.ControlCharactersMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "batchboard.site.middleware.DatabaseUnavailableMiddleware",
    # Last: it runs batchboard's pages inside their read transaction.
    "batchboard.middleware.ReadYourWritesMiddleware",
]

# One policy (batchboard.site.security); Django 6 sends it itself.
SECURE_CSP = CONTENT_SECURITY_POLICY
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
DEFAULT_EXCEPTION_REPORTER_FILTER = (
    "batchboard.site.security.SiteExceptionReporterFilter"
)

# Django's ModelBackend, reading a signed-in user's permissions with the
# user in one statement (batchboard.site.auth).
AUTHENTICATION_BACKENDS = ["batchboard.site.auth.SiteBackend"]

ROOT_URLCONF = "batchboard.site.urls"
# A refused form gets batchboard's 403 page, like every other error.
CSRF_FAILURE_VIEW = "batchboard.site.urls.csrf_failure"
WSGI_APPLICATION = "batchboard.site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES, _metadata_alias = databases_from_environment(dict(os.environ), BASE_DIR)
# Streaming replicas for the explorer's reads, and the least-privilege
# logins of the actions (see docs/scaling-out.md).
_read_databases = read_databases(dict(os.environ), BASE_DIR, _metadata_alias)
_action_databases, _action_roles = action_databases(
    dict(os.environ), BASE_DIR, _metadata_alias
)
DATABASES.update(_read_databases)
DATABASES.update(_action_databases)
keep_connections(DATABASES, dict(os.environ))
DATABASE_ROUTERS = ["batchboard.routers.BatchboardRouter"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

_schema_mode = os.environ.get("BATCHBOARD_SCHEMA", "managed").strip().lower()
if _schema_mode not in ("managed", "attached"):
    raise SiteConfigurationError(
        f"BATCHBOARD_SCHEMA is {_schema_mode!r}; use 'managed' (batchboard creates "
        "the schema) or 'attached' (an existing oxide-batch database)."
    )
BATCHBOARD = {
    "DATABASE": _metadata_alias,
    "SCHEMA": _schema_mode,
    "DEMO": DEMO,
    "READ_DATABASES": list(_read_databases),
    "ACTION_DATABASES": _action_roles,
    # /metrics: who may scrape it, and the jobs it names (comma separated).
    "METRICS_TOKEN": os.environ.get("BATCHBOARD_METRICS_TOKEN", ""),
    "METRICS_ALLOWED_NETWORKS": [
        network.strip()
        for network in os.environ.get("BATCHBOARD_METRICS_ALLOWED_NETWORKS", "").split(
            ","
        )
        if network.strip()
    ],
    "METRICS_JOBS": [
        name.strip()
        for name in os.environ.get("BATCHBOARD_METRICS_JOBS", "").split(",")
        if name.strip()
    ],
}
# Where a failure's cause is looked up: a URL template, and (label, URL
# template) pairs as a JSON list; checks E030 and E031 validate both.
if os.environ.get("BATCHBOARD_FAILURE_LINK"):
    BATCHBOARD["FAILURE_LINK"] = os.environ["BATCHBOARD_FAILURE_LINK"]
if os.environ.get("BATCHBOARD_EXECUTION_LINKS"):
    try:
        BATCHBOARD["EXECUTION_LINKS"] = json.loads(
            os.environ["BATCHBOARD_EXECUTION_LINKS"]
        )
    except ValueError:
        raise SiteConfigurationError(
            "BATCHBOARD_EXECUTION_LINKS must be a JSON list of [label, URL "
            'template] pairs, e.g. [["Logs", "https://logs.example.org/'
            '?q={execution_id}"]].'
        ) from None

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
STATICFILES_DIRS = [BASE_DIR / "static"] if (BASE_DIR / "static").is_dir() else []
# With DEBUG off, WhiteNoise serves what collectstatic wrote: hashed names,
# gzip and brotli variants, cached for a year. With DEBUG on, runserver
# serves the sources as they are.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
WHITENOISE_MAX_AGE = 0 if DEBUG else 365 * 24 * 3600

# Proxies trusted to name the client (X-Forwarded-For) for the sign-in
# throttle: gunicorn's FORWARDED_ALLOW_IPS, which trusts them for the scheme.
FORWARDED_ALLOW_IPS = proxies.allowed(dict(os.environ))
try:
    proxies.trusted_networks(FORWARDED_ALLOW_IPS)
except ValueError:
    raise SiteConfigurationError(
        "FORWARDED_ALLOW_IPS must list addresses or networks, comma separated, "
        f"or '*'; not {FORWARDED_ALLOW_IPS!r}."
    ) from None

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"

# Alert links are absolute under this address (check E019 validates it).
if os.environ.get("BATCHBOARD_ALERTS_BASE_URL"):
    BATCHBOARD["ALERTS_BASE_URL"] = os.environ["BATCHBOARD_ALERTS_BASE_URL"]


def _port(name: str, default: int) -> int:
    value = os.environ.get(name) or str(default)
    port = parse_whole_number(value, 65535)
    if not port:
        raise SiteConfigurationError(f"{name} must be a port number, not {value!r}.")
    return port


# Email alert channels send through SMTP. Django 6.1 reads the server from
# MAILERS and refuses the EMAIL_* settings beside it; earlier versions read
# only those: one set of variables gives whichever this Django reads.
_SMTP_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
_smtp = {
    "host": os.environ.get("EMAIL_HOST", "localhost"),
    "port": _port("EMAIL_PORT", 25),
    "username": os.environ.get("EMAIL_HOST_USER", ""),
    "password": os.environ.get("EMAIL_HOST_PASSWORD", ""),
    "use_tls": _flag("EMAIL_USE_TLS", False),
    "use_ssl": _flag("EMAIL_USE_SSL", False),
}
if _smtp["use_tls"] and _smtp["use_ssl"]:
    raise SiteConfigurationError(
        "EMAIL_USE_TLS (STARTTLS, usually port 587) and EMAIL_USE_SSL (TLS from "
        "the start, usually port 465) exclude each other: set one of them."
    )
if django.VERSION >= (6, 1):
    MAILERS = {"default": {"BACKEND": _SMTP_BACKEND, "OPTIONS": _smtp}}
else:
    EMAIL_BACKEND = _SMTP_BACKEND
    EMAIL_HOST = _smtp["host"]
    EMAIL_PORT = _smtp["port"]
    EMAIL_HOST_USER = _smtp["username"]
    EMAIL_HOST_PASSWORD = _smtp["password"]
    EMAIL_USE_TLS = _smtp["use_tls"]
    EMAIL_USE_SSL = _smtp["use_ssl"]
if os.environ.get("DEFAULT_FROM_EMAIL"):
    DEFAULT_FROM_EMAIL = os.environ["DEFAULT_FROM_EMAIL"]

if not DEBUG:
    SECURE_SSL_REDIRECT = _flag("SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = _flag("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = _flag("SECURE_HSTS_PRELOAD", False)
    # Preloading commits the whole domain to HTTPS in browsers for months: the
    # domain owner's decision (SECURE_HSTS_PRELOAD=1), so not a default and
    # not worth a deployment warning while it is off.
    SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]
    if _flag("SECURE_PROXY_SSL_HEADER", False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    # Load balancers probe over plain HTTP.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]

# One line per request on standard output (batchboard.request, JSON:
# method, path, status, ms, user; never a query string or a value), and
# warnings and errors of everything else on standard error.
LOG_LEVEL = os.environ.get("LOG_LEVEL", "INFO").upper()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "quiet_polls": {"()": "batchboard.site.quiet.QuietPolls"},
        "one_line": {"()": "batchboard.site.quiet.OneLine"},
    },
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "line": {"format": "%(message)s"},
        "server": {"()": "django.utils.log.ServerFormatter", "format": "%(message)s"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain"},
        # A handler's filters see the records of child loggers too
        # (django.security.DisallowedHost...), a logger's would not.
        "refusals": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["one_line"],
        },
        "requests": {
            "class": "logging.StreamHandler",
            "formatter": "line",
            "stream": "ext://sys.stdout",
        },
        # runserver's request lines, without the polls of live pages.
        "server": {
            "class": "logging.StreamHandler",
            "formatter": "server",
            "filters": ["quiet_polls"],
        },
    },
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "batchboard.request": {
            "handlers": ["requests"],
            "level": LOG_LEVEL,
            "propagate": False,
        },
        "django.server": {
            "handlers": ["server"],
            "level": "INFO",
            "propagate": False,
        },
        # A refused request (a wrong Host header, a disallowed lookup) is
        # one line, without the submitted value or a traceback.
        "django.security": {
            "handlers": ["refusals"],
            "level": "WARNING",
            "propagate": False,
        },
        # Django's own request log repeats ours, with less care for values.
        "django.request": {
            "handlers": ["console"],
            "level": "ERROR",
            "propagate": False,
        },
    },
}
