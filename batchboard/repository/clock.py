"""
Clocks for the job repository, which are those of :mod:`batchboard.db`.

oxide-batch writes every timestamp in whole milliseconds from an injected
clock (spec 1.1), so timestamp-binding digests computed from a stored row
equal the ones computed from the value written. Every clock here yields
timezone-aware datetimes truncated to the millisecond.
"""

from __future__ import annotations

from batchboard.db import Clock as Clock
from batchboard.db import ManualClock as ManualClock
from batchboard.db import SystemClock as SystemClock
from batchboard.db import truncate_ms as truncate_ms
