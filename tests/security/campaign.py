"""
The hostile-input campaign's targets, taken from the source of truth.

- **URL patterns** come from the standalone site's URL resolver
  (``batchboard.site.urls``): the dashboard, the console, the sign-in and
  sign-out pages, the health probes, the admin site's own pages and the
  admin pages of batchboard's models (the admin pages of other apps'
  models are not batchboard's). :func:`fill` puts real ids and names from
  the seeded history in each path parameter and fails on one it cannot
  fill, so a new URL pattern with a new kind of parameter stops the
  campaign until the campaign knows what to put there.
- **Parameters** are every field declared by a form class of batchboard
  (:func:`form_fields`), every literal key batchboard's source reads from
  request data (:func:`source_keys`, by the rule of ``test_source``), and
  the admin's changelist, popup and action parameters with each model
  admin's declared filters (:func:`admin_parameters`).
- **Which page reads which parameter** is observed, not declared: the
  campaign records the keys a view reads from its query string or form
  data, and whether it consults the htmx headers (:func:`recording`), while it finds, one parameter at a time, valid
  values that the page accepts together (its baseline). A parameter the
  page's form gains is read, so it is fuzzed, without anyone listing it.
  The admin's changelist copies its query string into a dict before
  reading it, so its declared parameters are added to what it reads.
"""

from __future__ import annotations

import ast
import contextlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from django import forms
from django.contrib import admin
from django.contrib.admin import helpers
from django.contrib.admin.utils import quote as admin_quote
from django.contrib.admin.views.main import (
    ALL_VAR,
    ERROR_FLAG,
    IS_FACETS_VAR,
    IS_POPUP_VAR,
    ORDER_VAR,
    PAGE_VAR,
    SEARCH_VAR,
    TO_FIELD_VAR,
)
from django.contrib.contenttypes.models import ContentType
from django.db.models import Model
from django.http import QueryDict
from django.test import RequestFactory
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.urls.converters import get_converters
from django.utils.datastructures import MultiValueDict
from django_htmx.middleware import HtmxDetails

from batchboard import cursors, vocabulary
from batchboard.admin.changelist import KEYSET_VAR
from batchboard.admin.readonly import ReadOnlyAdmin
from batchboard.console import forms as console_forms
from batchboard.models import JobExecution
from tests.security.test_source import PACKAGE, _functions, _Taint
from tests.site.history import History

# -- URL patterns ------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """One URL pattern of the site, as the resolver holds it."""

    route: str
    pattern: URLPattern
    #: The model of an admin page of one model, else None.
    model: type[Model] | None

    @property
    def name(self) -> str:
        return self.pattern.name or ""

    @property
    def changelist(self) -> bool:
        return self.name.endswith("_changelist") and self.model is not None


def targets() -> list[Target]:
    """Return every URL pattern of the standalone site batchboard answers for."""
    found: list[Target] = []
    models = {
        f"admin/{model._meta.app_label}/{model._meta.model_name}/": model
        for model in admin.site._registry
    }

    # A route that an earlier one already answers (the site's payload-free
    # view-on-site shortcut ahead of the admin's) can never be reached.
    answered: set[str] = set()

    def walk(patterns: list[URLPattern | URLResolver], prefix: str) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, route)
                continue
            shape = _ROUTE_PARAMETER.sub(lambda m: f"<{m['name']}>", route)
            if shape in answered:
                continue
            answered.add(shape)
            owner = next(
                (model for head, model in models.items() if route.startswith(head)),
                None,
            )
            # The admin pages of other apps' models are not batchboard's.
            if owner is None or owner._meta.app_label == "batchboard":
                found.append(Target(route, pattern, owner))

    walk(get_resolver().url_patterns, "")
    return found


_ROUTE_PARAMETER = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")
_REGEX_PARAMETER = re.compile(r"\(\?P<(?P<name>\w+)>[^)]*\)")


