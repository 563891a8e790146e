"""The explorer's links: one builder per kind of link."""

from __future__ import annotations

from django.urls import reverse

from batchboard.explorer import links


def test_job_filtered_links_have_one_builder() -> None:
    assert links.job_filter_url("batchboard:executions", "a/b c&d") == (
        f"{reverse('batchboard:executions')}?job=a%2Fb+c%26d"
    )
    assert links.job_filter_url("batchboard:audit", "nightly") == (
        f"{reverse('batchboard:audit')}?job=nightly"
    )
