"""
Deliveries: each due one claimed by one process, sent, logged, retried.

A process claims a due delivery with ``SELECT ... FOR UPDATE SKIP LOCKED``
and holds the row lock while it sends, so no other process on any host
sends it meanwhile; the outcome is committed with the lock's release. A
process killed mid-send releases the lock without a commit, and the next
claim sends the same delivery again with the same idempotency key, which
lets the receiver drop a repeat. On SQLite one process delivers.

A failed attempt is retried after ``ALERTS_RETRY_SECONDS``, doubled after
each failure, until ``ALERTS_MAX_ATTEMPTS``; then the delivery is FAILED.
Every attempt writes one :class:`~.models.DeliveryAttempt` and stamps its
channel's last success or last failure.

:func:`enqueue` is where every alert enters the outbox, whether a rule's
(the detector) or a retention run's report: a delivery per channel and an
inbox item, written with the alert in the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from batchboard import conf
from batchboard.alerts import channels
from batchboard.alerts.models import (
    FAILED,
    PENDING,
    SENT,
    Alert,
    Channel,
    Delivery,
    DeliveryAttempt,
    InboxItem,
)


def idempotency_key(alert: Alert, channel_id: int) -> str:
    """
    Return a delivery's idempotency key: the alert's identity and the channel.

    A rule's alert is identified by its dedupe key, a retention report by
    its run.
    """
    if alert.run_id is not None:
        return f"bb-retention-{alert.run_id}-{channel_id}"
    return f"bb-{alert.rule_id}-{alert.execution_id}-{alert.version}-{channel_id}"


def enqueue(
    alert: Alert, channels: Iterable[Channel], user_id: int, now: datetime
) -> None:
    """Queue ``alert`` to each of ``channels`` and put it in ``user_id``'s inbox."""
    alias = conf.state_alias()
    Delivery.objects.using(alias).bulk_create(
        Delivery(
            alert=alert,
            channel=channel,
            state=PENDING,
            next_attempt_at=now,
            idempotency_key=idempotency_key(alert, channel.pk),
        )
        for channel in channels
    )
    InboxItem.objects.using(alias).create(user_id=user_id, alert=alert)


def retry_delay(attempts: int) -> timedelta:
    """Return the wait after the ``attempts``-th failed attempt."""
    base = float(conf.get_config()["ALERTS_RETRY_SECONDS"])
    return timedelta(seconds=base * 2 ** (attempts - 1))


def attempt(delivery: Delivery, now: datetime) -> bool:
    """Send ``delivery`` once and record the attempt; return whether it went."""
    alias = conf.state_alias()
    number = delivery.attempts + 1
    try:
        channels.send(delivery)
    except channels.DeliveryError as error:
        text = str(error)
        delivery.attempts = number
        delivery.last_error = text
        if number >= int(conf.get_config()["ALERTS_MAX_ATTEMPTS"]):
            delivery.state = FAILED
        else:
            delivery.next_attempt_at = now + retry_delay(number)
        delivery.save(
            using=alias,
            update_fields=["attempts", "last_error", "state", "next_attempt_at"],
        )
        DeliveryAttempt.objects.using(alias).create(
            delivery=delivery, number=number, at=now, ok=False, error=text
        )
        Channel.objects.using(alias).filter(pk=delivery.channel_id).update(
            last_failure_at=now
        )
        return False
    delivery.attempts = number
    delivery.state = SENT
    delivery.sent_at = now
    delivery.save(using=alias, update_fields=["attempts", "state", "sent_at"])
    DeliveryAttempt.objects.using(alias).create(
        delivery=delivery, number=number, at=now, ok=True
    )
    Channel.objects.using(alias).filter(pk=delivery.channel_id).update(
        last_success_at=now
    )
    return True


def deliver_due(limit: int = 50) -> int:
    """Send up to ``limit`` due deliveries, one transaction each; return how many went."""
    alias = conf.state_alias()
    sent = 0
    for _ in range(limit):
        with transaction.atomic(using=alias):
            now = timezone.now()
            delivery = (
                Delivery.objects.using(alias)
                .select_for_update(skip_locked=True, of=("self",))
                .select_related("alert", "alert__rule", "alert__run__policy", "channel")
                .filter(state=PENDING, next_attempt_at__lte=now, channel__enabled=True)
                .order_by("next_attempt_at", "id")
                .first()
            )
            if delivery is None:
                break
            sent += attempt(delivery, now)
    return sent
