"""
Two executions side by side: what changed between a run and another.

:func:`compare` reads both executions and everything the page sets beside
each other in a constant number of bounded statements, whatever the
executions hold:

- each execution's record (:func:`.queries.execution`), with its
  definition's revision and manifest digest;
- the upgrade edge between the two definitions, if one is registered
  (``ob_definition_upgrade``'s primary key, both directions);
- each execution's steps, matched by logical id: the first
  :data:`COMPARED_STEPS` logical ids of each in byte order, read off the
  execution's own steps (partition workers are rolled up under their
  parent, not matched);
- the partitions of the parent steps shown, rolled up in one grouped read
  (:func:`.relations.partition_rollups`), for a reader who may view them;
- each execution's flow path, its first :data:`FLOW_STEPS` decisions in
  sequence order;
- both parameter envelopes, compared here by name: a parameter is the same
  or different, and its value never leaves this module.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from django.db.models import Q

from batchboard import db
from batchboard.digests import PARAMETER_KINDS
from batchboard.explorer import queries, relations
from batchboard.explorer.pagination import Row
from batchboard.explorer.presenters import Presenter
from batchboard.explorer.relations import Rollup
from batchboard.models import DefinitionUpgrade, JobExecution, StepExecution
from batchboard.schema import FAULT_COUNTERS
from batchboard.vocabulary import PARTITION_WORKER_PREFIX

#: Step logical ids compared per execution, the first in byte order; the
#: page says when an execution has more.
COMPARED_STEPS: Final = 200
#: Flow decisions of each execution's path, in sequence order.
FLOW_STEPS: Final = 100
#: The counters a compared step shows, beside its retries.
STEP_COUNTERS: Final = ("read_count", "write_count", "filter_count", "commit_count")
#: The retry counters, summed into one figure.
RETRY_COUNTERS: Final = tuple(name for name in FAULT_COUNTERS if "retry" in name)

_STEP_COLUMNS: Final = (
    "id",
    "job_execution_id",
    "step_name",
    "step_logical_id",
    "status",
    "exit_code",
    "created_at",
    "started_at",
    "ended_at",
    "updated_at",
    *STEP_COUNTERS,
    *RETRY_COUNTERS,
)

Sameness = Literal["same", "different", "only_left", "only_right"]


@dataclass(frozen=True)
class Side:
    """One execution of the comparison: its record, steps and flow path."""

    execution: Row
    steps: dict[str, list[Row]]
    more_steps: bool
    path: list[Row]
    more_path: bool


@dataclass(frozen=True)
class StepPair:
    """One logical step: its latest run in each execution, if any."""

    logical_id: str
    left: Row | None
    right: Row | None
    runs: tuple[int, int]


@dataclass(frozen=True)
class ParameterPair:
    """One parameter name: its kind on each side and whether values agree."""

    name: str
    left_kind: str | None
    right_kind: str | None
    sameness: Sameness


@dataclass(frozen=True)
class Comparison:
    """Everything the compare page sets side by side."""

    left: Side
    right: Side
    upgrade: Row | None
    steps: list[StepPair]
    parameters: list[ParameterPair]
    rollups: dict[int, Rollup] = field(default_factory=dict)
    partitions_shown: bool = True


def _steps(execution_id: int) -> tuple[dict[str, list[Row]], bool]:
    """
    Return an execution's steps by logical id (first COMPARED_STEPS ids).

    One statement off the execution's steps (ordered by logical id, then
    id): a logical id run more than once (a loop in the flow) lists each
    run, oldest first. Reading a run past the bound tells that more exist.
    """
    # Runs of one logical id share the bound: spare rows let the last ids
    # keep their repeated runs in the common case.
    limit = COMPARED_STEPS * 2 + 1
    rows: list[Row] = list(
        StepExecution.objects.using(db.read_alias())
        .filter(job_execution_id=execution_id)
        .exclude(step_name__startswith=PARTITION_WORKER_PREFIX)
        .order_by("step_logical_id", "id")
        .values(*_STEP_COLUMNS)[:limit]
    )
    by_id: dict[str, list[Row]] = {}
    for row in rows:
        logical = str(row["step_logical_id"])
        if logical not in by_id and len(by_id) == COMPARED_STEPS:
            return by_id, True
        by_id.setdefault(logical, []).append(row)
    more = len(rows) == limit
    if more:
        # The last id may have lost runs past the bound: drop it whole.
        by_id.pop(str(rows[-1]["step_logical_id"]), None)
    return by_id, more


def _path(execution_id: int) -> tuple[list[Row], bool]:
    """Return an execution's first FLOW_STEPS flow decisions, in sequence."""
    page = queries.flow_decisions(execution_id, FLOW_STEPS, None)
    return list(page.rows), page.next_cursor is not None


