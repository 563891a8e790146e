"""
A list's download: CSV or NDJSON, streamed page by page in constant memory.

An export reads a list the way its page does (the page's form, the page's
query function, its keyset) at :data:`PAGE_SIZE` rows a read, and writes
each page out before reading the next: a process holds one page whatever
the list's length. The first page is read by the view, inside the page's
own read transaction, so a bad filter, a failing database or a refused
permission answers with the page's error before a byte is sent. Each later
page is read in its own bounded read transaction
(:func:`batchboard.replicas.reading`, a replica when one may serve it): a
long download never holds one transaction open against the statement
timeout, nor one snapshot for its whole length. The keyset's identity
ceiling, captured by the first page, keeps rows recorded after the
download started out of it on every replica.

Rows are the API's redacted projections (:mod:`batchboard.api.projections`,
contract 3.5) with times as ISO-8601 UTC: never a parameter value, a
payload or a failure's text. The file formats, written down in
docs/export.md:

- CSV: a header row of the projection's fields (nested ones as
  ``parent.child``), one row per record; empty for null. A text cell that
  a spreadsheet would read as a formula (it begins with ``=``, ``+``,
  ``-``, ``@``, a tab or a carriage return) is prefixed with ``'``.
- NDJSON: one JSON object per line, keys sorted.

A file holds at most ``EXPORT_MAX_ROWS`` rows. One that stops there ends
with a line that says so: in CSV a one-cell row ``# truncated: ...``, in
NDJSON ``{"limit": N, "rows": N, "truncated": true}``. A database failure
after the first page ends the file the same way with ``failed`` in place
of ``truncated``; the class of the error is logged, never its message.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final, Literal

from django.db import DatabaseError
from django.http import HttpRequest, QueryDict, StreamingHttpResponse
from django.utils import timezone
from django.utils.translation import gettext as _

from batchboard import conf, replicas
from batchboard.vocabulary import MAX_PAGE_SIZE
from batchboard.web import BadInput

__all__ = [
    "FORMATS",
    "PAGE_SIZE",
    "Chunk",
    "Format",
    "Layout",
    "Record",
    "download",
    "encode",
    "filters",
    "filters_query",
    "json_value",
    "neutralise",
    "read_format",
]

logger = logging.getLogger("batchboard.export")

Format = Literal["csv", "ndjson"]
FORMATS: Final[tuple[Format, ...]] = ("csv", "ndjson")
CONTENT_TYPES: Final[dict[Format, str]] = {
    "csv": "text/csv; charset=utf-8",
    "ndjson": "application/x-ndjson; charset=utf-8",
}

#: Rows read per statement: the explorer's largest page, whose estimated
#: size stays within the response bound, so a read is one keyset page.
PAGE_SIZE: Final = MAX_PAGE_SIZE

#: Query parameters that page a list rather than filter it: an export
#: always starts at the first row and reads at its own size.
PAGING: Final = frozenset({"cursor", "size", "after", "format"})

#: What a spreadsheet may read as the start of a formula (OWASP's list).
FORMULA_STARTS: Final = ("=", "+", "-", "@", "\t", "\r")

#: Bytes gathered before a piece of the file is handed to the server.
FLUSH_BYTES: Final = 65_536

Record = dict[str, Any]
#: One read: the page's records and the cursor of the next page, if any.
Chunk = tuple[list[Record], str | None]


def read_format(request: HttpRequest) -> Format:
    """Return the format asked for (``format``; CSV if none), or raise BadInput."""
    asked = request.GET.get("format", "csv")
    for known in FORMATS:
        if asked == known:
            return known
    raise BadInput(
        _("Unknown export format"),
        _("Download the list as csv or ndjson."),
        "format",
    )


def filters(data: QueryDict) -> QueryDict:
    """Return ``data`` without its paging parameters: the list's filters."""
    kept = QueryDict(mutable=True)
    for key, values in data.lists():
        if key not in PAGING:
            kept.setlist(key, values)
    return kept


def filters_query(data: QueryDict) -> str:
    """Return the filters of ``data`` as a query string (no paging)."""
    return filters(data).urlencode()


def neutralise(text: str) -> str:
    """Return ``text`` as a cell no spreadsheet reads as a formula."""
    return f"'{text}" if text.startswith(FORMULA_STARTS) else text


def _cell(value: Any) -> str:
    if type(value) is str:
        return f"'{value}" if value.startswith(FORMULA_STARTS) else value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        value = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return neutralise(str(value))


#: The NDJSON writer: ``json.dumps`` with these arguments, made once.
_ENCODER: Final = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False
)


def _json(record: Record) -> str:
    return _ENCODER.encode(record) + "\n"


