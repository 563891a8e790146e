"""The request envelope: actor references, operation ids and reason codes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from batchboard import actions, vocabulary
from batchboard.actions import envelope, permissions


def _user(username: str, pk: int = 7) -> SimpleNamespace:
    return SimpleNamespace(get_username=lambda: username, pk=pk)


@pytest.mark.parametrize(
    ("username", "expected"),
    [
        ("alice", "user:alice"),
        ("ops@example.org", "user:ops@example.org"),
        ("a.b-c_d", "user:a.b-c_d"),
        ("with+plus", "uid:7"),
        ("sérgio", "uid:7"),
        ("x" * 124, "uid:7"),
        ("x" * 123, "user:" + "x" * 123),
        ("", "uid:7"),
        ("uid:9", "user:uid:9"),
    ],
)
def test_actor_references(username: str, expected: str) -> None:
    """Usernames in the alphabet are prefixed; anything else is the id."""
    actor = envelope.actor_ref_for(_user(username))
    assert actor == expected
    assert envelope.ACTOR_REF_RE.match(actor)


def test_operation_ids_are_fresh_and_valid() -> None:
    first, second = actions.new_operation_id(), actions.new_operation_id()
    assert first != second
    assert envelope.OPERATION_ID_RE.match(first)
    # Admin actions append ":<id>" per object; the result must still fit.
    assert envelope.validate_operation_id(f"{first}:{2**63 - 1}")


def test_every_offered_reason_is_a_valid_code() -> None:
    for reason in actions.REASON_CODES:
        assert envelope.REASON_CODE_RE.match(reason.code)
        assert reason.actions
    assert [r.code for r in actions.reasons_for("STOP")] == []
    assert "UNKNOWN_EFFECT" in [r.code for r in actions.reasons_for("RECOVER")]
    assert "UNKNOWN_EFFECT" not in [r.code for r in actions.reasons_for("ABANDON")]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "empty"),
        ("A" * 65, "longer than 64"),
        ("HOST LOST", "not allowed"),
        ("AUDIT", "not one of the reasons"),
    ],
)
def test_reason_errors_say_what_is_wrong(value: str, message: str) -> None:
    with pytest.raises(actions.InvalidRequest) as raised:
        envelope.validate_reason(value, "ABANDON")
    assert message in raised.value.message


def test_every_action_has_a_class() -> None:
    assert vocabulary.ACTION_CLASSES["STOP"] == "LIFECYCLE"
    for action in ("ABANDON", "RECOVER", "HOLD", "RELEASE_HOLD", "APPLY_PURGE"):
        assert vocabulary.ACTION_CLASSES[action] == "DESTRUCTIVE"
    assert vocabulary.ACTION_CLASSES["PLAN_PURGE"] == "READ"
    assert permissions.may(None, "PLAN_PURGE") is False


def test_out_of_range_ids_are_refused() -> None:
    with pytest.raises(actions.InvalidRequest):
        actions.parse_candidates(f"1:{2**63}:0")
    with pytest.raises(actions.InvalidRequest):
        actions.PurgeCriteria.validated(job_name="j", min_age_seconds=10**12)


@pytest.mark.django_db
def test_action_databases_choose_the_writing_alias() -> None:
    """Each writing class can use its own alias; an unknown one is named."""
    from django.test import override_settings

    from batchboard import db
    from batchboard.actions import unit

    operator = {"ACTION_DATABASES": {"OPERATOR": "default"}}
    with override_settings(BATCHBOARD=operator), unit.writing(db.OPERATOR):
        assert db.alias() == "default"
    undefined = {"ACTION_DATABASES": {"RETENTION": "retention"}}
    with override_settings(BATCHBOARD=undefined):
        with (
            pytest.raises(actions.ActionError) as raised,
            unit.writing(db.RETENTION),
        ):
            pass
        assert "'retention'" in raised.value.message
        with unit.writing(db.OPERATOR):
            assert db.alias() == "default"
