"""
Stamps: a partial rendered once, then filled in per item.

A list of 50 executions placed about 1,300 values through the template
engine; the overview's strips 3,000. A stamp renders an item's partial once
per *shape* (what its markup decides on: a status, a few flags) with
stand-ins (:func:`slot`) where the item's own values go, cuts the output at
the stand-ins (:class:`Cut`) and fills each item in by joining strings.
Stamped partials: ``partials/execution_row.html``, ``instance_row.html``,
``job_row.html`` (rows, by :func:`execution_lines`, :func:`instance_lines`,
:func:`job_lines`), ``strip_chip.html``, ``trend_bar.html``,
``grid_cell.html``, ``grid_gap.html`` and ``parameter_values.html``.

The rules a stamped partial of this package keeps (tests compare each one,
stamped, with a plain render of the same rows, for every shape):

- A row partial is one loop over ``rows``, and nothing in it depends on
  the loop (no ``forloop``, ``{% cycle %}`` or ``{% ifchanged %}``).
- A row's own values (the ``*_SLOTS`` below: ids, links, names, times) are
  placed as they are, anywhere and any number of times, never filtered or
  tested: a filter (``{{ row.id|add:1 }}``) or an ``{% if %}`` would see
  the stand-in, not the value.
- What the markup decides on (``{% if %}``, ``|lower`` on the status) is in
  the row's shape (the ``_*_shape`` functions below) or the page's
  settings; any other field of a row renders empty.

A site's template overriding a stamped partial (found before the package's,
say in a project's ``DIRS``) is not held to these rules, since nothing
checks it: it is rendered plainly, all rows at once for a row partial and
once per item for the others (:class:`PerItem`), so it renders what Django
would render with the same rows, at the cost stamps were made to save. Only
templates read from this package's ``templates/`` directory are stamped.

What a new column of a stamped row needs: the presenter adds its value;
its name goes into the partial's ``*_SLOTS`` if it is placed as is, or
into ``_*_shape`` and ``_*_stand_in`` if the markup decides on it; and the
comparison tests in tests/explorer/test_stamps.py cover a row with it.
"""

from __future__ import annotations

import abc
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape, unescape
from pathlib import Path
from typing import Any, Final

from django.template import Context
from django.template.loader import get_template
from django.urls import get_script_prefix, get_urlconf
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString
from django.utils.translation import get_language

from batchboard.explorer.pagination import Row

#: A slot's stand-in while a stamp's template renders: letters only, so
#: escaping leaves it alone. A slot must be placed as is (no filter on it).
_SLOT = "bbslot{}zq"


#: Rendered stamps: (template, language, URL setup, key) -> the stamp.
_STAMPS: dict[tuple[Any, ...], Stamp] = {}
#: Stamps kept at most (each key is of a small closed set; this bounds a
#: process that keeps reloading templates, DEBUG).
_STAMPS_KEPT: Final = 1024


def _split(rendered: str, slots: int) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Cut ``rendered`` at every slot stand-in; return the pieces and slots."""
    pieces, order = [], []
    rest = rendered
    while True:
        found = [
            (rest.find(_SLOT.format(number)), number)
            for number in range(slots)
            if _SLOT.format(number) in rest
        ]
        if not found:
            break
        at, number = min(found)
        pieces.append(rest[:at])
        order.append(number)
        rest = rest[at + len(_SLOT.format(number)) :]
    pieces.append(rest)
    return tuple(pieces), tuple(order)


def slot(number: int) -> SafeString:
    """Return the stand-in of a stamp's slot ``number`` (see :func:`stamp`)."""
    return SafeString(_SLOT.format(number))


def stamp(
    name: str,
    context: Mapping[str, Any],
    slots: int,
    key: tuple[Any, ...] | None = None,
) -> Stamp:
    """
    Return partial ``name`` rendered once with ``context``, to fill per item.

    A strip of 504 chips or a trend of 100 bars placed a dozen values per
    item; as a template loop that cost more than the rest of the page. A
    stamp renders the item's partial once per distinct ``key`` (by default
    the ``context``'s items: a status and its look, say, a small closed set)
    and language, with :func:`slot` stand-ins (``slots`` of them) where an
    item's own values go (its id, its times), then fills them in by joining
    strings. The markup stays in the template, which may place each slot
    anywhere, as is, any number of times; whatever it decides on (an
    ``{% if %}``) must be decided by the key. Values filled in must be
    escaped already.
    """
    loaded: Any = get_template(name)
    # The engine's own template: its backend wraps it anew per lookup, and a
    # reloaded template (DEBUG, a test's settings) renders afresh.
    template = getattr(loaded, "template", loaded)
    cache_key = (
        template,
        get_language(),
        get_script_prefix(),
        get_urlconf(),
        key if key is not None else tuple(sorted(context.items())),
    )
    found = _STAMPS.get(cache_key)
    if found is None:
        if len(_STAMPS) >= _STAMPS_KEPT:
            _STAMPS.clear()
        if _is_own(template):
            rendered = str(template.render(Context(dict(context))))
            found = Cut(*_split(rendered, slots))
        else:
            found = PerItem(template, dict(context))
        _STAMPS[cache_key] = found
    return found


