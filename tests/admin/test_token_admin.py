"""The API token admin answers hostile admin parameters without a 500."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from batchboard.api import tokens

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("view", ["change", "delete"])
def test_an_empty_to_field_names_the_token_by_its_key(view: str) -> None:
    user = User.objects.create_superuser("root")
    token, _secret = tokens.create_token(user, "script", ["READ"])
    client = Client()
    client.force_login(user)
    response = client.get(
        f"/admin/batchboard/apitoken/{token.pk}/{view}/", {"_to_field": ""}
    )
    assert response.status_code == 200
