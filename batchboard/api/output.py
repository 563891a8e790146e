"""
The CLI's ``--output json`` envelope (spec A.2), byte for byte.

One compact JSON object with keys in byte order at every depth, raw UTF-8,
integers only, then one newline. The whole output is bounded at 262,144
bytes: over that, the longest prefix of ``data`` (rows of a list, keys of an
object in sorted order) that fits is kept with ``truncated`` true, and if
none fits ``data`` becomes the ``omitted`` object (A.2.3). ``page`` and
``diagnostics`` are kept as they are.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final

from django.http import HttpResponse

from batchboard.api import exits
from batchboard.explorer.pagination import Page
from batchboard.vocabulary import MAX_RESPONSE_BYTES

SCHEMA_VERSION: Final = 1
OMITTED: Final = {"omitted": "the value exceeds the response bound"}
CONTENT_TYPE: Final = "application/json"


def dumps(value: Any) -> str:
    """Serialise as the CLI does: sorted keys, compact, raw UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass
class Envelope:
    """One answer: the command, its data, diagnostics, category and page."""

    command: str
    data: Any = None
    category: str = "SUCCESS"
    diagnostics: list[dict[str, str]] = field(default_factory=list)
    page: dict[str, Any] | None = None

    def _document(self, data: Any, truncated: bool) -> dict[str, Any]:
        document: dict[str, Any] = {
            "command": self.command,
            "data": data,
            "diagnostics": self.diagnostics,
            "outcome": exits.category(self.category).outcome,
            "schema_version": SCHEMA_VERSION,
            "truncated": truncated,
        }
        if self.page is not None:
            document["page"] = self.page
        return document

    def _fits(self, data: Any) -> bytes | None:
        text = (dumps(self._document(data, True)) + "\n").encode("utf-8")
        return text if len(text) <= MAX_RESPONSE_BYTES else None

    def render(self) -> bytes:
        """Return the output bytes, truncated to the bound as A.2.3 says."""
        text = (dumps(self._document(self.data, False)) + "\n").encode("utf-8")
        if len(text) <= MAX_RESPONSE_BYTES:
            return text
        items: list[Any]
        if isinstance(self.data, list):
            items = list(self.data)

            def build(n: int) -> Any:
                return items[:n]
        elif isinstance(self.data, dict):
            items = sorted(self.data)
            source = self.data

            def build(n: int) -> Any:
                return {key: source[key] for key in items[:n]}
        else:
            return self._fits(OMITTED) or b""
        low, high, best = 0, len(items), None
        while low <= high:
            middle = (low + high) // 2
            fitted = self._fits(build(middle))
            if fitted is not None:
                best, low = fitted, middle + 1
            else:
                high = middle - 1
        return best or self._fits(OMITTED) or b""

    def response(self) -> HttpResponse:
        """Return the HTTP response: the bytes, at the category's status."""
        response = HttpResponse(
            self.render(),
            content_type=CONTENT_TYPE,
            status=exits.category(self.category).status,
        )
        response["Cache-Control"] = "private, no-store"
        return response


def page_fields(page: Page, returned: int | None = None) -> dict[str, Any]:
    """Return the envelope's ``page`` for an explorer page."""
    return {
        "next_cursor": page.next_cursor,
        "page_size": page.page_size,
        "returned": len(page.rows) if returned is None else returned,
    }


def diagnostic(code: str, detail: str) -> dict[str, str]:
    return {"code": code, "detail": detail}


def failure(
    command: str, category: str, code: str, detail: str, data: Any = None
) -> Envelope:
    """Return an error envelope with one diagnostic."""
    return Envelope(command, data, category, [diagnostic(code, detail)])
