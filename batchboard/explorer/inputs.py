"""
The explorer's request inputs, as Django forms that say what is valid.

Every page reads its query string through one of these forms with
:func:`read`; the first invalid field becomes a :class:`batchboard.web.BadInput`
(a 400 page that says what was wrong and links to the list without the
offending parameter). Messages never repeat the value given, except a page
size, which is a number: a filter value could be anything.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from django import forms
from django.core.validators import RegexValidator
from django.http import HttpRequest
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

from batchboard import conf, cursors
from batchboard.actions.envelope import OPERATION_ID_RE
from batchboard.vocabulary import (
    MAX_PAGE_SIZE,
    MAX_UNRESOLVED_AGE,
    MIN_PAGE_SIZE,
    MIN_UNRESOLVED_AGE,
    OVERVIEW_PAGE_SIZE,
    STATUS_SETS,
    STATUSES,
    parse_whole_number,
)
from batchboard.web import BadInput

if TYPE_CHECKING:
    from django.utils.functional import _StrPromise

__all__ = [
    "AGE_CHOICES",
    "age_choices",
    "JUMP_IDS",
    "JUMP_KINDS",
    "CompareForm",
    "ChoiceFilterField",
    "Continuation",
    "ExecutionForm",
    "ExecutionsForm",
    "InstancesForm",
    "JobNameField",
    "JobNamesForm",
    "JumpForm",
    "ListForm",
    "OperationIdField",
    "OverviewForm",
    "StatusesField",
    "UnresolvedForm",
    "WindowBound",
    "WindowBoundField",
    "WindowForm",
    "read",
]

#: The age bounds the unresolved page offers, in seconds.
AGE_CHOICES: tuple[tuple[int, Promise], ...] = (
    (60, _("1 minute")),
    (300, _("5 minutes")),
    (900, _("15 minutes")),
    (3600, _("1 hour")),
    (6 * 3600, _("6 hours")),
    (24 * 3600, _("24 hours")),
)


@functools.lru_cache(maxsize=64)
def _age_choices_in(language: str | None) -> tuple[tuple[int, str], ...]:
    return tuple((seconds, str(label)) for seconds, label in AGE_CHOICES)


def age_choices() -> tuple[tuple[int, str], ...]:
    """Return the offered age bounds with their labels in the active language."""
    return _age_choices_in(get_language())


#: The records the header's jump box opens by id, by the name of their page.
JUMP_IDS = ("execution", "instance", "step")
#: What the jump box opens: a record by id, a job by (the start of) its
#: name, an operator request or a bulk operation by its operation id.
JUMP_KINDS = (*JUMP_IDS, "job", "operation")

_UNKNOWN_FILTER = _("Unknown filter value")


class SharedField(forms.Field):
    """
    A field every form of its class shares: it holds no state of one form.

    Django copies a form's fields deeply for each form it builds, so that a
    form may change its own; the explorer's forms never do, and copying
    cost more than reading the input on pages that take a few milliseconds.
    """

    def __deepcopy__(self, memo: dict[int, Any]) -> SharedField:
        return self


class TextField(SharedField, forms.CharField):
    """A text input, shared by the forms of its class."""


class WholeNumberField(SharedField):
    """A whole number from ``minimum`` to ``maximum``; blank means ``None``."""

    default_error_messages = {
        "invalid": _("Enter a whole number."),
        "range": _("Enter a whole number from %(min)s to %(max)s."),
    }

    def __init__(self, minimum: int, maximum: int, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)
        self.minimum, self.maximum = minimum, maximum

    def to_python(self, value: Any) -> int | None:
        if value in self.empty_values:
            return None
        # ASCII digits only, as many as a bigint needs; the range is
        # checked by ``validate``.
        number = parse_whole_number(str(value).strip(), maximum=None)
        if number is None:
            raise forms.ValidationError(
                self.error_messages["invalid"], code="invalid", params=self._params()
            )
        return number

    def validate(self, value: Any) -> None:
        super().validate(value)
        if value is not None and not self.minimum <= value <= self.maximum:
            raise forms.ValidationError(
                self.error_messages["range"],
                code="range",
                params=self._params(value),
            )

    def _params(self, value: int | None = None) -> dict[str, Any]:
        return {
            "value": value,
            "min": self.minimum,
            "max": self.maximum,
            "max_days": self.maximum // 86400,
        }


class Continuation:
    """
    Marks a field that says where a list continues, not what it shows.

    A saved view keeps a list's filters and drops every such field
    (:func:`batchboard.personal.lists.continuation_keys`).
    """


class CursorField(Continuation, TextField):
    """A continuation token: lowercase hex, at most its format's length."""

    def __init__(self, **kwargs: Any) -> None:
        message = _(
            "The continuation token is damaged or not a batchboard/oxide-batch token."
        )
        super().__init__(
            required=False,
            strip=False,
            max_length=2 * cursors.MAX_TOKEN_BYTES,
            error_messages={"max_length": message},
            validators=[RegexValidator(r"\A(?:[0-9a-f]{2})+\Z", message)],
            **kwargs,
        )


