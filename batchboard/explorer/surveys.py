"""
What a bulk action's plan reads: a list's matching records, by its filters.

A survey (:class:`batchboard.actions.bulk.Survey`) pairs a list's filters
as submitted with a reader of its matching rows. The reader walks the
list's own keyset statements (:mod:`batchboard.explorer.queries`), pages of
:data:`MAX_PAGE_SIZE` rows, until it has the rows asked for or the list
ends: a plan of ``BULK_MAX_ITEMS`` (1,000) reads three pages at most, each
served by the index that serves the list.

The filters of the executions and unresolved lists are read by the lists'
own forms (:mod:`batchboard.explorer.inputs`), so a plan accepts exactly
the filters the list accepts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from django.http import QueryDict

from batchboard.db import read_alias
from batchboard.explorer import inputs, queries
from batchboard.explorer.pagination import Page
from batchboard.models import JobExecution, JobInstance
from batchboard.vocabulary import MAX_PAGE_SIZE

#: The lists a bulk action may be planned from.
EXECUTIONS = "executions"
UNRESOLVED = "unresolved"
INSTANCES = "instances"
LISTS = (EXECUTIONS, UNRESOLVED, INSTANCES)
#: Rows picked one by one (the admin's selected rows).
SELECTION = "selection"


@dataclass(frozen=True)
class ListSurvey:
    """A list's filters and the keyset pages that read its matching rows."""

    kind: Literal["execution", "instance"]
    filters: Mapping[str, Any]
    page: Callable[[int, str | None], Page]

    def read(self, limit: int) -> Sequence[Mapping[str, Any]]:
        """Return the first ``limit`` matching rows, a page at a time."""
        rows: list[Mapping[str, Any]] = []
        token: str | None = None
        # One page size throughout: a cursor continues only the list, filter
        # and page size it was issued for.
        size = min(MAX_PAGE_SIZE, limit)
        while len(rows) < limit:
            page = self.page(size, token)
            rows.extend(page.rows)
            if page.next_cursor is None:
                break
            token = page.next_cursor
        return rows[:limit]


def executions(status: str | Sequence[str] = "", job: str = "") -> ListSurvey:
    """
    Return the executions list's survey under its status and job filters.

    ``status`` is one status or several (any of them); several are recorded
    in the plan's filters as a sorted list.
    """
    statuses = tuple(
        each for each in ((status,) if isinstance(status, str) else status) if each
    )
    filters: dict[str, Any] = {"list": EXECUTIONS}
    if len(statuses) == 1:
        filters["status"] = statuses[0]
    elif statuses:
        filters["status"] = sorted(statuses)
    if job:
        filters["job"] = job
    return ListSurvey(
        "execution",
        filters,
        lambda size, token: queries.recent_executions(statuses, job, size, token),
    )


def unresolved(age_seconds: int) -> ListSurvey:
    """Return the unresolved list's survey under its age bound."""
    return ListSurvey(
        "execution",
        {"list": UNRESOLVED, "age": age_seconds},
        lambda size, token: queries.unresolved(age_seconds, size, token),
    )


def instances(job_name: str) -> ListSurvey:
    """Return the survey of one job's instances."""
    return ListSurvey(
        "instance",
        {"list": INSTANCES, "job": job_name},
        lambda size, token: queries.instances(job_name, size, token),
    )


@dataclass(frozen=True)
class SelectionSurvey:
    """Rows picked by id (the admin's selection): their filters are the ids."""

    kind: Literal["execution", "instance"]
    ids: tuple[int, ...]

    @property
    def filters(self) -> Mapping[str, Any]:
        return {"list": SELECTION, "ids": sorted(self.ids)}

    def read(self, limit: int) -> Sequence[Mapping[str, Any]]:
        """Return the picked rows by primary key, at most ``limit``."""
        wanted = sorted(self.ids)[:limit]
        if self.kind == "instance":
            return list(
                JobInstance.objects.using(read_alias())
                .filter(pk__in=wanted)
                .order_by("pk")
                .values("id", "hold_placed_at")
            )
        return list(
            JobExecution.objects.using(read_alias())
            .filter(pk__in=wanted)
            .order_by("pk")
            .values(
                "id",
                "version",
                "status",
                "stop_requested_at",
                "job_instance_id",
                "attempt",
            )
        )


def selection(
    kind: Literal["execution", "instance"], ids: Sequence[int]
) -> SelectionSurvey:
    """Return the survey of rows picked by id (executions or instances)."""
    return SelectionSurvey(kind, tuple(sorted(set(ids))))


class InstancesForm(inputs.ExplorerForm):
    """A job's instances: the job's name."""

    job = inputs.JobNameField()


def from_query(source: str, data: QueryDict) -> ListSurvey:
    """
    Return the survey of list ``source`` under the filters in ``data``.

    The filters are checked by the list's own form; invalid ones raise the
    form's :class:`batchboard.web.BadInput`, an unknown list one too.
    """
    if source == EXECUTIONS:
        form = inputs.ExecutionsForm(data)
        if form.is_valid() and form.window is not None:
            # A window's times are not a bulk filter: a plan would act on
            # every matching execution, not only those the window showed.
            form.add_error(
                "since", "Bulk actions plan from the executions list without a window."
            )
        if not form.is_valid():
            raise form.bad_input()
        return executions(form.statuses, form.job_filter)
    if source == UNRESOLVED:
        unresolved_form = inputs.UnresolvedForm(data)
        if not unresolved_form.is_valid():
            raise unresolved_form.bad_input()
        return unresolved(unresolved_form.age_seconds)
    if source == INSTANCES:
        instances_form = InstancesForm(data)
        if not instances_form.is_valid() or not instances_form.cleaned_data["job"]:
            if not instances_form.errors:
                instances_form.add_error("job", "A job name is required.")
            raise instances_form.bad_input()
        return instances(str(instances_form.cleaned_data["job"]))
    unknown = inputs.ExplorerForm(data)
    unknown.add_error(None, "Plan from the executions, unresolved or instances list.")
    raise unknown.bad_input()
