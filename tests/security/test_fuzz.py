"""
The hostile-input campaign: every URL of batchboard and of its admin pages,
with nasty path segments and GET parameters, as anonymous, viewer, operator
and administrator.

Whatever comes in, the answer is below 500, never reflects markup raw, shows
no parameter value to a role without ``view_parameter_values``, and writes
no row. Hypothesis draws the values (Unicode digits, NUL and other control
characters, 5,000 digits, newlines, RTL marks, 64 KiB strings, markup) and a
fixed sweep sends each of the worst to every parameter of every URL.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from urllib.parse import quote, urlencode

import pytest
from django.apps import apps
from django.contrib.auth.models import Permission, User
from django.contrib.sessions.models import Session
from django.db import connections, router
from django.db.models import IntegerField, Model
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.site.history import SECRET, History, create_history

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "viewer", "operator", "administrator")

#: Markup whose tag no page ever contains: finding it raw is a reflection.
MARKUP = (
    "<bbx-script>alert(1)</bbx-script>",
    '"><bbx-img src=x onerror=alert(1)>',
    "'><bbx-svg onload=alert(1)>",
)
RAW_TAG = re.compile(r"<bbx-")

#: The worst values, each sent to every parameter and path segment.
NASTY = (
    "²",
    "٣",
    "𝟗",
    "\x00",
    "a\x00b",
    "9" * 5000,
    "9" * 20,
    "-1",
    "1\n",
    "\r\n",
    "\u202eevil\u202c",
    "\ufeff1",
    "x" * 65536,
    "%00",
    "../../etc/passwd",
    "' OR 1=1 --",
    "(.|.)*Z",
    *MARKUP,
)

#: Every GET parameter a batchboard page or the admin reads, and a few more.
PARAMS = (
    "size",
    "cursor",
    "status",
    "job",
    "age",
    "after",
    "id",
    "kind",
    "triage",
    "panel",
    "job_name",
    "statuses",
    "min_age",
    "batch",
    "q",
    "o",
    "p",
    "all",
    "e",
    "_popup",
    "_to_field",
    "_changelist_filters",
    "status__exact",
    "held",
    "next",
    "identifying_parameters__x__value__startswith",
    # The JSON API's parameters.
    "page_size",
    "unresolved_age",
    "record",
)

_CONVERTER = re.compile(r"<(?:(?P<kind>[^>:]+):)?(?P<name>[^>]+)>")


def _routes() -> list[str]:
    """Return every route of batchboard and of the admin's batchboard pages."""
    found: list[str] = []

    def walk(patterns: list[URLPattern | URLResolver], prefix: str) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, route)
            elif route.startswith("admin/"):
                if route.startswith("admin/batchboard/") or route in (
                    "admin/",
                    "admin/login/",
                ):
                    found.append(route)
            elif "^" not in route and "(?P" not in route:
                found.append(route)

    walk(get_resolver().url_patterns, "")
    found.append("admin/batchboard/")
    return found


ROUTES = _routes()


def _url(route: str, segment: str) -> str:
    """Put ``segment`` (percent-encoded) in every converter of ``route``."""
    return "/" + _CONVERTER.sub(lambda _match: quote(segment, safe=""), route)


def _snapshot() -> list[tuple[object, ...]]:
    """Return each table's row count and largest key, one statement per database."""
    by_alias: dict[str, list[type[Model]]] = {}
    for model in (
        *apps.get_app_config("batchboard").get_models(),
        User,
        Session,
        apps.get_model("admin", "LogEntry"),
    ):
        alias = router.db_for_read(model) or "default"
        by_alias.setdefault(alias, []).append(model)
    out = []
    for alias, models in sorted(by_alias.items()):
        connection = connections[alias]
        parts = []
        for model in models:
            table = connection.ops.quote_name(model._meta.db_table)
            parts.append(f"(SELECT COUNT(*) FROM {table})")
            pk = model._meta.pk
            # Integer keys only: a composite key (upgrade edges) and the
            # schema version's boolean singleton are counted only.
            if isinstance(pk, IntegerField) and pk.column:
                key = connection.ops.quote_name(pk.column)
                parts.append(f"(SELECT MAX({key}) FROM {table})")
        with connection.cursor() as cursor:
            cursor.execute("SELECT " + ", ".join(parts))
            out.append(tuple(cursor.fetchone()))
    return out


def _client(role: str) -> Client:
    client = Client()
    if role == "anonymous":
        return client
    user = User.objects.get(username=role)
    client.force_login(user)
    return client


def _users() -> None:
    view = Permission.objects.filter(
        content_type__app_label="batchboard", codename__startswith="view_"
    ).exclude(codename="view_parameter_values")
    grants = {
        "viewer": [],
        "operator": ["operate_lifecycle"],
        "administrator": [
            "operate_lifecycle",
            "operate_destructive",
            "view_parameter_values",
        ],
    }
    for name, extra in grants.items():
        user = User.objects.create_user(
            name, password=name, is_staff=name == "administrator"
        )
        user.user_permissions.set(
            [
                *view,
                *Permission.objects.filter(
                    content_type__app_label="batchboard", codename__in=extra
                ),
            ]
        )


@pytest.fixture
def world(db: None) -> Iterator[History]:
    history = create_history()
    _users()
    yield history


