"""
Alerts' own state: rules, channels, the outbox, deliveries and the inbox.

Every table is batchboard's own (:class:`batchboard.state.OwnState`), so it
lives in ``BATCHBOARD["STATE_DATABASE"]``, never in the ``oxide_batch``
schema; the detector only reads oxide-batch's tables.

- :class:`Rule` says what to look for and whom to tell.
- :class:`Channel` says how: a signed webhook, an Apprise URL or email.
- :class:`Alert` is the outbox: one row per event, unique on the dedupe key
  ``(rule, execution_id, version)``, so however many detector processes
  see an event, one row records it.
- :class:`Delivery` is one alert sent to one channel: claimed with
  ``SELECT ... FOR UPDATE SKIP LOCKED``, retried with backoff, then failed;
  :class:`DeliveryAttempt` is its log, one row per try.
- :class:`InboxItem` shows each alert to the owner of the rule that matched,
  whatever became of the channels.
- :class:`Watermark` is how far the detector has read each status.
- :class:`RetentionPolicy` is a standing purge: a job (or all jobs), the
  finished statuses and the age to keep, planned on its own schedule and,
  when it says so, applied; :class:`RetentionRun` records each run's plan
  facts (digest, counts, outcome), never a parameter value. A run's report
  is an :class:`Alert` of kind ``RETENTION`` (no rule, its run instead), so
  it leaves through the same deliveries and inbox as the rules' alerts.
"""

from __future__ import annotations

from typing import Final, Literal

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from batchboard.state import OwnState

RuleKind = Literal["FAILED", "UNKNOWN", "STALE", "OVERDUE", "SLOW", "FRESHNESS"]
RULE_KINDS: Final[tuple[RuleKind, ...]] = (
    "FAILED",
    "UNKNOWN",
    "STALE",
    "OVERDUE",
    "SLOW",
    "FRESHNESS",
)
RULE_KIND_CHOICES: Final = [
    ("FAILED", _("Ends FAILED")),
    ("UNKNOWN", _("Becomes UNKNOWN")),
    ("STALE", _("Stale: no update for N minutes")),
    ("OVERDUE", _("Overdue: running longer than k x p95 or a limit")),
    ("SLOW", _("Slow: finished slower than p95")),
    ("FRESHNESS", _("Freshness: no COMPLETED run in H hours")),
]

ChannelKind = Literal["WEBHOOK", "APPRISE", "EMAIL"]
CHANNEL_KINDS: Final[tuple[ChannelKind, ...]] = ("WEBHOOK", "APPRISE", "EMAIL")
CHANNEL_KIND_CHOICES: Final = [
    ("WEBHOOK", _("Signed webhook")),
    ("APPRISE", _("Apprise URL (Slack, Teams, PagerDuty, ...)")),
    ("EMAIL", _("Email")),
]

#: A delivery's states: waiting (or waiting to retry), delivered, given up.
PENDING: Final = "PENDING"
SENT: Final = "SENT"
FAILED: Final = "FAILED"
DELIVERY_STATES: Final = (PENDING, SENT, FAILED)


class Channel(OwnState):
    """Where alerts go. ``target`` and ``secret`` are never shown again."""

    name = models.CharField(max_length=128)
    kind = models.CharField(max_length=8, choices=CHANNEL_KIND_CHOICES)
    # The webhook or Apprise URL, or the email addresses: write-only in the
    # UI, which shows :attr:`shown_target` instead.
    target = models.TextField()
    # The webhook's HMAC-SHA256 key.
    secret = models.CharField(max_length=256, blank=True, default="")
    shown_target = models.CharField(max_length=256)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.CASCADE, related_name="+"
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField()
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_failure_at = models.DateTimeField(null=True, blank=True)

    class Meta(OwnState.Meta):
        db_table = "batchboard_alert_channel"
        verbose_name = _("alert channel")

    def __str__(self) -> str:
        return f"channel {self.name}"


