"""docs/api.md's automation script, run as written against a live server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from batchboard.api import tokens
from batchboard.models import OperatorRequest
from batchboard.vocabulary import LIFECYCLE, READ
from tests.factories import actions as factories

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def _script() -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1
    return blocks[0]


@pytest.mark.django_db(transaction=True)
def test_the_script_stops_a_stale_execution_and_replays(
    live_server: Any, tmp_path: Path
) -> None:
    fresh = factories.execution("STARTED", updated_at=factories.ago(minutes=1))
    stale = factories.execution("STARTED")  # last updated an hour ago
    _token, secret = tokens.create_token(
        factories.operator(), "runbook", [READ, LIFECYCLE]
    )
    script = tmp_path / "stop_stale.py"
    script.write_text(_script(), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        env={
            **os.environ,
            "BATCHBOARD_URL": f"{live_server.url}/api/v1",
            "BATCHBOARD_TOKEN": secret,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["stop 200 APPLIED", "replay 200 REPLAYED"]
    recorded = OperatorRequest.objects.get()
    assert recorded.job_execution_id == stale.pk != fresh.pk
    assert recorded.operation_id == f"runbook-stop-{stale.pk}-v3"
    assert recorded.actor_ref == "user:operator"
