"""
Links to where a failure's cause lives: a log search, a tracing tool.

oxide-batch stores no error text (spec 3.5, 9.2): a failure is a category
and an id. A site names, in ``BATCHBOARD["FAILURE_LINK"]`` and
``BATCHBOARD["EXECUTION_LINKS"]``, URL templates with named fields that
this module fills in for one execution or step:

- ``FAILURE_LINK``: one template, shown beside a failure (an execution's or
  a step's, on its page and in the execution lists).
- ``EXECUTION_LINKS``: ``(label, template)`` pairs, shown on execution and
  step pages.

Only the fields of :data:`FIELDS` exist, all of them values the contract
allows a page to display (ids, the job name, the failure's category and
id, times, the step name); never a parameter value or anything a job
wrote. Each value is percent-encoded whole (``/``, ``&``, ``?`` included),
so it cannot change the link's shape; times are ISO 8601 in UTC. A field
the record does not have (``{step}`` on an execution page) keeps the link
off that page; a field it has but is empty now (``{ended_at}`` of a running
execution, the failure of a run that has none) is filled in empty.

:func:`problem` says what is wrong with a template; the system check
(checks.py, ``batchboard.E030`` and ``E031``) asks it at startup, so a page
never meets a template that does not parse.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import quote

from django.utils.translation import gettext_lazy as _

from batchboard import conf
from batchboard.explorer.pagination import Row

__all__ = [
    "FIELDS",
    "CauseLink",
    "execution_links",
    "failure_link",
    "failure_links",
    "problem",
    "step_links",
]

#: The fields a link template may name: what the contract lets a page show.
FIELDS: Final = (
    "execution_id",
    "instance_id",
    "job",
    "failure_category",
    "failure_id",
    "started_at",
    "ended_at",
    "step",
)

_SCHEMES: Final = ("http://", "https://")


@dataclass(frozen=True)
class CauseLink:
    """One link to where a cause lives: its label and its filled-in URL."""

    label: Any
    url: str


def _parts(template: str) -> list[tuple[str, str | None, str | None, str | None]]:
    return list(string.Formatter().parse(template))


def problem(template: object) -> str | None:
    """
    Return what is wrong with a link template, or ``None`` if it is sound.

    Sound: a string that starts with ``http://`` or ``https://`` and a host
    written out (no field before the path), whose braces pair up, and whose
    fields are among :data:`FIELDS`, each bare (no conversion, no format).
    Literal braces are doubled: ``{{`` and ``}}``.
    """
    if not isinstance(template, str):
        return f"{template!r} is not a string"
    try:
        parts = _parts(template)
    except ValueError as error:
        return f"{template!r} has malformed braces ({error})"
    for _literal, name, spec, conversion in parts:
        if name is None:
            continue
        if name not in FIELDS:
            return f"{template!r} names the unknown field {{{name}}}"
        if spec or conversion:
            return f"{template!r} formats the field {{{name}}}; name it bare"
    head = parts[0][0] if parts else ""
    if not head.lower().startswith(_SCHEMES):
        return f"{template!r} is not an http:// or https:// URL"
    # The host is written out: a value never chooses where the link goes.
    host = head.split("://", 1)[1]
    fields = any(name is not None for _literal, name, _s, _c in parts)
    if host[:1] in ("", "/", "?", "#") or (
        fields and not any(mark in host for mark in "/?#")
    ):
        return f"{template!r} does not write out its host before the first field"
    return None


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return str(value)


def _fill(template: str, values: Mapping[str, object]) -> str | None:
    """
    Return ``template`` filled with ``values``, each percent-encoded whole,
    or ``None`` when it names a field the record does not have.
    """
    names = {name for _literal, name, _s, _c in _parts(template) if name}
    if not names <= values.keys():
        return None
    return template.format_map(
        {name: quote(_text(values[name]), safe="") for name in names}
    )


def _values(row: Row, execution_id: object) -> dict[str, object]:
    """Return the fields a link template may name, for either kind of row."""
    return {
        "execution_id": execution_id,
        "instance_id": row["job_instance_id"],
        "job": row["job_name"],
        "failure_category": row.get("failure_category"),
        "failure_id": row.get("failure_id"),
        "started_at": row.get("started_at"),
        "ended_at": row.get("ended_at"),
    }


def _execution_values(row: Row) -> dict[str, object]:
    return _values(row, row["id"])


def _step_values(row: Row) -> dict[str, object]:
    return {**_values(row, row["job_execution_id"]), "step": row["step_name"]}


def _failure_template() -> str | None:
    template = conf.get_config().get("FAILURE_LINK")
    return template if isinstance(template, str) and template else None


def _link_templates() -> list[tuple[Any, str]]:
    configured = conf.get_config().get("EXECUTION_LINKS") or []
    return [(label, template) for label, template in configured]


def _links(values: Mapping[str, object]) -> list[CauseLink]:
    links = []
    failure = _failure_template()
    if failure and values.get("failure_category"):
        url = _fill(failure, values)
        if url is not None:
            links.append(CauseLink(_("Look up this failure"), url))
    for label, template in _link_templates():
        url = _fill(template, values)
        if url is not None:
            links.append(CauseLink(label, url))
    return links


def failure_link(row: Row) -> str | None:
    """Return an execution row's ``FAILURE_LINK``, if it has a failure."""
    failure = _failure_template()
    if failure is None or not row.get("failure_category"):
        return None
    return _fill(failure, _execution_values(row))


def failure_links(rows: list[Row]) -> None:
    """Give the execution rows that have a failure their ``failure_link``."""
    if _failure_template() is None:
        return
    for row in rows:
        link = failure_link(row)
        if link is not None:
            row["failure_link"] = link


def execution_links(row: Row) -> list[CauseLink]:
    """Return the cause links of an execution page: the failure's first."""
    return _links(_execution_values(row))


def step_links(row: Row) -> list[CauseLink]:
    """Return the cause links of a step page: the step's failure's first."""
    return _links(_step_values(row))
