"""The checks of the METRICS_* settings."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.checks import run_checks
from django.test import override_settings

from batchboard.checks import check_metrics_protected


def _ids(**keys: Any) -> list[str]:
    with override_settings(BATCHBOARD=keys):
        return [message.id or "" for message in run_checks()]


def test_an_allowlist_of_50_jobs_passes_and_51_are_refused() -> None:
    names = [f"job-{number}" for number in range(51)]
    assert "batchboard.E040" not in _ids(METRICS_JOBS=names[:50])
    assert "batchboard.E040" in _ids(METRICS_JOBS=names)
    assert "batchboard.E040" in _ids(METRICS_JOBS="job-1")


@pytest.mark.parametrize(
    "keys",
    [
        {"METRICS_ALLOWED_NETWORKS": ["10.0.0.0/33"]},
        {"METRICS_ALLOWED_NETWORKS": "everywhere"},
        {"METRICS_TOKEN": 1234},
    ],
)
def test_bad_protection_settings(keys: dict[str, Any]) -> None:
    assert "batchboard.E041" in _ids(**keys)


@pytest.mark.parametrize("seconds", [-1, 3601, "10", True])
def test_bad_cache_seconds(seconds: object) -> None:
    assert "batchboard.E042" in _ids(METRICS_CACHE_SECONDS=seconds)


def test_a_production_site_must_protect_metrics() -> None:
    with override_settings(BATCHBOARD={}, DEBUG=False):
        assert [m.id for m in check_metrics_protected()] == ["batchboard.W040"]
    with override_settings(BATCHBOARD={}, DEBUG=True):
        assert check_metrics_protected() == []
    for keys in ({"METRICS_TOKEN": "t"}, {"METRICS_ALLOWED_NETWORKS": ["10.0.0.0/8"]}):
        with override_settings(BATCHBOARD=keys, DEBUG=False):
            assert check_metrics_protected() == []
    with override_settings(BATCHBOARD={}, DEBUG=False):
        deploy = [m.id for m in run_checks(include_deployment_checks=True)]
        assert "batchboard.W040" in deploy
        assert "batchboard.W040" not in [m.id for m in run_checks()]
