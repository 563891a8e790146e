"""
Template filters and one tag of the explorer: ``{% load batchboard %}``.

Each filter turns one value into text (no markup: the templates hold it).
Rows get their times, ages and links from
:mod:`batchboard.explorer.presenters`, which computes them once per page.
``{% once_per_language %}`` renders fixed markup once per language.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django import template
from django.conf import settings
from django.template import Context
from django.template.base import FilterExpression, NodeList, Parser, Token
from django.template.defaulttags import URLNode
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils.safestring import SafeString
from django.utils.translation import get_language

from batchboard import export, spans
from batchboard.actions import eligibility, permissions
from batchboard.explorer.presenters import NOTHING, Clock, group_digits
from batchboard.explorer.stamps import execution_lines, instance_lines, job_lines
from batchboard.personal import zones

register = template.Library()


@register.filter
def seconds(value: int) -> str:
    """Return a number of seconds in human units, e.g. ``"15 min"``."""
    return spans.span(float(value), whole=True)


@register.filter
def span(value: float) -> str:
    """Return a measured span of seconds in human units, e.g. ``"5 h 07 min"``."""
    return spans.span(float(value))


@register.filter
def hexdigest(value: bytes | memoryview | None) -> str:
    """Return bytes as lowercase hex (digests are displayable, spec 3.5)."""
    if value is None:
        return NOTHING
    return bytes(value).hex()


@register.filter
def short_hex(value: bytes | memoryview | None) -> str:
    """Return the first twelve hex digits of bytes, for a digest's cell."""
    if value is None:
        return NOTHING
    return bytes(value).hex()[:12] + "…"


@register.filter
def offers(row: Any, action: str) -> bool:
    """
    Return whether an execution row offers ``action`` (STOP or ABANDON).

    Reads the row's ``status`` and ``stop_requested_at``; the answer is
    :mod:`batchboard.actions.eligibility`'s. A row knows no recovery
    decision, so ABANDON of an UNKNOWN execution is never offered here.
    """
    answers = eligibility.for_execution(
        str(row.get("status", "")),
        stop_requested=bool(row.get("stop_requested_at")),
    )
    answer = answers.get(action)
    return answer is not None and answer.offered


@register.filter
def number(value: int | None) -> str:
    """Group digits with thin spaces so large counters stay readable."""
    return group_digits(value)


@register.filter
def size(value: int | None) -> str:
    """Return a byte count in binary units."""
    if value is None:
        return NOTHING
    amount = float(value)
    for unit in ("B", "KiB"):
        if amount < 1024:
            return f"{int(amount)} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{amount:.1f} MiB"


@register.filter
def get(mapping: dict[str, Any] | None, key: str) -> Any:
    """Return ``mapping[key]``, or ``None`` (a template cannot index by variable)."""
    return mapping.get(key) if mapping else None


@register.simple_tag(takes_context=True)
def execution_rows(context: Context, rows: list[dict[str, Any]]) -> SafeString:
    """
    Render execution rows through partials/execution_row.html, stamped.

    The same markup as including the row template with ``rows``, rendered
    once per row shape (stamps.execution_lines).
    """
    return execution_lines(
        rows,
        triage=bool(context.get("triage")),
        may_stop=bool(context.get("may_stop")),
        may_recover=bool(context.get("may_recover")),
        poll_seconds=int(context.get("poll_seconds") or 0),
    )


@register.simple_tag
def job_rows(rows: list[dict[str, Any]]) -> SafeString:
    """Render the overview's job rows through partials/job_row.html, stamped."""
    return job_lines(rows)


@register.simple_tag
def instance_rows(rows: list[dict[str, Any]]) -> SafeString:
    """Render a job's instance rows through partials/instance_row.html, stamped."""
    return instance_lines(rows)


class OncePerLanguageNode(template.Node):
    """Render the enclosed markup once per language (and ``vary`` values)."""

    # Its markup holds no block: {% extends %} need not look inside.
    child_nodelists = ()

    def __init__(self, nodelist: NodeList, vary: list[FilterExpression]) -> None:
        self.nodelist = nodelist
        self.vary = vary
        # Links depend on the URL setup, which then joins the key.
        self.links = bool(nodelist.get_nodes_by_type(URLNode))
        self.rendered: dict[tuple[Any, ...], SafeString] = {}

    def render(self, context: Context) -> SafeString:
        # The language a page renders in is in its context (base.html and
        # the explorer's views put it there, as Django's i18n context
        # processor does): asking the translation machinery again costs
        # more than the fragment.
        key: list[Any] = [context.get("LANGUAGE_CODE") or get_language()]
        if self.links:
            key += (get_script_prefix(), get_urlconf(), settings.ROOT_URLCONF)
        key += [value.resolve(context) for value in self.vary]
        markup = self.rendered.get(tuple(key))
        if markup is None:
            markup = SafeString(self.nodelist.render(context))
            self.rendered[tuple(key)] = markup
        return markup


