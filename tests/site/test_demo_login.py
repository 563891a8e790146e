"""The demo login exists only in the demo, with view permissions only."""

from __future__ import annotations

from io import StringIO

import pytest
from django.apps import apps
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

pytestmark = pytest.mark.django_db

DEMO = override_settings(BATCHBOARD={"DEMO": True})


def _run(*args: str) -> str:
    out = StringIO()
    call_command("batchboard_demo_login", *args, stdout=out)
    return out.getvalue()


def test_refused_outside_the_demo() -> None:
    """Without BATCHBOARD_DEMO the command creates nobody."""
    with pytest.raises(CommandError, match="exists only in the demo"):
        _run()
    assert not User.objects.filter(username="demo").exists()


def test_creates_a_staff_viewer_idempotently() -> None:
    """Two runs leave one staff user with every model's view permission."""
    with DEMO:
        first = _run()
        second = _run("--address", "http://127.0.0.1:9000/")
    assert "Created the demo login" in first
    assert "http://127.0.0.1:8000/" in first
    assert "user 'demo' with password 'demo'" in first
    assert "Reset the demo login" in second
    assert "http://127.0.0.1:9000/" in second
    user = User.objects.get(username="demo")
    assert user.is_staff is True
    assert user.is_superuser is False
    assert authenticate(username="demo", password="demo") == user
    models = apps.get_app_config("batchboard").get_models()
    for model in models:
        assert user.has_perm(f"batchboard.view_{model._meta.model_name}")
        assert not user.has_perm(f"batchboard.change_{model._meta.model_name}")
    assert not user.has_perm("batchboard.view_parameter_values")


def test_resets_a_changed_password() -> None:
    """A demo user whose password was changed gets ``demo`` back."""
    User.objects.create_user("demo", password="other", is_superuser=True)
    with DEMO:
        _run()
    user = User.objects.get(username="demo")
    assert user.is_superuser is False
    assert user.check_password("demo")
