"""Operator mistakes give one sentence naming the setting, never a traceback."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User
from django.db import OperationalError, connections
from django.test import Client, RequestFactory, override_settings
from django.urls import reverse
from django.utils import translation

from batchboard import conf, schema
from batchboard.site.middleware import DatabaseUnavailableMiddleware, unavailable_page
from tests.site.commands import CHECKOUT, manage

pytestmark = pytest.mark.slow

UNREACHABLE = "postgresql://postgres@127.0.0.1:1/nothing"
PRODUCTION = {
    "DJANGO_DEBUG": "0",
    "SECRET_KEY": "k2Vh0JpZ8wq3N7xYcR5tL1mB9sD4fG6hJ0kQ2wE8rT3yU7iO5pA1sD9fG4hJ6kL",
    "ALLOWED_HOSTS": "batch.example.org",
    "BATCHBOARD_METRICS_TOKEN": "m8Qz3Lr7Vx1Nc5Tb9Hd2Kf6Wj4Ps0Ya8",
}


def _sentence(stderr: str) -> str:
    """Return stderr as one line, failing if there is more than one."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.mark.parametrize(
    ("variable", "url", "words"),
    [
        ("DATABASE_URL", "mysql://db/batch", "uses the scheme 'mysql'"),
        ("BATCHBOARD_DATABASE_URL", "mongodb://db/batch", "uses the scheme 'mongodb'"),
        ("DATABASE_URL", "postgresql://db:port/batch", "is not a valid database URL"),
        ("BATCHBOARD_DATABASE_URL", "postgresql://db:5432/", "names no database"),
    ],
)
def test_wrong_database_url(
    variable: str, url: str, words: str, tmp_path: Path
) -> None:
    """A malformed URL stops manage.py with a sentence naming the variable."""
    env = {"DJANGO_DEBUG": "1", "DATABASE_URL": f"sqlite:///{tmp_path}/d.sqlite3"}
    result = manage("check", env={**env, variable: url})
    assert result.returncode == 2
    sentence = _sentence(result.stderr)
    assert sentence.startswith(f"batchboard: {variable} ")
    assert words in sentence
    assert "sqlite:///" in sentence or "postgresql://" in sentence


def test_unreachable_database_from_a_command(tmp_path: Path) -> None:
    """A command that needs the database names DATABASE_URL and the fix."""
    result = manage(
        "showmigrations", env={"DJANGO_DEBUG": "1", "DATABASE_URL": UNREACHABLE}
    )
    assert result.returncode == 1
    sentence = _sentence(result.stderr)
    assert "Cannot connect to the database named by DATABASE_URL" in sentence
    assert "Check that the server is running" in sentence


def test_unreachable_metadata_database_from_a_command(tmp_path: Path) -> None:
    """With the metadata apart, the sentence names BATCHBOARD_DATABASE_URL."""
    env = {
        "DJANGO_DEBUG": "1",
        "DATABASE_URL": f"sqlite:///{tmp_path}/d.sqlite3",
        "BATCHBOARD_DATABASE_URL": UNREACHABLE,
    }
    script = "from batchboard.models import JobExecution; JobExecution.objects.first()"
    result = manage("shell", "-c", script, env=env)
    assert result.returncode == 1
    assert "named by BATCHBOARD_DATABASE_URL" in _sentence(result.stderr)


def test_unreachable_database_from_check(tmp_path: Path) -> None:
    """``check --database`` reports E010 with the variable in its hint."""
    env = {"DJANGO_DEBUG": "1", "DATABASE_URL": UNREACHABLE}
    result = manage("check", "--database", "default", env=env)
    assert result.returncode == 1
    assert "batchboard.E010" in result.stderr
    assert "DATABASE_URL" in result.stderr
    assert "Traceback" not in result.output


