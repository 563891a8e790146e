"""
Settings of batchboard's standalone site, read from the environment.

See the README's configuration table. With DEBUG off (the default) the site
refuses to start without SECRET_KEY and turns on Django's HTTPS protections.
"""

from __future__ import annotations

import os
from pathlib import Path

from batchboard.site.database import (
    SiteConfigurationError,
    action_databases,
    databases_from_environment,
    read_databases,
)


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
    "django.contrib.staticfiles",
    "django_htmx",
    "batchboard",
    # The demo app: seed, simulator, demo logins and benchmarks.
    "batchboard.demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
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

ROOT_URLCONF = "batchboard.site.urls"
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
}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
STATICFILES_DIRS = [BASE_DIR / "static"] if (BASE_DIR / "static").is_dir() else []

# The site's own sign-in page: the admin's login admits staff only.
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

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

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
