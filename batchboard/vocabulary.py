"""
batchboard's words and bounds, each defined once.

The closed value sets of the metadata schema come from the frozen schema
description (:mod:`batchboard.schema.v4`), which is where oxide-batch's
contract fixes them; the sets batchboard derives from them and batchboard's
own words (actions, authorization classes, reason codes, outcomes) and
bounds (identifiers, page sizes, ages) are defined here. Every other module
imports them from this one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, Literal

from django.utils.translation import gettext_lazy as _

from batchboard.schema.v4 import (
    AUTHORIZATION_CLASSES,
    FAILURE_CATEGORIES,
    FINISHED,
    OUTCOME_CLASSES,
    REJECTION_CODES,
    STATUSES,
    UNRESOLVED,
    RejectionCode,
)

__all__ = [
    "ABANDON",
    "ACTION_CLASSES",
    "ACTIVE",
    "ActionName",
    "APPLIED",
    "APPLY_PURGE",
    "ATTENTION_LIMIT",
    "ATTENTION_FAILURES",
    "AUTHORIZATION_CLASSES",
    "DESTRUCTIVE",
    "FAILURE_CATEGORIES",
    "FINISHED",
    "HOLD",
    "LIFECYCLE",
    "MAX_BIGINT",
    "MAX_PAGE_SIZE",
    "MAX_RESPONSE_BYTES",
    "MAX_STATEMENT_TIMEOUT_MS",
    "MAX_UNRESOLVED_AGE",
    "MIN_PAGE_SIZE",
    "MIN_STATEMENT_TIMEOUT_MS",
    "MIN_UNRESOLVED_AGE",
    "OUTCOME_CLASSES",
    "PARTITION_PREVIEW",
    "PARTITION_WORKER_PREFIX",
    "PLAN_PURGE",
    "PROPOSE_RECOVERY",
    "READ",
    "REASON_CODES",
    "RECOVER",
    "RECOVERY_CATEGORIES",
    "REJECTED",
    "REJECTION_CODES",
    "RejectionCode",
    "RELEASE_HOLD",
    "RESTART",
    "REPLAYED",
    "RUNNING_LIMIT",
    "STATUSES",
    "STATUS_SETS",
    "STOP",
    "OVERVIEW_PAGE_SIZE",
    "STRIP_LENGTH",
    "SUGGESTED_NAMES",
    "UNRESOLVED",
    "CONTROL_CHARACTERS",
    "WHOLE_NUMBER",
    "WINDOW_SCAN",
    "RARE_JOB_INSTANCES",
    "BUSY_JOB_SAMPLE",
    "BUSY_JOB_SPAN",
    "BUSY_JOB_KEPT_SECONDS",
    "BUSY_JOB_KEPT_JOBS",
    "Reason",
    "is_row_id",
    "parse_whole_number",
    "reasons_for",
]

# -- bounds --------------------------------------------------------------------

#: The largest PostgreSQL ``bigint``: every identity, version and counter of
#: the schema lies in 0..MAX_BIGINT (identities start at 1).
MAX_BIGINT: Final = 2**63 - 1

#: A whole number as typed in a request (an id, a version, a page size, an
#: age): ASCII digits only, as many as a bigint can need. ``str.isdigit``
#: accepts "²" and ``int`` accepts "٣", "+3", "3_0" and refuses more than
#: 4,300 digits; this accepts none of them. Use it with ``fullmatch``.
WHOLE_NUMBER: Final = re.compile(r"[0-9]{1,19}")


def parse_whole_number(text: str, maximum: int | None = MAX_BIGINT) -> int | None:
    """
    Return ``text`` as a whole number (up to ``maximum`` unless that is
    None), or None if it is not one.
    """
    if not WHOLE_NUMBER.fullmatch(text):
        return None
    value = int(text)
    return value if maximum is None or value <= maximum else None


def is_row_id(value: int) -> bool:
    """
    Return whether ``value`` can name a row: identities run from 1 to
    MAX_BIGINT.

    Beyond bigint a number names nothing, and the database would fail on it
    (PostgreSQL with a type error, SQLite with an overflow) rather than
    find no row: every id from a URL or a form is checked here first.
    """
    return 0 < value <= MAX_BIGINT


#: C0 and C1 control characters and DEL: no id, name, filter or continuation
#: token batchboard reads from a request holds one (PostgreSQL refuses NUL
#: in text outright), so a request carrying one is refused with a 400.
CONTROL_CHARACTERS: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")

#: Rows per explorer page: the request's ``size`` must lie in this range.
MIN_PAGE_SIZE: Final = 1
MAX_PAGE_SIZE: Final = 500
#: An explorer response stops adding rows once their estimated stored size
#: passes this many bytes (oxide-batch's page budget).
MAX_RESPONSE_BYTES: Final = 262_144
#: The unresolved page's age filter, in seconds: at least a minute, at most
#: thirty days (so interval arithmetic can never overflow a timestamp).
MIN_UNRESOLVED_AGE: Final = 60
MAX_UNRESOLVED_AGE: Final = 30 * 24 * 3600
#: A statement timeout (spec 9.3), in milliseconds: 1 ms to 24 h.
MIN_STATEMENT_TIMEOUT_MS: Final = 1
MAX_STATEMENT_TIMEOUT_MS: Final = 86_400_000
#: Latest executions shown per job on the overview.
STRIP_LENGTH: Final = 12
#: Jobs on an overview page unless the request asks for another size: each
#: job's row carries a strip of STRIP_LENGTH runs, 240 runs a page.
OVERVIEW_PAGE_SIZE: Final = 20
#: The most instances of a job one page of a created-between window
#: examines (newest first): a window far back in a busy job's history is
#: paged through in steps of this many, each page bounded.
WINDOW_SCAN: Final = 1000
#: On SQLite (no planner statistics) a job with at most this many instances
#: has its updated-between window read from its instances, every one of
#: them, rather than down each status's range of the window, which a rare
#: job's page would read to its end.
RARE_JOB_INSTANCES: Final = 1000
#: On PostgreSQL a job is busy when its newest BUSY_JOB_SAMPLE instances lie
#: among the last BUSY_JOB_SPAN times as many: one instance in every
#: BUSY_JOB_SPAN or more of late. Its updated-between window over several
#: statuses then probes each row's instance rather than joining them.
BUSY_JOB_SAMPLE: Final = 20
BUSY_JOB_SPAN: Final = 20
#: How long a process keeps what it found of a job's busyness before it
#: looks again, and for how many jobs at most.
BUSY_JOB_KEPT_SECONDS: Final = 300
BUSY_JOB_KEPT_JOBS: Final = 1024
#: Recent failures listed on the overview's attention panel.
ATTENTION_LIMIT: Final = 10
#: Recent failures the attention panel reads (status index, newest first)
#: to find the ones a restart has not resolved yet.
ATTENTION_FAILURES: Final = 50
#: Running executions counted per job on the overview before "1000+".
RUNNING_LIMIT: Final = 1000
#: Job names suggested as a job filter is typed (names starting with it).
SUGGESTED_NAMES: Final = 20
#: Partitions listed under their parent step on the execution page; the
#: step's own page lists them all, keyset-paged.
PARTITION_PREVIEW: Final = 50
#: How oxide-batch names the worker step of a partition (then a hex token);
#: pages label such a step by its partition key instead.
PARTITION_WORKER_PREFIX: Final = "__ob_partition_worker_"
#: Executions a job page's trend draws, and the newest of them its steps
#: grid shows; the grid reads at most GRID_STEP_ROWS step rows.
TREND_RUNS: Final = 100
GRID_RUNS: Final = 25
GRID_STEP_ROWS: Final = 1000

# -- statuses ------------------------------------------------------------------

#: Unresolved statuses an owner may still be moving (UNKNOWN is not one).
ACTIVE: Final = ("STARTING", "STARTED", "STOPPING")
#: The executions list's status shortcuts, by the word a link or a form
#: gives: every status not yet final (UNKNOWN included, as the overview's
#: running counts count it) and every final one. Together they cover every
#: status once.
STATUS_SETS: Final[dict[str, tuple[str, ...]]] = {
    "active": UNRESOLVED,
    "finished": FINISHED,
}
assert sorted(STATUS_SETS["active"] + STATUS_SETS["finished"]) == sorted(STATUSES)
#: Statuses a STOP acts on by recording a stop request (spec 4.6): the owner
#: moves the execution to STOPPING at its next boundary, not the request.
#: Read it through :mod:`batchboard.actions.eligibility`, which decides.
STOPPABLE: Final = ("STARTING", "STARTED")

# -- operator actions and authorization ----------------------------------------

#: The operator actions one record offers or refuses (the purge acts on a
#: plan, not on one record); spec 4.1 and 6.1.
ActionName = Literal["STOP", "ABANDON", "RECOVER", "HOLD", "RELEASE_HOLD", "RESTART"]

STOP: Final = "STOP"
ABANDON: Final = "ABANDON"
RECOVER: Final = "RECOVER"
HOLD: Final = "HOLD"
RELEASE_HOLD: Final = "RELEASE_HOLD"
#: Runs in the job's own runtime (spec A.1), never in batchboard: pages show
#: the oxide-batch command for it.
RESTART: Final = "RESTART"
APPLY_PURGE: Final = "APPLY_PURGE"
#: Reads that belong to an action's workflow but change nothing.
PLAN_PURGE: Final = "PLAN_PURGE"
PROPOSE_RECOVERY: Final = "PROPOSE_RECOVERY"

READ: Final = "READ"
LIFECYCLE: Final = "LIFECYCLE"
DESTRUCTIVE: Final = "DESTRUCTIVE"

#: The authorization class each action needs (spec 4.1).
ACTION_CLASSES: Final[dict[str, str]] = {
    STOP: LIFECYCLE,
    ABANDON: DESTRUCTIVE,
    RECOVER: DESTRUCTIVE,
    HOLD: DESTRUCTIVE,
    RELEASE_HOLD: DESTRUCTIVE,
    RESTART: LIFECYCLE,
    APPLY_PURGE: DESTRUCTIVE,
    PLAN_PURGE: READ,
    PROPOSE_RECOVERY: READ,
}

#: How an action request ended: the two recorded outcome classes, and a
#: replay of an operation id already recorded.
APPLIED: Final = "APPLIED"
REJECTED: Final = "REJECTED"
REPLAYED: Final = "REPLAYED"


@dataclass(frozen=True)
class Reason:
    """One reason an operator may give, and the actions it applies to."""

    code: str
    label: Any
    actions: tuple[str, ...]


#: The reasons operators pick from, per action. Add a reason here (never in a
#: form) to offer it; the service refuses any code not listed for the action.
REASON_CODES: Final[tuple[Reason, ...]] = (
    Reason("OPERATOR_DECISION", _("Operator decision"), (ABANDON, RECOVER)),
    Reason("HOST_LOST", _("The host running it was lost"), (ABANDON, RECOVER)),
    Reason("PROCESS_CRASHED", _("The owning process crashed"), (ABANDON, RECOVER)),
    Reason(
        "UNKNOWN_EFFECT",
        _("The effect of the last commit is unknown (checked by hand)"),
        (RECOVER,),
    ),
    Reason("DUPLICATE_RUN", _("Duplicate run, superseded"), (ABANDON, RECOVER)),
    Reason("BAD_INPUT_DATA", _("Bad input data, will not be rerun"), (ABANDON,)),
    Reason("AUDIT", _("Kept for an audit"), (HOLD,)),
    Reason("INCIDENT_INVESTIGATION", _("Kept for an incident investigation"), (HOLD,)),
    Reason("LEGAL_HOLD", _("Legal hold"), (HOLD,)),
    Reason("HOLD_NO_LONGER_NEEDED", _("No longer needed"), (RELEASE_HOLD,)),
    Reason("PLACED_IN_ERROR", _("Placed in error"), (RELEASE_HOLD,)),
    Reason("RETENTION_POLICY", _("Retention policy"), (APPLY_PURGE,)),
    Reason("STORAGE_PRESSURE", _("Storage pressure"), (APPLY_PURGE,)),
)


#: The failure categories an operator may record when marking an unresolved
#: execution failed by recovery (spec 5.4), with what each says. The other
#: categories of oxide-batch (ILLEGAL_TRANSITION, OPTIMISTIC_CONFLICT,
#: SERIALIZATION, INVARIANT, INVALID_DEFINITION, DUPLICATE_EXECUTION,
#: UNSUPPORTED_CAPABILITY) name errors the framework detects in its own
#: work; an operator looking at a stale run never observed one.
RECOVERY_CATEGORIES: Final[tuple[tuple[str, Any], ...]] = (
    ("STALE_RECOVERED", _("Stale run, recovered by an operator")),
    ("UNKNOWN_COMMIT", _("The last commit's effect is unknown")),
    ("TRANSIENT_INFRASTRUCTURE", _("Infrastructure fault, may pass on a retry")),
    ("PERMANENT_INFRASTRUCTURE", _("Infrastructure fault that a retry will not fix")),
    ("TIMEOUT", _("Ran out of time")),
    ("SHUTDOWN_INCOMPLETE", _("The process shut down before finishing")),
    ("CANCELLED", _("Cancelled by an operator")),
    ("USER_COMPONENT", _("A job component failed")),
)
assert {code for code, _label in RECOVERY_CATEGORIES} <= set(FAILURE_CATEGORIES)


def reasons_for(action: str) -> list[Reason]:
    """Return the reasons offered for ``action``, in the documented order."""
    return [reason for reason in REASON_CODES if action in reason.actions]
