"""The copy button of an action's oxide-batch command, in a real browser."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from tests import factories
from tests.browser.test_actions import member, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@override_settings(
    BATCHBOARD={
        "POLL_SECONDS": 1,
        "FAILURE_LINK": "https://logs.example.org/?job={job}&failure={failure_id}",
    },
    LOGIN_URL="login",
)
def test_the_restart_command_is_copied_to_the_clipboard(
    browser: Any, live_server: Any
) -> None:
    member("operator")
    instance = factories.instance("nightly import")
    failed = factories.execution(instance, "FAILED", failure=("TIMEOUT", 41))
    context = browser.new_context(
        viewport={"width": 1400, "height": 900},
        permissions=["clipboard-read", "clipboard-write"],
    )
    page = context.new_page()
    page.set_default_timeout(10000)
    errors: list[str] = []
    page.on(
        "console",
        lambda message: (
            errors.append(message.text)
            if message.type == "error" and "Failed to load resource" not in message.text
            else None
        ),
    )
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        path = f"/executions/{failed.pk}/"
        sign_in(page, live_server, "operator", path)
        cause = page.locator(".bb-cause-links a")
        assert cause.get_attribute("href") == (
            "https://logs.example.org/?job=nightly%20import&failure=41"
        )
        page.click(f"#bb-cli-{failed.pk} summary")
        code = page.locator(f"#bb-cli-{failed.pk}-restart")
        line = code.inner_text()
        assert line.startswith(
            f"oxide-batch execution restart --instance {instance.pk} "
            "--job 'nightly import'"
        )
        button = page.locator(f'button[data-bb-copy="bb-cli-{failed.pk}-restart"]')
        button.click()
        page.wait_for_function(
            "(b) => b.textContent === 'Copied'", arg=button.element_handle()
        )
        assert page.evaluate("navigator.clipboard.readText()") == line
        # The label comes back.
        page.wait_for_function(
            "(b) => b.textContent === 'Copy'", arg=button.element_handle()
        )
        assert errors == []
    finally:
        context.close()


@override_settings(BATCHBOARD={"POLL_SECONDS": 1}, LOGIN_URL="login")
def test_commands_wrap_inside_a_phone_screen(browser: Any, live_server: Any) -> None:
    member("operator")
    instance = factories.instance("a-job-name-long-enough-to-wrap-" * 3)
    failed = factories.execution(instance, "STOPPED")
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.set_default_timeout(10000)
    try:
        sign_in(page, live_server, "operator", f"/executions/{failed.pk}/")
        page.click(f"#bb-cli-{failed.pk} summary")
        box = page.locator(f"#bb-cli-{failed.pk}-restart").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
        wide = page.evaluate(
            "(id) => { const e = document.getElementById(id);"
            " return e.scrollWidth - e.clientWidth; }",
            f"bb-cli-{failed.pk}",
        )
        assert wide <= 0
    finally:
        context.close()