@register.tag
def once_per_language(parser: Parser, token: Token) -> OncePerLanguageNode:
    """
    Render markup that depends only on the language (and on ``vary``) once.

    ``{% once_per_language [vary ...] %}...{% endonce_per_language %}``: a
    table's column headings, the header's fixed parts. A translate tag costs
    several plain variables, and these fragments are on every page. The
    enclosed markup may read nothing from the context but the ``vary``
    values (each of a small closed set) and may hold no block; links are
    fine. The language is the context's ``LANGUAGE_CODE``, so a fragment
    inside ``{% language %}`` must not use this tag.
    """
    vary = [parser.compile_filter(bit) for bit in token.split_contents()[1:]]
    nodelist = parser.parse(("endonce_per_language",))
    parser.delete_first_token()
    return OncePerLanguageNode(nodelist, vary)


#: The actions each list offers "on all matching": executions, instances.
_BULK_OFFERS = {
    "executions": ("STOP", "ABANDON", "RECOVER"),
    "unresolved": ("STOP", "ABANDON", "RECOVER"),
    "instances": ("HOLD", "RELEASE_HOLD"),
}


@register.inclusion_tag("batchboard/partials/bulk_entry.html", takes_context=True)
def bulk_entry(context: Context, source: str, job: str = "") -> dict[str, Any]:
    """
    Offer "Act on all matching…" for list ``source`` under its filters.

    Only the actions the user may apply are offered; a user who may apply
    none sees nothing. The links carry the list's filters (its query string
    without the paging, or the job of an instances list).
    """
    request = context.get("request")
    if request is None:
        return {"links": []}
    if source == "instances":
        query = urlencode({"job": job})
    else:
        query = urlencode(
            [
                (key, value)
                for key, values in request.GET.lists()
                if key not in ("cursor", "size", "after")
                for value in values
            ]
        )
    links = [
        (
            action,
            reverse("batchboard:bulk_plan", args=[source, action])
            + (f"?{query}" if query else ""),
        )
        for action in _BULK_OFFERS[source]
        if permissions.may(request.user, action)
    ]
    return {"links": links}


@register.inclusion_tag("batchboard/partials/time.html", takes_context=True)
def timestamp(context: Context, value: datetime | None) -> dict[str, Any]:
    """
    Show one time of a record the presenters do not prepare (a bulk
    operation's, a token's): ``datetime=`` and ``title=`` in UTC, the text in
    the signed-in user's time zone.
    """
    request = context.get("request")
    # The context's user: an error page for a failed database sets it to
    # None, so that rendering touches the database no more.
    user = context.get("user")
    if request is None or not getattr(user, "is_authenticated", False):
        return {"time": Clock().moment(value)}
    with zones.activate_for(request):
        return {"time": Clock().moment(value)}


@register.simple_tag(takes_context=True)
def time_zone_choice(context: Context) -> str:
    """Return the signed-in user's time-zone choice (personal.zones); UTC if none."""
    request = context.get("request")
    user = context.get("user")
    if request is None or not getattr(user, "is_authenticated", False):
        return zones.UTC
    return zones.choice(request)


@register.inclusion_tag("batchboard/partials/save_view.html", takes_context=True)
def save_view_form(context: Context) -> dict[str, Any]:
    """Offer "Save this view" for the list page being shown (personal.lists)."""
    request = context.get("request")
    if request is None:
        return {"location": ""}
    return {"location": request.get_full_path_info()}


@register.inclusion_tag("batchboard/partials/export_links.html", takes_context=True)
def export_links(context: Context, name: str, *args: Any) -> dict[str, Any]:
    """
    Offer the download of a list as CSV and NDJSON, under its current filters.

    ``name`` (and ``args``) name the export's URL; the links carry the
    page's query string without its paging (:func:`batchboard.export.filters`).
    """
    request = context.get("request")
    if request is None:
        return {}
    query = export.filters_query(request.GET)
    base = reverse(name, args=args) + "?" + (f"{query}&" if query else "")
    return {"csv_url": f"{base}format=csv", "ndjson_url": f"{base}format=ndjson"}
