"""Migrate the host site and load batchboard's pages through it."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hostsite.settings")

import django

django.setup()

from django.contrib.auth.models import Permission, User  # noqa: E402
from django.core.management import call_command, get_commands  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import reverse  # noqa: E402

import batchboard  # noqa: E402


def main() -> None:
    call_command("migrate", verbosity=0, interactive=False)
    call_command("check", databases=["default"], fail_level="WARNING")
    user = User.objects.create_user("host-operator", password="x", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="batchboard", codename__startswith="view_"
        )
    )
    client = Client()
    client.force_login(user)
    changelist = client.get("/admin/batchboard/jobexecution/")
    assert changelist.status_code == 200, changelist.status_code
    assert b"job execution" in changelist.content
    index = reverse("batchboard:index")
    assert index.startswith("/ops/batch/"), index
    page = client.get(index, follow=True)
    assert page.status_code == 200, page.status_code
    print(f"batchboard from {os.path.dirname(batchboard.__file__)}")
    print(f"django {django.get_version()}")
    print(f"changelist {changelist.status_code}; {index} {page.status_code}")
    print(f"reader: {sign_in_and_out()}")
    # The demo's commands come with batchboard.demo, which this site lacks.
    ours = sorted(name for name in get_commands() if name.startswith("batchboard"))
    print(f"batchboard commands: {' '.join(ours)}")


def sign_in_and_out() -> str:
    """Sign a reader who is not staff in and out on batchboard's own pages."""
    reader = User.objects.create_user("host-reader", password="x")
    reader.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="batchboard", codename__startswith="view_"
        )
    )
    client = Client()
    index = reverse("batchboard:index")
    sent = client.get(index)
    form = client.get(sent["Location"])
    signed_in = client.post(
        sent["Location"], {"username": "host-reader", "password": "x"}
    )
    page = client.get(signed_in["Location"])
    out = client.post(reverse("logout"))
    signed_out = b"Signed out" in out.content and b"Logged out" not in out.content
    return (
        f"sent to {sent['Location'].split('?')[0]} {form.status_code}; "
        f"signed in {signed_in.status_code} to {signed_in['Location']}; "
        f"{index} {page.status_code}; "
        f"signed out {out.status_code} {'batchboard' if signed_out else 'other'}"
    )


if __name__ == "__main__":
    main()
    sys.exit(0)
