"""The explorer's forms say what is valid; bad input becomes a 400 page."""

from __future__ import annotations

import pytest
from django import forms
from django.test import RequestFactory

from batchboard import vocabulary
from batchboard.explorer import inputs
from batchboard.web import BadInput

FACTORY = RequestFactory()


def _read(form: type[inputs.FormT], **params: str) -> inputs.FormT:
    return inputs.read(form, FACTORY.get("/", params))


def test_blank_inputs_take_their_defaults() -> None:
    form = _read(inputs.UnresolvedForm)
    assert form.page_size == 50
    assert form.token is None
    assert form.age_seconds == 900
    executions = _read(inputs.ExecutionsForm, status="", job="")
    assert (executions.statuses, executions.job_filter) == ((), "")


def _statuses(*values: str) -> tuple[str, ...]:
    return inputs.read(
        inputs.ExecutionsForm, FACTORY.get("/", {"status": list(values)})
    ).statuses


def test_statuses_are_read_in_any_case_and_in_the_schema_s_order() -> None:
    assert _statuses("failed") == ("FAILED",)
    assert _statuses("Completed", "FAILED", "failed") == ("FAILED", "COMPLETED")
    assert _statuses("stopped,failed") == ("STOPPED", "FAILED")


def test_status_shortcuts_name_the_vocabulary_s_sets() -> None:
    assert _statuses("active") == vocabulary.STATUS_SETS["active"]
    assert _statuses("FINISHED") == vocabulary.FINISHED
    assert _statuses("finished", "UNKNOWN") == (*vocabulary.FINISHED, "UNKNOWN")
    # Every status is no filter at all: the unfiltered list and its cursor.
    assert _statuses("active", "finished") == ()
    assert _statuses("", " ") == ()


def test_an_unknown_status_among_several_is_refused() -> None:
    with pytest.raises(BadInput) as raised:
        _statuses("FAILED", "RUNNING")
    assert raised.value.param == "status"
    assert "active, finished" in raised.value.message
    assert "RUNNING" not in raised.value.message


@pytest.mark.parametrize(
    ("params", "param", "title", "message"),
    [
        (
            {"size": "ten"},
            "size",
            "Page size out of range",
            "whole number from 1 to 500",
        ),
        ({"size": "501"}, "size", "Page size out of range", "The page size 501 is out"),
        ({"cursor": "XYZ"}, "cursor", "This link cannot continue", "damaged"),
        ({"cursor": "ab" * 300}, "cursor", "This link cannot continue", "damaged"),
    ],
)
def test_list_input_errors_name_their_parameter(
    params: dict[str, str], param: str, title: str, message: str
) -> None:
    with pytest.raises(BadInput) as raised:
        _read(inputs.ListForm, **params)
    assert raised.value.param == param
    assert raised.value.title.startswith(title)
    assert message in raised.value.message


def test_a_filter_error_outranks_the_cursor() -> None:
    with pytest.raises(BadInput) as raised:
        _read(inputs.ExecutionsForm, status="RUNNING", cursor="zz")
    assert raised.value.param == "status"
    assert raised.value.title == "Unknown filter value"
    assert "STARTING, STARTED" in raised.value.message


def test_filter_messages_never_repeat_the_value() -> None:
    secret = "S3CR3T-value"
    for params in ({"status": secret}, {"job": secret * 20}):
        with pytest.raises(BadInput) as raised:
            _read(inputs.ExecutionsForm, **params)
        assert secret not in raised.value.message


def test_job_filter_is_bounded_in_bytes_not_characters() -> None:
    assert _read(inputs.ExecutionsForm, job="é" * 64).job_filter == "é" * 64
    with pytest.raises(BadInput, match="128 bytes"):
        _read(inputs.ExecutionsForm, job="é" * 65)


@pytest.mark.parametrize("age", ["59", "soon", str(30 * 86400 + 1)])
def test_age_bound_is_a_minute_to_thirty_days(age: str) -> None:
    with pytest.raises(BadInput) as raised:
        _read(inputs.UnresolvedForm, age=age)
    assert raised.value.param == "age"
    assert "age bound" in raised.value.message


def test_rows_shown_are_a_page_size_or_what_was_loaded() -> None:
    assert _read(inputs.ExecutionForm).rows == 50
    assert _read(inputs.ExecutionForm, size="20").rows == 20
    assert _read(inputs.ExecutionForm, size="20", shown="140").rows == 140
    for shown in ("0", "501", "many"):
        with pytest.raises(BadInput) as raised:
            _read(inputs.ExecutionForm, shown=shown)
        assert raised.value.param == "shown"
        assert raised.value.title == "Rows shown out of range"


def test_jump_box_takes_a_kind_and_an_id() -> None:
    assert _read(inputs.JumpForm, id=" #42 ").target == ("execution", 42)
    assert _read(inputs.JumpForm, kind="step", id="7").target == ("step", 7)
    for params, param in (
        ({"kind": "user", "id": "1"}, "kind"),
        ({"id": "0"}, "id"),
        ({"id": str(2**63)}, "id"),
        ({"id": "abc"}, "id"),
    ):
        with pytest.raises(BadInput) as raised:
            _read(inputs.JumpForm, **params)
        assert raised.value.param == param


def test_forms_share_their_fields_instead_of_copying_them() -> None:
    first, second = inputs.ExecutionsForm({}), inputs.ExecutionsForm({"size": "3"})
    assert first.fields["size"] is second.fields["size"]
    assert second.is_valid() and second.page_size == 3
    assert list(second.fields)[-1] == "cursor"


@pytest.mark.parametrize(
    "text", ["²", "٣", "+3", "-1", "3_0", " 3 4", "0x10", "9" * 20]
)
def test_whole_numbers_are_ascii_digits_only(text: str) -> None:
    """The one whole-number field: what ``int()`` or ``isdigit()`` let through."""
    field = inputs.WholeNumberField(0, 10**30)
    with pytest.raises(forms.ValidationError) as raised:
        field.clean(text)
    assert raised.value.code == "invalid"


def test_a_whole_number_is_read_then_bounded() -> None:
    field = inputs.WholeNumberField(1, 500)
    assert field.clean("0042") == 42
    assert field.clean(" 7 ") == 7
    assert field.clean("") is None
    with pytest.raises(forms.ValidationError) as raised:
        field.clean("501")
    assert raised.value.code == "range"
    required = inputs.WholeNumberField(1, 500, required=True)
    with pytest.raises(forms.ValidationError) as missing:
        required.clean("")
    assert missing.value.code == "required"
