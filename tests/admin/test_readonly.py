"""The read-only base of the admins and the columns the admins share."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pytest
from django.contrib import admin
from django.contrib.admin.utils import flatten_fieldsets
from django.test import RequestFactory

from batchboard.admin.changelist import FIRST_PAGES, LookaheadPaginator
from batchboard.admin.readonly import (
    EMPTY,
    descriptor_field,
    hex_field,
    utc_column,
)
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
        '<time datetime="2026-11-30T08:00:00+00:00">2026-11-30\u00a008:00:00Z</time>'
    )
    assert column(_Row(ended_at=None)) == EMPTY


@pytest.mark.parametrize("model", REGISTERED, ids=lambda m: m.__name__)
def test_every_field_shown_is_read_only(model: type) -> None:
    """Computed fields need no declaration: every field of the page is read-only."""
    model_admin = admin.site.get_model_admin(model)
    request = RequestFactory().get("/")
    assert model_admin.fields
    assert model_admin.get_readonly_fields(request) == flatten_fieldsets(
        [(None, {"fields": model_admin.fields})]
    )


def test_the_lookahead_counts_a_list_as_well() -> None:
    """Rows already in memory are counted by the same bounded window."""
    paginator = LookaheadPaginator(list(range(FIRST_PAGES * 2 + 1)), per_page=2)
    assert (paginator.count, paginator.truncated) == (FIRST_PAGES * 2, True)
    short = LookaheadPaginator([1, 2, 3], per_page=2)
    assert (short.count, short.truncated, short.num_pages) == (3, False, 2)
