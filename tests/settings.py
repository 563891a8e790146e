"""Settings for batchboard's test suite.

``DATABASE_URL`` selects the database: unset for SQLite (in memory), or a
``postgresql://`` URL; the suite then creates its own ``test_*`` database.
"""

from __future__ import annotations

import os
from pathlib import Path

import django

from batchboard.schema import SCHEMA_NAME
from batchboard.site.database import parse_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
SECRET_KEY = "tests-only-secret-key"
DEBUG = False
ALLOWED_HOSTS = ["testserver", "127.0.0.1", "localhost"]

_url = os.environ.get("DATABASE_URL", "sqlite:///:memory:")
if _url == "sqlite:///:memory:":
    DATABASES = {
        "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}
    }
else:
    DATABASES = {
        "default": parse_database_url(
            _url,
            setting="DATABASE_URL",
            base_dir=BASE_DIR,
            search_path=f"public,{SCHEMA_NAME}",
        )
    }
DATABASE_ROUTERS = ["batchboard.routers.BatchboardRouter"]
if django.VERSION >= (6, 1):
    # The test environment turns each mailer into the in-memory outbox.
    MAILERS = {"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend"}}

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "batchboard",
    "batchboard.demo",
    "batchboard.site",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "batchboard.middleware.ReadYourWritesMiddleware",
]
ROOT_URLCONF = "batchboard.site.urls"
CSRF_FAILURE_VIEW = "batchboard.site.urls.csrf_failure"
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
USE_TZ = True
TIME_ZONE = "UTC"
STATIC_URL = "static/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
BATCHBOARD: dict[str, object] = {}
# The standalone site's sign-in page (batchboard.site.urls). A path, not the
# URL name the site's settings use: tests that swap in a URLconf without the
# page still redirect anonymous users instead of failing to reverse a name.
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
