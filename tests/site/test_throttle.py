"""Sign-in attempts are throttled per user name and per client address."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client

from batchboard.site import throttle
from tests.explorer.conftest import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _empty_cache() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


def _attempt(
    username: str, password: str, address: str = "192.0.2.1", url: str = "/login/"
) -> int:
    response = Client(REMOTE_ADDR=address).post(
        url, {"username": username, "password": password}
    )
    return response.status_code


def test_a_user_name_is_refused_after_its_failures_even_with_the_password() -> None:
    make_user("viewer")
    for _attempt_number in range(throttle.USER_LIMIT):
        assert _attempt("viewer", "wrong") == 200
    assert _attempt("viewer", "pw") == 429
    # Another address changes nothing: the name is what is throttled.
    assert _attempt("viewer", "pw", address="198.51.100.7") == 429
    # Another user from the first address still signs in.
    make_user("other")
    assert _attempt("other", "pw") == 302


def test_the_refusal_says_to_wait() -> None:
    make_user("viewer")
    for _attempt_number in range(throttle.USER_LIMIT):
        _attempt("viewer", "wrong")
    response = Client().post("/login/", {"username": "viewer", "password": "pw"})
    assert response.status_code == 429
    assert "Too many failed sign-in attempts" in response.content.decode()
    assert "_auth_user_id" not in response.client.session


def test_an_address_is_refused_after_its_failures() -> None:
    make_user("viewer")
    for number in range(throttle.ADDRESS_LIMIT):
        assert _attempt(f"nobody{number}", "wrong", address="203.0.113.9") == 200
    assert _attempt("viewer", "pw", address="203.0.113.9") == 429
    assert _attempt("viewer", "pw", address="203.0.113.10") == 302


def test_a_success_clears_the_user_names_count() -> None:
    make_user("viewer")
    for _attempt_number in range(throttle.USER_LIMIT - 1):
        _attempt("viewer", "wrong", address="192.0.2.50")
    assert _attempt("viewer", "pw", address="192.0.2.51") == 302
    for _attempt_number in range(throttle.USER_LIMIT - 1):
        assert _attempt("viewer", "wrong", address="192.0.2.52") == 200
    assert _attempt("viewer", "pw", address="192.0.2.53") == 302


def test_user_names_are_counted_case_blind() -> None:
    make_user("viewer")
    for name in ("Viewer", "VIEWER", "viewer ", "vIewer", "viewer"):
        _attempt(name, "wrong")
    assert _attempt("viewer", "pw") == 429


def test_the_admin_sign_in_is_throttled_too() -> None:
    User.objects.create_user("staff", password="pw", is_staff=True)
    for _attempt_number in range(throttle.USER_LIMIT):
        assert _attempt("staff", "wrong", url="/admin/login/") == 200
    response = Client().post("/admin/login/", {"username": "staff", "password": "pw"})
    assert "Too many failed sign-in attempts" in response.content.decode()
    assert "_auth_user_id" not in response.client.session


def test_with_cache_table_every_host_counts_the_same_failures() -> None:
    """
    CACHE_TABLE puts the throttle's counts in the database, where every host
    reads them: failures spread over two hosts (two cache handlers, as two
    processes on two machines would hold) refuse the user name on both.
    """
    from django.core.cache import CacheHandler
    from django.core.management import call_command
    from django.test import override_settings

    from tests.site.production import site_settings

    caches_setting = site_settings(CACHE_TABLE="batchboard_cache")["CACHES"]
    assert caches_setting["default"]["BACKEND"].endswith("DatabaseCache")
    with override_settings(CACHES=caches_setting):
        call_command("createcachetable", verbosity=0)
        host_a, host_b = CacheHandler(), CacheHandler()
        host_a["default"].clear()
        make_user("wanderer")
        assert throttle.USER_LIMIT == 5
        for handler in (host_a, host_b, host_a, host_b, host_a):
            with _served_by(handler):
                assert _attempt("wanderer", "wrong") == 200
        for handler in (host_a, host_b):
            with _served_by(handler):
                assert _attempt("wanderer", "pw") == 429
        host_a["default"].clear()


def _served_by(handler: object) -> Iterator[None]:
    """Point the throttle's cache at one host's handler for a request."""
    from contextlib import contextmanager
    from unittest import mock

    @contextmanager
    def serving() -> Iterator[None]:
        with mock.patch.object(throttle, "cache", handler["default"]):  # type: ignore[index]
            yield

    return serving()
