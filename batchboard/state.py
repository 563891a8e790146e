"""
batchboard's own state: tables that are batchboard's, not oxide-batch's.

Bulk operations and their items live here (saved views, tokens and alert
rules will too). Every such model derives from :class:`OwnState`, which
:class:`batchboard.routers.BatchboardRouter` sends to
``BATCHBOARD["STATE_DATABASE"]`` (the site's database) for reads, writes and
migrations, never to the metadata alias when that is another database.
Their tables are ordinary Django tables created by ordinary migrations; on
PostgreSQL the site's connections put ``public`` first in their search
path, so the tables land there, never in the ``oxide_batch`` schema.
"""

from __future__ import annotations

from typing import Final

from django.db import models
from django.utils.translation import gettext_lazy as _

#: An item's progress through an apply: waiting, taken by one process, done.
PENDING: Final = "PENDING"
CLAIMED: Final = "CLAIMED"
DONE: Final = "DONE"
ITEM_STATES: Final = (PENDING, CLAIMED, DONE)

#: The outcome recorded for a finished item. STALE: its version moved since
#: the plan, and nothing was written for it.
STALE: Final = "STALE"


class OwnState(models.Model):
    """A table of batchboard's own, kept in the site's database."""

    class Meta:
        abstract = True
        app_label = "batchboard"


class BulkOperation(OwnState):
    """One reviewed plan being applied: who, what, under which digest."""

    bulk_id = models.CharField(max_length=40, unique=True)
    action = models.CharField(max_length=16)
    actor_ref = models.CharField(max_length=128)
    # The plan's filters as canonical JSON (see docs/bulk-actions.md).
    filters = models.TextField()
    digest = models.CharField(max_length=64)
    reason_code = models.CharField(max_length=64, blank=True, default="")
    # RECOVER's one directive: FAILED (with a failure) or ABANDONED.
    resulting_status = models.CharField(max_length=16, blank=True, default="")
    failure_category = models.CharField(max_length=32, blank=True, default="")
    failure_id = models.BigIntegerField(null=True, blank=True)
    item_count = models.IntegerField()
    applied = models.IntegerField(default=0)
    rejected = models.IntegerField(default=0)
    stale = models.IntegerField(default=0)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta(OwnState.Meta):
        db_table = "batchboard_bulk_operation"
        verbose_name = _("bulk operation")
        indexes = [
            models.Index(fields=["-started_at", "-id"], name="bb_bulk_started"),
        ]

    def __str__(self) -> str:
        return f"bulk {self.action} {self.bulk_id}"

    @property
    def done(self) -> int:
        return self.applied + self.rejected + self.stale


class BulkItem(OwnState):
    """One target of a bulk operation and what happened to it."""

    operation = models.ForeignKey(BulkOperation, models.CASCADE, related_name="items")
    target_id = models.BigIntegerField()
    version = models.BigIntegerField()
    evidence_digest = models.CharField(max_length=64, blank=True, default="")
    state = models.CharField(max_length=8, default=PENDING)
    claim = models.CharField(max_length=32, blank=True, default="")
    claimed_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=8, blank=True, default="")
    rejection_code = models.CharField(max_length=64, blank=True, default="")
    audit_model = models.CharField(max_length=16, blank=True, default="")
    audit_id = models.BigIntegerField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta(OwnState.Meta):
        db_table = "batchboard_bulk_item"
        verbose_name = _("bulk item")
        constraints = [
            models.UniqueConstraint(
                fields=["operation", "target_id"], name="bb_bulk_item_target"
            )
        ]
        indexes = [
            models.Index(
                fields=["operation", "state", "target_id"], name="bb_bulk_item_state"
            ),
        ]

    def __str__(self) -> str:
        return f"bulk item {self.operation_id}:{self.target_id}"
