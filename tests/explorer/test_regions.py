"""
Every region a page shows requires the read permission of its records.

Each template region that lists records names their model in
``data-bb-records`` (the view permission's codename after ``view_``). The
pages come from the URL resolver, so a new page is checked without anyone
adding it here; for each read permission a user holding every other
permission of batchboard opens every page, as a page and as an htmx
fragment, and must be refused or shown no region of that model.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tests import factories
from tests.explorer.conftest import READ_MODELS, History
from tests.explorer.test_audit import _retention

HTMX = {"HTTP_HX_REQUEST": "true"}
MARKER = re.compile(r'data-bb-records="([^"]*)"')


def _patterns(
    patterns: list[URLPattern | URLResolver],
) -> Iterator[URLPattern]:
    for each in patterns:
        if isinstance(each, URLResolver):
            yield from _patterns(each.url_patterns)
        else:
            yield each


def pages() -> list[tuple[str, tuple[str, ...]]]:
    """Return every batchboard URL name with the names of its parameters."""
    _prefix, resolver = get_resolver().namespace_dict["batchboard"]
    return [
        (str(each.name), tuple(getattr(each.pattern, "converters", {})))
        for each in _patterns(resolver.url_patterns)
    ]


def _arguments(history: History) -> dict[str, Any]:
    """A record for each URL parameter: a partitioned run with every list."""
    partition = history.partitioned.partitions.order_by("id").first()
    assert partition is not None
    return {
        "execution_id": history.restart.pk,
        "a": history.failed.pk,
        "b": history.restart.pk,
        "instance_id": history.instance.pk,
        "step_id": history.partitioned.pk,
        "partition_id": partition.pk,
        "job_name": history.instance.job_name,
        "source": "executions",
        "action": "ABANDON",
        "bulk_id": "bulk-none",
        "channel_id": factories.alert_channel(factories.user("channel-owner")).pk,
        "view_id": factories.saved_view(factories.user("view-owner")).pk,
        "policy_id": factories.retention_policy(factories.user("policy-owner")).pk,
    }


def _urls(history: History) -> list[str]:
    arguments = _arguments(history)
    urls = []
    for name, parameters in pages():
        unknown = set(parameters) - set(arguments)
        # A page whose parameter has no record here must get one.
        assert not unknown, (name, unknown)
        kwargs = {parameter: arguments[parameter] for parameter in parameters}
        urls.append(reverse(f"batchboard:{name}", kwargs=kwargs))
    return urls


def _text(response: Any) -> str:
    """Return a page's body, or a download's (streamed, never HTML)."""
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return str(response.content.decode())


def _markers(body: str) -> set[str]:
    return {token for found in MARKER.findall(body) for token in found.split()}


def _user(name: str, *, lacking: str | None = None) -> Client:
    user = User.objects.create_user(name)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="batchboard").exclude(
            codename=lacking
        )
    )
    client = Client()
    client.force_login(user)
    return client


def _read_permissions() -> list[str]:
    return list(
        Permission.objects.filter(
            content_type__app_label="batchboard", codename__startswith="view_"
        )
        .order_by("codename")
        .values_list("codename", flat=True)
    )


def _record_history(history: History) -> None:
    """Add what the fixture lacks: a retention action for the audit log."""
    factories.operator_request(history.restart, "STOP")
    _retention("HOLD", history.instance)


def test_each_page_shows_no_region_whose_read_permission_is_missing(
    history: History,
) -> None:
    _record_history(history)
    urls = _urls(history)
    assert len(urls) >= 20
    everything = _user("everything")
    shown: set[str] = set()
    for url in urls:
        for headers in ({}, HTMX):
            response = everything.get(url, **headers)
            assert response.status_code < 500, url
            shown |= _markers(_text(response))
    permissions = _read_permissions()
    # Every marker names a read permission, and the pages list every kind
    # of record a reader may be refused.
    assert {f"view_{token}" for token in shown} <= set(permissions), shown
    assert shown >= {*READ_MODELS, "retentionaction", "parameter_values"}, shown
    for codename in permissions:
        lacking = _user(f"without-{codename}", lacking=codename)
        model = codename.removeprefix("view_")
        for url in urls:
            for headers in ({}, HTMX):
                response = lacking.get(url, **headers)
                assert response.status_code < 500, (codename, url)
                if response.status_code == 200:
                    assert model not in _markers(_text(response)), (
                        codename,
                        url,
                        headers,
                    )


def _statements(client: Client, url: str, **headers: str) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, **headers)
    assert response.status_code == 200, url
    return [query["sql"] for query in captured.captured_queries]


def _compared(
    url: str, codename: str, **headers: str
) -> tuple[list[str], list[str], Client]:
    """
    Return the statements ``url`` runs for a user holding every permission
    and for one lacking ``codename``, with the latter's client; each user
    opens it once before, so session and permission caches are warm alike.
    """
    everything = _user("everything")
    lacking = _user(f"without-{codename}", lacking=codename)
    for client in (everything, lacking):
        client.get(url, **headers)
    shown = _statements(everything, url, **headers)
    return shown, _statements(lacking, url, **headers), lacking


def test_the_job_grid_is_neither_read_nor_shown_without_the_step_permission(
    history: History,
) -> None:
    url = reverse("batchboard:job_history", args=[history.instance.job_name])
    shown, hidden, lacking = _compared(url, "view_stepexecution", **HTMX)
    assert len(hidden) == len(shown) - 1
    assert not any("ob_step_execution" in sql for sql in hidden)
    body = lacking.get(url, **HTMX).content.decode()
    assert 'class="bb-grid"' not in body and 'class="bb-trend"' in body
    assert "needs the “view step execution” permission" in body


def test_partitions_are_neither_read_nor_shown_without_their_permission(
    history: History,
) -> None:
    url = reverse("batchboard:execution", args=[history.restart.pk])
    shown, hidden, lacking = _compared(url, "view_steppartition")
    assert any("ob_step_partition" in sql for sql in shown)
    assert not any("ob_step_partition" in sql for sql in hidden)
    assert len(hidden) < len(shown)
    body = lacking.get(url).content.decode()
    assert "part-1" not in body, body[body.index("part-1") - 300 :][:600]
    assert 'class="bb-partitions"' not in body
    assert "bb-segments" not in body and "bb-timeline-partitions" not in body
    assert "needs the “view step partition” permission" in body
    # The worker step is still a step of the execution, shown as one.
    assert f'id="bb-step-{history.running_step.pk}"' in body
    # "Load more" and the live region read the same way.
    more = _statements(lacking, f"{url}?size=1&shown=1")
    assert not any("ob_step_partition" in sql for sql in more)
    live = reverse("batchboard:execution_live", args=[history.restart.pk])
    assert not any(
        "ob_step_partition" in sql for sql in _statements(lacking, live, **HTMX)
    )
