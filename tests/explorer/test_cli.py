"""The oxide-batch command of each action a record offers, on its page."""

from __future__ import annotations

import html
import re
import shlex

import pytest
from django.test import Client
from django.urls import reverse

from batchboard.actions import eligibility
from batchboard.explorer import cli
from tests import factories

ACTIONS = ("STOP", "ABANDON", "RESTART", "HOLD", "RELEASE_HOLD")


def _commands(content: str) -> dict[str, list[str]]:
    """Return each command the page shows, by action, as its shell words."""
    found = {}
    for action, line in re.findall(
        r'<div class="bb-cli-command" data-action="(\w+)">.*?<code id="[^"]+">(.*?)</code>',
        content,
        re.S,
    ):
        found[action] = shlex.split(html.unescape(line))
    return found


@pytest.fixture
def admin(db: None) -> Client:
    client = Client()
    client.force_login(factories.administrator())
    return client


def _page(client: Client, name: str, pk: int) -> str:
    response = client.get(reverse(f"batchboard:{name}", args=[pk]))
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize(
    ("status", "offered"),
    [
        ("STARTING", {"STOP"}),
        ("STARTED", {"STOP"}),
        ("STOPPING", set()),
        ("UNKNOWN", set()),
        ("COMPLETED", set()),
        ("FAILED", {"ABANDON", "RESTART"}),
        ("STOPPED", {"ABANDON", "RESTART"}),
        ("ABANDONED", set()),
    ],
)
def test_an_execution_page_shows_the_command_of_each_offered_action(
    admin: Client, status: str, offered: set[str]
) -> None:
    instance = factories.instance("nightly import & co")
    execution = factories.execution(instance, status, version=4)
    commands = _commands(_page(admin, "execution", execution.pk))
    assert set(commands) == offered
    # The same answer as the eligibility rule's, nothing restated.
    answers = eligibility.for_execution(status, stop_requested=False)
    answers["RESTART"] = eligibility.restart(status)
    assert offered == {action for action, answer in answers.items() if answer.offered}
    pk = str(execution.pk)
    if "STOP" in commands:
        assert commands["STOP"] == [
            "oxide-batch", "execution", "stop", "--execution", pk,
            "--expected-version", "4", "--actor", "user:administrator",
            "--operation-id", f"cli-stop-{pk}-v4",
        ]  # fmt: skip
    if "ABANDON" in commands:
        assert commands["ABANDON"] == [
            "oxide-batch", "execution", "abandon", "--execution", pk,
            "--expected-version", "4", "--reason", "OPERATOR_DECISION",
            "--actor", "user:administrator",
            "--operation-id", f"cli-abandon-{pk}-v4",
        ]  # fmt: skip
    if "RESTART" in commands:
        # The job name is one shell word, whatever it holds.
        assert commands["RESTART"] == [
            "oxide-batch", "execution", "restart", "--instance",
            str(instance.pk), "--job", "nightly import & co",
            "--actor", "user:administrator",
            "--operation-id", f"cli-restart-{instance.pk}-after-{pk}",
        ]  # fmt: skip


def test_restart_says_it_runs_where_the_job_runs(admin: Client) -> None:
    execution = factories.execution(factories.instance(), "FAILED")
    content = _page(admin, "execution", execution.pk)
    assert "A restart runs where the job runs" in html.unescape(content)
    assert 'data-bb-copy="bb-cli-' in content


def test_a_stop_already_requested_offers_no_stop_command(admin: Client) -> None:
    execution = factories.execution(
        factories.instance(), "STARTED", stop_requested_by="user:someone"
    )
    assert "STOP" not in _commands(_page(admin, "execution", execution.pk))


def test_a_restarted_attempt_offers_no_restart(admin: Client) -> None:
    instance = factories.instance()
    first = factories.execution(instance, "FAILED")
    factories.execution(instance, "FAILED", restart_of=first)
    commands = _commands(_page(admin, "execution", first.pk))
    assert "RESTART" not in commands and "ABANDON" not in commands