@pytest.fixture(scope="module")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return a standalone SQLite database migrated in managed mode."""
    path = tmp_path_factory.mktemp("site") / "db.sqlite3"
    env = {"DJANGO_DEBUG": "1", "DATABASE_URL": f"sqlite:///{path}"}
    result = manage("migrate", "--no-input", env=env)
    assert result.returncode == 0, result.output
    return path


def test_managed_sqlite_site_passes_its_checks(migrated_sqlite: Path) -> None:
    """The migrated embedded database carries schema version 4."""
    env = {"DJANGO_DEBUG": "1", "DATABASE_URL": f"sqlite:///{migrated_sqlite}"}
    result = manage("check", "--database", "default", env=env)
    assert result.returncode == 0, result.output


def test_schema_of_the_wrong_version(migrated_sqlite: Path, tmp_path: Path) -> None:
    """Version 3 in the database: E013 says how to upgrade it."""
    copy = tmp_path / "v3.sqlite3"
    copy.write_bytes(migrated_sqlite.read_bytes())
    with sqlite3.connect(copy) as database:
        database.execute("UPDATE ob_schema_version SET version = 3")
    env = {"DJANGO_DEBUG": "1", "DATABASE_URL": f"sqlite:///{copy}"}
    result = manage("check", "--database", "default", env=env)
    assert result.returncode == 1
    assert "batchboard.E013" in result.stderr
    assert "version 3" in result.stderr
    assert "Traceback" not in result.output
    migrate = manage("migrate", "--no-input", env=env)
    assert migrate.returncode == 1
    assert "batchboard.E013" in migrate.stderr


def test_attached_to_a_database_without_the_schema(tmp_path: Path) -> None:
    """Attached to an empty SQLite file: E011, and the file stays empty."""
    path = tmp_path / "empty.sqlite3"
    sqlite3.connect(path).close()
    env = {
        "DJANGO_DEBUG": "1",
        "BATCHBOARD_SCHEMA": "attached",
        "DATABASE_URL": f"sqlite:///{tmp_path}/site.sqlite3",
        "BATCHBOARD_DATABASE_URL": f"sqlite:///{path}",
    }
    result = manage("check", "--database", "batchboard", env=env)
    assert result.returncode == 1
    assert "batchboard.E011" in result.stderr
    with sqlite3.connect(path) as database:
        assert database.execute("SELECT count(*) FROM sqlite_master").fetchone() == (0,)


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"DJANGO_DEBUG": "0"}, "SECRET_KEY is not set."),
        (
            {"DJANGO_DEBUG": "0", "SECRET_KEY": PRODUCTION["SECRET_KEY"]},
            "ALLOWED_HOSTS is not set.",
        ),
        ({"DJANGO_DEBUG": "maybe"}, "DJANGO_DEBUG must be 1 or 0"),
        ({"DJANGO_DEBUG": "1", "BATCHBOARD_SCHEMA": "borrowed"}, "BATCHBOARD_SCHEMA"),
    ],
)
def test_unsafe_or_invalid_site_settings(env: dict[str, str], words: str) -> None:
    """The site refuses to start and says which variable to set."""
    result = manage("check", env=env)
    assert result.returncode == 2
    assert words in _sentence(result.stderr)


def test_debug_defaults_off_outside_the_demo() -> None:
    """Without any variable the site runs with DEBUG off, so needs a key."""
    result = manage("check", env={})
    assert result.returncode == 2
    assert "SECRET_KEY is not set." in _sentence(result.stderr)


def test_deploy_check_passes_with_production_variables(tmp_path: Path) -> None:
    """The documented production variables satisfy ``check --deploy``."""
    env = {**PRODUCTION, "DATABASE_URL": f"sqlite:///{tmp_path}/d.sqlite3"}
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=env)
    assert result.returncode == 0, result.output
    assert "no issues" in result.stdout


@pytest.mark.django_db
def test_database_error_in_a_page_is_a_503(db: None) -> None:
    """A view that loses its table answers 503 with no database detail."""
    user = User.objects.create_user("viewer", password="x", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="batchboard")
    )
    client = Client()
    client.force_login(user)
    connection = connections[conf.database_alias()]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("ALTER TABLE oxide_batch.ob_job_execution RENAME TO gone")
        else:
            cursor.execute('ALTER TABLE "ob_job_execution" RENAME TO "gone"')
    from django.conf import settings

    middleware = [
        *settings.MIDDLEWARE,
        "batchboard.site.middleware.DatabaseUnavailableMiddleware",
    ]
    with override_settings(MIDDLEWARE=middleware):
        response = client.get(reverse("admin:batchboard_jobexecution_changelist"))
    assert response.status_code == 503
    body = response.content.decode()
    assert "cannot read its database" in body
    assert "ob_job_execution" not in body
    assert "SELECT" not in body


def test_middleware_ignores_other_errors() -> None:
    """Errors that are not database errors keep Django's own handling."""
    middleware = DatabaseUnavailableMiddleware(lambda request: None)  # type: ignore[arg-type,return-value]
    request = RequestFactory().get("/")
    assert middleware.process_exception(request, ValueError("x")) is None


