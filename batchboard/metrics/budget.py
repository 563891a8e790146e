"""
oxide-batch's cardinality budget (spec B.2, B.3), applied to every family.

- A job name is a label value only when ``BATCHBOARD["METRICS_JOBS"]``
  lists it (at most :data:`MAX_NAME_ALLOWLIST` names, check E040); any
  other name, and every name when the list is empty, is :data:`OTHER`.
- A family exposes at most :data:`SERIES_BUDGET` label sets, the reserved
  one included. The label sets past the first 199 are folded into the
  reserved set, every label :data:`OTHER`, as oxide-batch's guard records
  an overflowing combination; their values are added (every family here is
  a count, a sum or a histogram, which add up). A histogram's label set
  counts once, whatever its buckets.
- Ids, operation ids, actors, reasons, digests and parameters are never
  labels: no family of :mod:`batchboard.metrics` reads one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from prometheus_client import Metric
from prometheus_client.samples import Sample

from batchboard import conf

#: The reserved label value of oxide-batch (``OTHER_LABEL_VALUE``).
OTHER: Final = "__other__"
#: Label sets per family, the reserved one included (``METRIC_CARDINALITY_BUDGET``).
SERIES_BUDGET: Final = 200
#: Names a job allowlist may hold (``MAX_METRIC_NAME_ALLOWLIST``).
MAX_NAME_ALLOWLIST: Final = 50

#: Labels that tell a histogram's or a summary's samples apart within one
#: label set; they are not part of the set.
_SAMPLE_LABELS: Final = frozenset({"le", "quantile"})


def job_allowlist() -> tuple[str, ...]:
    """Return the allowed job names (the first 50 strings of METRICS_JOBS)."""
    configured = conf.get_config().get("METRICS_JOBS") or []
    if isinstance(configured, str) or not isinstance(configured, (list, tuple)):
        return ()
    names = [name for name in configured if isinstance(name, str) and name]
    return tuple(dict.fromkeys(names))[:MAX_NAME_ALLOWLIST]


def job_label(name: str, allowlist: Iterable[str]) -> str:
    """Return ``name`` if the allowlist holds it, else :data:`OTHER`."""
    return name if name in allowlist else OTHER


def _label_set(sample: Sample) -> tuple[tuple[str, str], ...]:
    return tuple(
        sorted(
            (key, value)
            for key, value in sample.labels.items()
            if key not in _SAMPLE_LABELS
        )
    )


def within_budget(family: Metric) -> int:
    """
    Fold ``family``'s label sets past the budget into the reserved set.

    Returns how many label sets were folded (0 when the family fits).
    """
    sets: dict[tuple[tuple[str, str], ...], None] = {}
    for sample in family.samples:
        sets.setdefault(_label_set(sample), None)
    if len(sets) <= SERIES_BUDGET:
        return 0
    reserved = tuple((key, OTHER) for key, _value in next(iter(sets)))
    kept = [label_set for label_set in sets if label_set != reserved]
    kept = kept[: SERIES_BUDGET - 1]
    keep = set(kept)
    folded: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    samples = []
    for sample in family.samples:
        if _label_set(sample) in keep:
            samples.append(sample)
            continue
        extra = tuple(
            sorted((k, v) for k, v in sample.labels.items() if k in _SAMPLE_LABELS)
        )
        key = (sample.name, extra)
        folded[key] = folded.get(key, 0.0) + sample.value
    for (name, extra), value in folded.items():
        labels = dict(reserved) | dict(extra)
        samples.append(Sample(name, labels, value))
    family.samples = samples
    return len(sets) - len(kept) - (1 if reserved in sets else 0)
