"""
The forms of the operator actions: what a submitted action may contain.

One form per action (stop, abandon, recover, hold, release, apply a purge,
apply a bulk plan), one for a recovery directive and one for purge criteria. A form parses the
POSTed (or, for a purge plan, queried) text into the service's arguments and
refuses malformed input before the service is called, so a malformed request
writes nothing. The dashboard's dialogs and the admin's confirmation pages
submit through the same forms.

The rules of the request envelope (operation ids, reason codes) and of a
purge's criteria and a recovery's directive are the service's own: the forms
call its validators rather than restate them, so a refusal reads the same
whichever front end sent the request. Ids and versions are bigints
(``1..MAX_BIGINT``, versions from 0) and ages and batches keep the service's
bounds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Self

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.http import QueryDict
from django.utils.translation import gettext_lazy as _

from batchboard import actions, vocabulary
from batchboard.actions import eligibility, envelope
from batchboard.actions.purge import (
    DEFAULT_AGE_SECONDS,
    DEFAULT_BATCH,
    MAX_AGE_SECONDS,
    MAX_BATCH,
    MIN_AGE_SECONDS,
)
from batchboard.explorer.inputs import (
    Continuation,
    ListForm,
    TextField,
    WholeNumberField,
)
from batchboard.vocabulary import parse_whole_number

__all__ = [
    "ACTION_FORMS",
    "AbandonForm",
    "ActionForm",
    "CandidatesForm",
    "BulkApplyForm",
    "BulkRecoverForm",
    "DirectiveForm",
    "HoldForm",
    "PurgeApplyForm",
    "PurgeCriteriaForm",
    "RecoverForm",
    "ReleaseForm",
    "StopForm",
    "TargetedActionForm",
]


# -- fields ----------------------------------------------------------------------


class CheckedField(forms.CharField):
    """
    Text checked by one of the service's validators.

    ``check`` takes the submitted text and returns the parsed value or raises
    :class:`~batchboard.actions.InvalidRequest`, whose message becomes the
    field's error. An empty value is the validator's to judge, not
    Django's "required".
    """

    def __init__(self, check: Callable[[str], Any], **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("strip", False)
        super().__init__(**kwargs)
        self.check = check

    def clean(self, value: Any) -> Any:
        text = super().clean(value)
        try:
            return self.check(text)
        except actions.InvalidRequest as error:
            raise ValidationError(error.message, code="invalid") from error


class ReasonField(CheckedField):
    """A reason code, one of those offered for ``action``."""

    def __init__(self, action: str, **kwargs: Any) -> None:
        super().__init__(lambda code: envelope.validate_reason(code, action), **kwargs)
        self.action = action


def bounded_field(
    minimum: int, maximum: int, invalid: Any, out_of_range: Any
) -> WholeNumberField:
    """Return a required whole number from ``minimum`` to ``maximum``."""
    return WholeNumberField(
        minimum,
        maximum,
        required=True,
        error_messages={"required": invalid, "invalid": invalid, "range": out_of_range},
    )


class HexDigestField(forms.Field):
    """A SHA-256 digest written as 64 hex digits; cleans to its 32 bytes."""

    def __init__(self, message: Any, **kwargs: Any) -> None:
        super().__init__(
            error_messages={"required": message, "invalid": message}, **kwargs
        )

    def to_python(self, value: Any) -> bytes:
        try:
            digest = bytes.fromhex(str(value or "").strip())
        except ValueError as error:
            raise ValidationError(
                self.error_messages["invalid"], code="invalid"
            ) from error
        if len(digest) != 32:
            raise ValidationError(self.error_messages["invalid"], code="invalid")
        return digest


class FlagField(forms.Field):
    """A hidden yes/no written ``1`` for yes; anything else is no."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> bool:
        return bool(value == "1")


# -- the actions -----------------------------------------------------------------


def first_error(form: forms.Form) -> str:
    """Return the first error of an invalid form: its own, then its fields'."""
    errors = form.errors
    for name in (NON_FIELD_ERRORS, *form.fields):
        if name in errors:
            return str(errors[name][0])
    raise ValueError("the form has no error")


