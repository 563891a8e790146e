"""
Whole numbers from a request are parsed by one parser: the source says so.

The rule, checked on the syntax tree of every module of ``batchboard/``:

1. No ``str.isdigit()``, ``str.isdecimal()`` or ``str.isnumeric()``, anywhere.
   Each accepts digits ``int()`` refuses ("²") or reads ("٣"); a number is
   read with :func:`batchboard.vocabulary.parse_whole_number`, or a form
   field built on it (``WholeNumberField``).

2. No ``int(...)`` of request data. Within each function, a value is request
   data if it is read from a request or a form's raw input:

   - an attribute ``GET``, ``POST``, ``COOKIES``, ``META``, ``FILES``,
     ``headers``, ``body`` or ``data`` (a bound form's raw input) of
     anything;
   - a parameter annotated ``QueryDict`` or ``HttpRequest``, or the
     ``value`` a field's ``to_python``/``clean``/``validate`` receives;
   - anything computed from request data by a method call on it
     (``.get()``, ``.split()``, ``.strip()``), an index, a slice, an
     operator, an f-string, ``str()``, ``list()`` or ``tuple()``, a
     comprehension or a conditional, and any name assigned (or looped
     over) from request data earlier in the function.

   A call of another function (``parse_whole_number(text)``,
   ``len(text)``) returns something else, not request data: that is how a
   value leaves the request. ``int()`` of a parsed number, a database
   value or a setting is allowed. The parser's own ``int()`` (in
   ``vocabulary.py``, after its ASCII full match) reads a parameter that is
   none of the above.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "batchboard"

FORBIDDEN_METHODS = frozenset({"isdigit", "isdecimal", "isnumeric"})
REQUEST_ATTRIBUTES = frozenset(
    {"GET", "POST", "COOKIES", "META", "FILES", "headers", "body", "data"}
)
REQUEST_TYPES = frozenset({"QueryDict", "HttpRequest", "HtmxHttpRequest"})
FIELD_METHODS = frozenset({"to_python", "clean", "validate"})
#: Builtins through which request data stays request data.
PASSING = frozenset({"str", "list", "tuple", "reversed", "sorted", "iter", "next"})


def _modules() -> list[Path]:
    return sorted(
        path for path in PACKAGE.rglob("*.py") if "migrations" not in path.parts
    )


def _annotation_names(node: ast.expr | None) -> set[str]:
    if node is None:
        return set()
    return {
        part.id if isinstance(part, ast.Name) else part.attr
        for part in ast.walk(node)
        if isinstance(part, ast.Name | ast.Attribute)
    } | {
        part.value
        for part in ast.walk(node)
        if isinstance(part, ast.Constant) and isinstance(part.value, str)
    }


class _Taint:
    """The request data names of one function, and whether an expression is one."""

    def __init__(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.names: set[str] = set()
        arguments = function.args
        for argument in (
            *arguments.posonlyargs,
            *arguments.args,
            *arguments.kwonlyargs,
        ):
            if _annotation_names(argument.annotation) & REQUEST_TYPES or (
                function.name in FIELD_METHODS and argument.arg == "value"
            ):
                self.names.add(argument.arg)
        # Assignments in source order, twice over, so that a loop's later
        # assignment reaches an earlier use.
        for _round in range(2):
            for node in ast.walk(function):
                self._assign(node)

    def _targets(self, node: ast.AST) -> Iterator[str]:
        for part in ast.walk(node):
            if isinstance(part, ast.Name):
                yield part.id

    def _assign(self, node: ast.AST) -> None:
        pairs: list[tuple[ast.AST, ast.expr]] = []
        if isinstance(node, ast.Assign):
            pairs = [(target, node.value) for target in node.targets]
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
            if node.value is not None:
                pairs = [(node.target, node.value)]
        elif isinstance(node, ast.For | ast.comprehension):
            pairs = [(node.target, node.iter)]
        for target, value in pairs:
            if self.holds(value):
                self.names.update(self._targets(target))

    def holds(self, node: ast.expr) -> bool:
        """Return whether ``node`` evaluates to request data."""
        if isinstance(node, ast.Name):
            return node.id in self.names
        if isinstance(node, ast.Attribute):
            return node.attr in REQUEST_ATTRIBUTES or self.holds(node.value)
        if isinstance(node, ast.Call):
            function = node.func
            if isinstance(function, ast.Attribute):
                # A method of request data (``.get()``, ``.split()``).
                return self.holds(function.value)
            if isinstance(function, ast.Name) and function.id in PASSING:
                return any(self.holds(argument) for argument in node.args)
            return False
        if isinstance(node, ast.Subscript | ast.Starred):
            return self.holds(node.value)
        if isinstance(node, ast.BinOp):
            return self.holds(node.left) or self.holds(node.right)
        if isinstance(node, ast.BoolOp):
            return any(self.holds(value) for value in node.values)
        if isinstance(node, ast.IfExp):
            return self.holds(node.body) or self.holds(node.orelse)
        if isinstance(node, ast.JoinedStr):
            return any(
                self.holds(value.value)
                for value in node.values
                if isinstance(value, ast.FormattedValue)
            )
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            return any(self.holds(element) for element in node.elts)
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp):
            return self.holds(node.elt)
        return False


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def violations(source: str) -> list[str]:
    """Return each forbidden parse in ``source`` as ``line: what``."""
    tree = ast.parse(source)
    found: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in FORBIDDEN_METHODS
        ):
            found.add(f"{node.lineno}: .{node.func.attr}()")
    for function in _functions(tree):
        taint = _Taint(function)
        for node in ast.walk(function):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "int"
                and node.args
                and taint.holds(node.args[0])
            ):
                found.add(f"{node.lineno}: int() of request data")
    return sorted(found, key=lambda line: int(line.partition(":")[0]))


def test_batchboard_parses_request_numbers_with_the_one_parser() -> None:
    found = {
        str(path.relative_to(PACKAGE.parent)): problems
        for path in _modules()
        if (problems := violations(path.read_text(encoding="utf-8")))
    }
    assert found == {}


@pytest.mark.parametrize(
    "source",
    [
        # The forms of main before the one parser, reduced.
        "def f(self):\n"
        "    value = str(self.data.get('min_age_seconds', ''))\n"
        "    return int(value) // 3600\n",
        "def f(request):\n"
        "    after = request.GET.get('after', '')\n"
        "    position = after.split(':')\n"
        "    return (int(position[0]), int(position[1]))\n",
        "def f(query: QueryDict):\n"
        "    values = query.getlist('after')\n"
        "    return int(values[0])\n",
        "def f(request: HttpRequest):\n"
        "    return [int(v) for v in request.POST.getlist('_selected_action')]\n",
        "def to_python(self, value):\n    return int(value.strip())\n",
        "def f(text):\n    return text.isdigit()\n",
        "def f(text):\n    return text.isdecimal() or text.isnumeric()\n",
    ],
)
def test_the_rule_finds_request_numbers_parsed_by_hand(source: str) -> None:
    assert violations(source)


@pytest.mark.parametrize(
    "source",
    [
        "def f(request):\n"
        "    n = parse_whole_number(request.GET.get('size', ''))\n"
        "    return int(n or 0)\n",
        "def f(row):\n    return int(row['id'])\n",
        "def f():\n    return int(conf.get_config()['PAGE_SIZE'])\n",
        "def f(self):\n    return int(self.cleaned_data['size'])\n",
        "def f(request, execution_id: int):\n    return int(execution_id)\n",
    ],
)
def test_the_rule_allows_numbers_already_parsed(source: str) -> None:
    assert violations(source) == []
