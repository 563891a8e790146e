"""Wording and chrome: sign-in page, paging note, error pages, admin, favicon."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from tests import factories
from tests.explorer.conftest import make_user

pytestmark = pytest.mark.django_db

NOTE = "Rows created after you opened this list appear when you reload it."


@pytest.fixture
def reader() -> Client:
    client = Client()
    client.force_login(make_user("reader"))
    return client


def test_sign_in_page_is_bare_for_anonymous_users() -> None:
    body = Client().get(reverse("login")).content.decode()
    assert "bb--bare" in body
    assert 'class="bb-nav"' not in body and 'id="bb-jump-id"' not in body
    assert NOTE not in body
    assert 'name="username"' in body


def test_paging_note_only_on_lists(reader: Client) -> None:
    execution = factories.execution(factories.instance("nightly"), "FAILED")
    assert NOTE in reader.get(reverse("batchboard:executions")).content.decode()
    assert NOTE in reader.get(reverse("batchboard:index")).content.decode()
    missing = reader.get("/executions/424242/").content.decode()
    assert NOTE not in missing
    assert execution.pk


def test_every_page_links_the_favicon(reader: Client) -> None:
    for body in (
        reader.get(reverse("batchboard:index")).content.decode(),
        Client().get(reverse("login")).content.decode(),
    ):
        assert '<link rel="icon" href="/static/batchboard/favicon.svg"' in body


@pytest.mark.parametrize("path", ["/no/such/page/", "/executions/424242/"])
def test_not_found_pages_share_the_design(reader: Client, path: str) -> None:
    response = reader.get(path)
    assert response.status_code == 404
    body = response.content.decode()
    assert 'class="bb-error"' in body and '<p class="bb-error-code">404</p>' in body


def test_csrf_refusal_is_the_shared_403_page() -> None:
    client = Client(enforce_csrf_checks=True)
    response = client.post(reverse("login"), {"username": "x", "password": "y"})
    assert response.status_code == 403
    body = response.content.decode()
    assert '<p class="bb-error-code">403</p>' in body and "bb-button" in body


def test_permission_refusal_is_the_shared_403_page() -> None:
    client = Client()
    client.force_login(User.objects.create_user("nobody"))
    body = client.get(reverse("batchboard:executions")).content.decode()
    assert '<p class="bb-error-code">403</p>' in body


def test_admin_carries_the_batchboard_name(admin_client: Client) -> None:
    body = admin_client.get("/admin/").content.decode()
    assert "batchboard administration" in body
    assert "Django administration" not in body


def test_hold_is_described_as_protection(admin_client: Client) -> None:
    instance = factories.instance("nightly")
    url = reverse("batchboard:action_hold", args=[instance.pk])
    body = admin_client.get(url).content.decode()
    assert "is a DESTRUCTIVE action" not in body
    assert "a protection" in body
