"""
Every page and fragment under the site's strict Content-Security-Policy, in
Chromium: zero ``securitypolicyviolation`` events and no console error.

The ``strict`` live server runs with the standalone site's own middleware,
so the header is the one production sends (batchboard.site.security).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User

from batchboard import models
from tests import factories
from tests.site.history import create_history

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Runs before any page script: records what the policy blocked.
RECORD = """
window.__violations = [];
document.addEventListener('securitypolicyviolation', (event) => {
  window.__violations.push(
    event.violatedDirective + ' ' + (event.blockedURI || 'inline') + ' ' +
    (event.sourceFile || '') + ':' + event.lineNumber
  );
});
"""


def _administrator() -> User:
    user = User.objects.create_user("chief", password="pw", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="batchboard")
    )
    return user


class Visitor:
    def __init__(self, page: Any, base: str) -> None:
        self.page = page
        self.base = base
        self.errors: list[str] = []
        self.seen: list[str] = []
        page.add_init_script(RECORD)
        page.on(
            "console",
            lambda message: (
                self.errors.append(f"{message.type}: {message.text}")
                if message.type == "error"
                and "Failed to load resource" not in message.text
                else None
            ),
        )
        page.on("pageerror", lambda error: self.errors.append(f"pageerror: {error}"))

    def violations(self) -> list[str]:
        return list(self.page.evaluate("window.__violations || []"))

    def visit(self, path: str) -> None:
        response = self.page.goto(f"{self.base}{path}")
        assert response is not None, path
        assert "Content-Security-Policy" in response.headers or (
            "content-security-policy" in response.headers
        ), path
        self.page.wait_for_load_state("networkidle")
        self.seen.append(path)
        assert self.violations() == [], path
        assert self.errors == [], path


def test_every_page_and_fragment_runs_under_the_strict_policy(
    page: Any, strict: Any
) -> None:
    history = create_history()
    now = factories.now()
    factories.definition("csp-live")
    running = factories.execution(
        factories.instance("csp-live"),
        "STARTED",
        created_at=now - timedelta(hours=2),
        updated_at=now - timedelta(hours=2),
    )
    factories.step(running, "load", "STARTED")
    _administrator()
    visitor = Visitor(page, strict.url)

    # Signed out: the sign-in pages.
    visitor.visit("/login/")
    visitor.visit("/admin/login/")
    page.fill("#id_username", "chief")
    page.fill("#id_password", "pw")
    page.click("input[type=submit]")
    page.wait_for_load_state("networkidle")
    assert visitor.violations() == []

    execution = running.pk
    instance = history.instance.pk
    step = history.step.pk
    for path in (
        "/",
        "/executions/",
        "/executions/?status=FAILED",
        f"/jobs/{history.instance.job_name}/",
        f"/instances/{instance}/",
        f"/executions/{history.failed.pk}/",
        f"/executions/{execution}/",
        f"/steps/{step}/",
        "/unresolved/",
        "/unresolved/?age=60",
        f"/executions/{execution}/stop/",
        f"/executions/{history.failed.pk}/abandon/",
        f"/executions/{execution}/recovery-proposal/",
        f"/instances/{instance}/hold/",
        "/retention/purge/",
        f"/retention/purge/?job_name={history.instance.job_name}",
        # Error pages: 400, 404 and Django's own 404.
        "/executions/?size=0",
        "/executions/999999999/",
        "/no-such-page/",
        "/admin/",
    ):
        visitor.visit(path)

    # The admin: every changelist and a change page of each.
    for model in (
        models.JobDefinition,
        models.JobInstance,
        models.JobExecution,
        models.StepExecution,
        models.StepPartition,
        models.FlowDecision,
        models.RecoveryDecision,
        models.OperatorRequest,
        models.RetentionAction,
        models.ComponentState,
    ):
        name = model._meta.model_name
        visitor.visit(f"/admin/batchboard/{name}/")
        row = model.objects.order_by("pk").first()
        assert row is not None, name
        visitor.visit(f"/admin/batchboard/{name}/{row.pk}/change/")
    visitor.visit("/admin/batchboard/jobexecution/?status__exact=FAILED")
    visitor.visit("/admin/batchboard/schemaversion/")

    # Fragments swapped in by htmx: a dialog opened in place, live polls.
    visitor.visit(f"/executions/{execution}/")
    page.click("text=Stop…")
    page.wait_for_selector("dialog[open], .bb-dialog")
    page.wait_for_timeout(1500)
    assert visitor.violations() == []
    assert visitor.errors == []

    # Logging out goes through a form POST.
    visitor.visit("/")
    page.click("button:has-text('Log out')")
    page.wait_for_load_state("networkidle")
    assert visitor.violations() == []
    assert len(visitor.seen) > 40
