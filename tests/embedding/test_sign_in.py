"""
On a fresh host site, a reader who is not staff signs in and out through
batchboard's own pages (``batchboard.auth_urls``), with Django's defaults.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.conf import global_settings
from django.test import Client, override_settings

from tests import factories
from tests.explorer.conftest import make_user

pytestmark = pytest.mark.django_db

HOST = override_settings(
    ROOT_URLCONF="tests.embedding.host.hostsite.urls",
    # The host sets neither: Django's defaults.
    LOGIN_URL=global_settings.LOGIN_URL,
    LOGIN_REDIRECT_URL=global_settings.LOGIN_REDIRECT_URL,
)


@HOST
def test_a_reader_signs_in_and_out_on_a_fresh_host() -> None:
    reader = make_user("reader")
    assert not reader.is_staff
    factories.definition("nightly-import")
    execution = factories.execution(factories.instance("nightly-import"), "FAILED")
    client = Client()
    wanted = f"/ops/batch/executions/{execution.pk}/"
    sent = client.get(wanted)
    assert sent.status_code == 302
    assert sent["Location"] == f"/accounts/login/?next={quote(wanted, safe='/')}"
    form = client.get(sent["Location"])
    assert form.status_code == 200
    assert form.templates[0].name == "batchboard/registration/sign_in.html"
    assert 'action="/accounts/login/"' in form.content.decode()
    signed_in = client.post(
        "/accounts/login/", {"username": "reader", "password": "pw", "next": wanted}
    )
    assert signed_in.status_code == 302
    assert signed_in["Location"] == wanted
    page = client.get(wanted)
    assert page.status_code == 200
    # The header's sign-out posts to batchboard's, which admits non-staff.
    assert '<form method="post" action="/accounts/logout/">' in page.content.decode()
    out = client.post("/accounts/logout/")
    assert out.status_code == 200
    assert out.templates[0].name == "batchboard/registration/signed_out.html"
    body = out.content.decode()
    assert "Signed out" in body
    assert "Logged out" not in body
    assert 'href="/accounts/login/"' in body
    assert out["Clear-Site-Data"] == '"cache", "storage"'
    assert client.get(wanted).status_code == 302


@HOST
def test_an_htmx_request_of_a_signed_out_reader_goes_to_the_same_page() -> None:
    response = Client().get("/ops/batch/executions/", headers={"HX-Request": "true"})
    assert response["HX-Redirect"].startswith("/accounts/login/?next=")


@HOST
def test_signing_in_without_a_page_to_return_to_opens_the_overview() -> None:
    make_user("reader")
    client = Client()
    signed_in = client.post(
        "/accounts/login/", {"username": "reader", "password": "pw"}
    )
    assert signed_in["Location"] == "/ops/batch/"
    assert client.get("/ops/batch/").status_code == 200
