"""
The import arrows of docs/architecture.md, checked on the source.

Each package may import only what the arrows allow; a module that breaks
one fails here with the line that does.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "batchboard"

#: Per importing package (a prefix of module names): modules it must not import.
FORBIDDEN: dict[str, tuple[str, ...]] = {
    # The read side never reaches up into the front ends built on it.
    "batchboard.explorer": (
        "batchboard.console",
        "batchboard.admin",
        "batchboard.demo",
        "batchboard.site",
    ),
    "batchboard.console": (
        "batchboard.admin",
        "batchboard.demo",
        "batchboard.site",
        # Views are entry points, not helpers: shared read pieces live in
        # the explorer's lower modules (access, inputs, pagination, ...).
        "batchboard.explorer.views",
        "batchboard.explorer.urls",
    ),
    "batchboard.admin": (
        "batchboard.demo",
        "batchboard.site",
        "batchboard.explorer.views",
        "batchboard.console.views",
    ),
    "batchboard.api": (
        "batchboard.console",
        "batchboard.admin",
        "batchboard.demo",
        "batchboard.site",
        "batchboard.explorer.views",
        "batchboard.explorer.urls",
    ),
    "batchboard.actions": (
        "batchboard.explorer",
        "batchboard.console",
        "batchboard.admin",
        "batchboard.demo",
        "batchboard.site",
        "batchboard.web",
    ),
    # /metrics reads the schema itself; it serves no page and takes none.
    "batchboard.metrics": (
        "batchboard.explorer",
        "batchboard.console",
        "batchboard.admin",
        "batchboard.actions",
        "batchboard.demo",
        "batchboard.site",
        "batchboard.web",
    ),
    # Saved views and time zones read the explorer's forms, serve no record.
    "batchboard.personal": (
        "batchboard.admin",
        "batchboard.demo",
        "batchboard.site",
        "batchboard.explorer.views",
        "batchboard.console.views",
    ),
    "batchboard.repository": (
        "batchboard.actions",
        "batchboard.explorer",
        "batchboard.console",
        "batchboard.admin",
        "batchboard.demo",
        "batchboard.site",
    ),
}


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.lineno, node.module
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def _breaks(imported: str, rules: tuple[str, ...]) -> bool:
    return any(imported == rule or imported.startswith(rule + ".") for rule in rules)


@pytest.mark.parametrize("importer", sorted(FORBIDDEN))
def test_packages_import_only_along_the_arrows(importer: str) -> None:
    broken = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module(path)
        if module != importer and not module.startswith(importer + "."):
            continue
        for line, imported in _imports(path):
            if _breaks(imported, FORBIDDEN[importer]):
                broken.append(f"{path.relative_to(PACKAGE.parent)}:{line} {imported}")
    assert broken == []


def test_the_vocabulary_imports_only_the_schema() -> None:
    path = PACKAGE / "vocabulary.py"
    imported = {name for _line, name in _imports(path) if name.startswith("batchboard")}
    assert imported and all(name.startswith("batchboard.schema") for name in imported)


def test_the_checker_sees_a_broken_arrow() -> None:
    rules = FORBIDDEN["batchboard.console"]
    assert _breaks("batchboard.explorer.views.VIEW_EXECUTIONS", rules)
    assert _breaks("batchboard.explorer.views", rules)
    assert not _breaks("batchboard.explorer.access", rules)
    assert not _breaks("batchboard.explorer.viewsets", rules)
