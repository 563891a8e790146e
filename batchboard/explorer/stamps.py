"""
Stamps: a partial rendered once, then filled in per item.

A list of 50 executions placed about 1,300 values through the template
engine; the overview's strips 3,000. A stamp renders an item's partial once
per *shape* (what its markup decides on: a status, a few flags) with
stand-ins (:func:`slot`) where the item's own values go, cuts the output at
the stand-ins (:class:`Stamp`) and fills each item in by joining strings.
Stamped partials: ``partials/execution_row.html``, ``instance_row.html``,
``job_row.html`` (rows, by :func:`execution_lines`, :func:`instance_lines`,
:func:`job_lines`), ``strip_chip.html``, ``trend_bar.html``,
``grid_cell.html`` and ``parameter_values.html``.

Rules for a template editor overriding a stamped partial:

- Keep its shape: a row partial is one loop over ``rows``.
- Place a row's own values (the ``*_SLOTS`` below: ids, links, names,
  times) anywhere and any number of times, but as they are: a filter on
  one (``{{ row.id|add:1 }}``, ``{{ row.job_name|upper }}``) sees the
  stand-in, not the value.
- Decide (``{% if %}``, ``|lower`` on the status, ...) only on what the
  shape holds (the ``_*_shape`` functions below) and the page's settings;
  a field outside the slots and the shape renders empty.

What a new column needs: its value added by the presenter, its name in the
partial's ``*_SLOTS`` (a value) or in its ``_*_shape`` and ``_*_stand_in``
(something the markup decides on), and the comparison test of
tests/explorer/test_stamps.py still passing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
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
        rendered = str(template.render(Context(dict(context))))
        found = _STAMPS[cache_key] = Stamp(*_split(rendered, slots))
    return found


@dataclass(frozen=True)
class Stamp:
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
    "created.ago",
    "duration",
    "updated_age",
    "failure_category",
    "failure_id",
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
        bool(row.get("exit_pending")),
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
        "exit_pending": row.get("exit_pending"),
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
            {
                "iso": stands["created.iso"],
                "text": stands["created.text"],
                "ago": stands["created.ago"],
            }
            if row.get("created") is not None
            else None
        ),
    }


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
            {
                "iso": stands["created.iso"],
                "text": stands["created.text"],
                "ago": stands["created.ago"],
            }
            if row.get("created") is not None
            else None
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
                "created": {
                    "iso": stands["last.created.iso"],
                    "text": stands["last.created.text"],
                    "ago": stands["last.created.ago"],
                },
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
