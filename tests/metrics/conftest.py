"""Fixtures of the /metrics tests: a token, no cache, and a parsed scrape."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client, override_settings
from django.urls import reverse
from prometheus_client.parser import text_string_to_metric_families

from batchboard.metrics import database

TOKEN = "metrics-test-token"


def settings_with(**keys: Any) -> dict[str, Any]:
    """Return a ``BATCHBOARD`` dict with a token, no cache, and ``keys``."""
    return {"METRICS_TOKEN": TOKEN, "METRICS_CACHE_SECONDS": 0, **keys}


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    database.CACHE.clear()
    yield
    database.CACHE.clear()


@pytest.fixture
def metrics_settings() -> Iterator[None]:
    with override_settings(BATCHBOARD=settings_with()):
        yield


def scrape_text(client: Client | None = None, **headers: str) -> str:
    """Scrape /metrics with the token; return the body (asserting a 200)."""
    response = (client or Client()).get(
        reverse("batchboard:metrics"),
        headers={"Authorization": f"Bearer {TOKEN}", **headers},
    )
    assert response.status_code == 200, response.content
    return response.content.decode()


Series = dict[str, dict[tuple[tuple[str, str], ...], float]]


def scrape(client: Client | None = None) -> tuple[Series, dict[str, Any]]:
    """
    Scrape and parse: per sample name, its label sets and values; and the
    parsed families by name.
    """
    families = {
        family.name: family
        for family in text_string_to_metric_families(scrape_text(client))
    }
    series: Series = {}
    for family in families.values():
        for sample in family.samples:
            key = tuple(sorted(sample.labels.items()))
            series.setdefault(sample.name, {})[key] = sample.value
    return series, families


def labels(**values: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(values.items()))