class ChoiceFilterField(TextField):
    """
    An exact filter on one of a closed set of values; blank leaves it out.

    ``message`` is the error for any other value; its ``%(choices)s`` lists
    the values.
    """

    def __init__(
        self, choices: Sequence[str], message: str | _StrPromise, **kwargs: Any
    ) -> None:
        super().__init__(required=False, strip=False, **kwargs)
        self.choices, self.message = tuple(choices), message

    def clean(self, value: Any) -> str:
        chosen = str(super().clean(value))
        if chosen and chosen not in self.choices:
            raise forms.ValidationError(
                self.message,
                code="invalid_choice",
                params={"choices": ", ".join(self.choices)},
            )
        return chosen


class StatusesField(SharedField):
    """
    Several statuses at once: ``?status=FAILED&status=STOPPED``.

    Each value is a status in any case, a shortcut of
    :data:`~batchboard.vocabulary.STATUS_SETS` (``active``, ``finished``) or
    a comma-separated list of either. The result is a tuple in the schema's
    order without repeats; blank, or every status, is no filter: ``()``.
    """

    widget = forms.SelectMultiple

    default_error_messages = {
        "invalid_choice": _(
            "Unknown status filter; use one of %(choices)s, or %(sets)s."
        ),
    }

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, **kwargs)

    def to_python(self, value: Any) -> tuple[str, ...]:
        given = value if isinstance(value, list | tuple) else [value]
        chosen: set[str] = set()
        for raw in given:
            for word in str(raw or "").split(","):
                word = word.strip()
                if not word:
                    continue
                if word.lower() in STATUS_SETS:
                    chosen.update(STATUS_SETS[word.lower()])
                elif word.upper() in STATUSES:
                    chosen.add(word.upper())
                else:
                    raise forms.ValidationError(
                        self.error_messages["invalid_choice"],
                        code="invalid_choice",
                        params={
                            "choices": ", ".join(STATUSES),
                            "sets": ", ".join(STATUS_SETS),
                        },
                    )
        if len(chosen) == len(STATUSES):
            return ()
        return tuple(status for status in STATUSES if status in chosen)


