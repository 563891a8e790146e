"""The models map schema version 4 column for column; the schema is the contract."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.apps import apps
from django.db import connections, models
from django.db.models.fields import NOT_PROVIDED

from batchboard import conf, schema
from batchboard.models import LABELS, SchemaVersion
from batchboard.routers import is_own_state
from batchboard.schema import v4

#: The Django field class of each schema type (``varchar(n)`` is a CharField
#: of ``max_length`` n, an identity column a BigAutoField).
FIELD_CLASSES: dict[str, type[models.Field[Any, Any]]] = {
    "boolean": models.BooleanField,
    "smallint": models.SmallIntegerField,
    "integer": models.IntegerField,
    "bigint": models.BigIntegerField,
    "jsonb": models.JSONField,
    "bytea": models.BinaryField,
    "timestamptz": models.DateTimeField,
}
VARCHAR = re.compile(r"varchar\((\d+)\)")
#: Defaults written as expressions (a JSON document, a decoded digest) stay
#: the database's: the write side always sets those columns itself.
EXPRESSION = object()


def _models() -> dict[str, type[models.Model]]:
    return {
        model._meta.db_table: model
        for model in apps.get_app_config("batchboard").get_models()
        # batchboard's own state (batchboard.state) is not oxide-batch's.
        if not is_own_state(model)
    }


def _fields(model: type[models.Model]) -> dict[str, models.Field[Any, Any]]:
    return {
        field.column: field
        for field in model._meta.concrete_fields
        if field.column is not None
    }


def _column(model: type[models.Model], name: str) -> str | None:
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    return field.column


def _expected_class(column: v4.Column) -> type[models.Field[Any, Any]]:
    if column.identity:
        return models.BigAutoField
    if VARCHAR.fullmatch(column.pg_type):
        return models.CharField
    return FIELD_CLASSES[column.pg_type]


def _stored_class(field: models.Field[Any, Any]) -> type[models.Field[Any, Any]]:
    """Return the class of what the column stores (a key, for a foreign key)."""
    if isinstance(field, models.ForeignKey):
        target = field.target_field
        assert isinstance(target, models.BigAutoField), field
        return models.BigIntegerField
    return type(field)


def _expected_default(column: v4.Column) -> object:
    if column.default is None:
        return NOT_PROVIDED
    literal = column.default.sqlite
    if column.pg_type == "boolean":
        return literal == "1"
    if column.pg_type in ("smallint", "integer", "bigint"):
        return int(literal)
    if VARCHAR.fullmatch(column.pg_type):
        return literal.strip("'")
    return EXPRESSION


def _column_cases() -> list[Any]:
    return [
        pytest.param(table, column, id=f"{table.name}.{column.name}")
        for table in v4.TABLES
        for column in table.columns
    ]


def test_every_table_has_a_model_and_every_model_a_table() -> None:
    """The twelve tables and the twelve models name each other."""
    assert sorted(_models()) == sorted(v4.TABLE_NAMES)


@pytest.mark.parametrize("table", v4.TABLES, ids=lambda table: table.name)
def test_model_has_exactly_the_table_columns(table: v4.Table) -> None:
    """No column missing, none invented (db_column is the column's name)."""
    columns = [column.name for column in table.columns]
    assert sorted(_fields(_models()[table.name])) == sorted(columns)


@pytest.mark.parametrize(("table", "column"), _column_cases())
def test_field_matches_column(table: v4.Table, column: v4.Column) -> None:
    """Type, nullability, length bound, closed set and literal default agree."""
    field = _fields(_models()[table.name])[column.name]
    assert _stored_class(field) is _expected_class(column)
    assert field.null is column.null
    length = VARCHAR.fullmatch(column.pg_type)
    assert field.max_length == (int(length.group(1)) if length else None)
    assert [value for value, _label in field.choices or []] == list(column.choices)
    expected = _expected_default(column)
    if expected is EXPRESSION:
        assert field.default is NOT_PROVIDED
    else:
        assert field.default == expected


@pytest.mark.parametrize("table", v4.TABLES, ids=lambda table: table.name)
def test_primary_key_matches(table: v4.Table) -> None:
    """A single identity or boolean key, or the composite key, column for column."""
    pk = _models()[table.name]._meta.pk
    assert pk is not None
    columns = pk.columns if isinstance(pk, models.CompositePrimaryKey) else [pk.column]
    assert tuple(columns) == table.primary_key


@pytest.mark.parametrize("table", v4.TABLES, ids=lambda table: table.name)
def test_foreign_keys_match(table: v4.Table) -> None:
    """Each single-column foreign key is a ForeignKey to the model of its table."""
    declared = {
        (fk.columns[0], fk.table) for fk in table.foreign_keys if len(fk.columns) == 1
    }
    mapped = {
        (field.column, field.related_model._meta.db_table)
        for field in _fields(_models()[table.name]).values()
        # A key without a constraint of its own is part of a composite key.
        if isinstance(field, models.ForeignKey) and field.db_constraint
    }
    assert mapped == declared


@pytest.mark.parametrize("table", v4.TABLES, ids=lambda table: table.name)
def test_unique_constraints_are_the_schema_ones(table: v4.Table) -> None:
    """The models' unique constraints carry the schema's names and columns."""
    model = _models()[table.name]
    mapped = {
        constraint.name: tuple(_column(model, name) for name in constraint.fields)
        for constraint in model._meta.constraints
        if isinstance(constraint, models.UniqueConstraint)
        and constraint.condition is None
    }
    assert mapped == dict(table.uniques)


def test_closed_sets_come_from_the_schema() -> None:
    """
    Every value a choice column allows is a choice, shown as oxide-batch
    prints it or in words; every word is used.
    """
    allowed = {
        (table.name, column.name): set(column.choices)
        for table in v4.TABLES
        for column in table.columns
        if column.choices
    }
    worded = set()
    for model in apps.get_app_config("batchboard").get_models():
        if is_own_state(model):
            # batchboard's own tables: their closed sets are its own.
            continue
        for field in model._meta.concrete_fields:
            if not field.choices:
                continue
            values = {value for value, _label in field.choices}
            key = (model._meta.db_table, field.column)
            if key in allowed:
                assert values == allowed[key], key
            for value, label in field.choices:
                if label != value:
                    assert label == LABELS[value], (key, value)
                    worded.add(value)
    assert worded == set(LABELS)


@pytest.mark.django_db
def test_migration_records_schema_version_4() -> None:
    """The managed migration writes the single schema version row."""
    row = SchemaVersion.objects.get()
    assert row.singleton is True
    assert row.version == schema.SUPPORTED_SCHEMA_VERSION


@pytest.mark.django_db
def test_every_table_exists() -> None:
    """All twelve tables of schema version 4 are created."""
    connection = connections[conf.database_alias()]
    with connection.cursor() as cursor:
        existing = set(connection.introspection.table_names(cursor))
    assert set(schema.TABLE_NAMES) <= existing
    assert len(schema.TABLE_NAMES) == 12
