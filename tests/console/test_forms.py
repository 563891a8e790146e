"""The forms of the operator actions: what a submitted action may contain."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.forms import Form
from django.http import QueryDict

from batchboard import actions, vocabulary
from batchboard.actions.purge import (
    DEFAULT_AGE_SECONDS,
    DEFAULT_BATCH,
    MAX_AGE_SECONDS,
    MAX_BATCH,
    MIN_AGE_SECONDS,
)
from batchboard.console import forms
from batchboard.models import JobInstance, OperatorRequest, RetentionAction
from tests.factories import actions as factories

DIGEST = "ab" * 32
MAX = vocabulary.MAX_BIGINT


def _error(form: Form) -> str:
    assert not form.is_valid()
    return forms.first_error(form)


def _stop(version: Any = "3", target_id: int = 5, **data: Any) -> forms.StopForm:
    return forms.StopForm(
        {"expected_version": version, "operation_id": "op-1", **data},
        target_id=target_id,
    )


@pytest.mark.parametrize(
    ("version", "message"),
    [
        ("x", "The execution id and version must be numbers."),
        ("", "The execution id and version must be numbers."),
        (None, "The execution id and version must be numbers."),
        ("-1", "The execution id and version must be numbers."),
        ("+3", "The execution id and version must be numbers."),
        ("٣", "The execution id and version must be numbers."),
        ("²", "The execution id and version must be numbers."),
        ("9" * 5000, "The execution id and version must be numbers."),
        (str(MAX + 1), "The execution id or version is out of range."),
    ],
)
def test_a_version_is_a_bigint(version: Any, message: str) -> None:
    assert _error(_stop(version)) == message


def test_versions_run_from_zero_to_the_largest_bigint() -> None:
    for version in ("0", str(MAX)):
        form = _stop(version)
        assert form.is_valid(), form.errors
        assert form.cleaned_data["expected_version"] == int(version)


@pytest.mark.parametrize("target_id", [0, MAX + 1])
def test_a_target_id_beyond_the_bigint_range_is_the_services_to_refuse(
    admin_user: User, target_id: int
) -> None:
    """The form leaves the id to the service, which refuses it unwritten."""
    with pytest.raises(actions.InvalidRequest, match="out of range"):
        _stop(target_id=target_id).perform(admin_user)
    hold = forms.HoldForm(
        {"reason_code": "AUDIT", "operation_id": "op"}, target_id=target_id
    )
    with pytest.raises(
        actions.InvalidRequest, match="The instance id is out of range."
    ):
        hold.perform(admin_user)


def test_the_largest_target_id_is_accepted() -> None:
    assert _stop(target_id=MAX).is_valid()


@pytest.mark.parametrize(
    ("operation_id", "message"),
    [
        ("", "The operation id is empty."),
        ("op id", "The operation id contains a character that is not allowed."),
        ("x" * 65, "The operation id is longer than 64 bytes."),
    ],
)
def test_the_operation_id_follows_the_envelope(operation_id: str, message: str) -> None:
    assert _error(_stop(operation_id=operation_id)) == message


@pytest.mark.parametrize(
    ("form_class", "reason", "message"),
    [
        (forms.AbandonForm, "", "The reason code is empty."),
        (
            forms.AbandonForm,
            "AUDIT",
            "AUDIT is not one of the reasons offered for ABANDON.",
        ),
        (
            forms.HoldForm,
            "HOST_LOST",
            "HOST_LOST is not one of the reasons offered for HOLD.",
        ),
        (
            forms.ReleaseForm,
            "LEGAL_HOLD",
            "LEGAL_HOLD is not one of the reasons offered for RELEASE_HOLD.",
        ),
    ],
)
def test_a_reason_must_be_offered_for_its_action(
    form_class: type[forms.TargetedActionForm], reason: str, message: str
) -> None:
    form = form_class(
        {"expected_version": "1", "reason_code": reason, "operation_id": "op"},
        target_id=7,
    )
    assert _error(form) == message


def test_each_form_offers_its_actions_reasons() -> None:
    """The reasons shown are those of the vocabulary; STOP asks for none."""
    assert forms.StopForm.reasons() == []
    for action, form_class in forms.ACTION_FORMS.items():
        if action != vocabulary.STOP:
            assert form_class.reasons() == vocabulary.reasons_for(action)
    assert forms.RecoverForm.reasons() == vocabulary.reasons_for(vocabulary.RECOVER)
    assert forms.PurgeApplyForm.reasons() == vocabulary.reasons_for(
        vocabulary.APPLY_PURGE
    )


def _signature(form_class: type[forms.ActionForm]) -> set[str]:
    return set(inspect.signature(form_class.service).parameters)


def test_each_targeted_form_gives_exactly_its_services_arguments() -> None:
    """A form's fields, the target id and the user are the service's arguments."""
    data = {"expected_version": "4", "reason_code": "", "operation_id": "op-9"}
    for action, form_class in forms.ACTION_FORMS.items():
        reasons = form_class.reasons()
        form = form_class(
            {**data, "reason_code": reasons[0].code if reasons else ""},
            target_id=11,
        )
        assert form.is_valid(), (action, form.errors)
        arguments = form.arguments()
        assert {*arguments, "user"} == _signature(form_class), action
        assert arguments[f"{form_class.target}_id"] == 11
        assert arguments["operation_id"] == "op-9"


def _recover(**data: str) -> forms.RecoverForm:
    return forms.RecoverForm(
        {
            "expected_version": "2",
            "evidence_digest": DIGEST,
            "unknown_commit": "0",
            "directive": "FAILED",
            "failure_category": "STALE_RECOVERED",
            "failure_id": "12",
            "reason_code": "HOST_LOST",
            "operation_id": "op-r",
            **data,
        },
        target_id=3,
    )


def test_a_recovery_form_gives_the_services_arguments() -> None:
    form = _recover()
    assert form.is_valid(), form.errors
    arguments = form.arguments()
    assert {*arguments, "user"} == _signature(forms.RecoverForm)
    assert arguments["evidence_digest"] == bytes.fromhex(DIGEST)
    assert arguments["unknown_commit"] is False
    assert arguments["directive"] == actions.Directive.mark_failed(
        "STALE_RECOVERED", 12
    )
    assert arguments["execution_id"] == 3


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"evidence_digest": "zz"}, "The evidence digest must be 64 hex digits."),
        ({"evidence_digest": "ab"}, "The evidence digest must be 64 hex digits."),
        ({"evidence_digest": ""}, "The evidence digest must be 64 hex digits."),
        ({"directive": "STOPPED"}, "The directive must be mark failed or abandon."),
        ({"directive": ""}, "The directive must be mark failed or abandon."),
        ({"failure_category": "NOPE"}, "Pick a failure category from the list."),
        ({"failure_id": "twelve"}, "The failure id must be a number."),
        ({"failure_id": "0"}, "The failure id must be a positive number."),
        ({"failure_id": str(MAX + 1)}, "The failure id must be a positive number."),
    ],
)
def test_a_malformed_recovery_is_refused(data: dict[str, str], message: str) -> None:
    assert _error(_recover(**data)) == message


def test_an_unknown_commit_is_marked_failed_only_for_unknown_effect() -> None:
    """
    The request the service would reject (UNRESOLVED_RECOVERY_REQUIRED) is
    refused by the form, so no REJECTED row is written for it.
    """
    refused = _recover(unknown_commit="1", reason_code="HOST_LOST")
    assert _error(refused).startswith("The last commit's effect is unknown")
    assert _recover(unknown_commit="1", reason_code="UNKNOWN_EFFECT").is_valid()
    abandon = _recover(
        unknown_commit="1", reason_code="HOST_LOST", directive="ABANDONED"
    )
    assert abandon.is_valid(), abandon.errors


@pytest.mark.parametrize("category", ["ILLEGAL_TRANSITION", "OPTIMISTIC_CONFLICT"])
def test_internal_failure_categories_are_not_offered(category: str) -> None:
    assert _error(_recover(failure_category=category)) == (
        "Pick a failure category from the list."
    )


def test_abandoning_ignores_the_failure_fields() -> None:
    """The category and failure id only count when marking failed."""
    form = _recover(directive="ABANDONED", failure_category="", failure_id="x")
    assert form.is_valid(), form.errors
    assert form.cleaned_data["directive"] == actions.Directive.abandon()


def test_a_directive_takes_the_category_in_any_case() -> None:
    form = forms.DirectiveForm(
        {
            "directive": "FAILED",
            "failure_category": "stale_recovered",
            "failure_id": "5",
        }
    )
    assert form.is_valid(), form.errors
    assert form.cleaned_data == {
        "directive": actions.Directive.mark_failed("STALE_RECOVERED", 5)
    }


@pytest.mark.parametrize(("flag", "expected"), [("1", True), ("0", False), ("", False)])
def test_unknown_commit_is_yes_only_when_1(flag: str, expected: bool) -> None:
    form = _recover(unknown_commit=flag, reason_code="UNKNOWN_EFFECT")
    assert form.is_valid(), form.errors
    assert form.cleaned_data["unknown_commit"] is expected


def _criteria(**values: str | list[str]) -> forms.PurgeCriteriaForm:
    query = QueryDict(mutable=True)
    for name, value in values.items():
        query.setlist(name, value if isinstance(value, list) else [value])
    return forms.PurgeCriteriaForm.from_data(query)


def test_purge_criteria_fill_in_the_defaults() -> None:
    """Statuses, age and batch left out (or empty) take the service's defaults."""
    form = _criteria(job_name="nightly", statuses=[], min_age_seconds="", batch="")
    assert form["statuses"].value() == list(vocabulary.FINISHED)
    assert form["min_age_seconds"].value() == str(DEFAULT_AGE_SECONDS)
    assert form["batch"].value() == str(DEFAULT_BATCH)
    assert form.criteria() == actions.PurgeCriteria(
        "nightly", vocabulary.FINISHED, DEFAULT_AGE_SECONDS, DEFAULT_BATCH
    )