def path_values(world: History) -> dict[str, Callable[[Target], str]]:
    """Return, per path parameter name, a real value for a target."""
    rows = {type(row): row for row in world.objects()}

    def object_id(target: Target) -> str:
        if target.model is None:
            # The admin's "view on site" shortcut: an execution.
            return str(world.restart.pk)
        row = rows.get(target.model)
        if row is None:
            # batchboard's own state (API tokens, ...): the campaign's rows.
            row = target.model._default_manager.order_by("pk").first()
        if row is None:
            raise UnfilledParameter(f"{target.route}: no {target.model.__name__} row")
        return str(admin_quote(row.pk))

    return {
        "execution_id": lambda _t: str(world.restart.pk),
        # Two executions compared: a failed attempt and its restart.
        "a": lambda _t: str(world.failed.pk),
        "b": lambda _t: str(world.restart.pk),
        "instance_id": lambda _t: str(world.instance.pk),
        "step_id": lambda _t: str(world.step.pk),
        "partition_id": lambda _t: str(world.partition.pk),
        "job_name": lambda _t: world.instance.job_name,
        "object_id": object_id,
        "content_type_id": lambda _t: str(
            ContentType.objects.get_for_model(JobExecution).pk
        ),
        "app_label": lambda _t: "batchboard",
        # Bulk actions: a plan's list and action, and a recorded operation.
        "source": lambda _t: "executions",
        "action": lambda _t: "ABANDON",
        "bulk_id": lambda _t: _bulk_id(),
        "channel_id": lambda _t: _channel_id(),
        "view_id": lambda _t: _view_id(),
        "policy_id": lambda _t: _policy_id(),
        "url": lambda _t: "no-such-page/",
    }


def _bulk_id() -> str:
    """Return the newest recorded bulk operation's id."""
    from batchboard.state import BulkOperation

    found = BulkOperation.objects.order_by("-pk").values_list("bulk_id", flat=True)
    first = found.first()
    if first is None:
        raise UnfilledParameter("no bulk operation recorded")
    return str(first)


def _channel_id() -> str:
    """Return the first alert channel's id."""
    from batchboard.alerts.models import Channel

    first = Channel.objects.order_by("pk").values_list("pk", flat=True).first()
    if first is None:
        raise UnfilledParameter("no alert channel recorded")
    return str(first)


def _view_id() -> str:
    """Return the first saved view's id."""
    from batchboard.personal.models import SavedView

    first = SavedView.objects.order_by("pk").values_list("pk", flat=True).first()
    if first is None:
        raise UnfilledParameter("no saved view recorded")
    return str(first)


def _policy_id() -> str:
    """Return the first retention policy's id."""
    from batchboard.alerts.models import RetentionPolicy

    first = RetentionPolicy.objects.order_by("pk").values_list("pk", flat=True).first()
    if first is None:
        raise UnfilledParameter("no retention policy recorded")
    return str(first)


class UnfilledParameter(LookupError):
    """A URL pattern has a path parameter the campaign has no value for."""


def fill(
    target: Target, world: History, override: tuple[str, str] | None = None
) -> str:
    """
    Return ``target``'s URL with a real value in each path parameter.

    ``override`` puts a given text (percent-encoded) in one parameter.
    Raise :class:`UnfilledParameter` for a parameter of unknown name.
    """
    values = path_values(world)
    converters = get_converters()

    def value(name: str) -> str | None:
        if override is not None and override[0] == name:
            return quote(override[1], safe="")
        if name not in values:
            raise UnfilledParameter(f"{target.route}: no value for <{name}>")
        return None

    def route_part(match: re.Match[str]) -> str:
        name = match["name"]
        given = value(name)
        if given is not None:
            return given
        text = values[name](target)
        converter = converters.get(match["converter"] or "str")
        written = converter.to_url(text) if converter else text
        return quote(str(written), safe="/")

    def regex_part(match: re.Match[str]) -> str:
        name = match["name"]
        given = value(name)
        return given if given is not None else values[name](target)

    url = _REGEX_PARAMETER.sub(regex_part, target.route)
    url = _ROUTE_PARAMETER.sub(route_part, url)
    return "/" + url.replace("^", "").replace("$", "")