#: The package's own templates: the only ones a stamp cuts into pieces.
_OWN_TEMPLATES: Final = Path(__file__).resolve().parents[1] / "templates"


@functools.lru_cache(maxsize=256)
def _own_file(name: str) -> bool:
    return Path(name).resolve().is_relative_to(_OWN_TEMPLATES)


def _is_own(template: Any) -> bool:
    """Return whether ``template`` is the package's own file (no override)."""
    name = getattr(getattr(template, "origin", None), "name", None)
    return isinstance(name, str) and _own_file(name)


class Stamp(abc.ABC):
    """A partial to fill in per item: :meth:`fill` gives one item's markup."""

    @abc.abstractmethod
    def fill(self, *values: object) -> str:
        """Return the partial with ``values`` (escaped already) in its slots."""


@dataclass(frozen=True)
class Cut(Stamp):
    """A rendered partial in pieces, with the slot to place between each two."""

    pieces: tuple[str, ...]
    order: tuple[int, ...]
    # The pieces as one str.format() pattern: braces doubled, slots numbered.
    pattern: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        def literal(piece: str) -> str:
            return piece.replace("{", "{{").replace("}", "}}")

        parts = [literal(self.pieces[0])]
        for position, number in enumerate(self.order, 1):
            parts.append(f"{{{number}}}")
            parts.append(literal(self.pieces[position]))
        object.__setattr__(self, "pattern", "".join(parts))

    def fill(self, *values: object) -> str:
        """Return the partial with ``values`` (escaped already) in its slots."""
        return self.pattern.format(*values)


#: A stand-in anywhere in a string, its slot number captured.
_SLOT_IN_TEXT: Final = re.compile(_SLOT.format(r"(\d+)"))


@dataclass(frozen=True)
class PerItem(Stamp):
    """
    A site's partial, rendered per item with the stand-ins' values in place.

    A context value that is one stand-in gets the item's value itself (a
    number stays a number, text comes escaped and marked safe); a stand-in
    inside a text gets the value's text.
    """

    template: Any
    context: Mapping[str, Any]

    def fill(self, *values: object) -> str:
        """Return the partial rendered with ``values`` in its context."""

        def place(value: Any) -> Any:
            if isinstance(value, str):
                whole = _SLOT_IN_TEXT.fullmatch(value)
                if whole is not None:
                    item = values[int(whole.group(1))]
                    return SafeString(item) if isinstance(item, str) else item
                if _SLOT_IN_TEXT.search(value) is None:
                    return value

                def text(found: re.Match[str]) -> str:
                    item = str(values[int(found.group(1))])
                    # A plain text is escaped by the template once more.
                    return item if isinstance(value, SafeString) else unescape(item)

                placed = _SLOT_IN_TEXT.sub(text, value)
                return SafeString(placed) if isinstance(value, SafeString) else placed
            if isinstance(value, Mapping):
                return {name: place(item) for name, item in value.items()}
            if isinstance(value, list):
                return [place(item) for item in value]
            if type(value) is tuple:
                return tuple(place(item) for item in value)
            return value

        context = {name: place(value) for name, value in self.context.items()}
        return str(self.template.render(Context(context)))


# -- execution rows as stamps ----------------------------------------------------------

#: The values of an execution row that differ from row to row, in slot order.
#: partials/execution_row.html may place these anywhere (as they are); what
#: it decides on, it decides from the row's shape (see _row_shape).
_ROW_SLOTS: Final = (
    "id",
    "url",
    "row_url",
    "job_url",
    "job_name",
    "instance_url",
    "job_instance_id",
    "attempt",
    "created.iso",
    "created.text",
    "created.utc",
    "created.ago",
    "duration",
    "duration_bounds",
    "updated_age",
    "failure_category",
    "failure_id",
    "failure_link",
    "exit_text",
    "restart.url",
    "restart.text",
    "stop_url",
    "recover_url",
    "stop_requested_by",
)
_ROW_TEMPLATE: Final = "batchboard/partials/execution_row.html"


