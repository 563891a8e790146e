"""
batchboard.js under the browser's zone: each <time>'s text is rewritten from
its datetime= (days stay as they are), run in Node with a minimal document.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = (
    Path(__file__).resolve().parents[2]
    / "batchboard"
    / "static"
    / "batchboard"
    / "batchboard.js"
)

HARNESS = """
const fs = require("fs");
const source = fs.readFileSync(process.argv[1], "utf8");
const choice = process.argv[2];
const listeners = {};
const time = (value, text) => ({
  value, textContent: text, getAttribute(name) { return name === "datetime" ? this.value : null; },
});
const times = [
  time("2026-01-15T12:30:05+00:00", "2026-01-15 12:30:05Z"),
  time("2026-01-15", "2026-01-15"),
];
class Element {}
class Document {}
class HTMLElement extends Element {}
class HTMLDetailsElement extends HTMLElement {}
class HTMLDialogElement extends HTMLElement {}
class HTMLButtonElement extends HTMLElement {}
const document = Object.assign(new Document(), {
  addEventListener(type, listener) { (listeners[type] ||= []).push(listener); },
  querySelector(selector) {
    return selector.startsWith("meta") ? { getAttribute: () => choice } : null;
  },
  querySelectorAll(selector) { return selector === "time[datetime]" ? times : []; },
});
new Function(
  "document", "window", "Element", "Document", "HTMLElement",
  "HTMLDetailsElement", "HTMLDialogElement", "HTMLButtonElement", source,
)(document, {}, Element, Document, HTMLElement, HTMLDetailsElement,
  HTMLDialogElement, HTMLButtonElement);
listeners.DOMContentLoaded.forEach((listener) => listener());
console.log(JSON.stringify(times.map((item) => item.textContent)));
"""


def _run(choice: str, zone: str) -> list[str]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node is not installed")
    result = subprocess.run(
        [node, "-e", HARNESS, str(SCRIPT), choice],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "TZ": zone},
        check=True,
    )
    shown: list[str] = json.loads(result.stdout)
    return shown


def test_the_browsers_zone_rewrites_each_times_text() -> None:
    shown = _run("browser", "Asia/Tokyo")
    assert shown[0].startswith("2026-01-15 21:30:05 ")
    # A day stays the UTC day it names.
    assert shown[1] == "2026-01-15"


@pytest.mark.parametrize("choice", ["UTC", "Asia/Tokyo"])
def test_other_choices_leave_the_servers_text(choice: str) -> None:
    assert _run(choice, "Europe/Paris") == ["2026-01-15 12:30:05Z", "2026-01-15"]
