"""
The read permissions each page needs: the models whose rows it shows.

A page, and any dialog or partial that tells what that page tells (the
console's stop dialog names an execution's status and version), requires
the same set, so both front ends read these tuples from here.

A page may also show a region whose records its own tuple does not cover
(``VIEW_*_ROWS`` below): the region is then shown only to a user holding its
records' view permission, and for anyone else it is not read at all and
says which permission it needs. Every template region that lists records
names their model in ``data-bb-records`` (the codename after ``view_``),
so a test can check each page for each permission a user lacks.
"""

from __future__ import annotations

from typing import Final

#: A list of executions: their instances and the executions themselves.
VIEW_EXECUTIONS: Final = (
    "batchboard.view_jobinstance",
    "batchboard.view_jobexecution",
)
#: The overview adds the job definitions.
VIEW_OVERVIEW: Final = ("batchboard.view_jobdefinition", *VIEW_EXECUTIONS)
#: A page that lists an execution's steps.
VIEW_STEPS: Final = (*VIEW_EXECUTIONS, "batchboard.view_stepexecution")
#: The execution page: steps, definition, and every recorded list.
VIEW_EXECUTION_PAGE: Final = (
    *VIEW_STEPS,
    "batchboard.view_jobdefinition",
    "batchboard.view_flowdecision",
    "batchboard.view_recoverydecision",
    "batchboard.view_operatorrequest",
)
#: A step's page with its partitions.
VIEW_PARTITIONS: Final = (*VIEW_STEPS, "batchboard.view_steppartition")
#: The audit log: operator requests and retention actions.
VIEW_AUDIT: Final = (
    *VIEW_EXECUTIONS,
    "batchboard.view_operatorrequest",
    "batchboard.view_retentionaction",
)
#: Parameter values, shown only to users who hold it (names and types to all).
PARAMETER_VALUES: Final = "batchboard.view_parameter_values"

#: A region listing steps: the job page's steps grid.
VIEW_STEP_ROWS: Final = "batchboard.view_stepexecution"
#: A region listing partitions: the execution page's partitions under their
#: parent steps (rows, rollups, progress and the timeline's partition bars).
VIEW_PARTITION_ROWS: Final = "batchboard.view_steppartition"
