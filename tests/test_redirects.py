"""
Redirects carry URLs, not HTML: checked on every redirect of the source.

A link built for a template is HTML-escaped (``&`` as ``&amp;``); put in a
``Location`` header, or in htmx's ``HX-Redirect``, ``HX-Push-Url`` or
``HX-Replace-Url``, it names another address. Each place in ``batchboard/``
that answers with an address is found here, and the expression giving the
address may not reach one of the template link builders, directly or
through a function of its own module, unless it is unescaped on the way.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "batchboard"

#: Callables that answer with an address, and the position of that address.
REDIRECTS = {
    "HttpResponseRedirect": 0,
    "HttpResponsePermanentRedirect": 0,
    "HttpResponseClientRedirect": 0,
    "HttpResponseLocation": 0,
    "redirect": 0,
    "redirect_to_login": 0,
    "push_url": 1,
    "replace_url": 1,
}
#: Headers that hold an address.
HEADERS = {"Location", "HX-Location", "HX-Redirect", "HX-Push-Url", "HX-Replace-Url"}
#: What builds HTML: the explorer's escaped link builders and Django's escapers.
HTML = {
    "job_url",
    "link",
    "url_pattern",
    "escape",
    "conditional_escape",
    "format_html",
    "mark_safe",
    "SafeString",
    "render_to_string",
    # links.Links' methods: each returns an escaped link.
    "job",
    "pattern",
    "job_filter",
}
#: Turning HTML back into text: past this, an address is a URL again.
UNESCAPE = {"unescape"}


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _html_in(
    node: ast.AST, functions: dict[str, ast.FunctionDef], seen: set[str]
) -> str | None:
    """Return the HTML builder ``node`` reaches (through local functions), if any."""
    if isinstance(node, ast.Call):
        name = _name(node.func)
        if name in UNESCAPE:
            return None
        if name in HTML:
            return name
        if name in functions and name not in seen:
            seen.add(name)
            for inner in ast.walk(functions[name]):
                if isinstance(inner, ast.Return) and inner.value is not None:
                    found = _html_in(inner.value, functions, seen)
                    if found:
                        return f"{name} -> {found}"
    for child in ast.iter_child_nodes(node):
        found = _html_in(child, functions, seen)
        if found:
            return found
    return None


def _addresses(tree: ast.Module) -> Iterator[tuple[int, ast.expr]]:
    """Yield each expression the module answers with as an address."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            position = REDIRECTS.get(_name(node.func) or "")
            if position is not None and len(node.args) > position:
                yield node.lineno, node.args[position]
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.slice, ast.Constant)
                    and target.slice.value in HEADERS
                ):
                    yield node.lineno, node.value


def violations(source: str) -> tuple[int, list[str]]:
    """Return how many addresses ``source`` answers with, and the HTML ones."""
    tree = ast.parse(source)
    functions = {
        node.name: node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
    }
    found, bad = 0, []
    for line, expression in _addresses(tree):
        found += 1
        builder = _html_in(expression, functions, set())
        if builder:
            bad.append(f"line {line}: {ast.unparse(expression)} ({builder})")
    return found, bad


def test_no_redirect_in_batchboard_carries_html() -> None:
    total, bad = 0, []
    for path in sorted(PACKAGE.rglob("*.py")):
        found, wrong = violations(path.read_text(encoding="utf-8"))
        total += found
        bad += [f"{path.relative_to(PACKAGE.parent)} {each}" for each in wrong]
    assert bad == []
    # The explorer's fragment redirects, the jump box, the sign-in
    # redirects and the address-bar updates were all seen.
    assert total >= 10, total


def test_the_check_sees_an_escaped_link_in_a_redirect() -> None:
    direct = "def view(r, name):\n    return HttpResponseRedirect(job_url(name))\n"
    through = (
        "def where(name):\n    return link('batchboard:job', name)\n"
        "def view(r, name):\n    return redirect(where(name))\n"
    )
    header = "def view(r):\n    r['HX-Push-Url'] = escape(r.path)\n"
    unescaped = (
        "def where(name):\n    return html.unescape(job_url(name))\n"
        "def view(r, name):\n    return HttpResponseRedirect(where(name))\n"
    )
    for source in (direct, through, header):
        found, bad = violations(source)
        assert found == 1 and len(bad) == 1, source
    assert violations(unescaped) == (1, [])
