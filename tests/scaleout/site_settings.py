"""The standalone site's settings, with the scale-out tests' thresholds."""

from __future__ import annotations

import os

from batchboard.site.settings import *  # noqa: F403
from batchboard.site.settings import BATCHBOARD

BATCHBOARD = {
    **BATCHBOARD,
    # Any lag at all is worth a notice, so the paused-replay test sees one.
    "REPLICA_LAG_NOTICE_SECONDS": 0,
    "STATEMENT_TIMEOUT_MS": int(
        os.environ.get("SCALEOUT_STATEMENT_TIMEOUT_MS", "5000")
    ),
}
