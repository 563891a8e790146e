"""
The CLI's exit categories (spec A.2.4) and the HTTP status of each.

This table is the one place an API answer's status comes from: a view names
the category of its outcome, and the envelope's ``outcome`` and the HTTP
status follow from it. docs/api.md prints the same table.

=========================  ====  =========  ====
category                   exit  outcome    HTTP
=========================  ====  =========  ====
SUCCESS                    0     success    200
USAGE                      1     error      400
CONFIGURATION_INVALID      2     error      400
GUARD_REJECTED             3     rejected   409
TARGET_NOT_FOUND           4     error      404
OPTIMISTIC_CONFLICT        5     conflict   409
OUTCOME_UNKNOWN            6     unknown    503
REPOSITORY_UNAVAILABLE     7     error      503
CONFIRMATION_REQUIRED      8     rejected   400
DEADLINE_EXCEEDED          9     error      504
OUTPUT_FAILURE             10    error      500
INTERNAL                   70    error      500
UNAUTHENTICATED            -     error      401
FORBIDDEN                  -     error      403
THROTTLED                  -     error      429
=========================  ====  =========  ====

The last three are the API's own (a CLI has no caller to authenticate).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class Category:
    name: str
    exit_code: int | None
    outcome: str
    status: int


_ROWS: Final = (
    Category("SUCCESS", 0, "success", 200),
    Category("USAGE", 1, "error", 400),
    Category("CONFIGURATION_INVALID", 2, "error", 400),
    Category("GUARD_REJECTED", 3, "rejected", 409),
    Category("TARGET_NOT_FOUND", 4, "error", 404),
    Category("OPTIMISTIC_CONFLICT", 5, "conflict", 409),
    Category("OUTCOME_UNKNOWN", 6, "unknown", 503),
    Category("REPOSITORY_UNAVAILABLE", 7, "error", 503),
    Category("CONFIRMATION_REQUIRED", 8, "rejected", 400),
    Category("DEADLINE_EXCEEDED", 9, "error", 504),
    Category("OUTPUT_FAILURE", 10, "error", 500),
    Category("INTERNAL", 70, "error", 500),
    Category("UNAUTHENTICATED", None, "error", 401),
    Category("FORBIDDEN", None, "error", 403),
    Category("THROTTLED", None, "error", 429),
)

CATEGORIES: Final[dict[str, Category]] = {row.name: row for row in _ROWS}

#: The category of each rejection code an audited outcome carries (A.2.4).
REJECTION_CATEGORY: Final[dict[str, str]] = {
    "OPTIMISTIC_CONFLICT": "OPTIMISTIC_CONFLICT",
    "EXECUTION_NOT_FOUND": "TARGET_NOT_FOUND",
    "INSTANCE_NOT_FOUND": "TARGET_NOT_FOUND",
}


def category(name: str) -> Category:
    """Return the category called ``name``."""
    return CATEGORIES[name]


def of_rejection(code: str | None) -> Category:
    """Return the category of an audited rejection (every other code is 3)."""
    return CATEGORIES[REJECTION_CATEGORY.get(code or "", "GUARD_REJECTED")]
