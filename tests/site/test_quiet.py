"""The development server logs no successful poll requests."""

from __future__ import annotations

import logging

import pytest

from batchboard.site.quiet import QuietPolls


def _record(message: str, status: int) -> logging.LogRecord:
    record = logging.LogRecord("django.server", logging.INFO, "", 0, message, (), None)
    record.status_code = status
    return record


@pytest.mark.parametrize(
    ("line", "status", "kept"),
    [
        ('"GET /executions/7/live/ HTTP/1.1" 200 512', 200, False),
        ('"GET /executions/7/row/?triage=1 HTTP/1.1" 200 512', 200, False),
        ('"GET /attention/ HTTP/1.1" 286 0', 286, False),
        ('"GET /executions/7/live/ HTTP/1.1" 500 12', 500, True),
        ('"GET /executions/7/ HTTP/1.1" 200 4096', 200, True),
        ('"POST /executions/7/stop/ HTTP/1.1" 200 900', 200, True),
    ],
)
def test_only_successful_polls_are_dropped(line: str, status: int, kept: bool) -> None:
    assert QuietPolls().filter(_record(line, status)) is kept