def check_fill(target: Target, world: History) -> str:
    """Return the filled URL, after checking it reaches its own pattern."""
    url = fill(target, world)
    match = resolve(url.split("?")[0].replace("%2F", "/"))
    assert match.func is target.pattern.callback, (target.route, url, match.route)
    return url


def path_parameters(target: Target) -> list[str]:
    regex = [m["name"] for m in _REGEX_PARAMETER.finditer(target.route)]
    plain = _REGEX_PARAMETER.sub("", target.route)
    return [*regex, *(m["name"] for m in _ROUTE_PARAMETER.finditer(plain))]


# -- parameters --------------------------------------------------------------------


def _subclasses(root: type) -> Iterator[type]:
    for sub in root.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def form_classes() -> list[type[forms.BaseForm]]:
    """Return every form class batchboard defines (URLs imported: all of them)."""
    get_resolver().url_patterns  # noqa: B018  (imports every view's module)
    return sorted(
        {
            form
            for form in _subclasses(forms.BaseForm)
            if form.__module__.startswith("batchboard.")
        },
        key=lambda form: f"{form.__module__}.{form.__qualname__}",
    )


def form_fields() -> dict[str, list[forms.Field]]:
    """Return every declared form field of batchboard, by its name."""
    fields: dict[str, list[forms.Field]] = {}
    for form in form_classes():
        for name, declared in form.base_fields.items():
            fields.setdefault(name, []).append(declared)
    return fields


_READERS = frozenset({"get", "getlist", "pop", "setlist", "setdefault"})


def source_keys() -> set[str]:
    """Return the literal keys batchboard's source reads from request data."""
    keys: set[str] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in _functions(tree):
            taint = _Taint(function)
            for node in ast.walk(function):
                key: ast.expr | None = None
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in _READERS
                    and node.args
                    and (
                        taint.holds(node.func.value)
                        or _names_request_data(node.func.value)
                    )
                ):
                    key = node.args[0]
                elif isinstance(node, ast.Subscript) and taint.holds(node.value):
                    key = node.slice
                elif (
                    isinstance(node, ast.Compare)
                    and isinstance(node.ops[0], ast.In | ast.NotIn)
                    and taint.holds(node.comparators[0])
                ):
                    key = node.left
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    keys.add(key.value)
    return keys


def _names_request_data(node: ast.expr) -> bool:
    return any(
        isinstance(part, ast.Attribute) and part.attr in ("GET", "POST")
        for part in ast.walk(node)
    )


#: The admin's own changelist and change page parameters.
ADMIN_CHANGELIST = (
    ALL_VAR,
    ORDER_VAR,
    PAGE_VAR,
    SEARCH_VAR,
    ERROR_FLAG,
    IS_FACETS_VAR,
    IS_POPUP_VAR,
    TO_FIELD_VAR,
    KEYSET_VAR,
    "_changelist_filters",
)
#: The fields of an admin action's form.
ADMIN_ACTION = (
    "action",
    helpers.ACTION_CHECKBOX_NAME,
    "index",
    "select_across",
    "post",
)


def admin_filters(model: type[Model]) -> tuple[str, ...]:
    """Return the filter parameters ``model``'s admin declares."""
    model_admin = admin.site._registry.get(model)
    if not isinstance(model_admin, ReadOnlyAdmin):
        return ()
    request = RequestFactory().get("/")
    return tuple(sorted(model_admin.filter_parameters(request)))


def admin_parameters() -> set[str]:
    """Return the admin's parameters and every model admin's filters."""
    names = {*ADMIN_CHANGELIST, *ADMIN_ACTION}
    for model in admin.site._registry:
        if model._meta.app_label == "batchboard":
            names.update(admin_filters(model))
    return names


@dataclass
class Universe:
    """Every parameter name, and the fields that declare it."""

    fields: dict[str, list[forms.Field]]
    names: list[str] = field(default_factory=list)

    @classmethod
    def build(cls) -> Universe:
        fields = form_fields()
        names = sorted({*fields, *source_keys(), *admin_parameters()})
        return cls(fields, names)


# -- valid values ------------------------------------------------------------------


