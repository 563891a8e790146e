"""
The read permissions each page needs: the models whose rows it shows.

A page, and any dialog or partial that tells what that page tells (the
console's stop dialog names an execution's status and version), requires
the same set, so both front ends read these tuples from here.
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