def json_value(value: Any) -> str:
    """
    Return ``value`` as an NDJSON line writes it (text as recorded).

    For a line written from a template (:meth:`Layout.line`): the same
    text as the writer gives, without its per-call set-up for a number,
    a boolean or ``null``.
    """
    kind = type(value)
    if kind is str:
        return _ENCODER.encode(value)
    if kind is int:
        return int.__repr__(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    return _ENCODER.encode(value)


class Layout:
    """
    How a list's records are written: its CSV columns, a record's cells
    and its NDJSON line.

    By default a record is the list's projection (nested dicts, as the API
    gives it): a column ``parent.child`` is read along its path, and the
    line is the record as JSON, keys sorted. A list that reads its rows
    flat, in its columns' order, overrides :meth:`cells` and :meth:`line`
    to write each row without building its projection (a download of a
    million rows spends most of its time here); it must write what the
    default would write of the projection, byte for byte.
    """

    def __init__(self, columns: Sequence[str]) -> None:
        #: The CSV header: the projection's fields, nested ones dotted.
        self.columns = tuple(columns)
        # Each column's path into the nested record, split once.
        self.paths = tuple(tuple(column.split(".")) for column in self.columns)

    def cells(self, record: Record) -> Sequence[Any]:
        """
        Return the CSV cells of ``record``, one per column.

        Text is neutralised (:func:`neutralise`) and booleans written as
        ``true``/``false``; ``None`` (an empty cell) and ``int`` are left
        to the CSV writer.
        """
        cells: list[Any] = []
        for head, *rest in self.paths:
            value = record.get(head)
            for key in rest:
                value = value.get(key) if type(value) is dict else None
            if type(value) is str:
                if value.startswith(FORMULA_STARTS):
                    value = f"'{value}"
            elif value is not None and type(value) is not int:
                value = _cell(value)
            cells.append(value)
        return cells

    def line(self, record: Record) -> str:
        """Return the NDJSON line of ``record``, its end of line included."""
        return _json(record)


class _Writer:
    """One format's lines, gathered in a buffer the encoder empties."""

    def __init__(self, form: Format, layout: Layout) -> None:
        self.form = form
        self.layout = layout
        self.buffer = io.StringIO()
        self.csv = csv.writer(self.buffer, lineterminator="\r\n")

    def header(self) -> None:
        if self.form == "csv":
            self.csv.writerow(self.layout.columns)

    def record(self, record: Record) -> None:
        if self.form == "csv":
            self.csv.writerow(self.layout.cells(record))
        else:
            self.buffer.write(self.layout.line(record))

    def last_line(self, state: str, rows: int, limit: int) -> None:
        """End the file with why it stopped early (``truncated`` or ``failed``)."""
        if self.form == "csv":
            if state == "truncated":
                text = f"# truncated: the file stops at {rows} rows (EXPORT_MAX_ROWS)"
            else:
                text = f"# failed: the database did not answer after {rows} rows"
            self.csv.writerow([text])
        else:
            self.buffer.write(_json({state: True, "rows": rows, "limit": limit}))

    def take(self) -> bytes:
        text = self.buffer.getvalue()
        self.buffer.seek(0)
        self.buffer.truncate()
        return text.encode("utf-8")


def encode(
    records: Iterable[Record],
    form: Format,
    layout: Layout | Sequence[str],
    limit: int,
) -> Iterator[bytes]:
    """
    Yield the file of ``records``: at most ``limit`` rows, then why it stopped.

    ``layout`` writes each record (columns alone: the default
    :class:`Layout` of them). The record after the ``limit``-th is read
    only to learn whether the list goes on: a list of exactly ``limit``
    rows is not truncated.
    """
    if not isinstance(layout, Layout):
        layout = Layout(layout)
    writer = _Writer(form, layout)
    writer.header()
    written = 0
    stopped: str | None = None
    source = iter(records)
    while True:
        try:
            record = next(source)
        except StopIteration:
            break
        except DatabaseError as error:
            logger.error(
                "batchboard export failed: database error %s", type(error).__name__
            )
            stopped = "failed"
            break
        if written == limit:
            stopped = "truncated"
            break
        writer.record(record)
        written += 1
        if writer.buffer.tell() >= FLUSH_BYTES:
            yield writer.take()
    if stopped is not None:
        writer.last_line(stopped, written, limit)
    yield writer.take()


def walk(
    first: Chunk, more: Callable[[str], Chunk], position: str | None
) -> Iterator[Record]:
    """
    Yield the records of ``first``, then of each page ``more`` reads.

    Each later page is read in its own bounded read transaction, on a
    replica that has replayed ``position`` (the user's last commit) when
    one may serve it.
    """
    session = {replicas.SESSION_KEY: position} if position else None
    rows, token = first
    yield from rows
    while token is not None:
        with replicas.reading(session, replica=True):
            rows, token = more(token)
        yield from rows


def download(
    request: HttpRequest,
    name: str,
    layout: Layout | Sequence[str],
    read: Callable[[str | None], Chunk],
) -> StreamingHttpResponse:
    """
    Answer with the list ``read`` pages through, as a file named after ``name``.

    ``layout`` writes the records ``read`` returns (:func:`encode`).

    ``read(None)`` (the first page) runs now, in the view; the rest as the
    file is sent. ``name`` is a fixed word of the caller's (ASCII, no
    quote), the file's name ``batchboard-<name>-<UTC time>.<format>``.
    """
    form = read_format(request)
    first = read(None)
    position = replicas.session_position(getattr(request, "session", None))
    records = walk(first, read, position)
    response = StreamingHttpResponse(
        encode(records, form, layout, conf.export_max_rows()),
        content_type=CONTENT_TYPES[form],
    )
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    response["Content-Disposition"] = (
        f'attachment; filename="batchboard-{name}-{stamp}.{form}"'
    )
    return response