def _upgrade(left: Row, right: Row) -> Row | None:
    """Return the registered upgrade between the two definitions, if any."""
    a, b = left["definition_id"], right["definition_id"]
    if a == b:
        return None
    edge = (
        DefinitionUpgrade.objects.using(db.read_alias())
        .filter(
            Q(from_definition_id=a, to_definition_id=b)
            | Q(from_definition_id=b, to_definition_id=a)
        )
        .values("from_definition_id", "to_definition_id", "upgrade_key")
        .first()
    )
    return dict(edge) if edge else None


def _envelope(document: Any) -> Mapping[str, Any]:
    if isinstance(document, str):
        document = json.loads(document)
    return document if isinstance(document, Mapping) else {}


def _kind(entry: Any) -> str:
    kind = entry.get("type") if isinstance(entry, Mapping) else None
    return str(kind).upper() if kind in PARAMETER_KINDS else "?"


def _typed(entry: Any) -> tuple[Any, Any]:
    """Return what makes two entries equal: the kind and the value."""
    if not isinstance(entry, Mapping):
        return (None, None)
    return (entry.get("type"), json.dumps(entry.get("value"), sort_keys=True))


def parameters(left_id: int, right_id: int) -> list[ParameterPair]:
    """
    Compare two executions' parameters by name: kinds, same or different.

    One statement reads both envelopes (``ob_job_execution.parameters``);
    the values are compared here and dropped: only the verdict is returned.
    """
    found = {
        int(pk): _envelope(document)
        for pk, document in JobExecution.objects.using(db.read_alias())
        .filter(id__in=[left_id, right_id])
        .values_list("id", "parameters")
    }
    left, right = found.get(left_id, {}), found.get(right_id, {})
    pairs = []
    for name in sorted(set(left) | set(right), key=lambda n: n.encode("utf-8")):
        sameness: Sameness
        if name not in right:
            sameness = "only_left"
        elif name not in left:
            sameness = "only_right"
        elif _typed(left[name]) == _typed(right[name]):
            sameness = "same"
        else:
            sameness = "different"
        pairs.append(
            ParameterPair(
                name,
                _kind(left[name]) if name in left else None,
                _kind(right[name]) if name in right else None,
                sameness,
            )
        )
    return pairs


def _side(execution: Row) -> Side:
    execution_id = int(execution["id"])
    steps, more_steps = _steps(execution_id)
    path, more_path = _path(execution_id)
    return Side(execution, steps, more_steps, path, more_path)


def compare(left: Row, right: Row, *, partitions: bool) -> Comparison:
    """
    Read what the page compares of two executions (:func:`.queries.execution`
    rows), in a constant number of statements.

    Without ``partitions`` (a reader who may not view them) no partition
    is read and no step is rolled up.
    """
    one, other = _side(left), _side(right)
    pairs = [
        StepPair(
            logical,
            one.steps[logical][-1] if logical in one.steps else None,
            other.steps[logical][-1] if logical in other.steps else None,
            (len(one.steps.get(logical, ())), len(other.steps.get(logical, ()))),
        )
        for logical in sorted(
            set(one.steps) | set(other.steps), key=lambda n: n.encode("utf-8")
        )
    ]
    rollups: dict[int, Rollup] = {}
    if partitions:
        shown = [
            int(step["id"])
            for pair in pairs
            for step in (pair.left, pair.right)
            if step is not None
        ]
        rollups = relations.partition_rollups(shown)
    return Comparison(
        left=one,
        right=other,
        upgrade=_upgrade(left, right),
        steps=pairs,
        parameters=parameters(int(left["id"]), int(right["id"])),
        rollups=rollups,
        partitions_shown=partitions,
    )


def present(comparison: Comparison, presenter: Presenter) -> None:
    """Add what the page places to both sides' rows (durations, exits, links)."""
    revisions = {}
    for side in (comparison.left, comparison.right):
        presenter.run(side.execution)
        presenter.flow(side.path)
        revisions[side.execution["definition_id"]] = side.execution[
            "definition_revision"
        ]
    if comparison.upgrade is not None:
        edge = comparison.upgrade
        edge["from_revision"] = revisions.get(edge["from_definition_id"])
        edge["to_revision"] = revisions.get(edge["to_definition_id"])
    for pair in comparison.steps:
        for step in (pair.left, pair.right):
            if step is None:
                continue
            presenter.run(step)
            step["url"] = presenter.links.link("batchboard:step", step["id"])
            step["retries"] = sum(int(step[name] or 0) for name in RETRY_COUNTERS)
            rollup = comparison.rollups.get(int(step["id"]))
            step["rollup"] = rollup
            step["segments"] = presenter.segments(rollup)
