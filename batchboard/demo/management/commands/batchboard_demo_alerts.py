"""
Give the demo login alert rules whose channel is the inbox.

A FAILED rule and a stale rule for all jobs, owned by ``demo``: with
``batchboard_watch`` running beside the simulator, the header's inbox
count rises as runs fail. Running it again changes nothing.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import CommandError
from django.utils import timezone

from batchboard import conf
from batchboard.alerts.models import Rule
from batchboard.demo.commands import DemoCommand
from batchboard.demo.management.commands.batchboard_demo_login import USERNAME

#: (name, kind, fields) of each demo rule.
DEMO_RULES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("Any failure (demo)", "FAILED", {}),
    ("Stale for 5 minutes (demo)", "STALE", {"minutes": 5}),
    ("Overdue: 3 x p95 (demo)", "OVERDUE", {"factor": 3.0, "window": 20}),
)


class Command(DemoCommand):
    help = "Create the demo login's alert rules (inbox only)."

    def target_alias(self) -> str:
        return conf.state_alias()

    def run(self, *args: Any, **options: Any) -> None:
        owner = get_user_model().objects.filter(username=USERNAME).first()
        if owner is None:
            raise CommandError("Run batchboard_demo_login first.")
        owner.user_permissions.add(
            *Permission.objects.filter(
                content_type__app_label="batchboard", codename="manage_alerts"
            )
        )
        for name, kind, fields in DEMO_RULES:
            Rule.objects.using(conf.state_alias()).get_or_create(
                name=name,
                owner=owner,
                defaults={"kind": kind, "created_at": timezone.now(), **fields},
            )
        self.stdout.write(f"alert rules for {USERNAME}: {len(DEMO_RULES)}")
