"""
The alerts' pages: rules and channels, a channel's delivery log, the inbox
and its count, the overdue page, and the standing retention policies.

Managing rules and channels needs ``batchboard.manage_alerts``; managing
retention policies needs the Destructive class (APPLY_PURGE's); the inbox
is every signed-in user's own; the overdue page needs the executions'
view permissions and reads a bounded page of each list it shows.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from batchboard import conf
from batchboard.alerts import detector, forms, retention
from batchboard.alerts.models import (
    Channel,
    Delivery,
    DeliveryAttempt,
    InboxItem,
    RetentionPolicy,
    RetentionRun,
    Rule,
)
from batchboard.explorer import queries
from batchboard.explorer.access import VIEW_EXECUTIONS
from batchboard.explorer.links import Links
from batchboard.vocabulary import ACTION_CLASSES, APPLY_PURGE, parse_whole_number
from batchboard.web import Gate, NotFound, ReadGate, action_view, guarded, reader

#: The rows the delivery log, the inbox and each overdue list show.
LOG_ROWS = 50
INBOX_ROWS = 50
#: The overdue page reads this many unresolved executions and this many
#: latest COMPLETED ones: with the latest runs of their jobs, the page stays
#: within 1.5x the minimal keyset view (batchboard_benchmark).
OVERDUE_ROWS = 50
FINISHED_ROWS = 25
#: The policies the policies page lists, and the runs a policy's page shows.
POLICY_ROWS = 200
RUN_ROWS = 50
#: The header's count stops here ("99+").
COUNT_CAP = 99


class AlertsGate(Gate):
    """The ``manage_alerts`` permission."""

    def allows(self, user: Any) -> bool:
        return bool(user.has_perm("batchboard.manage_alerts"))

    def refusal(self) -> tuple[str, str]:
        return _("Not allowed"), _(
            "Managing alert rules and channels needs the manage_alerts "
            "permission, which your account does not have. Nothing was changed."
        )

    def unavailable(self) -> tuple[str, str]:
        return _("Database unavailable"), _(
            "The database did not answer. Nothing is known to have changed; "
            "try again in a moment."
        )


def _state() -> str:
    return conf.state_alias()


@guarded(AlertsGate())
@require_http_methods(["GET", "POST"])
def rules(request: HttpRequest) -> HttpResponse:
    """List rules and channels; create either, or switch a rule on or off."""
    rule_form = forms.RuleForm(prefix="rule")
    channel_form = forms.ChannelForm(prefix="channel")
    status = 200
    if request.method == "POST":
        which = request.POST.get("form")
        if which == "rule":
            rule_form = forms.RuleForm(request.POST, prefix="rule")
            if rule_form.is_valid():
                rule = rule_form.save(commit=False)
                rule.owner = request.user
                rule.created_at = timezone.now()
                rule.save(using=_state())
                rule_form.save_m2m()
                return redirect("batchboard:alert_rules")
            status = 400
        elif which == "channel":
            channel_form = forms.ChannelForm(request.POST, prefix="channel")
            if channel_form.is_valid():
                channel = channel_form.save(commit=False)
                channel.owner = request.user  # type: ignore[assignment]
                channel.created_at = timezone.now()
                channel.save(using=_state())
                return redirect("batchboard:alert_rules")
            status = 400
        elif which == "toggle":
            updated = (
                Rule.objects.using(_state())
                .filter(pk=_whole(request.POST.get("rule")))
                .first()
            )
            if updated is None:
                raise NotFound(_("alert rule"))
            updated.enabled = not updated.enabled
            updated.save(using=_state(), update_fields=["enabled"])
            return redirect("batchboard:alert_rules")
        else:
            status = 400
    context = {
        "rules": Rule.objects.using(_state())
        .select_related("owner")
        .prefetch_related("channels")
        .order_by("name", "id"),
        "channels": Channel.objects.using(_state()).order_by("name", "id"),
        "rule_form": rule_form,
        "channel_form": channel_form,
    }
    return render(request, "batchboard/alerts/rules.html", context, status=status)


def _whole(value: str | None) -> int:
    """Return a row id from a form value; 0 (no row) for anything else."""
    return parse_whole_number(value or "") or 0


@guarded(AlertsGate())
@require_http_methods(["GET"])
def channel_log(request: HttpRequest, channel_id: int) -> HttpResponse:
    """Show a channel's health and its latest deliveries, attempt by attempt."""
    channel = Channel.objects.using(_state()).filter(pk=channel_id).first()
    if channel is None:
        raise NotFound(_("channel"))
    deliveries = (
        Delivery.objects.using(_state())
        .filter(channel=channel)
        .select_related("alert", "alert__rule", "alert__run__policy")
        .prefetch_related(
            Prefetch("log", queryset=DeliveryAttempt.objects.order_by("number"))
        )
        .order_by("-id")[:LOG_ROWS]
    )
    return render(
        request,
        "batchboard/alerts/channel.html",
        {"channel": channel, "deliveries": deliveries},
    )


@guarded(ReadGate(()))
@require_http_methods(["GET", "POST"])
def inbox(request: HttpRequest) -> HttpResponse:
    """Show the user's alerts, newest first; mark one or all read."""
    mine = InboxItem.objects.using(_state()).filter(user_id=request.user.pk or 0)
    if request.method == "POST":
        unread = mine.filter(read_at__isnull=True)
        if request.POST.get("item") != "all":
            unread = unread.filter(pk=_whole(request.POST.get("item")))
        unread.update(read_at=timezone.now())
        return redirect("batchboard:inbox")
    items = mine.select_related("alert", "alert__rule", "alert__run__policy").order_by(
        "-id"
    )[:INBOX_ROWS]
    return render(request, "batchboard/alerts/inbox.html", {"items": items})