def _row_shape(row: Row) -> tuple[Any, ...]:
    """Return what an execution row's markup decides on, beside its values."""
    restart = row.get("restart")
    return (
        row["status"],
        bool(row.get("live")),
        bool(row.get("active")),
        bool(row.get("owner_recorded")),
        bool(row.get("failure_category")),
        bool(row.get("failure_link")),
        bool(row.get("exit_pending")),
        bool(row.get("duration_bounds")),
        restart["tone"] if restart else None,
        bool(row.get("stop_requested_at")),
        row.get("created") is not None,
    )


def _row_stand_in(row: Row) -> Row:
    """Return an execution row of stand-ins, shaped like ``row``."""
    stands = {name: slot(number) for number, name in enumerate(_ROW_SLOTS)}
    restart = row.get("restart")
    return {
        **{name: value for name, value in stands.items() if "." not in name},
        "status": row["status"],
        "tone": row["tone"],
        "live": row.get("live"),
        "active": row.get("active"),
        "owner_recorded": row.get("owner_recorded"),
        "failure_category": (
            stands["failure_category"] if row.get("failure_category") else None
        ),
        "failure_link": stands["failure_link"] if row.get("failure_link") else None,
        "exit_pending": row.get("exit_pending"),
        "duration_bounds": (
            stands["duration_bounds"] if row.get("duration_bounds") else None
        ),
        "restart": (
            {
                "url": stands["restart.url"],
                "text": stands["restart.text"],
                "tone": restart["tone"],
            }
            if restart
            else None
        ),
        "stop_requested_at": bool(row.get("stop_requested_at")) or None,
        "created": (
            _moment(stands, "created") if row.get("created") is not None else None
        ),
    }


def _moment(stands: Mapping[str, SafeString], path: str) -> dict[str, SafeString]:
    """Return a time of stand-ins (a Moment's parts), its slots under ``path``."""
    return {part: stands[f"{path}.{part}"] for part in ("iso", "text", "utc", "ago")}


def _row_values(row: Row, paths: Sequence[Sequence[str]]) -> list[object]:
    """
    Return a row's values in slot order, escaped.

    Each slot is a path of keys (``("a", "b")`` reads ``row["a"]["b"]``).
    """
    values: list[object] = []
    for path in paths:
        value: Any = row
        for part in path:
            value = (value or {}).get(part)
        kind = type(value)
        # What conditional_escape gives, without its checks for the three
        # kinds most cells hold: marked-safe text is itself, a whole
        # number's digits need no escaping, and plain text is escaped as
        # Django's escape does (html.escape, quotes included).
        if kind is SafeString:
            values.append(value)
        elif kind is int:
            values.append(str(value))
        elif kind is str:
            values.append(escape(value))
        else:
            values.append("" if value is None else conditional_escape(value))
    return values


def _stamped_lines(
    template: str,
    rows: Iterable[Row],
    slots: Sequence[str],
    shape: Any,
    stand_in: Any,
    page: Mapping[str, Any],
) -> SafeString:
    """
    Render rows through ``template`` (a loop over ``rows``), one stamp per shape.

    ``shape(row)`` is what the template's conditions decide on, ``stand_in(row)``
    a row of that shape whose values are the stand-ins of ``slots``, and
    ``page`` the rest of the template's context (a few page settings).
    """
    loaded: Any = get_template(template)
    if not _is_own(getattr(loaded, "template", loaded)):
        # A site's own row template: rendered as it is, with every row.
        return SafeString(loaded.render({"rows": list(rows), **page}))
    settings_key = tuple(sorted(page.items()))
    # Each slot's path of keys, split once per page rather than per row.
    paths = [name.split(".") for name in slots]
    stamps: dict[tuple[Any, ...], Stamp] = {}
    lines = []
    for row in rows:
        key = (template, *shape(row), *settings_key)
        drawn = stamps.get(key)
        if drawn is None:
            drawn = stamps[key] = stamp(
                template,
                {"rows": [stand_in(row)], **page},
                len(slots),
                key=key,
            )
        lines.append(drawn.fill(*_row_values(row, paths)))
    return SafeString("".join(lines))