class ActionForm(forms.Form):
    """
    The submitted half of one operator action.

    Subclasses name their ``action`` and the ``service`` function that runs
    it. A form's fields are named after the service's keyword arguments:
    :meth:`arguments` returns them cleaned, and :meth:`perform` calls the
    service with them and the user. An invalid form is refused with its
    first error as an :class:`~batchboard.actions.InvalidRequest`, the
    refusal the service itself raises for a malformed request.
    """

    action: ClassVar[str]
    service: ClassVar[Callable[..., actions.ActionResult]]

    #: Fixed when the form was shown: submitting it again replays.
    operation_id = CheckedField(envelope.validate_operation_id)

    @classmethod
    def reasons(cls) -> list[vocabulary.Reason]:
        """Return the reasons the form offers, or none if it asks for none."""
        field = cls.base_fields.get("reason_code")
        if not isinstance(field, ReasonField):
            return []
        return vocabulary.reasons_for(field.action)

    def arguments(self) -> dict[str, Any]:
        """Return the service's keyword arguments but the user."""
        return dict(self.cleaned_data)

    def perform(self, user: Any) -> actions.ActionResult:
        """Run the action for ``user``, or raise InvalidRequest and write nothing."""
        if not self.is_valid():
            raise actions.InvalidRequest(first_error(self))
        return self.service(user=user, **self.arguments())


