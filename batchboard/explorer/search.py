"""
Parameter search: find a job's instance by its typed identifying parameters.

A job name and its identifying parameters (name, kind, value) give the
instance key of the contract (spec 7.1, :func:`batchboard.digests.instance_key`),
and the key is one lookup in the unique ``(job_name, instance_key)`` index:
no scan of the instances, and no value is compared in the database.

The values are typed by the reader and come only in a POST body. They are
parsed here and turned into the key, and go nowhere else: no error message
repeats one (messages name the parameter and its kind), the form given back
keeps names and kinds but never a value, and the search logs nothing.
Only a holder of ``view_parameter_values`` may search (the view's guard):
whether an instance exists tells whether those values were ever run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from django.http import QueryDict
from django.utils.translation import gettext as _

from batchboard import cursors, db
from batchboard.digests import (
    PARAMETER_KINDS,
    JobParameter,
    ParameterError,
    instance_key,
    validate_name,
)
from batchboard.models import JobInstance
from batchboard.vocabulary import parse_whole_number

#: Parameter rows one search takes (blank rows aside).
MAX_SEARCH_PARAMETERS: Final = 64
#: Rows the form offers at least, and blank rows after a job's own names.
FORM_ROWS: Final = 3
SPARE_ROWS: Final = 2
#: What a bool parameter's value is typed as (any case).
BOOL_WORDS: Final = {"true": True, "false": False}

_I64: Final = (-(2**63), 2**63 - 1)
_U64: Final = (0, 2**64 - 1)


@dataclass
class Search:
    """A search as read from the form: what it looks for, or what is wrong."""

    job_name: str = ""
    parameters: dict[str, JobParameter] = field(default_factory=dict)
    #: Each row's name and kind (never its value), to give the form back.
    rows: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _magnitude(text: str) -> int | None:
    """Return ASCII digits as a number (up to a u64's twenty), or None."""
    # The one parser reads up to a bigint's 19 digits; a u64 may have 20.
    if len(text) == 20:
        head, last = parse_whole_number(text[:-1], None), parse_whole_number(text[-1:])
        return None if head is None or last is None else head * 10 + last
    return parse_whole_number(text, None)


def _number(text: str, kind: str) -> int | None:
    """Return ``text`` as an integer of ``kind`` (i64 or u64), or None."""
    negative = kind == "i64" and text.startswith("-")
    magnitude = _magnitude(text.removeprefix("-") if negative else text)
    if magnitude is None:
        return None
    number = -magnitude if negative else magnitude
    low, high = _I64 if kind == "i64" else _U64
    return number if low <= number <= high else None


def _typed(name: str, kind: str, text: str) -> JobParameter | str:
    """Return the parameter, or the error message (which omits the value)."""
    value: str | int | bool | None
    if kind == "string":
        value = text
    elif kind == "bool":
        value = BOOL_WORDS.get(text.strip().lower())
    else:
        value = _number(text.strip(), kind)
    if value is None:
        if kind == "bool":
            return _("The value of “%(name)s” must be true or false.") % {"name": name}
        return _(
            "The value of “%(name)s” is not a whole number within the range of "
            "%(kind)s."
        ) % {"name": name, "kind": kind}
    try:
        return JobParameter(kind, value)  # type: ignore[arg-type]
    except ParameterError:
        return _("The value of “%(name)s” is too long for a %(kind)s parameter.") % {
            "name": name,
            "kind": kind,
        }


def read(data: QueryDict) -> Search:
    """
    Read a search from a POST: ``job``, then rows of ``name``, ``kind``, ``value``.

    A row without a name is left out when its value is blank too; the
    first :data:`MAX_SEARCH_PARAMETERS` rows are read.
    """
    search = Search(job_name=str(data.get("job", "")).strip())
    if not search.job_name:
        search.errors.append(_("Give the job's name."))
    elif len(search.job_name.encode("utf-8")) > cursors.MAX_NAME_BYTES:
        search.errors.append(
            _("A job name holds at most %(max)s bytes.")
            % {"max": cursors.MAX_NAME_BYTES}
        )
        search.job_name = ""
    names, kinds, values = (
        data.getlist(key)[: MAX_SEARCH_PARAMETERS + 1]
        for key in ("name", "kind", "value")
    )
    if len(names) > MAX_SEARCH_PARAMETERS:
        search.errors.append(
            _("A search takes at most %(max)s parameters.")
            % {"max": MAX_SEARCH_PARAMETERS}
        )
    for index, name in enumerate(names[:MAX_SEARCH_PARAMETERS]):
        name = str(name)
        kind = str(kinds[index]) if index < len(kinds) else ""
        text = str(values[index]) if index < len(values) else ""
        if not name.strip():
            if text:
                search.errors.append(_("A value was given without a parameter name."))
            continue
        try:
            validate_name(name, what="parameter name")
        except ParameterError:
            search.errors.append(
                _(
                    "A parameter name is 1 to 128 bytes, without surrounding "
                    "spaces or control characters."
                )
            )
            continue
        if kind not in PARAMETER_KINDS:
            search.errors.append(
                _("Choose the type of “%(name)s”: one of %(kinds)s.")
                % {"name": name, "kinds": ", ".join(PARAMETER_KINDS)}
            )
            continue
        search.rows.append((name, kind))
        if name in search.parameters:
            search.errors.append(
                _("The parameter “%(name)s” is given twice.") % {"name": name}
            )
            continue
        parameter = _typed(name, kind, text)
        if isinstance(parameter, str):
            search.errors.append(parameter)
        else:
            search.parameters[name] = parameter
    return search


def find(search: Search) -> int | None:
    """
    Return the id of the instance the search names, or ``None``.

    One lookup of the unique ``(job_name, instance_key)`` index.
    """
    try:
        key = instance_key(search.job_name, search.parameters)
    except ParameterError:
        # A name oxide-batch could not have keyed: no instance carries it.
        return None
    found = (
        JobInstance.objects.using(db.read_alias())
        .filter(job_name=search.job_name, instance_key=key)
        .values_list("id", flat=True)
        .first()
    )
    return int(found) if found is not None else None


def form_rows(known: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """
    Return the rows the form offers: the names and kinds given (or a job's
    own), then blank rows. Never a value.
    """
    rows = [
        {"name": name, "kind": kind.lower()}
        for name, kind in known[:MAX_SEARCH_PARAMETERS]
    ]
    blank = max(SPARE_ROWS, FORM_ROWS - len(rows))
    room = MAX_SEARCH_PARAMETERS - len(rows)
    rows += [{"name": "", "kind": "string"} for _row in range(min(blank, room))]
    return rows
