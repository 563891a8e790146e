"""
The forms that create rules and channels: what is valid is said here once.

A bad value (a malformed Apprise URL, a webhook to a scheme other than
http or https, k <= 0, a rule for a job batchboard has never seen) makes
the form invalid, and an invalid form saves nothing. A channel's URL and
secret are password inputs that are never rendered back.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, validate_email
from django.utils.translation import gettext_lazy as _

from batchboard import conf
from batchboard.actions import InvalidRequest, PurgeCriteria
from batchboard.actions.purge import DEFAULT_BATCH
from batchboard.alerts import channels
from batchboard.alerts.models import Channel, RetentionPolicy, Rule
from batchboard.alerts.retention import MAX_PERIOD_HOURS, MIN_PERIOD_HOURS
from batchboard.models import JobDefinition
from batchboard.vocabulary import (
    FAILURE_CATEGORIES,
    FINISHED,
    MAX_BIGINT,
    TREND_RUNS,
    parse_whole_number,
)


def _channel_label(channel: Channel) -> str:
    return f"{channel.name} ({channel.shown_target})"


class ChannelsField(forms.ModelMultipleChoiceField):  # type: ignore[type-arg]
    """
    The channels to notify, by name, none required: ids checked as whole
    numbers before any query.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.queryset = Channel.objects.using(conf.state_alias()).order_by("name")
        self.required = False

    def label_from_instance(self, obj: Any) -> str:
        return _channel_label(obj)

    def clean(self, value: Any) -> Any:
        for item in value if isinstance(value, (list, tuple)) else ():
            number = parse_whole_number(str(item))
            if number is None or number > MAX_BIGINT:
                raise ValidationError(
                    _("Pick channels from the list."), code="invalid_pk_value"
                )
        return super().clean(value)


def known_job_name(value: object) -> str:
    """Return a job name batchboard has a definition for, or blank (all jobs)."""
    name = str(value or "").strip()
    if name and not (
        JobDefinition.objects.using(conf.database_alias())
        .filter(job_name=name)
        .exists()
    ):
        raise ValidationError(
            _("No job named %(name)s is registered."), params={"name": name}
        )
    return name