def execution_lines(
    rows: Iterable[Row],
    *,
    triage: bool,
    may_stop: bool,
    may_recover: bool,
    poll_seconds: int,
) -> SafeString:
    """
    Render execution rows (Presenter.executions's) through their template.

    partials/execution_row.html renders once per row shape (status, flags,
    what the row has) and page setting, with stand-ins for the row's own
    values; each row then fills it in. A page of 50 rows placed about 1,300
    values through the template engine, more than the rest of the page.
    The output is what rendering the template with the rows gives, up to
    the whitespace between rows.
    """
    return _stamped_lines(
        _ROW_TEMPLATE,
        rows,
        _ROW_SLOTS,
        _row_shape,
        _row_stand_in,
        {
            "triage": bool(triage),
            "may_stop": bool(may_stop),
            "may_recover": bool(may_recover),
            "poll_seconds": int(poll_seconds),
        },
    )


#: The values of a job's instance row that differ from row to row.
_INSTANCE_SLOTS: Final = (
    "id",
    "url",
    "created.iso",
    "created.text",
    "created.utc",
    "created.ago",
    "parameter_value_chips",
    "parameter_chips",
    "more_parameters",
    "hold_actor",
    "hold_reason",
    "latest_url",
    "latest_label",
    "latest_id",
)


def _instance_shape(row: Row) -> tuple[Any, ...]:
    """Return what an instance row's markup decides on, beside its values."""
    return (
        bool(row.get("parameter_values")),
        bool(row.get("parameter_chips")),
        bool(row.get("more_parameters")),
        bool(row.get("hold_actor")),
        bool(row.get("latest_url")),
        bool(row.get("latest_id")),
        row.get("latest_status"),
        row.get("created") is not None,
    )


def _instance_stand_in(row: Row) -> Row:
    """Return an instance row of stand-ins, shaped like ``row``."""
    stands = {name: slot(number) for number, name in enumerate(_INSTANCE_SLOTS)}

    def present(name: str) -> SafeString | None:
        return stands[name] if row.get(name) else None

    return {
        **{name: present(name) for name in _INSTANCE_SLOTS if "." not in name},
        "id": stands["id"],
        "url": stands["url"],
        "parameter_values": bool(row.get("parameter_values")),
        "latest_status": row.get("latest_status"),
        "tone": row.get("tone"),
        "created": (
            _moment(stands, "created") if row.get("created") is not None else None
        ),
    }


def instance_lines(rows: Iterable[Row]) -> SafeString:
    """
    Render a job's instance rows (Presenter.instances's) through their template.

    partials/instance_row.html renders once per row shape, as execution
    rows do (:func:`execution_lines`).
    """
    return _stamped_lines(
        "batchboard/partials/instance_row.html",
        rows,
        _INSTANCE_SLOTS,
        _instance_shape,
        _instance_stand_in,
        {},
    )


#: The values of an overview job row that differ from row to row.
_JOB_SLOTS: Final = (
    "name",
    "url",
    "strip_label",
    "chips",
    "last.created.iso",
    "last.created.text",
    "last.created.utc",
    "last.created.ago",
    "running_url",
    "running_label",
)


def _job_shape(row: Row) -> tuple[Any, ...]:
    """Return what an overview job row's markup decides on, beside its values."""
    last = row.get("last")
    return (
        bool(row.get("strip")),
        last["status"] if last else None,
        bool(row.get("running")),
    )


def _job_stand_in(row: Row) -> Row:
    """Return an overview job row of stand-ins, shaped like ``row``."""
    stands = {name: slot(number) for number, name in enumerate(_JOB_SLOTS)}
    last = row.get("last")
    return {
        **{name: value for name, value in stands.items() if "." not in name},
        "strip": bool(row.get("strip")),
        "running": bool(row.get("running")),
        "last": (
            {
                "status": last["status"],
                "tone": last["tone"],
                "created": _moment(stands, "last.created"),
            }
            if last
            else None
        ),
    }


def job_lines(rows: Iterable[Row]) -> SafeString:
    """
    Render the overview's job rows (Presenter.jobs's) through their template.

    partials/job_row.html renders once per row shape (whether the job has
    runs, its last run's status, whether any run is unresolved), as
    execution rows do (:func:`execution_lines`).
    """
    return _stamped_lines(
        "batchboard/partials/job_row.html",
        rows,
        _JOB_SLOTS,
        _job_shape,
        _job_stand_in,
        {},
    )