@guarded(ReadGate(()))
@require_http_methods(["GET"])
def inbox_count(request: HttpRequest) -> HttpResponse:
    """The header's unread count: one statement, capped at :data:`COUNT_CAP`."""
    unread = (
        InboxItem.objects.using(_state())
        .filter(user_id=request.user.pk or 0, read_at__isnull=True)
        .values("id")[: COUNT_CAP + 1]
    )
    count = len(unread)
    return render(
        request,
        "batchboard/alerts/inbox_count.html",
        {"count": count, "more": count > COUNT_CAP, "cap": COUNT_CAP},
    )


def _overdue_row(links: Links, row: Any, seconds: float, p95: float) -> Any:
    """Return an overdue page row: the run, its links, its time and the p95."""
    return {
        **row,
        "seconds": seconds,
        "p95": p95,
        "url": links.link("batchboard:execution", int(row["id"])),
        "job_url": links.job(row["job_name"]),
    }


@reader(*VIEW_EXECUTIONS)
def overdue(request: HttpRequest) -> HttpResponse:
    """
    Running executions longer than their job's p95, and recent slow finishes.

    Three statements: a page of the unresolved executions and one of the
    latest COMPLETED ones (what a run's time needs of each), and the latest
    runs of the jobs of the running ones and of the finishes.
    """
    now = timezone.now()
    # Each row's links from patterns looked up once, never reversed per row.
    links = Links()
    unresolved = queries.unresolved(0, OVERDUE_ROWS, shape=queries.TIMES).rows
    # Only a running execution can be late: the others need no p95.
    running = [row for row in unresolved if row["status"] in detector.RUNNING]
    finished = queries.recent_executions(
        "COMPLETED", "", FINISHED_ROWS, shape=queries.TIMES
    ).rows
    history = detector.job_history(row["job_name"] for row in [*running, *finished])
    late, slow = [], []
    for row in running:
        typical = detector.p95(
            history.get(row["job_name"], []), detector.DEFAULT_WINDOW
        )
        seconds = detector.duration(row, now)
        if typical is not None and seconds is not None and seconds > typical:
            late.append(_overdue_row(links, row, seconds, typical))
    for row in finished:
        typical = detector.p95(
            history.get(row["job_name"], []), detector.DEFAULT_WINDOW, int(row["id"])
        )
        seconds = detector.duration(row, row["ended_at"] or now)
        if typical is not None and seconds is not None and seconds > typical:
            slow.append(_overdue_row(links, row, seconds, typical))
    return render(
        request,
        "batchboard/alerts/overdue.html",
        {"late": late, "slow": slow, "window": detector.DEFAULT_WINDOW},
    )


# -- standing retention policies -------------------------------------------------


def _policy_context(form: forms.PolicyForm) -> dict[str, Any]:
    return {
        "form": form,
        "auth_class": ACTION_CLASSES[APPLY_PURGE],
        "max_batches": retention.max_batches(),
    }


@action_view(APPLY_PURGE)
@require_http_methods(["GET", "POST"])
def retention_policies(request: HttpRequest) -> HttpResponse:
    """List the standing retention policies; create one (Destructive)."""
    form = forms.PolicyForm(prefix="policy")
    status = 200
    if request.method == "POST":
        form = forms.PolicyForm(request.POST, prefix="policy")
        if form.is_valid():
            policy = form.save(commit=False)
            policy.owner = request.user  # type: ignore[assignment]
            policy.created_at = policy.next_due = timezone.now()
            policy.save(using=_state())
            form.save_m2m()
            return redirect("batchboard:retention_policy", policy.pk)
        status = 400
    policies = (
        RetentionPolicy.objects.using(_state())
        .select_related("owner")
        .prefetch_related("channels")
        .order_by("name")[:POLICY_ROWS]
    )
    return render(
        request,
        "batchboard/alerts/policies.html",
        {**_policy_context(form), "policies": policies},
        status=status,
    )


@action_view(APPLY_PURGE)
@require_http_methods(["GET", "POST"])
def retention_policy(request: HttpRequest, policy_id: int) -> HttpResponse:
    """Show a policy and its latest runs; edit, delete or run it now."""
    policy = RetentionPolicy.objects.using(_state()).filter(pk=policy_id).first()
    if policy is None:
        raise NotFound(_("retention policy"))
    form = forms.PolicyForm(instance=policy, prefix="policy")
    status = 200
    notice = ""
    if request.method == "POST":
        which = request.POST.get("form")
        if which == "edit":
            form = forms.PolicyForm(request.POST, instance=policy, prefix="policy")
            if form.is_valid():
                form.save()
                return redirect("batchboard:retention_policy", policy.pk)
            status = 400
        elif which == "delete":
            policy.delete(using=_state())
            return redirect("batchboard:retention_policies")
        elif which == "run":
            claimed = retention.claim(timezone.now(), policy_id=policy.pk)
            if claimed is None:
                notice = _("Another process is running this policy now.")
                status = 409
            else:
                retention.run_policy(claimed)
                return redirect("batchboard:retention_policy", policy.pk)
        else:
            status = 400
            notice = _("Unknown request: nothing was changed.")
    runs = (
        RetentionRun.objects.using(_state())
        .filter(policy=policy)
        .order_by("-id")[:RUN_ROWS]
    )
    return render(
        request,
        "batchboard/alerts/policy.html",
        {**_policy_context(form), "policy": policy, "runs": runs, "notice": notice},
        status=status,
    )
