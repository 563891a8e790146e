"""The standalone site's own sign-in page admits readers who are not staff."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests import factories
from tests.explorer.conftest import make_user

pytestmark = pytest.mark.django_db


def _viewer() -> User:
    """Return an active reader who may not use the admin."""
    user = make_user("viewer")
    assert user.is_staff is False
    return user


def _sign_in(client: Client, next_url: str, password: str = "pw") -> object:
    return client.post(
        "/login/", {"username": "viewer", "password": password, "next": next_url}
    )


def test_anonymous_visitor_is_sent_to_the_login_page_and_back() -> None:
    """A deep link survives signing in: the login page returns to it."""
    _viewer()
    factories.definition("nightly-import")
    failed = factories.execution(factories.instance("nightly-import"), "FAILED")
    client = Client()
    wanted = "/executions/?status=FAILED&job=nightly-import"
    first = client.get(wanted)
    assert first.status_code == 302
    assert first["Location"] == f"/login/?next={quote(wanted, safe='/')}"
    form = client.get(first["Location"])
    assert form.status_code == 200
    body = form.content.decode()
    # The sign-in page wears the dashboard's header and carries the target.
    assert 'class="bb-header"' in body
    assert f'name="next" value="{wanted.replace("&", "&amp;")}"' in body
    signed_in = _sign_in(client, wanted)
    assert signed_in.status_code == 302
    assert signed_in["Location"] == wanted
    listing = client.get(wanted)
    assert listing.status_code == 200
    assert f"bb-execution-{failed.pk}" in listing.content.decode()


def test_viewer_who_is_not_staff_signs_in_and_browses() -> None:
    """The overview, an execution and the unresolved list open; the admin does not."""
    _viewer()
    factories.definition("nightly-import")
    execution = factories.execution(factories.instance("nightly-import"), "STARTED")
    client = Client()
    response = _sign_in(client, "")
    assert response.status_code == 302
    assert response["Location"] == "/"
    overview = client.get("/")
    assert overview.status_code == 200
    # The header names the signed-in user and offers a sign-out button.
    header = overview.content.decode().split("</header>", 1)[0]
    assert "viewer" in header
    assert "Log out" in header
    assert client.get(f"/executions/{execution.pk}/").status_code == 200
    assert client.get("/unresolved/").status_code == 200
    admin = client.get("/admin/")
    assert admin.status_code == 302
    assert admin["Location"].startswith("/admin/login/")


def test_wrong_password_is_refused_on_the_page() -> None:
    """A failed sign-in stays on the form with a message and creates no session."""
    _viewer()
    client = Client()
    response = _sign_in(client, "/", password="wrong")
    assert response.status_code == 200
    assert 'role="alert"' in response.content.decode()
    assert client.get("/").status_code == 302


def test_login_refuses_a_redirect_to_another_host() -> None:
    """``next`` pointing off the site falls back to the overview."""
    _viewer()
    response = _sign_in(Client(), "https://elsewhere.example/")
    assert response.status_code == 302
    assert response["Location"] == "/"


def test_sign_out_needs_post_and_shows_the_signed_out_page() -> None:
    """The header's button signs out; a plain GET of logout/ does not."""
    _viewer()
    client = Client()
    _sign_in(client, "/")
    assert client.get("/logout/").status_code == 405
    assert client.get("/").status_code == 200
    out = client.post("/logout/")
    assert out.status_code == 200
    assert [t.name for t in out.templates][0] == (
        "batchboard/registration/signed_out.html"
    )
    body = out.content.decode()
    assert "Signed out" in body
    assert 'href="/login/"' in body
    # The browser drops what it kept of the site: htmx's snapshots included.
    assert out["Clear-Site-Data"] == '"cache", "storage"'
    assert "data-bb-signed-out" in body
    assert client.get("/").status_code == 302


def test_header_sign_out_button_signs_a_reader_out() -> None:
    """The header's button signs a non-staff user out, not only staff."""
    _viewer()
    client = Client()
    _sign_in(client, "/")
    page = client.get("/").content.decode()
    # The header prefers the site's own "logout" URL over the admin's,
    # which answers staff only.
    assert '<form method="post" action="/logout/">' in page
    out = client.post("/logout/")
    assert out.status_code == 200
    assert "Signed out" in out.content.decode()
    assert client.get("/").status_code == 302


def test_the_sign_in_page_is_the_packages_in_the_sites_branding() -> None:
    """The template ships in batchboard; the site's base_site.html dresses it."""
    form = Client().get("/login/")
    names = [t.name for t in form.templates]
    assert names[:2] == [
        "batchboard/registration/sign_in.html",
        "batchboard/base_site.html",
    ]
    origin = form.templates[0].origin.name
    assert "/batchboard/templates/batchboard/registration/" in origin
    # The standalone site's branding (templates/batchboard/base_site.html).
    assert "site.css" in form.content.decode()
    # The button sits inside the card, after the fields.
    card = form.content.decode().split('<section class="bb-dialog"', 1)[1]
    card = card.split("</section>", 1)[0]
    assert '<input class="bb-button" type="submit" value="Sign in">' in card
