"""
How an alert leaves batchboard: the message, the three channel kinds, and
the redaction every error passes through.

The message (:func:`message`) holds the job's name, the ids, the status,
the failure category, the rule and a link: never parameter values or user
error text (contract 9.2), since none of those is ever read. A retention
run's report holds the policy, the job's name, the outcome, the counts, the
plan digest, an error code and a link to the policy instead.

- A webhook receives the message as JSON, signed with HMAC-SHA256 over the
  exact body (header ``X-Batchboard-Signature: sha256=<hex>``) and keyed by
  ``Idempotency-Key``, the same on every attempt of one delivery.
- An Apprise URL reaches a chat or paging service through Apprise, which
  knows each service; batchboard writes none of them itself.
- Email goes through Django's email backend.

A channel's URL and secret are write-only: :func:`shown` keeps the scheme
and host for the UI, and :func:`redact` removes every secret (and any URL's
credentials, path and query) from an error before it is stored or logged.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Final
from urllib.parse import urlsplit

from django.core.mail import send_mail
from django.urls import reverse

from batchboard import conf
from batchboard.alerts.models import Alert, Channel, Delivery

#: The webhook's signature and idempotency headers.
SIGNATURE_HEADER: Final = "X-Batchboard-Signature"
IDEMPOTENCY_HEADER: Final = "Idempotency-Key"
#: Seconds a webhook may take before the attempt counts as failed.
TIMEOUT_SECONDS: Final = 10
#: The longest error text kept (the log's column).
ERROR_LENGTH: Final = 500

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


class DeliveryError(Exception):
    """A channel refused or could not take a message; the text is redacted."""


def shown(kind: str, target: str) -> str:
    """Return what the UI may show of a channel's target: scheme and host."""
    if kind == "EMAIL":
        domains = sorted({part.rsplit("@", 1)[-1] for part in addresses(target)})
        return ", ".join(f"…@{domain}" for domain in domains)
    parts = urlsplit(target.strip())
    host = parts.hostname or ""
    return f"{parts.scheme}://{host}/…" if host else f"{parts.scheme}://…"


def addresses(target: str) -> list[str]:
    """Return the email addresses of an EMAIL channel's target."""
    return [part.strip() for part in re.split(r"[,\s]+", target) if part.strip()]


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Return ``text`` without ``secrets`` and without any URL past its host."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, "[redacted]")

    def host_only(found: re.Match[str]) -> str:
        parts = urlsplit(found.group(0))
        try:
            host = parts.hostname or ""
        except ValueError:
            host = ""
        return f"{parts.scheme}://{host}/[redacted]"

    return _URL.sub(host_only, text)[:ERROR_LENGTH]


def channel_secrets(channel: Channel) -> list[str]:
    """Return every string of ``channel`` that must never appear in a log."""
    target = channel.target.strip()
    parts = [target, channel.secret]
    split = urlsplit(target)
    parts += [split.password or "", split.path, split.query, split.username or ""]
    # Apprise's tokens are path segments and query values.
    parts += [segment for segment in split.path.split("/") if len(segment) >= 4]
    return [part for part in parts if part]


def link(alert: Alert) -> str:
    """Return the alert's link: the execution's page, the job's, or the policy's."""
    base = str(conf.get_config()["ALERTS_BASE_URL"]).rstrip("/")
    if alert.run is not None:
        path = reverse("batchboard:retention_policy", args=[alert.run.policy_id])
    elif alert.execution_id:
        path = reverse("batchboard:execution", args=[alert.execution_id])
    else:
        path = reverse("batchboard:job", kwargs={"job_name": alert.job_name})
    return f"{base}{path}"


def message(delivery: Delivery) -> dict[str, Any]:
    """Return what a channel receives of ``delivery``'s alert (no payloads)."""
    alert = delivery.alert
    if alert.run is not None or alert.rule is None:
        return _report(delivery)
    return {
        "idempotency_key": delivery.idempotency_key,
        "rule": {"id": alert.rule_id, "name": alert.rule.name, "kind": alert.kind},
        "job_name": alert.job_name,
        "execution_id": alert.execution_id or None,
        "instance_id": alert.instance_id,
        "version": alert.version,
        "status": alert.status or None,
        "failure_category": alert.failure_category or None,
        "seconds": alert.seconds,
        "threshold_seconds": alert.threshold_seconds,
        "detected_at": alert.detected_at.isoformat(),
        "link": link(alert),
    }


def _report(delivery: Delivery) -> dict[str, Any]:
    """Return what a channel receives of a retention run's report."""
    alert = delivery.alert
    run = alert.run
    assert run is not None
    policy = run.policy
    return {
        "idempotency_key": delivery.idempotency_key,
        "policy": {"id": policy.pk, "name": policy.name, "applies": run.applies},
        "kind": alert.kind,
        "outcome": run.outcome,
        "job_name": run.job_name,
        "plan_digest": run.plan_digest or None,
        "candidates": run.candidates,
        "applied_batches": run.applied_batches,
        "deleted_executions": run.deleted_executions,
        "deleted_instances": run.deleted_instances,
        "error_code": run.error_code or None,
        "detected_at": alert.detected_at.isoformat(),
        "link": link(alert),
    }