class JobNameField(TextField):
    """An exact job-name filter: any text of at most a job name's bytes."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, strip=False, **kwargs)

    def clean(self, value: Any) -> str:
        job = str(super().clean(value))
        if len(job.encode("utf-8")) > cursors.MAX_NAME_BYTES:
            raise forms.ValidationError(
                _("A job name holds at most %(max)s bytes."),
                code="max_length",
                params={"max": cursors.MAX_NAME_BYTES},
            )
        return job


#: A relative window bound: whole minutes, hours or days before now.
_RELATIVE_BOUND = re.compile(r"\A([0-9]{1,6})([mhd])\Z")
_BOUND_UNITS = {
    "m": timedelta(minutes=1),
    "h": timedelta(hours=1),
    "d": timedelta(days=1),
}
#: The characters an absolute bound may hold (ISO-8601 dates and times).
_ABSOLUTE_BOUND = re.compile(r"\A[0-9][0-9T:.,+\- ]*[Zz]?\Z")
#: The longest text a bound is read from (an ISO-8601 time with an offset).
_MAX_BOUND_LENGTH = 40


@dataclass(frozen=True)
class WindowBound:
    """
    One end of a time window as given: ``ago`` before now, or ``at``.

    ``text`` is its canonical spelling (``2h``; ``2026-12-03T01:00:00Z``),
    which a cursor binds.
    """

    text: str
    ago: timedelta | None = None
    at: datetime | None = None

    def resolve(self, now: datetime) -> datetime:
        """Return the bound as a UTC time, a relative one counted back from ``now``."""
        if self.at is not None:
            return self.at
        assert self.ago is not None
        try:
            return now - self.ago
        except OverflowError:
            # Before year 1: before the epoch too, which the form refuses.
            return datetime.min.replace(tzinfo=UTC)


class WindowBoundField(SharedField):
    """
    A time window's bound: ISO-8601 (UTC unless an offset is given; a
    ``datetime-local`` picker's value is read as UTC), or relative to the
    request's clock (``30m``, ``2h``, ``7d``). Blank means no bound.
    """

    default_error_messages = {
        "invalid": _(
            "Give a time as ISO-8601 UTC (2026-12-03T01:00Z, or the date-time "
            "picker's value), or a time before now such as 30m, 2h or 7d."
        ),
    }

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, **kwargs)

    def to_python(self, value: Any) -> WindowBound | None:
        text = str(value or "").strip()
        if not text:
            return None
        invalid = forms.ValidationError(self.error_messages["invalid"], code="invalid")
        if len(text) > _MAX_BOUND_LENGTH:
            raise invalid
        relative = _RELATIVE_BOUND.match(text.lower())
        if relative:
            count = parse_whole_number(relative[1])
            if count is None:
                raise invalid
            unit = relative[2]
            return WindowBound(f"{count}{unit}", ago=count * _BOUND_UNITS[unit])
        if not _ABSOLUTE_BOUND.match(text):
            raise invalid
        spelled = text[:-1] + "+00:00" if text[-1] in "Zz" else text
        try:
            at = datetime.fromisoformat(spelled)
            at = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
        except (ValueError, OverflowError):
            # OverflowError: an offset that moves the time past year 9999.
            raise invalid from None
        canonical = at.strftime("%Y-%m-%dT%H:%M:%S")
        if at.microsecond:
            canonical += f".{at.microsecond:06d}"
        return WindowBound(f"{canonical}Z", at=at)


class OperationIdField(TextField):
    """
    An exact operation-id filter: an OperationId of the contract or blank.

    Anything else (too long, a space, a character outside the contract's
    set) could name no recorded request, so it is refused, not looked up.
    """

    message = _(
        "An operation id is 1 to 64 characters: letters, digits "
        "and . _ : - (as the request that recorded it gave it)."
    )

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, strip=False, **kwargs)

    def clean(self, value: Any) -> str:
        operation = str(super().clean(value))
        if operation and not OPERATION_ID_RE.fullmatch(operation):
            raise forms.ValidationError(self.message, code="invalid")
        return operation


class ExplorerForm(forms.Form):
    """A form over a page's query string; :func:`read` binds and checks it."""

    #: The 400 page's title per field; other fields are filters.
    titles: dict[str, Promise] = {}

    def bad_input(self) -> BadInput:
        """Describe the first invalid field (in field order) for the 400 page."""
        for name in self.fields:
            if name in self.errors:
                title = self.titles.get(name, _UNKNOWN_FILTER)
                return BadInput(str(title), str(self.errors[name][0]), name)
        return BadInput(str(_UNKNOWN_FILTER), str(self.non_field_errors()[0]))


