"""
Drawn JSON bodies POSTed to every API route answer the envelope.

The routes come from the URL resolver through the security campaign
(:func:`tests.security.campaign.targets`), so a new API route is fuzzed
without anyone adding it. Whatever the role, the path segment and the body
(a JSON value, an object of the API's own field names, or raw bytes), the
answer is below 500, JSON, in the envelope, and carries no markup raw.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchboard.api.urls import urlpatterns
from tests.security import campaign
from tests.security.test_fuzz import ROLES, _users
from tests.site.history import History, create_history

pytestmark = pytest.mark.django_db

RAW_TAG = re.compile(r"<bbx-")
API_TARGETS = [t for t in campaign.targets() if t.route.startswith("api/v1/")]

_TEXT = st.text(max_size=40)
_JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False),
        _TEXT,
        st.sampled_from(campaign.HOSTILE),
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


@pytest.fixture
def world(db: None) -> Iterator[History]:
    history = create_history()
    _users()
    yield history


def test_the_campaign_reaches_every_api_route() -> None:
    # The API's catch-all (an unknown command's envelope) is a regex route.
    named = {str(p.pattern) for p in urlpatterns}
    assert {t.route.removeprefix("api/v1/") for t in API_TARGETS} == named


@pytest.mark.parametrize("role", ROLES)
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    index=st.integers(min_value=0, max_value=len(API_TARGETS) - 1),
    segment=st.one_of(st.none(), st.sampled_from(campaign.HOSTILE)),
    body=st.one_of(
        st.dictionaries(st.sampled_from(BODY_FIELDS), _JSON, max_size=6),
        _JSON,
        st.binary(max_size=64),
    ),
)
def test_drawn_json_bodies_get_the_envelope(
    world: History, role: str, index: int, segment: str | None, body: object
) -> None:
    """POST drawn bodies to every API route: the envelope, never a 500 or HTML."""
    target = API_TARGETS[index]
    client = Client()
    if role != "anonymous":
        client.force_login(User.objects.get(username=role))
    parameters = campaign.path_parameters(target)
    override = (parameters[0], segment) if parameters and segment else None
    url = campaign.fill(target, world, override)
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    response = client.post(url, raw, content_type="application/json")
    assert response.status_code < 500, (role, url[:200], response.status_code)
    assert response["Content-Type"] == "application/json", (role, url[:200])
    text = response.content.decode("utf-8")
    assert not RAW_TAG.search(text)
    assert json.loads(text)["schema_version"] == 1
