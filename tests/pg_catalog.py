"""Describe a PostgreSQL schema from the system catalog, independent of models."""

from __future__ import annotations

from typing import Any

COLUMNS = """
SELECT c.relname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod),
       a.attnotnull, pg_get_expr(d.adbin, d.adrelid), coll.collname, a.attidentity
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
LEFT JOIN pg_collation coll ON coll.oid = a.attcollation AND a.attcollation <> 0
WHERE n.nspname = %s AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY c.relname, a.attnum
"""
CONSTRAINTS = """
SELECT c.relname, con.conname, con.contype, pg_get_constraintdef(con.oid)
FROM pg_constraint con
JOIN pg_class c ON c.oid = con.conrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s
ORDER BY c.relname, con.conname
"""
INDEXES = """
SELECT t.relname, i.relname, pg_get_indexdef(i.oid)
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname = %s
ORDER BY t.relname, i.relname
"""


def describe(cursor: Any, schema: str = "oxide_batch") -> dict[str, Any]:
    """
    Return tables, columns (in order), constraints and indexes of ``schema``.

    Definitions come from ``pg_get_constraintdef``/``pg_get_indexdef`` with
    ``search_path`` emptied, so they are comparable whatever created them.
    """
    out: dict[str, Any] = {}
    cursor.execute("SELECT set_config('search_path', 'pg_catalog', true)")
    cursor.execute(COLUMNS, [schema])
    for (
        table,
        _num,
        column,
        type_,
        not_null,
        default,
        collation,
        ident,
    ) in cursor.fetchall():
        entry = out.setdefault(table, {"columns": [], "constraints": {}, "indexes": {}})
        entry["columns"].append(
            {
                "name": column,
                "type": type_,
                "not_null": not_null,
                "default": default,
                "collation": collation,
                "identity": ident or None,
            }
        )
    cursor.execute(CONSTRAINTS, [schema])
    for table, name, kind, definition in cursor.fetchall():
        out[table]["constraints"][name] = {
            "kind": kind,
            "definition": definition.replace(f"{schema}.", ""),
        }
    cursor.execute(INDEXES, [schema])
    for table, name, definition in cursor.fetchall():
        out[table]["indexes"][name] = definition.replace(f"{schema}.", "")
    return out


RELATIONS = """
SELECT n.nspname, c.relname, c.relkind
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg_toast%%' AND n.nspname NOT LIKE 'pg_temp%%'
ORDER BY 1, 2
"""


def snapshot(cursor: Any) -> dict[str, Any]:
    """
    Return every user schema's relations and, per schema, :func:`describe`.

    Covers the whole database, so a table created anywhere (a stray
    ``django_migrations`` in ``public``, say) changes the snapshot.
    """
    cursor.execute(RELATIONS)
    relations = [tuple(row) for row in cursor.fetchall()]
    schemas = sorted({row[0] for row in relations})
    cursor.execute(
        "SELECT nspname FROM pg_namespace WHERE nspname NOT IN "
        "('pg_catalog', 'information_schema') AND nspname NOT LIKE 'pg_toast%%' "
        "AND nspname NOT LIKE 'pg_temp%%' ORDER BY 1"
    )
    namespaces = [row[0] for row in cursor.fetchall()]
    return {
        "namespaces": namespaces,
        "relations": relations,
        "schemas": {name: describe(cursor, name) for name in schemas},
    }


if __name__ == "__main__":  # pragma: no cover - maintenance helper
    import json
    import sys

    import psycopg

    with psycopg.connect(sys.argv[1]) as connection, connection.cursor() as cur:
        print(json.dumps(describe(cur), indent=1, sort_keys=True))