@pytest.mark.parametrize(
    ("held", "latest", "offered"),
    [
        (False, "FAILED", {"HOLD", "RESTART"}),
        (True, "STOPPED", {"HOLD", "RELEASE_HOLD", "RESTART"}),
        (False, "COMPLETED", {"HOLD"}),
        (False, "STARTED", {"HOLD"}),
        (True, "ABANDONED", {"HOLD", "RELEASE_HOLD"}),
        (False, None, {"HOLD"}),
    ],
)
def test_an_instance_page_shows_the_command_of_each_offered_action(
    admin: Client, held: bool, latest: str | None, offered: set[str]
) -> None:
    instance = factories.instance(
        "billing", hold=("user:keeper", "AUDIT") if held else None
    )
    execution = factories.execution(instance, latest) if latest else None
    commands = _commands(_page(admin, "instance", instance.pk))
    assert set(commands) == offered
    pk = str(instance.pk)
    assert commands["HOLD"][:8] == [
        "oxide-batch", "retention", "hold", "--instance", pk,
        "--reason", "AUDIT", "--actor",
    ]  # fmt: skip
    assert re.fullmatch(r"cli-hold-\d+-[0-9a-f]{8}", commands["HOLD"][-1])
    if "RELEASE_HOLD" in commands:
        assert commands["RELEASE_HOLD"][1:7] == [
            "retention", "release", "--instance", pk,
            "--reason", "HOLD_NO_LONGER_NEEDED",
        ]  # fmt: skip
    if "RESTART" in commands:
        assert execution is not None
        assert commands["RESTART"][-1] == f"cli-restart-{pk}-after-{execution.pk}"


def test_operation_ids_and_actors_are_valid_envelope_values(db: None) -> None:
    from batchboard.actions import envelope

    execution = {"id": 12, "version": 3, "job_instance_id": 5, "job_name": "x"}
    offers = {
        "STOP": eligibility.stop("STARTED"),
        "ABANDON": eligibility.abandon("FAILED"),
        "RESTART": eligibility.restart("FAILED"),
    }
    for command in cli.for_execution(execution, offers, actor="user:a"):
        words = shlex.split(command.line)
        envelope.validate_operation_id(words[words.index("--operation-id") + 1])
        envelope.validate_actor_ref(words[words.index("--actor") + 1])


@pytest.mark.parametrize("status", ["STARTED", "UNKNOWN"])
def test_a_recovery_proposal_shows_the_command_of_each_directive(
    admin: Client, status: str
) -> None:
    execution = factories.actions.execution(status)
    factories.actions.step(execution, "STARTED")
    url = reverse("batchboard:recovery_proposal", args=[execution.pk])
    content = admin.get(url, {"panel": "1"}).content.decode()
    commands = _commands(content)
    assert set(commands) == {"RECOVER_MARK_FAILED", "RECOVER_ABANDON"}
    digest = re.search(r'<code class="bb-hex">([0-9a-f]{64})</code>', content)
    assert digest is not None
    failed, abandon = commands["RECOVER_MARK_FAILED"], commands["RECOVER_ABANDON"]
    for words in (failed, abandon):
        assert words[:9] == [
            "oxide-batch", "execution", "recover", "--execution", str(execution.pk),
            "--expected-version", "3", "--evidence-digest", digest.group(1),
        ]  # fmt: skip
        assert words[-2:] == ["--operation-id", f"cli-recover-{execution.pk}-v3"]
    # The failure id is the one the form proposes; with an unknown commit
    # the reason is UNKNOWN_EFFECT and the category unknown_commit.
    failure_id = re.search(r'name="failure_id" value="(\d+)"', content)
    assert failure_id is not None
    assert failed[failed.index("--failure-id") + 1] == failure_id.group(1)
    category = failed[failed.index("--failure-category") + 1]
    reason = failed[failed.index("--reason") + 1]
    if status == "UNKNOWN":
        assert (category, reason) == ("unknown_commit", "UNKNOWN_EFFECT")
    else:
        assert (category, reason) == ("stale_recovered", "OPERATOR_DECISION")
    assert "--failure-id" not in abandon
    assert abandon[abandon.index("--directive") + 1] == "abandon"


def test_a_fresh_execution_offers_no_recovery_command(admin: Client) -> None:
    execution = factories.actions.execution("STARTED", updated_at=factories.now())
    url = reverse("batchboard:recovery_proposal", args=[execution.pk])
    assert _commands(admin.get(url).content.decode()) == {}
