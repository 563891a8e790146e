"""Migration 0001 runs the frozen version 4 DDL, byte for byte, forever."""

from __future__ import annotations

import hashlib
import importlib
from io import StringIO
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command

from batchboard import schema
from batchboard.schema import v4
from batchboard.schema.operations import CreateMetadataSchema

DATA = Path(__file__).resolve().parent.parent / "data"

#: What migration 0001 runs, per backend and direction, as the golden file
#: that records it. These files were written once from schema version 4 and
#: are never regenerated: databases already migrated ran exactly this.
GOLDEN = {
    ("postgresql", False): "schema_v4_postgresql.sql",
    ("postgresql", True): "schema_v4_postgresql_drop.sql",
    ("sqlite", False): "schema_v4_sqlite.sql",
    ("sqlite", True): "schema_v4_sqlite_drop.sql",
}
#: The golden files' own digests, so that rewriting one fails as well.
DIGESTS = {
    "schema_v4_postgresql.sql": (
        "c43e85e760624a9e4871133c778ba5d0ca33015ca42ed6b3bf7b1f96653ea381"
    ),
    "schema_v4_postgresql_drop.sql": (
        "37ecadadbd8b6330de662a5f582f4f40693d8698a6d108915d71aa0ea6da1efc"
    ),
    "schema_v4_sqlite.sql": (
        "e1f7e30d13a6feb2c3db0f5ab92ee6daa15617186edb3768f4a21698ea1df81f"
    ),
    "schema_v4_sqlite_drop.sql": (
        "9a59f327d57e0209de91e108ea8375b5bc058719ea54a13760bb55d5e4cac219"
    ),
}
CHANGED = (
    "The SQL that migration 0001 runs has changed ({name}: {where}). "
    "Databases migrated already ran the old statements and never run 0001 "
    "again: restore batchboard/schema/v4.py and describe the change as a new "
    "schema version (batchboard/schema/v5.py) with a new migration instead."
)


def _initial_operation() -> CreateMetadataSchema:
    migration = importlib.import_module("batchboard.migrations.0001_initial")
    (operation,) = [
        operation
        for operation in migration.Migration.operations
        if isinstance(operation, CreateMetadataSchema)
    ]
    return operation


def _render(statements: list[str]) -> str:
    # No statement holds a semicolon, so the file splits back unambiguously.
    assert not any(";" in statement for statement in statements)
    return ";\n\n".join(statements) + ";\n"


def test_initial_migration_names_version_4() -> None:
    """0001 creates version 4 by number, never "the current schema"."""
    operation = _initial_operation()
    assert operation.version == 4
    assert operation.description is v4
    assert operation.deconstruct() == ("CreateMetadataSchema", [], {"version": 4})
    assert operation.describe() == (
        "Create the oxide-batch metadata schema version 4 (managed mode only)"
    )


@pytest.mark.parametrize(("vendor", "drop"), sorted(GOLDEN))
def test_initial_migration_runs_the_golden_statements(vendor: str, drop: bool) -> None:
    """Each statement 0001 runs equals the recorded one, byte for byte."""
    name = GOLDEN[vendor, drop]
    recorded = (DATA / name).read_text()
    statements = _initial_operation().statements(vendor, drop=drop)
    for index, (was, now) in enumerate(
        zip(recorded.removesuffix(";\n").split(";\n\n"), statements, strict=False)
    ):
        assert now == was, CHANGED.format(name=name, where=f"statement {index}")
    assert _render(statements) == recorded, CHANGED.format(
        name=name, where="the number of statements"
    )


@pytest.mark.parametrize("name", sorted(DIGESTS))
def test_golden_files_are_never_rewritten(name: str) -> None:
    """The golden files themselves are pinned: they record applied history."""
    digest = hashlib.sha256((DATA / name).read_bytes()).hexdigest()
    assert digest == DIGESTS[name], (
        f"tests/data/{name} changed. It records what migration 0001 ran on "
        "databases already migrated; it is never regenerated."
    )


def test_frozen_versions() -> None:
    """A migration can name version 4 only; other numbers fail on load."""
    assert schema.frozen(4) is v4
    with pytest.raises(ValueError, match="no frozen description of oxide-batch"):
        schema.frozen(5)
    with pytest.raises(ValueError, match="known versions: 4"):
        CreateMetadataSchema(version=3)


def test_other_backends_are_refused() -> None:
    """Only PostgreSQL and SQLite have statements; the message names the vendor."""
    with pytest.raises(ImproperlyConfigured, match="not mysql"):
        CreateMetadataSchema(version=4).statements("mysql")


@pytest.mark.django_db
def test_models_need_no_new_migration() -> None:
    """The migrations describe the models: makemigrations has nothing to add."""
    out = StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()