def _field_values(declared: forms.Field) -> list[str]:
    minimum = getattr(declared, "minimum", None)
    if minimum is not None:
        return [str(minimum), str(declared.maximum)]  # type: ignore[attr-defined]
    action = getattr(declared, "action", None)
    if action is not None:
        return [reason.code for reason in vocabulary.reasons_for(action)]
    if isinstance(declared, console_forms.HexDigestField):
        return ["ab" * 32]
    if isinstance(declared, console_forms.FlagField):
        return ["1"]
    choices = getattr(declared, "choices", None)
    if choices:
        first = next(iter(choices))
        return [str(first[0] if isinstance(first, tuple) else first)]
    return []


def valid_values(
    name: str, universe: Universe, world: History, password: str | None
) -> list[str]:
    """Return values of ``name`` to try for a baseline, most specific first."""
    known: dict[str, list[str]] = {
        "job": [world.instance.job_name],
        "job_name": [world.instance.job_name],
        "statuses": ["FAILED"],
        "expected_version": [str(world.restart.version)],
        "after": [
            str(world.step.pk),
            f"{world.instance.pk}:{world.failed.pk}",
            str(world.restart.pk + 1),
        ],
        "operation_id": ["fuzz-operation-1"],
        "username": [] if password is None else [password],
        "password": [] if password is None else [password],
        "kind": ["execution"],
        "id": [str(world.restart.pk)],
        "panel": ["1"],
        "age_days": ["1"],
        "age_hours": ["2"],
        "action": ["stop_executions", "place_holds"],
        helpers.ACTION_CHECKBOX_NAME: [str(world.restart.pk)],
        "index": ["0"],
        "post": ["yes"],
        "status__exact": ["FAILED"],
        SEARCH_VAR: ["nightly"],
        PAGE_VAR: ["1"],
    }
    values = list(known.get(name, []))
    for declared in universe.fields.get(name, []):
        values += [v for v in _field_values(declared) if v not in values]
    return values or ["1", "x"]


#: What the campaign sends, one parameter at a time, the others valid.
HOSTILE: tuple[str, ...] = (
    "²",
    "٣",
    "+3",
    "-1",
    str(2**63),
    "9" * 5000,
    "\x00",
    "a\x1b\x7f\x85b",
    "",
    "x" * 20_000,
    "<bbx-script>alert(1)</bbx-script>",
    "ff" * 40,
    "0" * (2 * cursors.MAX_TOKEN_BYTES + 2),
    "1:²",
)
#: Sent to every parameter a page does not read, all at once: one of each
#: kind of digit, a control character and markup.
TOGETHER = ("²", "+3", "\x00", "<bbx-script>alert(1)</bbx-script>")


# -- what a view reads -------------------------------------------------------------


@dataclass
class Reads:
    """What a view read of its request: parameter names, and htmx headers."""

    keys: set[str] = field(default_factory=set)
    htmx: bool = False


@contextlib.contextmanager
def recording() -> Iterator[Reads]:
    """Record the keys read from any query string or form data meanwhile."""
    reads = Reads()
    originals: dict[str, Any] = {
        name: getattr(MultiValueDict, name)
        for name in ("__getitem__", "get", "getlist", "__contains__", "pop")
    }

    def wrap(name: str) -> Any:
        original = originals[name]

        def recorded(self: MultiValueDict[str, Any], key: Any, *args: Any) -> Any:
            # Query strings and form data only: the URL resolver keeps its
            # reverse lookups in a MultiValueDict too.
            if isinstance(self, QueryDict) and isinstance(key, str):
                reads.keys.add(key)
            return original(self, key, *args)

        return recorded

    header = HtmxDetails._get_header_value

    def consulted(self: HtmxDetails, name: str) -> str | None:
        reads.htmx = True
        return header(self, name)

    for name in originals:
        setattr(MultiValueDict, name, wrap(name))
    HtmxDetails._get_header_value = consulted  # type: ignore[method-assign]
    try:
        yield reads
    finally:
        for name, original in originals.items():
            setattr(MultiValueDict, name, original)
        HtmxDetails._get_header_value = header  # type: ignore[method-assign]