class Rule(OwnState):
    """What to look for, for one job (``job_name``) or all jobs (blank)."""

    name = models.CharField(max_length=128)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.CASCADE, related_name="+"
    )
    enabled = models.BooleanField(default=True)
    kind = models.CharField(max_length=10, choices=RULE_KIND_CHOICES)
    job_name = models.CharField(max_length=128, blank=True, default="")
    # FAILED only: the failure categories that match, comma-separated;
    # blank matches every category.
    failure_categories = models.CharField(max_length=256, blank=True, default="")
    # STALE: minutes without an update.
    minutes = models.IntegerField(null=True, blank=True)
    # OVERDUE: k (the factor of the p95) and M (the runs it is taken over);
    # SLOW uses M. OVERDUE may instead (or also) name a fixed limit.
    factor = models.FloatField(null=True, blank=True)
    window = models.IntegerField(null=True, blank=True)
    limit_minutes = models.IntegerField(null=True, blank=True)
    # FRESHNESS: hours within which a COMPLETED run must exist.
    hours = models.IntegerField(null=True, blank=True)
    # Through a model of batchboard's own, so the link table is routed to
    # the state database with the rest (an auto-created one would not be).
    channels = models.ManyToManyField(
        Channel, through="RuleChannel", blank=True, related_name="rules"
    )
    created_at = models.DateTimeField()

    class Meta(OwnState.Meta):
        db_table = "batchboard_alert_rule"
        verbose_name = _("alert rule")
        permissions = [("manage_alerts", _("Can manage alert rules and channels"))]

    def __str__(self) -> str:
        return f"rule {self.name}"

    @property
    def categories(self) -> tuple[str, ...]:
        return tuple(
            part.strip() for part in self.failure_categories.split(",") if part.strip()
        )


class RuleChannel(OwnState):
    """A channel a rule's alerts go to."""

    rule = models.ForeignKey(Rule, models.CASCADE)
    channel = models.ForeignKey(Channel, models.CASCADE)

    class Meta(OwnState.Meta):
        db_table = "batchboard_alert_rule_channel"
        verbose_name = _("alert rule channel")
        constraints = [
            models.UniqueConstraint(
                fields=["rule", "channel"], name="batchboard_alert_rule_channel_once"
            )
        ]

    def __str__(self) -> str:
        return f"rule {self.rule_id} to channel {self.channel_id}"


#: The kind of an alert that reports a retention policy's run.
RETENTION: Final = "RETENTION"


class Alert(OwnState):
    """
    One event a rule matched, or a retention run's report: the outbox row.

    A rule's alert is unique per dedupe key; a report names its ``run``
    instead of a rule (exactly one of the two is set).
    """

    rule = models.ForeignKey(
        Rule, models.CASCADE, related_name="alerts", null=True, blank=True
    )
    run = models.ForeignKey(
        "RetentionRun",
        models.CASCADE,
        related_name="alerts",
        null=True,
        blank=True,
    )
    execution_id = models.BigIntegerField()
    version = models.BigIntegerField()
    kind = models.CharField(max_length=10)
    job_name = models.CharField(max_length=128)
    instance_id = models.BigIntegerField(null=True, blank=True)
    status = models.CharField(max_length=16, blank=True, default="")
    failure_category = models.CharField(max_length=32, blank=True, default="")
    # Numbers only (durations and thresholds in seconds), never user text.
    seconds = models.FloatField(null=True, blank=True)
    threshold_seconds = models.FloatField(null=True, blank=True)
    detected_at = models.DateTimeField()

    class Meta(OwnState.Meta):
        db_table = "batchboard_alert"
        verbose_name = _("alert")
        constraints = [
            models.UniqueConstraint(
                fields=["rule", "execution_id", "version"],
                name="batchboard_alert_dedupe",
            ),
            models.CheckConstraint(
                condition=models.Q(rule__isnull=False, run__isnull=True)
                | models.Q(rule__isnull=True, run__isnull=False),
                name="batchboard_alert_rule_or_run",
            ),
        ]
        indexes = [
            models.Index(
                fields=["-detected_at", "-id"], name="batchboard_alert_detected"
            ),
        ]

    def __str__(self) -> str:
        return f"alert {self.kind} {self.job_name} #{self.execution_id}"

    @property
    def dedupe_key(self) -> str:
        return f"{self.rule_id}:{self.execution_id}:{self.version}"

    @property
    def source_name(self) -> str:
        """Return the name of the rule, or the policy, the alert comes from."""
        if self.rule is not None:
            return self.rule.name
        return self.run.policy.name if self.run is not None else ""


