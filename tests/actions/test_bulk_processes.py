"""
Sixteen processes applying one bulk id on a SQLite file apply each item once.

The suite's SQLite database lives in memory (one process), so the race is
run by worker processes of the standalone site on a database file, as the
embedded demo runs; PostgreSQL runs it with threads (test_bulk.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.site.commands import CHECKOUT, SITE_VARIABLES

ITEMS = 24
WORKERS = 16

SEED = """
import json
from batchboard import actions
from batchboard.explorer import surveys
from tests.factories import actions as factories
for _ in range({items}):
    factories.execution("FAILED", job_instance=factories.instance("race"))
actor = actions.ServiceActor("bulk-race", ["READ", "DESTRUCTIVE"])
plan = actions.plan_bulk(
    user=actor, action="ABANDON", survey=surveys.executions("FAILED", "race")
)
print(json.dumps({{"items": [list(i.item) for i in plan.items],
                  "filters": plan.filters, "digest": plan.digest}}))
"""

WORKER = """
import json, time
from batchboard import actions
plan = json.loads(open({plan!r}).read())
actor = actions.ServiceActor("bulk-race", ["READ", "DESTRUCTIVE"])
time.sleep(max(0.0, {start} - time.time()))
result = actions.apply_bulk(
    user=actor, action="ABANDON", filters=plan["filters"],
    items=[tuple(item) for item in plan["items"]], digest=plan["digest"],
    bulk_id="race-1", reason_code="OPERATOR_DECISION",
)
print(json.dumps(result.counts))
"""


@pytest.mark.slow
def test_sixteen_processes_on_a_sqlite_file_apply_each_item_once(
    tmp_path: Path,
) -> None:
    database = tmp_path / "site.sqlite3"
    env = {
        **{k: v for k, v in os.environ.items() if k not in SITE_VARIABLES},
        "DJANGO_DEBUG": "1",
        "DATABASE_URL": f"sqlite:///{database}",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    manage = [sys.executable, str(CHECKOUT / "manage.py")]
    subprocess.run(
        [*manage, "migrate", "-v0"], cwd=CHECKOUT, env=env, check=True, timeout=180
    )
    seeded = subprocess.run(
        [*manage, "shell", "-c", SEED.format(items=ITEMS)],
        cwd=CHECKOUT,
        env=env,
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    )
    plan = json.loads(seeded.stdout.strip().splitlines()[-1])
    # The digest recomputed here from its documented format.
    document = {"action": "ABANDON", "filters": plan["filters"], "items": plan["items"]}
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == plan["digest"]
    assert len(plan["items"]) == ITEMS
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan))
    code = WORKER.format(plan=str(plan_file), start=time.time() + 6)
    workers = [
        subprocess.Popen(
            [*manage, "shell", "-c", code],
            cwd=CHECKOUT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(WORKERS)
    ]
    outputs = [worker.communicate(timeout=300) for worker in workers]
    assert all(worker.returncode == 0 for worker in workers), outputs
    applied = [
        json.loads(out.strip().splitlines()[-1])["APPLIED"] for out, _ in outputs
    ]
    # Every item applied by exactly one process; the others saw it done.
    assert sum(applied) == ITEMS
    with sqlite3.connect(database) as db:
        requests = db.execute(
            "SELECT count(*), count(DISTINCT operation_id) FROM ob_operator_request"
            " WHERE operation_id LIKE 'race-1:%'"
        ).fetchone()
        counts = db.execute(
            "SELECT applied, rejected, stale, finished_at IS NOT NULL"
            " FROM batchboard_bulk_operation WHERE bulk_id = 'race-1'"
        ).fetchone()
        abandoned = db.execute(
            "SELECT count(*) FROM ob_job_execution WHERE status = 'ABANDONED'"
        ).fetchone()
    assert requests == (ITEMS, ITEMS)
    assert counts == (ITEMS, 0, 0, 1)
    assert abandoned == (ITEMS,)