def _report_summary(body: dict[str, Any]) -> tuple[str, str]:
    title = (
        f"[batchboard] retention {body['policy']['name']}: "
        f"{body['job_name']} {body['outcome']}"
    )
    lines = [
        f"Policy: {body['policy']['name']}"
        f" ({'applies' if body['policy']['applies'] else 'plans only'})",
        f"Job: {body['job_name']}",
        f"Outcome: {body['outcome']}",
        f"Plan digest: {body['plan_digest'] or '-'}",
        f"Candidates in the plan: {body['candidates']}",
        f"Batches applied: {body['applied_batches']}",
        f"Executions deleted: {body['deleted_executions']}",
    ]
    if body["error_code"]:
        lines.append(f"Error: {body['error_code']}")
    lines.append(body["link"])
    return title, "\n".join(lines)


def summary(body: dict[str, Any]) -> tuple[str, str]:
    """Return a title and a text for chat and email channels."""
    if "policy" in body:
        return _report_summary(body)
    what = body["status"] or body["rule"]["kind"]
    subject = body["execution_id"] or "-"
    title = f"[batchboard] {body['job_name']} {what} (execution {subject})"
    lines = [
        f"Rule: {body['rule']['name']} ({body['rule']['kind']})",
        f"Job: {body['job_name']}",
        f"Execution: {subject}",
        f"Status: {body['status'] or '-'}",
        f"Failure category: {body['failure_category'] or '-'}",
    ]
    if body["seconds"] is not None and body["threshold_seconds"] is not None:
        lines.append(
            f"Duration: {body['seconds']:.0f} s against {body['threshold_seconds']:.0f} s"
        )
    lines.append(body["link"])
    return title, "\n".join(lines)


def sign(secret: str, body: bytes) -> str:
    """Return the signature header's value for ``body``."""
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def _webhook(channel: Channel, delivery: Delivery, body: dict[str, Any]) -> None:
    data = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    request = urllib.request.Request(
        channel.target.strip(),
        data=data,
        method="POST",
        headers={
            "Content-Type": "application/json",
            SIGNATURE_HEADER: sign(channel.secret, data),
            IDEMPOTENCY_HEADER: delivery.idempotency_key,
            "User-Agent": "batchboard-alerts",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            response.read(1024)
    except urllib.error.HTTPError as error:
        raise DeliveryError(f"HTTP {error.code} from the webhook") from None
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        raise DeliveryError(f"webhook unreachable: {reason}") from None


class _Kept(logging.Handler):
    """Keep Apprise's log records' messages instead of passing them on."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def apprise_contained() -> Iterator[_Kept]:
    """
    Keep Apprise's log to the caller while the block runs.

    Apprise logs the URLs it parses (an unparseable one in full); none of
    that may reach the site's log, so its records stay here, to be redacted
    before they are stored. The site's handlers are back after the block.
    """
    logger = logging.getLogger("apprise")
    kept = _Kept()
    saved = (logger.handlers[:], logger.propagate)
    logger.handlers = [kept]
    logger.propagate = False
    try:
        yield kept
    finally:
        logger.handlers, logger.propagate = saved


def valid_apprise_url(url: str) -> bool:
    """Return whether Apprise knows the service of ``url`` (nothing is logged)."""
    import apprise

    with apprise_contained():
        return bool(apprise.Apprise().add(url))


def _apprise(channel: Channel, body: dict[str, Any]) -> None:
    import apprise

    title, text = summary(body)
    notifier = apprise.Apprise()
    with apprise_contained() as kept:
        if not notifier.add(channel.target.strip()):
            raise DeliveryError("the Apprise URL is not valid")
        if notifier.notify(body=text, title=title):
            return
    raise DeliveryError(
        "Apprise could not notify: " + (kept.lines[-1] if kept.lines else "no detail")
    )


def _email(channel: Channel, body: dict[str, Any]) -> None:
    title, text = summary(body)
    try:
        send_mail(title, text, None, addresses(channel.target))
    except Exception as error:  # the backend's own exceptions vary
        raise DeliveryError(f"email not sent: {type(error).__name__}") from None


def send(delivery: Delivery) -> None:
    """Send ``delivery`` once; raise :class:`DeliveryError` (redacted) if not."""
    channel = delivery.channel
    body = message(delivery)
    try:
        if channel.kind == "WEBHOOK":
            _webhook(channel, delivery, body)
        elif channel.kind == "APPRISE":
            _apprise(channel, body)
        else:
            _email(channel, body)
    except DeliveryError as error:
        raise DeliveryError(redact(str(error), channel_secrets(channel))) from None
