"""
Browser tests: Playwright driving Debian's Chromium against a live server.

Run with ``pytest -m browser``; they are skipped when Chromium or Playwright
is missing. A failing test leaves a screenshot under ``test-results/``.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_django.live_server_helper import LiveServer

from tests.site.production import site_settings

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
RESULTS = Path(__file__).resolve().parents[2] / "test-results"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[Any]
) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        pytest.skip("Chromium is not installed (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    # Playwright's sync API runs an event loop in this thread; the tests'
    # own ORM calls are still synchronous, so Django's guard is relaxed here.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_api.sync_playwright() as playwright:
            launched = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=ARGS
            )
            yield launched
            launched.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def strict(settings: Any, transactional_db: None) -> Iterator[Any]:
    """A live server of its own, started with the standalone site's middleware."""
    site = site_settings()
    settings.MIDDLEWARE = site["MIDDLEWARE"]
    # Django 6 sends the policy from this setting, as the site's settings do.
    settings.SECURE_CSP = site["SECURE_CSP"]
    settings.SECURE_REFERRER_POLICY = site["SECURE_REFERRER_POLICY"]
    server = LiveServer("localhost")
    try:
        yield server
    finally:
        # On SQLite each request thread closes the test database's
        # connection as it ends, which it may only do while the server
        # shares it. The tab has closed by now (``page`` starts after this
        # fixture), so the browser's kept-alive requests are ending.
        for thread in threading.enumerate():
            if "process_request_thread" in thread.name:
                thread.join(timeout=5)
        server.stop()


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest, settings: Any) -> Iterator[Any]:
    if "strict" in request.fixturenames:
        # A test's own server outlives its tab, whatever the arguments' order.
        request.getfixturevalue("strict")
    settings.BATCHBOARD = {"POLL_SECONDS": 1}
    # The standalone site's own sign-in page, which admits users who are not
    # staff (tests/settings.py names it too; set here so a test that changes
    # settings cannot send the browser to the staff-only admin login).
    settings.LOGIN_URL = "login"
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(10000)
    yield tab
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        RESULTS.mkdir(exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid)
        tab.screenshot(path=str(RESULTS / f"{name}.png"), full_page=True)
    context.close()
