"""The admin benchmark command: on PostgreSQL and SQLite, and it only reads."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import connections

from batchboard import conf
from batchboard.models import JobExecution, OperatorRequest
from tests.factories import actions as factories


@pytest.mark.django_db
def test_the_benchmark_prints_the_table_and_writes_nothing() -> None:
    """A small run prints both pages at both depths and leaves rows as they were."""
    definition = factories.definition()
    for status in ("FAILED", "COMPLETED", "FAILED", "STARTED", "COMPLETED", "FAILED"):
        factories.execution(status, job_definition=definition)
    before = list(JobExecution.objects.order_by("id").values())
    out = io.StringIO()
    connection = connections[conf.database_alias()]
    sqlite = connection.vendor == "sqlite"
    try:
        call_command("batchboard_benchmark_admin", depth=2, repeat=1, stdout=out)
        with connection.cursor() as cursor:
            if sqlite:
                cursor.execute("PRAGMA query_only")
                assert cursor.fetchone()[0] == 1
            else:
                cursor.execute("SHOW default_transaction_read_only")
                assert cursor.fetchone()[0] == "on"
    finally:
        with connection.cursor() as cursor:
            if sqlite:
                cursor.execute("PRAGMA query_only = OFF")
            else:
                cursor.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE")
    text = out.getvalue()
    assert "History: 6 executions; deep = 2 rows in" in text
    assert "Deep admin page: 1 statement(s), no OFFSET, no COUNT." in text
    for row in ("all executions   first page", "status FAILED    2 deep"):
        assert row in text
    assert "admin/explorer" in text and "the 3x target." in text
    assert list(JobExecution.objects.order_by("id").values()) == before
    assert not OperatorRequest.objects.exists()
