"""
Which pages a saved view may keep, and what of their address it keeps.

:data:`LISTS` is the one allow-list: a list page's URL name (in the
``batchboard`` namespace) and the form its query string is read with. A
saved view keeps the URL name, the path arguments and those of the form's
fields that are filters: every field marked
:class:`~batchboard.explorer.inputs.Continuation` (a cursor, a position)
is dropped, and so is any key the form does not know. A query string that
the list itself would refuse is refused here too, before anything is kept.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from html import unescape
from typing import Any
from urllib.parse import unquote, urlencode, urlsplit

from django.http import QueryDict
from django.urls import NoReverseMatch, Resolver404, resolve, reverse

from batchboard.explorer import inputs
from batchboard.explorer.audit import AuditForm
from batchboard.explorer.links import job_url, url_pattern

__all__ = ["LISTS", "ListAddress", "NotAList", "address", "continuation_keys"]

#: The pages a view may be saved of: URL name -> the form of its filters.
LISTS: dict[str, type[inputs.ExplorerForm]] = {
    "index": inputs.OverviewForm,
    "executions": inputs.ExecutionsForm,
    "unresolved": inputs.UnresolvedForm,
    "audit": AuditForm,
    "job": inputs.ListForm,
    "overdue": inputs.ExplorerForm,
    "inbox": inputs.ExplorerForm,
}


class NotAList(ValueError):
    """The address is not one of :data:`LISTS`, or its filters are invalid."""


def continuation_keys(form_class: type[inputs.ExplorerForm]) -> tuple[str, ...]:
    """Return the names of ``form_class``'s fields that say where a list continues."""
    return tuple(
        name
        for name, field in form_class.base_fields.items()
        if isinstance(field, inputs.Continuation)
    )


def _filter_keys(form_class: type[inputs.ExplorerForm]) -> tuple[str, ...]:
    dropped = continuation_keys(form_class)
    return tuple(name for name in form_class.base_fields if name not in dropped)


@dataclass(frozen=True)
class ListAddress:
    """A list page without its continuation: URL name, path arguments, filters."""

    url_name: str
    arguments: dict[str, str]
    query: str

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments, sort_keys=True)

    def url(self) -> str:
        """Return the list's address, or raise NotAList if it names no list now."""
        if self.url_name not in LISTS:
            raise NotAList(self.url_name)
        name = f"batchboard:{self.url_name}"
        try:
            if set(self.arguments) == {"job_name"}:
                # A job's name as its pages link it: "/" held as %2F.
                path = unescape(job_url(self.arguments["job_name"], url_pattern(name)))
            else:
                path = reverse(name, kwargs=self.arguments)
        except NoReverseMatch as error:
            raise NotAList(self.url_name) from error
        return f"{path}?{self.query}" if self.query else path


def kept_query(form_class: type[inputs.ExplorerForm], query: QueryDict) -> str:
    """Return ``query``'s filters as a query string; raise NotAList if invalid."""
    form = form_class(query)
    if not form.is_valid():
        raise NotAList(form.bad_input().message)
    kept = [
        (key, value)
        for key in _filter_keys(form_class)
        for value in query.getlist(key)
        if value != ""
    ]
    return urlencode(kept)


def address(location: str) -> ListAddress:
    """
    Return the saved form of ``location`` (a path and query string within
    the site, as ``request.get_full_path_info()`` gives it).
    """
    parts = urlsplit(location)
    if parts.scheme or parts.netloc or not parts.path.startswith("/"):
        raise NotAList(location)
    try:
        match = resolve(unquote(parts.path))
    except Resolver404 as error:
        raise NotAList(location) from error
    if "batchboard" not in match.app_names or match.url_name not in LISTS:
        raise NotAList(location)
    arguments: dict[str, Any] = {key: str(value) for key, value in match.kwargs.items()}
    query = kept_query(LISTS[match.url_name], QueryDict(parts.query))
    return ListAddress(match.url_name, arguments, query)
