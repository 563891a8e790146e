"""
Every batchboard page and fragment is sent ``Cache-Control: private, no-store``.

The URLs come from the resolver, not from a list: a new pattern in the
``batchboard`` namespace is checked without anyone adding it, and a pattern
whose path parameters this test cannot fill fails it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils.cache import get_max_age

from batchboard import actions
from batchboard.actions.bulk.plan import bulk_digest
from batchboard.personal.models import SavedView
from tests import factories

pytestmark = pytest.mark.django_db


def _batchboard_patterns(
    resolver: URLResolver, namespace: str | None = None
) -> Iterator[URLPattern]:
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            inner = entry.namespace or namespace
            yield from _batchboard_patterns(entry, inner)
        elif namespace == "batchboard":
            yield entry


PATTERNS = sorted(
    _batchboard_patterns(get_resolver()), key=lambda pattern: str(pattern.name)
)


@pytest.fixture
def records() -> dict[str, Any]:
    """One of each record a batchboard URL names, with parameter values."""
    factories.definition("nightly-import")
    instance = factories.instance("nightly-import")
    execution = factories.execution(instance, "FAILED")
    restart = factories.execution(instance, "COMPLETED", restart_of=execution)
    step = factories.step(execution, status="FAILED")
    partition = factories.partition(step, "p1", 1)
    return {
        "job_name": "nightly-import",
        "instance_id": instance.pk,
        "execution_id": execution.pk,
        "a": execution.pk,
        "b": restart.pk,
        # The two rows the executions list's compare form sends.
        "pair": [execution.pk, restart.pk],
        "step_id": step.pk,
        "partition_id": partition.pk,
        "bulk_id": _bulk_operation(execution),
        "source": "executions",
        "action": "ABANDON",
        "channel_id": factories.alert_channel(factories.user("channel-owner")).pk,
        "view_id": factories.saved_view(factories.user("view-owner")).pk,
        "policy_id": factories.retention_policy(factories.user("policy-owner")).pk,
    }


def _bulk_operation(execution: Any) -> str:
    """Abandon ``execution`` in a bulk operation and return its bulk id."""
    items = [(execution.pk, execution.version)]
    filters = {"list": "executions", "status": "FAILED"}
    actions.apply_bulk(
        user=User.objects.create_superuser("bulk-operator"),
        action="ABANDON",
        filters=filters,
        items=items,
        digest=bulk_digest("ABANDON", filters, items),
        bulk_id="nightly-bulk",
        reason_code="OPERATOR_DECISION",
    )
    return "nightly-bulk"


def _url(pattern: URLPattern, records: dict[str, Any]) -> str:
    names = list(pattern.pattern.converters)  # type: ignore[attr-defined]
    unknown = [name for name in names if name not in records]
    assert not unknown, f"{pattern.name}: no value for {unknown}; add one to records"
    return reverse(
        f"batchboard:{pattern.name}", kwargs={name: records[name] for name in names}
    )


def _assert_no_store(response: Any, what: str) -> None:
    directives = {
        part.strip() for part in response.get("Cache-Control", "").split(",") if part
    }
    assert {"private", "no-store"} <= directives, (what, response.get("Cache-Control"))
    assert "public" not in directives
    assert get_max_age(response) in (None, 0)


def test_the_resolver_lists_the_pages_and_the_actions() -> None:
    names = {pattern.name for pattern in PATTERNS}
    assert {"index", "execution", "execution_live", "action_stop"} <= names
    assert len(PATTERNS) >= 25


#: Query parameters a page needs to show its record rather than a 400.
QUERIES = {
    "jump": {"kind": "execution", "id": "execution_id"},
    "compare_selected": {"execution": "pair"},
    # The API's unresolved list takes its age bound as the CLI does.
    "api-unresolved": {"unresolved_age": "15m"},
    # The purge plan's download is of a plan: a job's.
    "purge_export": {"job_name": "job_name"},
}


#: Headers a page needs to answer rather than refuse: /metrics a scraper's token.
HEADERS = {"metrics": {"Authorization": "Bearer scrape"}}


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda pattern: str(pattern.name))
@override_settings(BATCHBOARD={"METRICS_TOKEN": "scrape"})
def test_every_page_and_fragment_is_private_and_not_stored(
    pattern: URLPattern, records: dict[str, Any]
) -> None:
    url = _url(pattern, records)
    query = {
        key: records.get(value, value)
        for key, value in QUERIES.get(str(pattern.name), {}).items()
    }
    client = Client(headers=HEADERS.get(str(pattern.name), {}))
    checked = []
    anonymous = client.get(url, query)
    root = User.objects.create_superuser("root", password="pw")
    # A saved view opens for its owner: the signed-in user is made its owner.
    SavedView.objects.filter(pk=records["view_id"]).update(owner_id=root.pk)
    client.force_login(root)
    page = client.get(url, query)
    fragment = client.get(url, query, headers={"HX-Request": "true"})
    # An invalid POST to an action is an error page naming what was asked.
    posted = client.post(url, {})
    for response, kind in (
        (anonymous, "anonymous"),
        (page, "page"),
        (fragment, "fragment"),
        (posted, "POST"),
    ):
        if response.status_code == 405:
            # A method the view refuses before anything is read: no record.
            continue
        if kind in ("page", "fragment"):
            # The records are there to be shown: the page answers, not an error.
            assert response.status_code in (200, 302), (kind, url, response)
        _assert_no_store(response, f"{kind} {url}")
        checked.append(kind)
    assert "anonymous" in checked or "POST" in checked