class Delivery(OwnState):
    """One alert to one channel: its state, attempts and last error."""

    alert = models.ForeignKey(Alert, models.CASCADE, related_name="deliveries")
    channel = models.ForeignKey(Channel, models.CASCADE, related_name="deliveries")
    state = models.CharField(max_length=8, default=PENDING)
    attempts = models.IntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    # Redacted before it is stored (:func:`batchboard.alerts.channels.redact`).
    last_error = models.CharField(max_length=512, blank=True, default="")
    sent_at = models.DateTimeField(null=True, blank=True)
    # The same on every attempt, so a receiver can drop a repeat.
    idempotency_key = models.CharField(max_length=96, unique=True)

    class Meta(OwnState.Meta):
        db_table = "batchboard_alert_delivery"
        verbose_name = _("alert delivery")
        verbose_name_plural = _("alert deliveries")
        constraints = [
            models.UniqueConstraint(
                fields=["alert", "channel"], name="batchboard_alert_delivery_once"
            )
        ]
        indexes = [
            models.Index(
                fields=["state", "next_attempt_at", "id"], name="batchboard_alert_due"
            ),
            models.Index(fields=["channel", "-id"], name="batchboard_alert_by_channel"),
        ]

    def __str__(self) -> str:
        return f"delivery {self.idempotency_key}"


class DeliveryAttempt(OwnState):
    """One try of a delivery: the delivery log's row."""

    delivery = models.ForeignKey(Delivery, models.CASCADE, related_name="log")
    number = models.IntegerField()
    at = models.DateTimeField()
    ok = models.BooleanField()
    error = models.CharField(max_length=512, blank=True, default="")

    class Meta(OwnState.Meta):
        db_table = "batchboard_alert_attempt"
        verbose_name = _("delivery attempt")
        constraints = [
            models.UniqueConstraint(
                fields=["delivery", "number"], name="batchboard_alert_attempt_number"
            )
        ]

    def __str__(self) -> str:
        return f"attempt {self.number} of {self.delivery_id}"