def test_purge_criteria_keep_what_is_given() -> None:
    form = _criteria(
        job_name="nightly", statuses=["FAILED"], min_age_seconds="7200", batch="10"
    )
    assert form.criteria() == actions.PurgeCriteria("nightly", ("FAILED",), 7200, 10)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({}, "Enter a job name of 1 to 128 bytes."),
        ({"job_name": " padded"}, "Enter a job name of 1 to 128 bytes."),
        ({"job_name": "x" * 129}, "Enter a job name of 1 to 128 bytes."),
        (
            {"job_name": "x", "statuses": ["STARTED"]},
            "Only finished statuses can be purged.",
        ),
        (
            {"job_name": "x", "min_age_seconds": "soon"},
            "The age and batch must be whole numbers.",
        ),
        (
            {"job_name": "x", "min_age_seconds": str(MIN_AGE_SECONDS - 1)},
            "The minimum age is one hour (3600 s) to a hundred years.",
        ),
        (
            {"job_name": "x", "min_age_seconds": str(MAX_AGE_SECONDS + 1)},
            "The minimum age is one hour (3600 s) to a hundred years.",
        ),
        ({"job_name": "x", "batch": "0"}, "The batch is 1 to 1000 executions."),
        (
            {"job_name": "x", "batch": str(MAX_BATCH + 1)},
            "The batch is 1 to 1000 executions.",
        ),
    ],
)
def test_bad_purge_criteria_are_explained(
    values: dict[str, str | list[str]], message: str
) -> None:
    with pytest.raises(actions.InvalidRequest) as raised:
        _criteria(**values).criteria()
    assert raised.value.message == message


