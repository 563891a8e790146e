"""
The changelist of batchboard's admins: no COUNT, no deep OFFSET.

Page numbers exist for the first :data:`FIRST_PAGES` pages only, counted by
fetching at most that many rows' keys (:class:`LookaheadPaginator`). Every
page also carries a "next" link with the id of its last row
(``?after=<id>``), and a keyset page is one index-ordered query ``WHERE id <
after ORDER BY id DESC LIMIT per_page + 1``, whatever its depth
(:class:`KeysetChangeList`). A keyset parameter that is not one plain row id
raises :class:`KeysetInvalid`, which the admin answers with a 400 page.

The rows an admin action runs on arrive as ``_selected_action`` ids;
:func:`selected_ids` reads them before Django's action machinery does, so a
value that is not a row id is a 400, never a database error.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import quote
from django.contrib.admin.views.main import ALL_VAR, PAGE_VAR, ChangeList
from django.core.paginator import Paginator
from django.db.models import Model, QuerySet
from django.db.models.expressions import Combinable
from django.http import HttpRequest, QueryDict
from django.urls import reverse
from django.utils.functional import cached_property

from batchboard.vocabulary import is_row_id, parse_whole_number

__all__ = [
    "FIRST_PAGES",
    "KEYSET_VAR",
    "KeysetChangeList",
    "KeysetInvalid",
    "ROW_KEY",
    "LookaheadPaginator",
    "SelectionInvalid",
    "change_url",
    "keyset_after",
    "selected_ids",
]

#: Page numbers are offered for this many pages from the top; deeper pages
#: are reached only by the keyset link, so no query ever skips more than
#: ``FIRST_PAGES * list_per_page`` rows.
FIRST_PAGES = 10

#: The query parameter of a keyset page: the id of the last row seen. The
#: changelist removes it before Django parses filters from the query string.
KEYSET_VAR = "after"

#: Stands in for a row's key in the one change URL reversed per page.
ROW_KEY = "batchboard-row-key"


def change_url(cl: ChangeList) -> str:
    """
    Return the change URL of a row of ``cl``, :data:`ROW_KEY` for its key.

    A page reverses it once and substitutes each row's quoted key: reversing
    per row was a noticeable share of a changelist's render time.
    """
    opts = cl.opts
    return reverse(
        f"admin:{opts.app_label}_{opts.model_name}_change",
        args=(ROW_KEY,),
        current_app=cl.model_admin.admin_site.name,
    )


# Paginator is generic in the type stubs only.
class LookaheadPaginator(Paginator):  # type: ignore[type-arg]
    """
    Paginate the first :data:`FIRST_PAGES` pages without ``COUNT(*)``.

    ``count`` fetches at most ``FIRST_PAGES * per_page + 1`` primary keys
    from the top of the list, so its cost is bounded by the window, not by
    the size of the history. When rows follow the window, the count stops at
    the window and :attr:`truncated` is true: the pages past it are reached
    through the keyset link instead of a page number.
    """

    @cached_property
    def _window(self) -> tuple[int, bool]:
        window = self.per_page * FIRST_PAGES
        rows = self.object_list
        # A queryset fetches keys only; anything else is already in memory.
        keys = rows.values_list("pk", flat=True) if isinstance(rows, QuerySet) else rows
        found = len(keys[: window + 1])
        return min(found, window), found > window

    @property
    def count(self) -> int:
        """Return the number of rows within the first pages."""
        return self._window[0]

    @property
    def truncated(self) -> bool:
        """Return whether more rows follow the numbered pages."""
        return self._window[1]


class KeysetInvalid(ValueError):
    """The keyset parameter of a changelist is not one plausible row id."""


def keyset_after(query: QueryDict) -> int | None:
    """
    Return the id a keyset page starts after, or None for a numbered page.

    Raise :class:`KeysetInvalid` unless the parameter occurs once, is a
    plain positive bigint and comes without a page number or "show all".
    """
    values = query.getlist(KEYSET_VAR)
    if not values:
        return None
    after = parse_whole_number(values[0]) if len(values) == 1 else None
    # Written as the page writes it: no leading zero, so one page has one URL.
    if after is None or not is_row_id(after) or values[0] != str(after):
        raise KeysetInvalid
    if PAGE_VAR in query or ALL_VAR in query:
        raise KeysetInvalid
    return after


class SelectionInvalid(ValueError):
    """A row selected for an admin action is not named by a row id."""


def selected_ids(query: QueryDict) -> list[int]:
    """
    Return the ids of the rows selected for an admin action (maybe none).

    Raise :class:`SelectionInvalid` if one is not a row id (1 to the largest
    bigint, ASCII digits): Django would pass it on to ``pk__in``, where text
    fails to convert and a number past bigint overflows SQLite.
    """
    ids = [parse_whole_number(value) for value in query.getlist(ACTION_CHECKBOX_NAME)]
    found = [ident for ident in ids if ident is not None and is_row_id(ident)]
    if len(found) != len(ids):
        raise SelectionInvalid
    return found


class KeysetChangeList(ChangeList):
    """
    A changelist ordered by descending primary key that pages deep by keyset.

    Without ``after`` it is Django's changelist over the first pages (with
    :class:`LookaheadPaginator`); with ``after`` it shows the rows whose id
    is below it, filters and search applied, in one query. Either way
    :attr:`next_url` leads on from the page's last row, and every other link
    (filters, page numbers, search) starts again from the newest rows.
    """

    def __init__(self, request: HttpRequest, *args: Any, **kwargs: Any) -> None:
        self.after = keyset_after(request.GET)
        self.next_url: str | None = None
        super().__init__(request, *args, **kwargs)
        # The search form re-posts ``params`` as hidden inputs; a new search
        # starts at the top.
        self.params.pop(KEYSET_VAR, None)
        self.first_url = self.get_query_string()

    def get_filters_params(
        self, params: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Return the filter lookups of the query string, without the keyset."""
        lookups = super().get_filters_params(params)
        lookups.pop(KEYSET_VAR, None)
        return lookups

    def get_query_string(
        self,
        new_params: dict[str, Any] | None = None,
        remove: Iterable[str] | None = None,
    ) -> str:
        """Build a link that drops the keyset unless it sets one."""
        params = {KEYSET_VAR: None, **(new_params or {})}
        return super().get_query_string(params, remove)

    @cached_property
    def _change_url(self) -> tuple[str, str]:
        head, _key, tail = change_url(self).partition(ROW_KEY)
        return head, tail

    def url_for_result(self, result: Model) -> str:
        """Return a row's change URL from one reversal per page, not per row."""
        head, tail = self._change_url
        return f"{head}{quote(getattr(result, self.pk_attname))}{tail}"

    def get_ordering(
        self, request: HttpRequest, queryset: QuerySet[Any]
    ) -> list[str | Combinable]:
        """Order by descending primary key always: the keyset depends on it."""
        return ["-pk"]

    def get_results(self, request: HttpRequest) -> None:
        columns = getattr(self.model_admin, "list_columns", ())
        if columns:
            # The rows load only what they show. Actions select their rows
            # afresh (``get_queryset``), with every displayable column.
            self.queryset = self.queryset.only(*columns)
        if self.after is None:
            super().get_results(request)
            rows = list(self.result_list)
            paginator = self.paginator
            more = (
                self.multi_page
                and not (self.show_all and self.can_show_all)
                and (
                    self.page_num < paginator.num_pages
                    or getattr(paginator, "truncated", False)
                )
            )
        else:
            # One index-ordered query whatever the depth; one row more than
            # the page tells whether a next page exists.
            fetched = list(
                self.queryset.filter(pk__lt=self.after)[: self.list_per_page + 1]
            )
            more = len(fetched) > self.list_per_page
            rows = fetched[: self.list_per_page]
            self.result_count = len(rows)
            self.full_result_count = None
            self.show_full_result_count = False
            self.show_admin_actions = True
            self.can_show_all = False
            self.multi_page = False
            # Never asked for its count: the pagination shows no numbers here.
            self.paginator = self.model_admin.get_paginator(
                request, self.queryset, self.list_per_page
            )
        self.result_list = rows
        if more and rows:
            self.next_url = self.get_query_string(
                {KEYSET_VAR: rows[-1].pk}, remove=[ALL_VAR]
            )