class InboxItem(OwnState):
    """An alert in a user's inbox, read or not."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, models.CASCADE, related_name="+")
    alert = models.ForeignKey(Alert, models.CASCADE, related_name="inbox")
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta(OwnState.Meta):
        db_table = "batchboard_alert_inbox"
        verbose_name = _("inbox item")
        constraints = [
            models.UniqueConstraint(
                fields=["user", "alert"], name="batchboard_inbox_once"
            )
        ]
        indexes = [
            models.Index(
                fields=["user", "read_at", "-id"], name="batchboard_inbox_unread"
            ),
            models.Index(fields=["user", "-id"], name="batchboard_inbox_user"),
        ]

    def __str__(self) -> str:
        return f"inbox {self.user_id}:{self.alert_id}"


class Watermark(OwnState):
    """How far the detector has read one status, by ``(updated_at, id)``."""

    stream = models.CharField(max_length=16, unique=True)
    updated_at = models.DateTimeField(null=True, blank=True)
    last_id = models.BigIntegerField(default=0)

    class Meta(OwnState.Meta):
        db_table = "batchboard_alert_watermark"
        verbose_name = _("detector watermark")

    def __str__(self) -> str:
        return f"watermark {self.stream}"


# -- standing retention policies -------------------------------------------------

#: What a policy's run came to. PLANNED: a notifying policy's plan (nothing
#: deleted); APPLIED: every batch planned was applied; NOTHING: the plan
#: was empty; STALE: a batch's rows changed between its plan and its apply
#: (that batch deleted nothing); FAILED: a plan or apply failed otherwise.
PLANNED: Final = "PLANNED"
APPLIED: Final = "APPLIED"
NOTHING: Final = "NOTHING"
STALE: Final = "STALE"
RUN_OUTCOMES: Final = (PLANNED, APPLIED, NOTHING, STALE, FAILED)


class RetentionPolicy(OwnState):
    """
    A standing purge of one job (``job_name``) or all jobs (blank).

    ``statuses`` are finished statuses, comma-separated; ``applies`` off
    (the default) plans and notifies only. ``resume_after`` is where an
    all-jobs policy's walk of the job names continues (a job-names cursor
    token; blank: from the first name).
    """

    name = models.CharField(max_length=100, unique=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.CASCADE, related_name="+"
    )
    job_name = models.CharField(max_length=128, blank=True, default="")
    statuses = models.CharField(max_length=128)
    min_age_seconds = models.BigIntegerField()
    batch = models.IntegerField()
    applies = models.BooleanField(default=False)
    period_hours = models.IntegerField()
    enabled = models.BooleanField(default=True)
    # Through a model of batchboard's own, routed with the rest.
    channels = models.ManyToManyField(
        Channel, through="PolicyChannel", blank=True, related_name="policies"
    )
    next_due = models.DateTimeField()
    resume_after = models.CharField(max_length=600, blank=True, default="")
    created_at = models.DateTimeField()

    class Meta(OwnState.Meta):
        db_table = "batchboard_retention_policy"
        verbose_name = _("retention policy")
        verbose_name_plural = _("retention policies")
        indexes = [
            models.Index(
                fields=["enabled", "next_due", "id"], name="batchboard_policy_due"
            ),
        ]

    def __str__(self) -> str:
        return f"policy {self.name}"

    @property
    def status_list(self) -> tuple[str, ...]:
        return tuple(part for part in self.statuses.split(",") if part)


class PolicyChannel(OwnState):
    """A channel a policy's reports go to."""

    policy = models.ForeignKey(RetentionPolicy, models.CASCADE)
    channel = models.ForeignKey(Channel, models.CASCADE)

    class Meta(OwnState.Meta):
        db_table = "batchboard_retention_policy_channel"
        verbose_name = _("retention policy channel")
        constraints = [
            models.UniqueConstraint(
                fields=["policy", "channel"], name="batchboard_policy_channel_once"
            )
        ]

    def __str__(self) -> str:
        return f"policy {self.policy_id} to channel {self.channel_id}"


class RetentionRun(OwnState):
    """
    One run of a policy over one job: the plan facts and what came of them.

    ``plan_digest`` and ``candidates`` are the first batch's plan (what a
    manual plan with the same criteria shows); ``applied_batches`` and
    ``deleted_executions`` count what was applied, one APPLY_PURGE audit
    row per batch. ``error_code`` is an action error's code, never its
    text's values.
    """

    policy = models.ForeignKey(RetentionPolicy, models.CASCADE, related_name="runs")
    job_name = models.CharField(max_length=128)
    applies = models.BooleanField()
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    plan_digest = models.CharField(max_length=64, blank=True, default="")
    candidates = models.IntegerField(default=0)
    applied_batches = models.IntegerField(default=0)
    deleted_executions = models.IntegerField(default=0)
    deleted_instances = models.IntegerField(default=0)
    # The run stopped at RETENTION_MAX_BATCHES batches; the next carries on.
    bound_reached = models.BooleanField(default=False)
    outcome = models.CharField(max_length=8, blank=True, default="")
    error_code = models.CharField(max_length=64, blank=True, default="")

    class Meta(OwnState.Meta):
        db_table = "batchboard_retention_run"
        verbose_name = _("retention run")
        indexes = [
            models.Index(fields=["policy", "-id"], name="batchboard_policy_runs"),
        ]

    def __str__(self) -> str:
        return f"retention run {self.pk} of {self.policy_id}"