class RuleForm(forms.ModelForm):  # type: ignore[type-arg]
    """A rule; the fields its kind needs are required, the others ignored."""

    class Meta:
        model = Rule
        fields = [
            "name",
            "kind",
            "job_name",
            "failure_categories",
            "minutes",
            "factor",
            "window",
            "limit_minutes",
            "hours",
            "channels",
            "enabled",
        ]
        field_classes = {"channels": ChannelsField}
        help_texts = {
            "job_name": _("Leave blank for all jobs."),
            "failure_categories": _("FAILED only; comma-separated, blank for any."),
            "minutes": _("STALE: minutes without an update."),
            "factor": _("OVERDUE: k, the multiple of the p95."),
            "window": _("OVERDUE and SLOW: M, the latest runs the p95 is taken over."),
            "limit_minutes": _("OVERDUE: a fixed limit in minutes."),
            "hours": _("FRESHNESS: hours within which a run must complete."),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in ("minutes", "window", "limit_minutes", "hours"):
            field = self.fields[name]
            assert isinstance(field, forms.IntegerField)
            field.validators.append(MinValueValidator(1))
            field.widget.attrs["min"] = 1

    def clean_job_name(self) -> str:
        return known_job_name(self.cleaned_data.get("job_name"))

    def clean_failure_categories(self) -> str:
        given = [
            part.strip()
            for part in str(self.cleaned_data.get("failure_categories") or "").split(
                ","
            )
            if part.strip()
        ]
        unknown = [part for part in given if part not in FAILURE_CATEGORIES]
        if unknown:
            raise ValidationError(
                _("Unknown failure categories: %(unknown)s."),
                params={"unknown": ", ".join(unknown)},
            )
        return ",".join(given)

    def clean_factor(self) -> float | None:
        factor = self.cleaned_data.get("factor")
        if factor is not None and factor <= 0:
            raise ValidationError(_("k must be greater than 0."))
        return factor

    def clean_window(self) -> int | None:
        window = self.cleaned_data.get("window")
        if window is not None and not 1 <= window <= TREND_RUNS:
            raise ValidationError(
                _("M must be from 1 to %(most)s runs."), params={"most": TREND_RUNS}
            )
        return window

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        kind = data.get("kind")
        needed = {
            "STALE": ["minutes"],
            "FRESHNESS": ["hours"],
        }.get(str(kind), [])
        for name in needed:
            if data.get(name) is None and name not in self.errors:
                self.add_error(name, _("This kind of rule needs this value."))
        if (
            kind == "OVERDUE"
            and data.get("factor") is None
            and data.get("limit_minutes") is None
            and "factor" not in self.errors
        ):
            self.add_error("factor", _("Give k (with M) or a fixed limit, or both."))
        if kind != "FAILED" and data.get("failure_categories"):
            self.add_error(
                "failure_categories", _("Only FAILED rules narrow by category.")
            )
        return data


class ChannelForm(forms.ModelForm):  # type: ignore[type-arg]
    """A channel; its target and secret are write-only."""

    target = forms.CharField(
        label=_("URL or addresses"),
        max_length=2000,
        widget=forms.PasswordInput(render_value=False),
        help_text=_(
            "Webhook: an http(s) URL. Apprise: a service URL such as "
            "slack://... or pagerduty://... Email: addresses, comma-separated. "
            "Never shown again."
        ),
    )
    secret = forms.CharField(
        label=_("Signing secret"),
        max_length=256,
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text=_("Webhook only: the HMAC-SHA256 key. Never shown again."),
    )

    class Meta:
        model = Channel
        fields = ["name", "kind", "target", "secret", "enabled"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        kind, target = data.get("kind"), str(data.get("target") or "").strip()
        if not kind or not target:
            return data
        if kind == "WEBHOOK":
            parts = urlsplit(target)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                self.add_error("target", _("A webhook needs an http or https URL."))
            if not data.get("secret"):
                self.add_error("secret", _("A webhook needs a signing secret."))
        elif kind == "APPRISE":
            if not channels.valid_apprise_url(target):
                self.add_error("target", _("Apprise does not recognise this URL."))
        else:
            found = channels.addresses(target)
            try:
                for address in found:
                    validate_email(address)
            except ValidationError:
                self.add_error("target", _("Give valid email addresses."))
        if kind != "WEBHOOK":
            data["secret"] = ""
        data["target"] = target
        return data

    def save(self, commit: bool = True) -> Channel:
        channel: Channel = super().save(commit=False)
        channel.shown_target = channels.shown(channel.kind, channel.target)
        if commit:
            channel.save(using=conf.state_alias())
        return channel


# -- standing retention policies -------------------------------------------------

_POLICY_NAME = re.compile(r"[A-Za-z0-9._@-]{1,100}")
_DAY = 24 * 3600


class PolicyForm(forms.ModelForm):  # type: ignore[type-arg]
    """
    A standing retention policy. Its criteria are checked by the purge's own
    rule (:meth:`batchboard.actions.PurgeCriteria.validated`), so a policy
    can name only what the purge page could plan.
    """

    statuses = forms.MultipleChoiceField(
        label=_("Finished statuses"),
        choices=[(status, status) for status in FINISHED],
        widget=forms.CheckboxSelectMultiple,
        error_messages={
            "required": _("Pick at least one finished status."),
            "invalid_choice": _("Only finished statuses can be purged."),
        },
    )
    keep_days = forms.IntegerField(
        label=_("Keep (days)"),
        help_text=_("History younger than this is kept."),
    )

    class Meta:
        model = RetentionPolicy
        fields = [
            "name",
            "job_name",
            "statuses",
            "keep_days",
            "batch",
            "applies",
            "period_hours",
            "channels",
            "enabled",
        ]
        field_classes = {"channels": ChannelsField}
        labels = {
            "applies": _("Apply on its own"),
            "period_hours": _("Every (hours)"),
        }
        help_texts = {
            "name": _(
                "Letters, digits and . _ @ -; the audit's actor is "
                "retention-policy:<name>."
            ),
            "job_name": _("Leave blank for all jobs."),
            "batch": _("Executions per purge batch, 1 to 1000."),
            "applies": _("Off: plan and notify only; nothing is deleted."),
            "period_hours": _("1 hour to 366 days."),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.initial["statuses"] = list(self.instance.status_list)
            self.initial["keep_days"] = self.instance.min_age_seconds // _DAY
        else:
            self.initial.setdefault("statuses", list(FINISHED))
            self.initial.setdefault("batch", DEFAULT_BATCH)
            self.initial.setdefault("period_hours", 24)
        for name in ("keep_days", "batch", "period_hours"):
            self.fields[name].widget.attrs["min"] = 1

    def clean_name(self) -> str:
        name = str(self.cleaned_data.get("name") or "")
        if not _POLICY_NAME.fullmatch(name):
            raise ValidationError(
                _("Use 1 to 100 letters, digits, dots, underscores, @ or hyphens.")
            )
        return name

    def clean_job_name(self) -> str:
        return known_job_name(self.cleaned_data.get("job_name"))

    def clean_period_hours(self) -> int | None:
        hours = self.cleaned_data.get("period_hours")
        if hours is not None and not MIN_PERIOD_HOURS <= hours <= MAX_PERIOD_HOURS:
            raise ValidationError(
                _("The period is %(least)s to %(most)s hours."),
                params={"least": MIN_PERIOD_HOURS, "most": MAX_PERIOD_HOURS},
            )
        return hours

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if any(name in self.errors for name in ("statuses", "keep_days", "batch")):
            return data
        if data.get("keep_days") is None or data.get("batch") is None:
            return data
        try:
            criteria = PurgeCriteria.validated(
                # A name the rule accepts stands in for all jobs.
                job_name=data.get("job_name") or "all",
                statuses=data.get("statuses") or [],
                min_age_seconds=int(data["keep_days"]) * _DAY,
                batch=data["batch"],
            )
        except InvalidRequest as error:
            self.add_error(None, error.message)
            return data
        data["statuses"] = ",".join(criteria.statuses)
        data["min_age_seconds"] = criteria.min_age_seconds
        return data

    def save(self, commit: bool = True) -> RetentionPolicy:
        policy: RetentionPolicy = super().save(commit=False)
        policy.statuses = self.cleaned_data["statuses"]
        policy.min_age_seconds = self.cleaned_data["min_age_seconds"]
        if commit:
            policy.save(using=conf.state_alias())
            self.save_m2m()
        return policy
