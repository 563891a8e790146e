"""
Regression tests of the hostile review's findings (issue 9), one by one.

Each would fail on the code before its fix: a 500, a 503 for bad input, a
value accepted that should not be, or a dialog readable without its page's
permissions.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from batchboard import cursors
from batchboard.actions import InvalidRequest, envelope, parse_candidates
from batchboard.explorer.inputs import JumpForm
from batchboard.vocabulary import parse_whole_number
from tests.security.conftest import History

HTMX = {"HTTP_HX_REQUEST": "true"}

NOT_ASCII_DIGITS = ["²", "٣", "+3", "3_0", " 3 4", "-1", "0x10", "1e3", "9" * 5000]


# -- ids: [0-9]{1,19}, a full match -------------------------------------------


@pytest.mark.parametrize("text", NOT_ASCII_DIGITS + ["9" * 20, "", "3\n"])
def test_parse_whole_number_refuses_all_but_ascii_digits(text: str) -> None:
    assert parse_whole_number(text) is None


def test_parse_whole_number_reads_a_bigint_and_bounds_it() -> None:
    assert parse_whole_number("0042") == 42
    assert parse_whole_number("9223372036854775807") == 2**63 - 1
    assert parse_whole_number("9223372036854775808") is None
    assert parse_whole_number("9223372036854775808", maximum=None) == 2**63


@pytest.mark.parametrize("text", NOT_ASCII_DIGITS)
def test_jump_refuses_unicode_and_huge_ids_with_400(
    reader: Client, history: History, text: str
) -> None:
    response = reader.get(reverse("batchboard:jump"), {"id": text})
    assert response.status_code == 400
    assert not JumpForm({"id": text}).is_valid()


def test_jump_still_takes_a_hash_and_an_id(reader: Client, history: History) -> None:
    response = reader.get(reverse("batchboard:jump"), {"id": f"#{history.failed.pk}"})
    assert response.status_code == 302


@pytest.mark.parametrize(
    "text", ["1:²:3", "1:2:" + "9" * 5000, "1:2:3\n4:5", "٣:1:1", "1:2:-3"]
)
def test_purge_candidates_refuse_anything_but_ascii_triples(text: str) -> None:
    with pytest.raises(InvalidRequest):
        parse_candidates(text)


def test_whole_numbers_of_the_service_refuse_unicode_digits() -> None:
    for text in NOT_ASCII_DIGITS:
        with pytest.raises(InvalidRequest):
            envelope.whole_numbers(text, invalid="bad")
    assert envelope.whole_numbers("7", 8, invalid="bad") == [7, 8]


# -- envelope patterns: a full match -------------------------------------------


@pytest.mark.parametrize(
    ("validate", "value"),
    [
        (envelope.validate_operation_id, "bb-0123\n"),
        (envelope.validate_actor_ref, "user:alice\n"),
    ],
)
def test_a_trailing_newline_is_refused(validate: object, value: str) -> None:
    assert callable(validate)
    with pytest.raises(InvalidRequest):
        validate(value)
    assert validate(value.rstrip("\n")) == value.rstrip("\n")


def test_a_reason_code_with_a_trailing_newline_is_refused() -> None:
    with pytest.raises(InvalidRequest):
        envelope.validate_reason("OPERATOR_DECISION\n", "ABANDON")


# -- NUL and control characters: 400, not a database outage -------------------


@pytest.mark.parametrize("char", ["\x00", "\n", "\x1b", "\x7f", "\x85"])
def test_control_characters_get_400(
    reader: Client, history: History, char: str
) -> None:
    encoded = f"nightly{char}import"
    job_page = f"/jobs/nightly{quote(char)}-import/"
    assert reader.get(job_page).status_code == 400
    executions = reverse("batchboard:executions")
    assert reader.get(executions, {"job": encoded}).status_code == 400
    assert reader.get(executions, {f"x{char}": "1"}).status_code == 400


def test_a_cursor_whose_name_key_holds_nul_is_refused(
    reader: Client, history: History
) -> None:
    token = cursors.encode(cursors.job_names(), 50, cursors.Name("a\x00b"), 9)
    response = reader.get(reverse("batchboard:index"), {"cursor": token})
    assert response.status_code == 400


def test_control_characters_are_refused_before_sign_in(db: None) -> None:
    response = Client().get("/executions/", {"job": "a\x00"})
    assert response.status_code == 400


# -- dialogs and partials need their page's Read permissions -------------------


def _user_with(*codenames: str) -> Client:
    user = User.objects.create_user("partial", password="pw")
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="batchboard", codename__in=codenames
        )
    )
    client = Client()
    client.force_login(user)
    return client


def test_lifecycle_alone_does_not_read_an_execution_through_the_stop_dialog(
    history: History,
) -> None:
    client = _user_with("view_jobexecution", "view_jobinstance", "operate_lifecycle")
    url = reverse("batchboard:action_stop", args=[history.running.pk])
    response = client.get(url, **HTMX)
    assert response.status_code == 403
    assert "nightly-import" not in response.content.decode()


def test_the_live_summary_needs_the_execution_pages_permissions(
    history: History,
) -> None:
    client = _user_with("view_jobexecution", "view_jobinstance")
    url = reverse("batchboard:execution_live", args=[history.running.pk])
    assert client.get(url, **HTMX).status_code == 403


def test_the_hold_dialog_needs_the_instance_pages_permissions(
    history: History,
) -> None:
    client = _user_with("operate_destructive", "view_jobexecution")
    url = reverse("batchboard:action_hold", args=[history.instance.pk])
    assert client.get(url, **HTMX).status_code == 403


# -- HEAD wherever GET ----------------------------------------------------------


def test_head_works_where_get_does(reader: Client, history: History) -> None:
    for url in (
        reverse("batchboard:index"),
        reverse("batchboard:executions"),
        reverse("batchboard:execution", args=[history.failed.pk]),
        "/login/",
    ):
        response = reader.head(url)
        assert response.status_code == 200, url
        assert response.content == b""


def test_head_on_a_dialog(history: History) -> None:
    client = _user_with(
        "view_jobdefinition",
        "view_jobinstance",
        "view_jobexecution",
        "view_stepexecution",
        "view_flowdecision",
        "view_recoverydecision",
        "view_operatorrequest",
        "operate_lifecycle",
    )
    url = reverse("batchboard:action_stop", args=[history.running.pk])
    assert client.head(url).status_code == 200
    assert client.get(url).status_code == 200


# -- an expired session under htmx ---------------------------------------------


def test_an_htmx_poll_without_a_session_gets_hx_redirect(history: History) -> None:
    url = reverse("batchboard:execution_live", args=[history.running.pk])
    page = f"http://testserver/executions/{history.running.pk}/"
    response = Client().get(url, HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL=page)
    assert response.status_code == 200
    assert response["HX-Redirect"] == (
        f"/login/?next=/executions/{history.running.pk}/"
    )
    assert b"<form" not in response.content


def test_a_plain_request_without_a_session_is_redirected(history: History) -> None:
    response = Client().get(reverse("batchboard:executions"))
    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/executions/"
