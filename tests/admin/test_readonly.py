"""The read-only base of the admins and the columns the admins share."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pytest
from django.contrib import admin
from django.contrib.admin.utils import flatten_fieldsets
from django.db.models import DateTimeField
from django.test import Client, RequestFactory
from django.urls import reverse

from batchboard.admin.changelist import FIRST_PAGES, LookaheadPaginator
from batchboard.admin.readonly import (
    EMPTY,
    UTC_SUFFIX,
    descriptor_field,
    hex_field,
    utc_column,
)
from tests import factories
from tests.admin.conftest import REGISTERED


class _Row(SimpleNamespace):
    pass


def test_a_digest_shows_as_hex_or_empty() -> None:
    field = hex_field("digest", "digest")
    assert field.__func__(_Row(digest=b"\x00\xab")) == "00ab"
    assert field.__func__(_Row(digest=memoryview(b"\x01"))) == "01"
    assert field.__func__(_Row(digest=None)) == EMPTY


def test_a_payload_shows_by_its_descriptor_only() -> None:
    field = descriptor_field("context", "context")
    row = _Row(
        context_schema="s.v1",
        context_schema_version=2,
        context_format=1,
        context_payload={"secret": 1},
    )
    assert field.__func__(row) == "s.v1 v2 (format 1)"


def test_a_moment_shows_in_utc() -> None:
    column = utc_column("ended_at", "ended")
    moment = dt.datetime(2026, 11, 30, 9, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert column(_Row(ended_at=moment)) == (
        '<time datetime="2026-11-30T08:00:00+00:00" title="2026-11-30 08:00:00Z">'
        "2026-11-30\u00a008:00:00Z</time>"
    )
    assert column(_Row(ended_at=None)) == EMPTY


@pytest.mark.parametrize("model", REGISTERED, ids=lambda m: m.__name__)
def test_every_field_shown_is_read_only(model: type) -> None:
    """Computed fields need no declaration: every field of the page is read-only."""
    model_admin = admin.site.get_model_admin(model)
    request = RequestFactory().get("/")
    assert model_admin.fields
    shown = model_admin.get_fields(request)
    assert model_admin.get_readonly_fields(request) == flatten_fieldsets(
        [(None, {"fields": shown})]
    )
    # Each timestamp is shown by its UTC field, in the dashboard's format.
    stamps = {
        field.name
        for field in model._meta.concrete_fields
        if isinstance(field, DateTimeField)
    }
    names = flatten_fieldsets([(None, {"fields": shown})])
    assert not stamps & set(names)
    assert {name for name in names if name.endswith(UTC_SUFFIX)} <= {
        f"{stamp}{UTC_SUFFIX}" for stamp in stamps
    }


def test_the_lookahead_counts_a_list_as_well() -> None:
    """Rows already in memory are counted by the same bounded window."""
    paginator = LookaheadPaginator(list(range(FIRST_PAGES * 2 + 1)), per_page=2)
    assert (paginator.count, paginator.truncated) == (FIRST_PAGES * 2, True)
    short = LookaheadPaginator([1, 2, 3], per_page=2)
    assert (short.count, short.truncated, short.num_pages) == (3, False, 2)


def test_statuses_exit_codes_and_dates_read_as_on_the_dashboard(viewer: Client) -> None:
    """
    The admin prints statuses as oxide-batch does, the dashboard's exit code
    rule ("running", "no exit code recorded") and timestamps in ISO UTC.
    """
    factories.definition("ledger")
    running = factories.execution(factories.instance("ledger"), "STARTED")
    recovered = factories.execution(
        factories.instance("ledger"), "FAILED", exit_code="UNKNOWN"
    )
    listed = viewer.get(reverse("admin:batchboard_jobexecution_changelist"))
    body = listed.content.decode()
    assert ">STARTED<" in body and ">Started<" not in body
    assert ">running<" in body and ">no exit code recorded<" in body
    assert "UNKNOWN</td>" not in body
    page = viewer.get(
        reverse("admin:batchboard_jobexecution_change", args=[running.pk])
    ).content.decode()
    created = running.created_at.astimezone(dt.UTC)
    assert f"{created:%Y-%m-%d}\u00a0{created:%H:%M:%S}Z" in page
    assert " a.m." not in page and " p.m." not in page
    assert '<div class="readonly">running</div>' in page
    assert '<div class="readonly">STARTED</div>' in page
    page = viewer.get(
        reverse("admin:batchboard_jobexecution_change", args=[recovered.pk])
    ).content.decode()
    assert '<div class="readonly">no exit code recorded</div>' in page
    instances = viewer.get(
        reverse("admin:batchboard_jobinstance_changelist")
    ).content.decode()
    made = running.job_instance.created_at.astimezone(dt.UTC)
    assert f"{made:%Y-%m-%d}\u00a0{made:%H:%M:%S}Z" in instances
    assert " a.m." not in instances and " p.m." not in instances