def _apply(**values: str) -> forms.PurgeApplyForm:
    query = QueryDict(mutable=True)
    query.update(
        {
            "job_name": "nightly",
            "candidates": "1:2:3 1:4:0",
            "plan_digest": DIGEST.upper(),
            "reason_code": "RETENTION_POLICY",
            "operation_id": "op-p",
            **values,
        }
    )
    return forms.PurgeApplyForm.from_data(query)


def test_a_purge_form_gives_the_services_arguments() -> None:
    form = _apply()
    assert form.is_valid(), form.errors
    arguments = form.arguments()
    assert {*arguments, "user"} == _signature(forms.PurgeApplyForm)
    assert arguments["candidates"] == ((1, 2, 3), (1, 4, 0))
    assert arguments["plan_digest_hex"] == DIGEST
    assert arguments["criteria"].job_name == "nightly"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"candidates": "1:2"}, "The plan's candidate list is malformed."),
        ({"plan_digest": "abc"}, "The plan digest must be 64 hex digits."),
        ({"reason_code": "AUDIT"}, "AUDIT is not one of the reasons offered"),
        ({"batch": "0"}, "The batch is 1 to 1000 executions."),
    ],
)
def test_a_malformed_purge_is_refused(values: dict[str, str], message: str) -> None:
    assert _error(_apply(**values)).startswith(message)


@pytest.mark.django_db
def test_an_invalid_form_writes_nothing(admin_user: User) -> None:
    """perform() refuses before the service runs: no audit row, no change."""
    execution = factories.execution("STARTED")
    instance = execution.job_instance
    refused = [
        forms.StopForm(
            {"expected_version": "x", "operation_id": "op"}, target_id=execution.pk
        ),
        forms.AbandonForm(
            {"expected_version": "3", "reason_code": "", "operation_id": "op"},
            target_id=execution.pk,
        ),
        forms.HoldForm(
            {"reason_code": "AUDIT", "operation_id": "bad id"}, target_id=instance.pk
        ),
        forms.ReleaseForm({"reason_code": "AUDIT"}, target_id=instance.pk),
    ]
    for form in refused:
        with pytest.raises(actions.InvalidRequest):
            form.perform(admin_user)
    assert not OperatorRequest.objects.exists()
    assert not RetentionAction.objects.exists()
    assert JobInstance.objects.get(pk=instance.pk).hold_actor is None


@pytest.mark.django_db
def test_a_valid_form_runs_its_service(admin_user: User) -> None:
    instance = factories.instance()
    form = forms.HoldForm(
        {"reason_code": "LEGAL_HOLD", "operation_id": "op-h"}, target_id=instance.pk
    )
    result = form.perform(admin_user)
    assert (result.action, result.outcome) == (vocabulary.HOLD, actions.APPLIED)
    assert JobInstance.objects.get(pk=instance.pk).hold_reason == "LEGAL_HOLD"
