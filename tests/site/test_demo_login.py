"""The demo logins exist only in the demo: a reader and one user per group."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib.auth import authenticate
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from batchboard.demo import gate

pytestmark = pytest.mark.django_db

ROLE_NAMES = ("viewer", "operator", "administrator")


def _run(*args: str) -> str:
    out = StringIO()
    call_command("batchboard_demo_login", *args, stdout=out)
    return out.getvalue()


def _view_codenames() -> list[str]:
    return [
        f"batchboard.view_{model._meta.model_name}"
        for model in apps.get_app_config("batchboard").get_models()
    ]


@pytest.fixture
def demo(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run as the demo site runs: ``BATCHBOARD_DEMO=1``."""
    monkeypatch.setenv(gate.VARIABLE, "1")


def test_refused_outside_the_demo(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without BATCHBOARD_DEMO the command creates nobody and no group."""
    monkeypatch.delenv(gate.VARIABLE, raising=False)
    with pytest.raises(CommandError, match="runs only with BATCHBOARD_DEMO=1"):
        _run()
    assert not User.objects.exists()
    assert not Group.objects.exists()


@pytest.mark.parametrize("value", ["0", "true", "yes", ""])
def test_only_the_value_1_opens_the_gate(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """The variable must say exactly 1; the settings' DEMO flag does not count."""
    monkeypatch.setenv(gate.VARIABLE, value)
    with (
        override_settings(BATCHBOARD={"DEMO": True}),
        pytest.raises(CommandError, match="BATCHBOARD_DEMO=1"),
    ):
        _run()
    assert not User.objects.exists()


@pytest.mark.usefixtures("demo")
def test_creates_a_staff_reader_idempotently() -> None:
    """Two runs leave one staff ``demo`` user with every view permission only."""
    _run()
    _run("--address", "http://127.0.0.1:9000/")
    user = User.objects.get(username="demo")
    assert user.is_staff is True
    assert user.is_superuser is False
    assert authenticate(username="demo", password="demo") == user
    for codename in _view_codenames():
        assert user.has_perm(codename)
        assert not user.has_perm(codename.replace(".view_", ".change_"))
    assert not user.has_perm("batchboard.view_parameter_values")
    assert not user.has_perm("batchboard.operate_lifecycle")
    assert not user.groups.exists()


@pytest.mark.usefixtures("demo")
def test_creates_one_user_per_group_idempotently() -> None:
    """viewer, operator and administrator each belong to their group alone."""
    _run()
    _run()
    assert User.objects.count() == 4
    assert sorted(Group.objects.values_list("name", flat=True)) == sorted(ROLE_NAMES)
    for name in ROLE_NAMES:
        user = User.objects.get(username=name)
        assert authenticate(username=name, password=name) == user
        assert user.is_superuser is False
        assert list(user.groups.values_list("name", flat=True)) == [name]
        assert not user.user_permissions.exists()
        for codename in _view_codenames():
            assert user.has_perm(codename)
    viewer, operator, administrator = (
        User.objects.get(username=name) for name in ROLE_NAMES
    )
    # Only the administrator may use the admin; the dashboard needs no staff.
    assert (viewer.is_staff, operator.is_staff, administrator.is_staff) == (
        False,
        False,
        True,
    )
    assert not viewer.has_perm("batchboard.operate_lifecycle")
    assert not viewer.has_perm("batchboard.view_parameter_values")
    assert operator.has_perm("batchboard.operate_lifecycle")
    assert not operator.has_perm("batchboard.operate_destructive")
    assert administrator.has_perm("batchboard.operate_lifecycle")
    assert administrator.has_perm("batchboard.operate_destructive")
    assert administrator.has_perm("batchboard.view_parameter_values")


@pytest.mark.usefixtures("demo")
def test_prints_the_address_and_every_login_with_its_reach() -> None:
    """One line per login: user, password and what it may do."""
    out = _run("--address", "http://127.0.0.1:9000/")
    lines = out.splitlines()
    assert lines[0] == "Demo logins for http://127.0.0.1:9000/ (user / password):"
    assert [line.split(":", 1)[0].strip() for line in lines[1:]] == [
        "demo / demo",
        "viewer / viewer",
        "operator / operator",
        "administrator / administrator",
    ]
    assert "stops running executions" in lines[3]
    assert "purges" in lines[4]


@pytest.mark.usefixtures("demo")
def test_restores_changed_users_and_groups() -> None:
    """A changed password, a superuser flag or an edited group is put back."""
    User.objects.create_user("demo", password="other", is_superuser=True)
    operator = User.objects.create_user("operator", password="x", is_superuser=True)
    stray = Group.objects.create(name="stray")
    operator.groups.add(stray)
    _run()
    Group.objects.get(name="viewer").permissions.clear()
    _run()
    demo = User.objects.get(username="demo")
    assert demo.is_superuser is False
    assert demo.check_password("demo")
    operator = User.objects.get(username="operator")
    assert operator.is_superuser is False
    assert operator.check_password("operator")
    assert list(operator.groups.values_list("name", flat=True)) == ["operator"]
    viewer = User.objects.get(username="viewer")
    assert viewer.has_perm("batchboard.view_jobexecution")


def test_the_readme_role_table_says_what_each_login_may_do(demo: None) -> None:
    """Each row of the README's table matches the login's permissions."""
    _run()
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    table = readme.split("| Login | May |", 1)[1].split("\n\n", 1)[0]
    rows = {
        cells[0].strip("`"): cells[1:]
        for line in table.splitlines()
        if line.startswith("| `")
        for cells in [[cell.strip() for cell in line.strip("|").split("|")]]
    }
    assert set(rows) == {"demo", *ROLE_NAMES}
    for name, (_reads, values, actions, admin) in rows.items():
        user = User.objects.get(username=name)
        assert user.has_perm("batchboard.view_jobexecution")
        shown = user.has_perm("batchboard.view_parameter_values")
        assert values == ("shown" if shown else "hidden"), name
        stops = user.has_perm("batchboard.operate_lifecycle")
        destroys = user.has_perm("batchboard.operate_destructive")
        assert ("stop" in actions) == stops, name
        assert ("abandon" in actions) == destroys, name
        assert (actions == "none") == (not stops and not destroys), name
        assert (admin != "no") == user.is_staff, name
        assert (admin == "read-only") == (user.is_staff and not destroys), name
