"""The time zone: UTC by default, the browser's or a named one; UTC kept in every <time>."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from batchboard.explorer.presenters import Clock
from batchboard.personal import zones
from batchboard.personal.models import UserPreference
from batchboard.routers import BatchboardRouter
from tests import factories
from tests.browser.test_layout import pages, seed_everything

pytestmark = pytest.mark.django_db

TIME = re.compile(r"<time\b([^>]*)>([^<]*)</time>")
ATTRIBUTE = re.compile(r'(\w[\w-]*)="([^"]*)"')


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def reader() -> User:
    return factories.user("reader", *factories.VIEW)


def _times(body: str) -> list[tuple[dict[str, str], str]]:
    return [
        (dict(ATTRIBUTE.findall(attributes)), text)
        for attributes, text in TIME.findall(body)
    ]


def test_preferences_route_to_the_state_database() -> None:
    router = BatchboardRouter()
    assert router.db_for_write(UserPreference) == router.db_for_write(
        __import__("batchboard.personal.models").personal.models.SavedView
    )


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("UTC", True),
        ("browser", True),
        ("Europe/Paris", True),
        ("America/Argentina/Buenos_Aires", True),
        ("Mars/Olympus", False),
        ("europe/paris", False),
        ("", False),
        ("../../etc/passwd", False),
    ],
)
def test_time_zone_choices(value: str, valid: bool) -> None:
    assert zones.is_choice(value) is valid


def test_the_default_is_utc(reader: User) -> None:
    client = _client(reader)
    page = client.get(reverse("batchboard:time_zone"))
    assert page.context["chosen"] == "UTC"
    assert b'<meta name="bb-time-zone" content="UTC">' in page.content


@pytest.mark.parametrize("choice", ["browser", "Asia/Tokyo", "UTC"])
def test_a_choice_is_kept(reader: User, choice: str) -> None:
    client = _client(reader)
    response = client.post(reverse("batchboard:time_zone"), {"time_zone": choice})
    assert response.status_code == 302
    assert UserPreference.objects.get(user_id=reader.pk).time_zone == choice
    assert client.get(reverse("batchboard:time_zone")).context["chosen"] == choice
    # A new session reads it back from the table.
    again = _client(reader)
    page = again.get(reverse("batchboard:time_zone"))
    assert f'<meta name="bb-time-zone" content="{choice}">'.encode() in page.content


@pytest.mark.parametrize(
    "value", ["Mars/Olympus", "", "x" * 100, "Europe/Paris\x00", "local"]
)
def test_a_bad_choice_is_a_400(reader: User, value: str) -> None:
    client = _client(reader)
    response = client.post(reverse("batchboard:time_zone"), {"time_zone": value})
    assert response.status_code == 400
    assert not UserPreference.objects.exists()


def test_a_named_zone_shows_local_text_and_keeps_utc() -> None:
    moment = datetime(2026, 1, 15, 12, 30, 5, tzinfo=UTC)
    with timezone.override(zones.server_zone("Asia/Tokyo")):
        shown = Clock(now=moment).moment(moment)
    assert shown is not None
    assert shown["text"] == "2026-01-15 21:30:05 JST"
    assert shown["utc"] == "2026-01-15 12:30:05Z"
    assert shown["iso"] == "2026-01-15T12:30:05+00:00"
    with timezone.override(zones.server_zone("browser")):
        utc = Clock(now=moment).moment(moment)
    assert utc is not None and utc["text"] == "2026-01-15 12:30:05Z"


def _assert_every_time_keeps_utc(body: str, url: str, zone_suffix: str) -> int:
    checked = 0
    for attributes, text in _times(body):
        value = attributes.get("datetime", "")
        assert value, (url, attributes)
        if "T" not in value:
            # A day (trend axes, grid labels): a UTC day, so labelled.
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", value), (url, value)
            continue
        assert value.endswith(("Z", "+00:00")), (url, value)
        title = attributes.get("title", "")
        instant = datetime.fromisoformat(value)
        assert title == instant.strftime("%Y-%m-%d %H:%M:%SZ"), (url, title)
        assert text.endswith(zone_suffix), (url, text)
        checked += 1
    return checked


@pytest.mark.parametrize(("choice", "suffix"), [("UTC", "Z"), ("Asia/Tokyo", "JST")])
def test_every_timestamp_keeps_its_utc_value(choice: str, suffix: str) -> None:
    """Every page of the namespace: each <time> has a UTC datetime= and title=."""
    seeded = seed_everything()
    user = User.objects.create_superuser("zoned", password="pw")
    factories.saved_view(user)
    client = _client(user)
    client.post(reverse("batchboard:time_zone"), {"time_zone": choice})
    checked = 0
    for name, url in pages(seeded).items():
        response = client.get(url)
        assert response.status_code == 200, (name, response.status_code)
        checked += _assert_every_time_keeps_utc(response.content.decode(), url, suffix)
        fragment = client.get(url, headers={"HX-Request": "true"})
        checked += _assert_every_time_keeps_utc(fragment.content.decode(), url, suffix)
    assert checked >= 20