class ListForm(ExplorerForm):
    """A list page: how many rows, and where to continue (the cursor, last)."""

    size = WholeNumberField(
        MIN_PAGE_SIZE,
        MAX_PAGE_SIZE,
        error_messages={
            "invalid": _(
                "The page size must be a whole number from %(min)s to %(max)s."
            ),
            "range": _(
                "The page size %(value)s is out of range: use %(min)s to %(max)s."
            ),
        },
    )
    cursor = CursorField()

    titles = {
        "size": _("Page size out of range"),
        "cursor": _("This link cannot continue the list"),
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A filter's error outranks the cursor's: the cursor was made for
        # the filter, so the filter is what to fix.
        self.order_fields(
            [name for name in self.fields if name != "cursor"] + ["cursor"]
        )

    @property
    def page_size(self) -> int:
        size = self.cleaned_data["size"]
        return int(conf.get_config()["PAGE_SIZE"]) if size is None else int(size)

    @property
    def token(self) -> str | None:
        return self.cleaned_data["cursor"] or None


class OverviewForm(ListForm):
    """
    The overview's list of jobs: pages of OVERVIEW_PAGE_SIZE jobs by default.

    A job's row carries its latest runs, so a page of jobs reads and draws
    STRIP_LENGTH times the rows of another list; ``size`` still asks for
    more (or fewer) jobs a page.
    """

    @property
    def page_size(self) -> int:
        size = self.cleaned_data["size"]
        if size is not None:
            return int(size)
        return min(int(conf.get_config()["PAGE_SIZE"]), OVERVIEW_PAGE_SIZE)


class WindowForm(ListForm):
    """
    A list with a time window: ``since`` (inclusive) and ``until``
    (exclusive), each optional.

    Relative bounds are resolved against one reading of the clock, taken
    when the form is checked; a missing ``until`` is that time, so rows
    updated or created while the list is paged stay out of it.
    """

    since = WindowBoundField()
    until = WindowBoundField()

    titles = {
        **ListForm.titles,
        "since": _("The window's start (since) is not valid"),
        "until": _("The window's end (until) is not valid"),
    }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        since, until = cleaned.get("since"), cleaned.get("until")
        cleaned["window"] = None
        if since is None and until is None:
            return cleaned
        now = timezone.now()
        lower = since.resolve(now) if since is not None else cursors.EPOCH
        upper = until.resolve(now) if until is not None else now
        for name, bound in (("since", lower), ("until", upper)):
            if bound < cursors.EPOCH:
                self.add_error(
                    name,
                    forms.ValidationError(
                        _("A window's bounds lie after 1970-01-01 UTC."),
                        code="range",
                    ),
                )
                return cleaned
        if lower > upper:
            self.add_error(
                "until",
                forms.ValidationError(
                    _(
                        "The window ends before it starts: “until” must not be earlier than “since”."
                    ),
                    code="order",
                ),
            )
            return cleaned
        cleaned["window"] = cursors.TimeWindow(
            since.text if since is not None else "",
            until.text if until is not None else "",
            cursors.micros(lower),
            cursors.micros(upper),
        )
        return cleaned

    @property
    def window(self) -> cursors.TimeWindow | None:
        """Return the window asked for, resolved; ``None`` if none was given."""
        window: cursors.TimeWindow | None = self.cleaned_data.get("window")
        return window


class InstancesForm(WindowForm):
    """A job page's instances, optionally created within a time window."""


class ExecutionsForm(WindowForm):
    """The executions page's filters: statuses, a job name and a time window."""

    status = StatusesField()
    job = JobNameField()

    @property
    def statuses(self) -> tuple[str, ...]:
        """Return the statuses asked for, in the schema's order; () is any."""
        return tuple(self.cleaned_data["status"])

    @property
    def job_filter(self) -> str:
        return str(self.cleaned_data["job"])


class JobNamesForm(ExplorerForm):
    """The job-name suggestions: the start of a name (``job``, as typed)."""

    job = JobNameField()

    @property
    def start(self) -> str:
        return str(self.cleaned_data["job"])


class UnresolvedForm(ListForm):
    """The unresolved page's age bound, in whole seconds."""

    age = WholeNumberField(
        MIN_UNRESOLVED_AGE,
        MAX_UNRESOLVED_AGE,
        error_messages={
            "invalid": _("The age bound must be a whole number of seconds."),
            "range": _(
                "The age bound must be at least %(min)s seconds and at most "
                "%(max_days)s days."
            ),
        },
    )

    @property
    def age_seconds(self) -> int:
        age = self.cleaned_data["age"]
        return int(conf.get_config()["STALE_SECONDS"]) if age is None else int(age)


class ExecutionForm(ListForm):
    """The execution page: its list settings and the step rows it shows."""

    #: How many step rows the page shows, from the first: "load more" adds
    #: to it and the live region re-reads that many, up to the page bound.
    shown = WholeNumberField(
        MIN_PAGE_SIZE,
        MAX_PAGE_SIZE,
        error_messages={
            "invalid": _(
                "The rows shown must be a whole number from %(min)s to %(max)s."
            ),
            "range": _(
                "The rows shown must be a whole number from %(min)s to %(max)s."
            ),
        },
    )

    titles = {**ListForm.titles, "shown": _("Rows shown out of range")}

    @property
    def rows(self) -> int:
        """Return how many step rows to read from the first: shown, or a page."""
        shown = self.cleaned_data["shown"]
        return self.page_size if shown is None else int(shown)


class JumpForm(ExplorerForm):
    """
    The header's jump box: a kind and what names one (``id``).

    An execution, instance or step is named by its numeric id (``#``
    allowed), a job by its name or the start of it, an operation by its
    operation id (an operator request's, or a bulk operation's bulk id).
    """

    kind = TextField(required=False)
    id = TextField(required=False, strip=False)

    def clean_kind(self) -> str:
        kind = str(self.cleaned_data["kind"]) or JUMP_KINDS[0]
        if kind not in JUMP_KINDS:
            raise forms.ValidationError(
                _("Jump to an execution, an instance, a step, a job or an operation."),
                code="invalid_choice",
            )
        return kind

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        kind, raw = data.get("kind"), str(data.get("id", ""))
        if kind is None:
            return data
        if kind == "job":
            data["id"] = self._job_name(raw.strip())
        elif kind == "operation":
            data["id"] = self._operation(raw.strip())
        else:
            data["id"] = self._record_id(raw.strip())
        return data

    def _record_id(self, raw: str) -> int:
        ident = parse_whole_number(raw.removeprefix("#"))
        if ident is None or ident == 0:
            self._refuse(
                _("Type the numeric id of an execution, an instance or a step.")
            )
        return int(ident or 0)

    def _job_name(self, raw: str) -> str:
        if not raw or len(raw.encode("utf-8")) > cursors.MAX_NAME_BYTES:
            self._refuse(
                _("Type a job name, or its start: 1 to %(max)s bytes.")
                % {"max": cursors.MAX_NAME_BYTES}
            )
        return raw

    def _operation(self, raw: str) -> str:
        # A bulk id is made of the same characters as an operation id.
        try:
            operation = OperationIdField().clean(raw)
        except forms.ValidationError as error:
            raise forms.ValidationError({"id": error}) from None
        if not operation:
            self._refuse(OperationIdField.message)
        return operation

    def _refuse(self, message: str | _StrPromise) -> None:
        raise forms.ValidationError({"id": forms.ValidationError(message)})

    @property
    def target(self) -> tuple[str, int | str]:
        value = self.cleaned_data["id"]
        kind = str(self.cleaned_data["kind"])
        return kind, int(value) if kind in JUMP_IDS else str(value)


class CompareForm(ExplorerForm):
    """The executions list's selection to compare: exactly two execution ids."""

    execution = SharedField(required=False)

    titles = {"execution": _("Choose two executions")}

    def __init__(self, data: Any = None, **kwargs: Any) -> None:
        super().__init__(data, **kwargs)
        self.chosen = data.getlist("execution") if data is not None else []

    def clean_execution(self) -> tuple[int, int]:
        ids = [parse_whole_number(str(each).strip()) for each in self.chosen[:3]]
        if len(ids) != 2 or None in ids or 0 in ids:
            raise forms.ValidationError(
                _("Select exactly two executions to compare."), code="invalid"
            )
        left, right = sorted(int(each or 0) for each in ids)
        if left == right:
            raise forms.ValidationError(
                _("Select two different executions to compare."), code="invalid"
            )
        return left, right

    @property
    def pair(self) -> tuple[int, int]:
        left, right = self.cleaned_data["execution"]
        return int(left), int(right)


FormT = TypeVar("FormT", bound=ExplorerForm)


def read(form_class: type[FormT], request: HttpRequest) -> FormT:
    """Bind ``request``'s query string to ``form_class``; raise BadInput if invalid."""
    form = form_class(request.GET)
    if not form.is_valid():
        raise form.bad_input()
    return form
