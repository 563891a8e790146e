"""
Give the demo login alert rules whose channel is the inbox.

A FAILED rule and a stale rule for all jobs, owned by ``demo``: with
``batchboard_watch`` running beside the simulator, the header's inbox
count rises as runs fail. And a notifying retention policy for all jobs
(keep 30 days), whose plans reach the same inbox and delete nothing.
Running it again changes nothing.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import CommandError
from django.utils import timezone

from batchboard import conf
from batchboard.actions.purge import DEFAULT_BATCH
from batchboard.alerts.models import RetentionPolicy, Rule
from batchboard.demo.commands import DemoCommand
from batchboard.demo.management.commands.batchboard_demo_login import USERNAME
from batchboard.vocabulary import FINISHED

#: (name, kind, fields) of each demo rule.
DEMO_RULES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("Any failure (demo)", "FAILED", {}),
    ("Stale for 5 minutes (demo)", "STALE", {"minutes": 5}),
    ("Overdue: 3 x p95 (demo)", "OVERDUE", {"factor": 3.0, "window": 20}),
)


#: The demo's retention policy: plans and notifies, never applies.
DEMO_POLICY = "keep-30-days-demo"


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
        now = timezone.now()
        RetentionPolicy.objects.using(conf.state_alias()).get_or_create(
            name=DEMO_POLICY,
            defaults={
                "owner": owner,
                "statuses": ",".join(FINISHED),
                "min_age_seconds": 30 * 24 * 3600,
                "batch": DEFAULT_BATCH,
                "applies": False,
                "period_hours": 1,
                "next_due": now,
                "created_at": now,
            },
        )
        self.stdout.write(f"alert rules for {USERNAME}: {len(DEMO_RULES)}")
        self.stdout.write(f"retention policy for {USERNAME}: {DEMO_POLICY} (notifies)")