class TargetedActionForm(ActionForm):
    """
    An action on one execution or one instance, whose id comes from the URL.

    ``target`` names the kind of row. The id is the service's to check:
    the dashboard's views answer an id beyond bigint with a 404 before
    binding the form (:func:`batchboard.web.known_id`).
    """

    target: ClassVar[str]

    def __init__(self, *args: Any, target_id: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.target_id = target_id

    def arguments(self) -> dict[str, Any]:
        """Return the cleaned data and the target's id (``execution_id``...)."""
        return {**super().arguments(), f"{self.target}_id": self.target_id}


#: An execution's id and version are refused together, as the service does.
_EXECUTION_NUMBERS = _("The execution id and version must be numbers.")
_EXECUTION_RANGE = _("The execution id or version is out of range.")


class ExecutionActionForm(TargetedActionForm):
    """An action on one execution, at the version the operator saw."""

    target = "execution"

    expected_version = bounded_field(
        0, vocabulary.MAX_BIGINT, _EXECUTION_NUMBERS, _EXECUTION_RANGE
    )


class InstanceActionForm(TargetedActionForm):
    """An action on one job instance (instances carry no version)."""

    target = "instance"


class StopForm(ExecutionActionForm):
    """STOP: a cooperative stop request; it carries no reason."""

    action = vocabulary.STOP
    service = staticmethod(actions.stop_execution)


class AbandonForm(ExecutionActionForm):
    """ABANDON: a finished execution becomes ABANDONED for good."""

    action = vocabulary.ABANDON
    service = staticmethod(actions.abandon_execution)
    reason_code = ReasonField(vocabulary.ABANDON)


class HoldForm(InstanceActionForm):
    """HOLD: purges skip the instance until the hold is released."""

    action = vocabulary.HOLD
    service = staticmethod(actions.place_hold)
    reason_code = ReasonField(vocabulary.HOLD)


class ReleaseForm(InstanceActionForm):
    """RELEASE_HOLD: purges may delete the instance's history again."""

    action = vocabulary.RELEASE_HOLD
    service = staticmethod(actions.release_hold)
    reason_code = ReasonField(vocabulary.RELEASE_HOLD)


#: The form of each action that targets one row, for the dialogs and the admin.
ACTION_FORMS: dict[str, type[TargetedActionForm]] = {
    form.action: form for form in (StopForm, AbandonForm, HoldForm, ReleaseForm)
}


# -- recovery --------------------------------------------------------------------


class DirectiveForm(forms.Form):
    """
    A recovery directive: mark failed with a failure, or abandon.

    Cleans to ``directive``, an :class:`~batchboard.actions.Directive`
    checked by the directive's own validation. The failure's category and id
    (cleaned first) count only when marking failed.
    """

    failure_category = forms.CharField(required=False, strip=False)
    failure_id = forms.CharField(required=False, strip=False)
    directive = forms.CharField(required=False, strip=False)

    def clean_directive(self) -> actions.Directive:
        cleaned = self.cleaned_data
        try:
            return actions.Directive(
                cleaned["directive"],
                cleaned.pop("failure_category", None),
                cleaned.pop("failure_id", None),
            ).validated()
        except actions.InvalidRequest as error:
            raise ValidationError(error.message, code="invalid") from error


class RecoverForm(ExecutionActionForm, DirectiveForm):
    """RECOVER: apply a reviewed proposal; the service re-proposes first."""

    action = vocabulary.RECOVER
    service = staticmethod(actions.recover_execution)
    evidence_digest = HexDigestField(_("The evidence digest must be 64 hex digits."))
    unknown_commit = FlagField()
    reason_code = ReasonField(vocabulary.RECOVER)

    # The digest as the operator reviewed it first, then the request as the
    # service checks it; the failure precedes the directive that uses it.
    field_order = (
        "evidence_digest",
        "expected_version",
        "reason_code",
        "failure_category",
        "failure_id",
        "directive",
    )

    def clean(self) -> dict[str, Any]:
        """
        Refuse a request the service would reject for its directive.

        With an unknown commit, marking failed takes the reason
        UNKNOWN_EFFECT (:func:`batchboard.actions.eligibility.directive`):
        refused here, such a request writes no REJECTED row. A failure is
        recorded under one of the categories an operator can observe
        (``vocabulary.RECOVERY_CATEGORIES``).
        """
        cleaned = super().clean() or {}
        directive = cleaned.get("directive")
        reason = cleaned.get("reason_code")
        if directive is None or reason is None:
            return cleaned
        if directive.category is not None and directive.category not in dict(
            vocabulary.RECOVERY_CATEGORIES
        ):
            raise ValidationError(
                _("Pick a failure category from the list."), code="invalid"
            )
        answer = eligibility.directive(
            unknown_commit=bool(cleaned.get("unknown_commit")),
            resulting_status=directive.resulting_status,
            reason_code=reason,
        )
        if not answer.offered:
            raise ValidationError(str(answer.why), code="not_offered")
        return cleaned


# -- purges ----------------------------------------------------------------------

_WHOLE_NUMBERS = _("The age and batch must be whole numbers.")


class PurgeCriteriaForm(forms.Form):
    """
    What a purge selects: a job, finished statuses, a minimum age, a batch.

    Bind it with :meth:`from_data`, which fills in the defaults of the
    values left out. It cleans to ``criteria``, the service's
    :class:`~batchboard.actions.PurgeCriteria`.
    """

    job_name = forms.CharField(
        strip=False,
        error_messages={"required": _("Enter a job name of 1 to 128 bytes.")},
    )
    statuses = forms.MultipleChoiceField(
        choices=[(status, status) for status in vocabulary.FINISHED],
        error_messages={
            "required": _("Pick at least one finished status."),
            "invalid_choice": _("Only finished statuses can be purged."),
        },
    )
    min_age_seconds = bounded_field(
        MIN_AGE_SECONDS,
        MAX_AGE_SECONDS,
        _WHOLE_NUMBERS,
        _("The minimum age is one hour (3600 s) to a hundred years."),
    )
    batch = bounded_field(
        1, MAX_BATCH, _WHOLE_NUMBERS, _("The batch is 1 to 1000 executions.")
    )

    #: What a value left out (or empty) means.
    DEFAULTS: ClassVar[dict[str, Sequence[str]]] = {
        "statuses": vocabulary.FINISHED,
        "min_age_seconds": (str(DEFAULT_AGE_SECONDS),),
        "batch": (str(DEFAULT_BATCH),),
    }

    @classmethod
    def from_data(cls, data: QueryDict) -> Self:
        """
        Bind the form to ``data``, the defaults standing in for gaps.

        The page asks for the age in days and hours (``age_days``,
        ``age_hours``); given either, they make ``min_age_seconds``.
        """
        filled = data.copy()
        days, hours = filled.get("age_days", ""), filled.get("age_hours", "")
        if days or hours:
            filled.setlist("min_age_seconds", [_age_seconds(days, hours)])
        for name, default in cls.DEFAULTS.items():
            if not any(filled.getlist(name)):
                filled.setlist(name, list(default))
        return cls(filled)

    @property
    def age_parts(self) -> tuple[int, int] | None:
        """Return the minimum age as (days, hours) for the page, when whole hours."""
        seconds = parse_whole_number(str(self.data.get("min_age_seconds", "")))
        if seconds is None or seconds % 3600:
            return None
        days, hours = divmod(seconds // 3600, 24)
        return days, hours

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        try:
            cleaned["criteria"] = actions.PurgeCriteria.validated(
                job_name=cleaned["job_name"],
                statuses=cleaned["statuses"],
                min_age_seconds=cleaned["min_age_seconds"],
                batch=cleaned["batch"],
            )
        except actions.InvalidRequest as error:
            raise ValidationError(error.message, code="invalid") from error
        return cleaned

    def criteria(self) -> actions.PurgeCriteria:
        """Return the validated criteria, or raise InvalidRequest."""
        if not self.is_valid():
            raise actions.InvalidRequest(first_error(self))
        criteria: actions.PurgeCriteria = self.cleaned_data["criteria"]
        return criteria


def _age_seconds(days: str, hours: str) -> str:
    """
    Return ``days`` and ``hours`` as seconds, or the input unchanged if not numbers.

    Anything but whole numbers of at most 12 digits is passed on as written,
    so that the age field's own message (not a crash) says what is wrong.
    """
    parts = [
        parse_whole_number(part.strip() or "0", maximum=_MAX_AGE_PART)
        for part in (days, hours)
    ]
    if parts[0] is None or parts[1] is None:
        return f"{days}d{hours}h"
    return str(parts[0] * 86400 + parts[1] * 3600)


#: The largest number of days or hours the purge page reads: 12 digits, far
#: past the maximum age, so the age field (not the sum) says it is too old.
_MAX_AGE_PART = 10**12 - 1


class PurgeApplyForm(PurgeCriteriaForm, ActionForm):
    """APPLY_PURGE: delete a reviewed plan's history, or nothing at all."""

    action = vocabulary.APPLY_PURGE
    service = staticmethod(actions.apply_purge)
    candidates = CheckedField(actions.parse_candidates)
    reason_code = ReasonField(vocabulary.APPLY_PURGE)
    plan_digest = HexDigestField(_("The plan digest must be 64 hex digits."))

    def arguments(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "criteria": data["criteria"],
            "candidates": data["candidates"],
            "plan_digest_hex": data["plan_digest"].hex(),
            "reason_code": data["reason_code"],
            "operation_id": data["operation_id"],
        }


# -- a plan's candidates ---------------------------------------------------------

_POSITION = _("“after” must name an instance and an execution, as in 12:345.")


class PositionField(Continuation, TextField):
    """
    Where a page of a plan's candidates continues: ``<instance>:<execution>``,
    two ids; blank means from the first.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, strip=False, **kwargs)

    def clean(self, value: Any) -> tuple[int, int] | None:
        text = str(super().clean(value))
        if not text:
            return None
        parts = [parse_whole_number(part) for part in text.split(":")]
        if len(parts) != 2 or parts[0] is None or parts[1] is None:
            raise ValidationError(_POSITION, code="invalid")
        return parts[0], parts[1]


class CandidatesForm(ListForm):
    """A page of a purge plan's candidates: its size, and where it continues."""

    after = PositionField()

    titles = {**ListForm.titles, "after": _("This link cannot continue the list")}

    @property
    def position(self) -> tuple[int, int] | None:
        """Return the (instance, execution) the page continues after, if any."""
        position: tuple[int, int] | None = self.cleaned_data["after"]
        return position


# -- bulk actions ----------------------------------------------------------------


def _filters(text: str) -> dict[str, Any]:
    """Parse a plan's filters (a JSON object of names to values) back."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise actions.InvalidRequest(_("The plan's filters are malformed."))
    return value


class BulkApplyForm(forms.Form):
    """
    A reviewed bulk plan submitted for applying: the plan and the reason.

    The plan's items, digest and filters are checked by the service
    (:func:`batchboard.actions.apply_bulk`): a digest that does not match
    them is refused there, before anything is written.
    """

    action = forms.ChoiceField(
        choices=[(name, name) for name in actions.bulk.BULK_ACTIONS]
    )
    filters = CheckedField(_filters)
    items = forms.CharField(required=False, strip=False)
    digest = forms.CharField(strip=False)
    bulk_id = CheckedField(actions.bulk.validate_bulk_id)
    reason_code = forms.CharField(required=False, strip=False)

    @classmethod
    def for_action(cls, data: QueryDict) -> BulkApplyForm:
        """Return the form for the submitted action (RECOVER adds a directive)."""
        if data.get("action") == vocabulary.RECOVER:
            return BulkRecoverForm(data)
        return cls(data)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        action = cleaned.get("action")
        if action and vocabulary.reasons_for(action):
            try:
                cleaned["reason_code"] = envelope.validate_reason(
                    cleaned.get("reason_code"), action
                )
            except actions.InvalidRequest as error:
                self.add_error("reason_code", error.message)
        else:
            cleaned["reason_code"] = None
        return cleaned

    def perform(self, user: Any, **bounds: Any) -> actions.BulkResult:
        """
        Record the operation and apply what ``bounds`` allow (``limit``,
        ``seconds``; by default nothing yet), or raise InvalidRequest.
        """
        if not self.is_valid():
            raise actions.InvalidRequest(first_error(self))
        return actions.apply_bulk(
            user=user, **{"limit": 0, **bounds}, **self.cleaned_data
        )


class BulkRecoverForm(BulkApplyForm, DirectiveForm):
    """A bulk recovery: the plan, the reason and one directive for all items."""
