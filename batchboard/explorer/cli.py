"""
The ``oxide-batch`` command for each action a record offers.

An execution or instance page shows, for every action the record offers
(:mod:`batchboard.actions.eligibility` answers), the operator CLI's command
with the record's ids and expected version filled in (spec A.1): stop and
abandon of an execution, hold and release of an instance, and restart,
which only the job's own runtime can do (the CLI's ``execution restart`` is
runtime-level), so the console shows how instead of a button.

Each command carries the actor the console would record for the reader and
an operation id. An execution's operation id is fixed by the action, the
execution and its version, so running a command twice replays the first
request (spec 4.3) instead of acting twice; an instance has no version, so
its page draws a fresh one. A destructive command leaves out ``--yes``: the
CLI asks for a confirmation. Reasons are the first code the console offers
for the action; the note lists the others.
"""

from __future__ import annotations

import secrets
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from django.utils.translation import gettext_lazy as _

from batchboard import vocabulary
from batchboard.actions import eligibility
from batchboard.actions.eligibility import Eligibility
from batchboard.explorer.pagination import Row
from batchboard.vocabulary import ABANDON, HOLD, RELEASE_HOLD, RESTART, STOP

__all__ = ["PROGRAM", "Command", "for_execution", "for_instance", "for_recovery"]

#: The operator CLI's executable (spec A.1).
PROGRAM: Final = "oxide-batch"


@dataclass(frozen=True)
class Command:
    """One action's command line, its title and what to know before running it."""

    action: str
    title: Any
    line: str
    note: Any = ""

    @property
    def slug(self) -> str:
        """Return the command's name in element ids: its action, lower case."""
        return self.action.lower()


def _offered(offers: Mapping[str, Eligibility], action: str) -> bool:
    """Return whether ``offers`` (eligibility's answers) offer ``action``."""
    answer = offers.get(action)
    return answer is not None and answer.offered


def _line(*words: object) -> str:
    return " ".join(shlex.quote(str(word)) for word in (PROGRAM, *words))


def _reason(action: str) -> tuple[str, Any]:
    """Return the reason a command carries and the note naming the others."""
    codes = [reason.code for reason in vocabulary.reasons_for(action)]
    note = _("Reason: one of %(codes)s.") % {"codes": ", ".join(codes)}
    return codes[0], note


_RESTART_NOTE: Final = _(
    "A restart runs where the job runs: the job's own runtime creates the "
    "next attempt with the job's definition (oxide-batch's execution restart "
    "is runtime-level), so run it with the program that registers this job, "
    "never from the console. The stock oxide-batch binary registers no job "
    "and answers JOB_NOT_REGISTERED."
)


def _restart(instance_id: int, job_name: str, after: int, actor: str) -> Command:
    return Command(
        RESTART,
        _("Restart"),
        _line(
            "execution",
            "restart",
            "--instance",
            instance_id,
            "--job",
            job_name,
            "--actor",
            actor,
            "--operation-id",
            f"cli-restart-{instance_id}-after-{after}",
        ),
        _RESTART_NOTE,
    )


def for_execution(
    execution: Row, offers: Mapping[str, Eligibility], *, actor: str
) -> list[Command]:
    """
    Return the commands of the actions one execution offers, by ``offers``.

    ``offers`` holds the eligibility answers of STOP, ABANDON and, on the
    instance's latest attempt, RESTART; an action it leaves out is not
    offered.
    """
    pk, version = int(execution["id"]), int(execution["version"])
    commands = []
    if _offered(offers, STOP):
        commands.append(
            Command(
                STOP,
                _("Stop"),
                _line(
                    "execution",
                    "stop",
                    "--execution",
                    pk,
                    "--expected-version",
                    version,
                    "--actor",
                    actor,
                    "--operation-id",
                    f"cli-stop-{pk}-v{version}",
                ),
            )
        )
    if _offered(offers, ABANDON):
        reason, note = _reason(ABANDON)
        commands.append(
            Command(
                ABANDON,
                _("Abandon"),
                _line(
                    "execution",
                    "abandon",
                    "--execution",
                    pk,
                    "--expected-version",
                    version,
                    "--reason",
                    reason,
                    "--actor",
                    actor,
                    "--operation-id",
                    f"cli-abandon-{pk}-v{version}",
                ),
                note,
            )
        )
    if _offered(offers, RESTART):
        commands.append(
            _restart(
                int(execution["job_instance_id"]), execution["job_name"], pk, actor
            )
        )
    return commands


def for_instance(
    instance: Row,
    offers: Mapping[str, Eligibility],
    *,
    actor: str,
    latest: Row | None,
) -> list[Command]:
    """
    Return the commands of the actions one instance offers, by ``offers``.

    ``offers`` holds the answers of HOLD, RELEASE_HOLD and RESTART;
    ``latest`` is the instance's latest attempt (the one a restart follows).
    """
    pk = int(instance["id"])
    commands = []
    for action, verb, title in (
        (HOLD, "hold", _("Place hold")),
        (RELEASE_HOLD, "release", _("Release hold")),
    ):
        if not _offered(offers, action):
            continue
        reason, note = _reason(action)
        commands.append(
            Command(
                action,
                _("Replace hold")
                if action == HOLD and instance["hold_actor"]
                else title,
                _line(
                    "retention",
                    verb,
                    "--instance",
                    pk,
                    "--reason",
                    reason,
                    "--actor",
                    actor,
                    "--operation-id",
                    f"cli-{verb}-{pk}-{secrets.token_hex(4)}",
                ),
                note,
            )
        )
    if _offered(offers, RESTART) and latest is not None:
        commands.append(_restart(pk, instance["job_name"], int(latest["id"]), actor))
    return commands


def for_recovery(
    proposal: Any,
    offer: Eligibility,
    *,
    actor: str,
    failure_category: str,
    failure_id: int,
) -> list[Command]:
    """
    Return the commands of a recovery proposal's two directives, if offered.

    ``proposal`` is :class:`batchboard.actions.RecoveryProposal`; the CLI
    re-proposes and refuses a moved version or changed evidence (spec A.1),
    as the console does. Both commands carry one operation id: one decision
    is taken on a proposal. With an unknown commit, marking failed takes the
    reason UNKNOWN_EFFECT (eligibility.directive); abandoning takes any.
    """
    if not offer.offered:
        return []
    pk, version = int(proposal.execution_id), int(proposal.observed_version)
    reason, note = _reason(vocabulary.RECOVER)
    common = (
        "--execution",
        pk,
        "--expected-version",
        version,
        "--evidence-digest",
        proposal.digest_hex,
    )
    tail = ("--actor", actor, "--operation-id", f"cli-recover-{pk}-v{version}")
    unknown = bool(proposal.evidence.unknown_commit)
    failed_reason = eligibility.UNKNOWN_EFFECT if unknown else reason
    return [
        Command(
            "RECOVER_MARK_FAILED",
            _("Recover: mark failed"),
            _line(
                "execution",
                "recover",
                *common,
                "--directive",
                "mark-failed",
                "--failure-category",
                failure_category.lower(),
                "--failure-id",
                failure_id,
                "--reason",
                failed_reason,
                *tail,
            ),
            _("Reason: UNKNOWN_EFFECT, after checking the last commit's effect.")
            if unknown
            else note,
        ),
        Command(
            "RECOVER_ABANDON",
            _("Recover: abandon"),
            _line(
                "execution",
                "recover",
                *common,
                "--directive",
                "abandon",
                "--reason",
                reason,
                *tail,
            ),
            note,
        ),
    ]