@pytest.mark.django_db
def test_middleware_answers_connection_failures() -> None:
    """A connection failure becomes a 503 with a retry hint."""
    middleware = DatabaseUnavailableMiddleware(lambda request: None)  # type: ignore[arg-type,return-value]
    request = RequestFactory().get("/")
    response = middleware.process_exception(request, OperationalError("refused"))
    assert response is not None
    assert response.status_code == 503
    assert response["Retry-After"] == "30"


def test_unavailable_page_follows_the_active_language() -> None:
    """The 503 page is translated: its language is the request's."""
    with translation.override("fr"):
        page = unavailable_page()
    assert page.startswith('<!doctype html><html lang="fr">')
    assert "<code>manage.py check --database batchboard</code>" in page
    assert "<title>batchboard: database unavailable</title>" in page


def test_managed_migrate_over_an_existing_schema_says_attach(tmp_path: Path) -> None:
    """Managed mode will not create the schema twice; attached then works."""
    path = tmp_path / "oxide.sqlite3"
    with sqlite3.connect(path) as database:
        for statement in schema.sqlite_ddl():
            database.execute(statement)
    env = {"DJANGO_DEBUG": "1", "DATABASE_URL": f"sqlite:///{path}"}
    result = manage("migrate", "--no-input", env=env)
    assert result.returncode == 2
    sentence = _sentence(result.stderr)
    assert "already has the oxide-batch schema" in sentence
    assert "BATCHBOARD_SCHEMA=attached" in sentence
    attached = manage(
        "migrate", "--no-input", env={**env, "BATCHBOARD_SCHEMA": "attached"}
    )
    assert attached.returncode == 0, attached.output
    with sqlite3.connect(path) as database:
        (version,) = database.execute(
            "SELECT version FROM ob_schema_version"
        ).fetchone()
    assert version == 4


def test_a_missing_sqlite_directory_speaks_of_files(tmp_path: Path) -> None:
    """SQLite has no host or port: the sentence names the file and its folder."""
    missing = tmp_path / "no-such-dir" / "d.sqlite3"
    env = {"DJANGO_DEBUG": "1", "DATABASE_URL": f"sqlite:///{missing}"}
    result = manage("showmigrations", env=env)
    assert result.returncode == 1
    sentence = _sentence(result.stderr)
    assert "Cannot open the SQLite file named by DATABASE_URL" in sentence
    assert str(missing) in sentence
    assert "directory exists" in sentence
    assert "host" not in sentence and "port" not in sentence


@pytest.mark.django_db
def test_the_unreachable_check_speaks_of_files_on_sqlite() -> None:
    """E010's hint asks about a server only where there is one."""
    from unittest import mock

    from batchboard import checks

    failure = OperationalError("unable to open database file")
    with mock.patch.object(checks, "_schema_version", side_effect=failure):
        (message,) = checks.schema_messages(conf.database_alias())
    assert message.id == "batchboard.E010"
    vendor = connections[conf.database_alias()].vendor
    assert ("SQLite file's directory" in str(message.hint)) is (vendor == "sqlite")
    assert ("server running" in str(message.hint)) is (vendor != "sqlite")


def test_manage_without_django_says_how_to_make_the_venv(tmp_path: Path) -> None:
    """A bare interpreter (no Django) gets one sentence, not a traceback."""
    completed = subprocess.run(
        [sys.executable, "-S", "-I", str(CHECKOUT / "manage.py"), "check"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 2
    assert "Traceback" not in completed.stderr
    assert "Django is not installed for this Python; run 'make venv'" in (
        completed.stderr
    )