def _check(
    client: Client,
    role: str,
    url: str,
    params: dict[str, str],
    *,
    variants: bool = True,
) -> None:
    """GET ``url`` (also as htmx and as HEAD, with ``variants``) and judge it."""
    query = urlencode(params)
    full = f"{url}?{query}" if query else url
    for headers in ({}, {"HTTP_HX_REQUEST": "true"}) if variants else ({},):
        response = client.get(full, **headers)
        assert response.status_code < 500, (role, full[:300], response.status_code)
        body = response.content.decode("utf-8", "replace")
        assert not RAW_TAG.search(body), (role, full[:300])
        assert not RAW_TAG.search(response.get("Location", "")), (role, full[:300])
        if role != "administrator":
            assert SECRET not in body, (role, full[:300])
    if variants:
        assert client.head(full).status_code < 500, (role, full[:300])


# -- the fixed sweep ---------------------------------------------------------------

#: The sweep's share of NASTY: one of each kind.
WORST = (
    "²",
    "\x00",
    "9" * 5000,
    "9" * 20,
    "1\n",
    "\u202eevil\u202c",
    "x" * 65536,
    "(.|.)*Z",
    MARKUP[0],
    MARKUP[1],
)


def _sweep_routes() -> list[str]:
    """The explorer's and console's routes, and each admin page kind once."""
    return [
        route
        for route in ROUTES
        if not route.startswith("admin/batchboard/")
        or route.startswith("admin/batchboard/jobinstance/")
        or route.startswith("admin/batchboard/jobexecution/")
    ]


# The roles that reach furthest and least far past sign-in; hypothesis
# below covers all four.
@pytest.mark.parametrize("role", ["viewer", "administrator"])
def test_every_route_survives_the_worst_values(world: History, role: str) -> None:
    client = _client(role)
    before = _snapshot()
    for route in _sweep_routes():
        if "<" in route:
            real = _url(
                route,
                world.instance.job_name
                if "job_name" in route
                else str(world.failed.pk),
            )
        else:
            real = "/" + route
        for value in WORST:
            # In every path segment, then in every parameter of a real page.
            if "<" in route:
                _check(client, role, _url(route, value), {}, variants=False)
            # A huge value in a few parameters: every one of them is a
            # megabyte-sized query string that tests nothing more.
            names = PARAMS if len(value) < 1000 else PARAMS[:3]
            _check(client, role, real, dict.fromkeys(names, value), variants=False)
    assert _snapshot() == before


# -- hypothesis --------------------------------------------------------------------

_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=40
)
VALUES = st.one_of(
    _TEXT,
    st.sampled_from(NASTY),
    st.builds(lambda t: f"<bbx-{t}>", st.text("abc=\"' ", max_size=8)),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.text(alphabet="0123456789²³¹٠١٢٣४५𝟘𝟙", min_size=1, max_size=30),
    st.text(
        alphabet="\x00\t\n\r\x0b\x0c\x1b\x7f\x85\u2028\u2029\u202e\u200f", max_size=6
    ),
    st.integers(min_value=1, max_value=8).map(lambda n: "x" * (n * 8192)),
)


@pytest.mark.parametrize("role", ROLES)
@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    route=st.sampled_from(ROUTES),
    segment=VALUES,
    params=st.dictionaries(
        st.one_of(st.sampled_from(PARAMS), _TEXT.filter(bool)), VALUES, max_size=4
    ),
)
def test_hypothesis_draws_find_no_server_error(
    world: History,
    role: str,
    route: str,
    segment: str,
    params: dict[str, str],
) -> None:
    client = _client(role)
    before = _snapshot()
    _check(client, role, _url(route, segment), params)
    assert _snapshot() == before


# -- the JSON API's bodies ---------------------------------------------------------

API_ROUTES = [route for route in ROUTES if route.startswith("api/v1/")]
_JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False),
        VALUES,
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(_TEXT, inner, max_size=3),
    ),
    max_leaves=8,
)
#: Every field an API body takes, so draws reach past the unknown-field check.
BODY_FIELDS = (
    "expected_version",
    "operation_id",
    "reason",
    "directive",
    "evidence_digest",
    "failure_category",
    "failure_id",
    "job",
    "older_than",
    "batch",
    "status",
    "plan_digest",
    "action",
    "list",
    "age",
    "filters",
    "items",
    "digest",
    "bulk_id",
)


def test_the_fuzz_covers_every_api_route() -> None:
    from batchboard.api.urls import urlpatterns

    named = {str(p.pattern) for p in urlpatterns if "^" not in str(p.pattern)}
    assert {route.removeprefix("api/v1/") for route in API_ROUTES} == named


@pytest.mark.parametrize("role", ROLES)
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    route=st.sampled_from(API_ROUTES),
    segment=VALUES,
    body=st.one_of(
        st.dictionaries(st.sampled_from(BODY_FIELDS), _JSON, max_size=6),
        _JSON,
        st.binary(max_size=64),
    ),
)
def test_hypothesis_json_bodies_get_the_envelope(
    world: History, role: str, route: str, segment: str, body: object
) -> None:
    """POST drawn bodies to every API route: the envelope, never a 500 or HTML."""
    client = _client(role)
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    real = (
        _url(route, str(world.failed.pk)) if segment.isascii() else _url(route, segment)
    )
    response = client.post(real, raw, content_type="application/json")
    assert response.status_code < 500, (role, real[:200], response.status_code)
    assert response["Content-Type"] == "application/json", (role, real[:200])
    text = response.content.decode("utf-8")
    assert not RAW_TAG.search(text)
    assert json.loads(text)["schema_version"] == 1
