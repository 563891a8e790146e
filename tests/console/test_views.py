"""The dashboard's action endpoints: permissions, CSRF, dialogs and results."""

from __future__ import annotations

import re
from datetime import UTC
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.db import connection
from django.template.loader import render_to_string
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from batchboard import actions
from batchboard.actions import eligibility
from batchboard.models import (
    JobExecution,
    JobInstance,
    OperatorRequest,
    RetentionAction,
)
from tests.factories import actions as factories

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


def _client(user: User | None, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    if user is not None:
        client.force_login(user)
    return client


def _form(html: str) -> dict[str, str]:
    """Return the hidden inputs of the first form in ``html``."""
    return dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', html))


def _endpoints(
    execution: JobExecution, instance: JobInstance
) -> list[tuple[str, str, str]]:
    """Return (url, required class permission, method) for every action."""
    return [
        (
            reverse("batchboard:action_stop", args=[execution.pk]),
            "operate_lifecycle",
            "GET",
        ),
        (
            reverse("batchboard:action_stop", args=[execution.pk]),
            "operate_lifecycle",
            "POST",
        ),
        (
            reverse("batchboard:action_abandon", args=[execution.pk]),
            "operate_destructive",
            "GET",
        ),
        (
            reverse("batchboard:action_abandon", args=[execution.pk]),
            "operate_destructive",
            "POST",
        ),
        (
            reverse("batchboard:action_recover", args=[execution.pk]),
            "operate_destructive",
            "POST",
        ),
        (
            reverse("batchboard:action_hold", args=[instance.pk]),
            "operate_destructive",
            "POST",
        ),
        (
            reverse("batchboard:action_release", args=[instance.pk]),
            "operate_destructive",
            "POST",
        ),
        (reverse("batchboard:purge_apply"), "operate_destructive", "POST"),
    ]


def _post_data(execution: JobExecution) -> dict[str, str]:
    return {
        "operation_id": "op-denied",
        "expected_version": str(execution.version),
        "reason_code": "OPERATOR_DECISION",
    }


def test_each_class_is_enforced_on_the_server(
    viewer_user: User, operator_user: User
) -> None:
    """Without its class a user gets 403 and nothing is written."""
    execution = factories.execution("STARTED")
    instance = execution.job_instance
    for user in (viewer_user, operator_user):
        client = _client(user)
        for url, codename, method in _endpoints(execution, instance):
            if user.has_perm(f"batchboard.{codename}"):
                continue
            response = (
                client.get(url)
                if method == "GET"
                else client.post(url, _post_data(execution))
            )
            assert response.status_code == 403, (user, url, method)
            assert "authorization class" in response.content.decode()
    assert not OperatorRequest.objects.exists()
    assert not RetentionAction.objects.exists()
    fresh = JobExecution.objects.get(pk=execution.pk)
    assert fresh.stop_requested_at is None
    assert JobInstance.objects.get(pk=instance.pk).hold_actor is None


def test_anonymous_users_are_sent_to_log_in() -> None:
    execution = factories.execution("STARTED")
    response = Client().post(reverse("batchboard:action_stop", args=[execution.pk]))
    assert response.status_code == 302
    assert not OperatorRequest.objects.exists()


def test_the_purge_plan_is_a_read(viewer_user: User) -> None:
    factories.execution("FAILED", updated_at=factories.ago(days=40))
    response = _client(viewer_user).get(
        reverse("batchboard:purge_plan"), {"job_name": "nightly-import"}
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert "1 candidate execution" in body
    assert "Apply this plan" not in body
    # The rows per table are for those who may apply the plan.
    assert "Rows that would be deleted" not in body
    assert "Job executions" not in body
    anyone = factories.user("nobody")
    assert _client(anyone).get(reverse("batchboard:purge_plan")).status_code == 403


def test_the_plan_s_counts_need_the_purge_s_class(db: None) -> None:
    """Per-table counts are shown to Destructive holders only, not Lifecycle."""
    factories.execution("FAILED", updated_at=factories.ago(days=40))
    query = {"job_name": "nightly-import"}
    for codenames, shown in (
        (("operate_lifecycle",), False),
        (("operate_destructive",), True),
    ):
        holder = factories.user("-".join(codenames), *factories.VIEW, *codenames)
        response = _client(holder).get(reverse("batchboard:purge_plan"), query)
        body = response.content.decode()
        assert response.status_code == 200
        assert "1 candidate execution" in body
        assert ("Rows that would be deleted" in body) is shown, codenames
        assert ("Job executions" in body) is shown, codenames


def test_csrf_is_required_on_every_action(admin_user: User) -> None:
    execution = factories.execution("STARTED")
    instance = execution.job_instance
    client = _client(admin_user, csrf=True)
    for url, _codename, method in _endpoints(execution, instance):
        if method == "POST":
            response = client.post(url, _post_data(execution))
            assert response.status_code == 403, url
    assert not OperatorRequest.objects.exists()
    assert not RetentionAction.objects.exists()
    assert JobExecution.objects.get(pk=execution.pk).stop_requested_at is None


def test_stop_dialog_then_post_then_resubmit_replays(admin_user: User) -> None:
    """The dialog fixes the operation id, so a resubmitted form replays."""
    execution = factories.execution("STARTED")
    client = _client(admin_user, csrf=True)
    url = reverse("batchboard:action_stop", args=[execution.pk])
    dialog = client.get(url, headers=HTMX)
    html = dialog.content.decode()
    assert dialog.status_code == 200
    assert "<html" not in html
    assert "LIFECYCLE" in html and f"execution #{execution.pk}" in html
    form = _form(html)
    assert form["operation_id"].startswith("bb-")
    assert form["expected_version"] == "3"
    first = client.post(url, form, headers=HTMX)
    assert first.status_code == 200
    assert "APPLIED" in first.content.decode()
    assert "batchboard:changed" in first["HX-Trigger"]
    again = client.post(url, form, headers=HTMX)
    assert "REPLAYED" in again.content.decode()
    assert OperatorRequest.objects.count() == 1
    assert "admin/batchboard/operatorrequest/" in first.content.decode()


def test_a_stop_result_says_the_request_was_recorded(admin_user: User) -> None:
    """
    A STOP on a running execution moves no status: the result says the
    request was recorded and the owner acts on it, not "Status unchanged".
    """
    execution = factories.execution("STARTED")
    client = _client(admin_user)
    url = reverse("batchboard:action_stop", args=[execution.pk])
    form = _form(client.get(url, headers=HTMX).content.decode())
    first = client.post(url, form, headers=HTMX).content.decode()
    assert "Stop requested and recorded." in first
    assert "next boundary" in first
    assert "The status stays STARTED until the owner acts on the request." in first
    assert "Status unchanged" not in first
    assert 'class="bb-status bb-status--good">APPLIED' in first
    again = client.post(url, form, headers=HTMX).content.decode()
    assert "REPLAYED" in again and "Status unchanged" not in again
    assert 'class="bb-status bb-status--muted">REPLAYED' in again
    assert "The stop request was recorded while the execution was STARTED." in again
    # A stopping execution offers no stop: its dialog says why, without
    # Confirm. A request sent all the same changes nothing, and says so.
    JobExecution.objects.filter(pk=execution.pk).update(status="STOPPING")
    dialog = client.get(url, headers=HTMX).content.decode()
    assert "already stopping" in dialog and "Confirm stop" not in dialog
    assert "<form" not in dialog
    noop = client.post(
        url, {**form, "operation_id": "op-stopping"}, headers=HTMX
    ).content.decode()
    assert "Applied without change" in noop and "Status unchanged: STOPPING" in noop
    assert "Stop requested" not in noop


def test_without_htmx_the_dialog_and_result_are_whole_pages(admin_user: User) -> None:
    execution = factories.execution("FAILED")
    client = _client(admin_user)
    url = reverse("batchboard:action_abandon", args=[execution.pk])
    page = client.get(url)
    assert "<html" in page.content.decode()
    assert "Operator decision (OPERATOR_DECISION)" in page.content.decode()
    form = {**_form(page.content.decode()), "reason_code": "OPERATOR_DECISION"}
    done = client.post(url, form)
    assert "<html" in done.content.decode()
    assert JobExecution.objects.get(pk=execution.pk).status == "ABANDONED"


def test_a_conflict_offers_the_fresh_state(admin_user: User) -> None:
    execution = factories.execution("FAILED")
    client = _client(admin_user)
    url = reverse("batchboard:action_abandon", args=[execution.pk])
    form = {**_form(client.get(url).content.decode()), "reason_code": "HOST_LOST"}
    JobExecution.objects.filter(pk=execution.pk).update(version=4)
    body = client.post(url, form, headers=HTMX).content.decode()
    assert "OPTIMISTIC_CONFLICT" in body
    assert 'class="bb-status bb-status--bad">REJECTED' in body
    assert "Someone else changed this execution" in body
    assert f'hx-get="{url}"' in body


def test_operator_errors_are_messages_not_tracebacks(admin_user: User) -> None:
    execution = factories.execution("FAILED")
    client = _client(admin_user)
    url = reverse("batchboard:action_abandon", args=[execution.pk])
    bad = client.post(
        url, {"operation_id": "op", "expected_version": "x", "reason_code": "HOST_LOST"}
    )
    assert bad.status_code == 200
    assert "must be numbers" in bad.content.decode()
    missing = client.get(reverse("batchboard:action_abandon", args=[999999]))
    assert missing.status_code == 404
    gone = client.post(
        reverse("batchboard:action_abandon", args=[999999]),
        {"operation_id": "op", "expected_version": "1", "reason_code": "HOST_LOST"},
    )
    assert "could not be recorded" in gone.content.decode()


def _buttons(template: str, user: User | AnonymousUser, **context: object) -> str:
    request = RequestFactory().get("/")
    request.user = user
    return render_to_string(template, context, request=request)


def test_buttons_appear_only_for_their_class(
    viewer_user: User, operator_user: User, admin_user: User
) -> None:
    running = {"id": 5, "status": "STARTED"}
    failed = {"id": 6, "status": "FAILED"}
    held = {"id": 7, "hold_actor": "user:x"}
    template = "batchboard/actions/execution_buttons.html"

    def offers(status: str, **flags: bool) -> dict[str, object]:
        flags.setdefault("stop_requested", False)
        return {"offers": eligibility.for_execution(status, **flags)}

    viewer_html = _buttons(
        template, viewer_user, execution=running, **offers("STARTED")
    )
    assert "Stop…" not in viewer_html
    failed_offers = offers("FAILED")
    assert "Abandon…" not in _buttons(
        template, viewer_user, execution=failed, **failed_offers
    )
    assert "Stop…" in _buttons(
        template, operator_user, execution=running, **offers("STARTED")
    )
    assert "Abandon…" not in _buttons(
        template, operator_user, execution=failed, **failed_offers
    )
    assert "Abandon…" in _buttons(
        template, admin_user, execution=failed, **failed_offers
    )
    # A failed attempt that was restarted already is left alone.
    restarted = offers("FAILED", superseded=True)
    assert "Abandon…" not in _buttons(
        template, admin_user, execution=failed, **restarted
    )
    assert "Stop…" not in _buttons(template, admin_user, execution=failed, **restarted)
    # A stop requested already is not offered again.
    requested = offers("STARTED", stop_requested=True)
    assert "Stop…" not in _buttons(template, admin_user, execution=running, **requested)
    # UNKNOWN is left through the recovery proposal, whose directive may
    # abandon; a bare ABANDON could only be rejected until a decision exists.
    unknown = {"id": 8, "status": "UNKNOWN"}
    unknown_html = _buttons(
        template, admin_user, execution=unknown, **offers("UNKNOWN")
    )
    assert "Abandon…" not in unknown_html and "Stop…" not in unknown_html
    decided = offers("UNKNOWN", decided=True)
    assert "Abandon…" in _buttons(template, admin_user, execution=unknown, **decided)
    instance_template = "batchboard/actions/instance_buttons.html"
    held_offers = {"offers": eligibility.for_instance(held=True)}
    assert (
        "hold"
        not in _buttons(
            instance_template, operator_user, instance=held, **held_offers
        ).lower()
    )
    admin_html = _buttons(instance_template, admin_user, instance=held, **held_offers)
    assert "Replace hold…" in admin_html and "Release hold…" in admin_html
    free = {"id": 9, "hold_actor": None}
    free_html = _buttons(
        instance_template,
        admin_user,
        instance=free,
        offers=eligibility.for_instance(held=False),
    )
    assert "Place hold…" in free_html and "Release hold…" not in free_html


def test_recovery_proposal_page_and_apply(admin_user: User, viewer_user: User) -> None:
    execution = factories.execution("STARTED")
    factories.step(execution, "STARTED")
    url = reverse("batchboard:recovery_proposal", args=[execution.pk])
    seen = _client(viewer_user).get(url).content.decode()
    assert "Evidence digest" in seen and "Mark failed</button>" not in seen
    client = _client(admin_user, csrf=True)
    html = client.get(url, headers=HTMX).content.decode()
    assert "Mark failed</button>" in html and "Abandon</button>" in html
    form = {
        **_form(html),
        "directive": "FAILED",
        "failure_category": "STALE_RECOVERED",
        "failure_id": "12",
        "reason_code": "HOST_LOST",
    }
    done = client.post(
        reverse("batchboard:action_recover", args=[execution.pk]), form, headers=HTMX
    )
    assert "APPLIED" in done.content.decode()
    assert JobExecution.objects.get(pk=execution.pk).failure_id == 12
    # The outcome comes in the execution page's action slot of the status
    # the execution has now, which the page's refresh keeps.
    assert f'id="bb-action-slot-{execution.pk}-FAILED"' in done.content.decode()
    assert "Recovery decision recorded" in done.content.decode()
    stale = client.post(
        reverse("batchboard:action_recover", args=[execution.pk]),
        {**form, "operation_id": "op-other"},
        headers=HTMX,
    ).content.decode()
    assert "OPTIMISTIC_CONFLICT" in stale


def _select(html: str, name: str) -> list[str]:
    """Return the option values of the select named ``name`` in ``html``."""
    start = html.index(f'name="{name}"')
    options = html[start : html.index("</select>", start)]
    return re.findall(r'<option value="([^"]*)"', options)


def test_the_recovery_form_offers_only_what_the_service_accepts(
    admin_user: User,
) -> None:
    """
    With an unknown commit, marking failed carries UNKNOWN_EFFECT and no
    choice of reason; abandoning offers every reason. Categories are the
    ones an operator can observe; the failure id is generated, labelled so
    and fits its box.
    """
    execution = factories.execution("UNKNOWN")
    url = reverse("batchboard:recovery_proposal", args=[execution.pk])
    html = _client(admin_user).get(url, headers=HTMX).content.decode()
    failed_form, abandon_form = html.split("</form>")[:2]
    assert '<input type="hidden" name="reason_code" value="UNKNOWN_EFFECT">' in (
        failed_form
    )
    assert 'name="reason_code" required' not in failed_form
    assert "Reason: UNKNOWN_EFFECT" in failed_form
    assert _select(abandon_form, "reason_code")[1:] == [
        reason.code for reason in actions.reasons_for("RECOVER")
    ]
    categories = _select(failed_form, "failure_category")
    assert "STALE_RECOVERED" in categories and "UNKNOWN_COMMIT" in categories
    assert "ILLEGAL_TRANSITION" not in categories
    assert "OPTIMISTIC_CONFLICT" not in categories
    generated = re.search(r'name="failure_id" value="(\d+)"', failed_form)
    assert generated is not None and len(generated.group(1)) <= 9
    assert 'size="20"' in failed_form and "was generated" in failed_form
    assert "incident or ticket number" in failed_form
    # Only the abandon form is without a failure.
    assert 'name="failure_id"' not in abandon_form


def test_a_rejected_recovery_combination_writes_no_audit_row(
    admin_user: User,
) -> None:
    """The form refuses what the service would reject: no REJECTED noise."""
    execution = factories.execution("UNKNOWN")
    client = _client(admin_user, csrf=True)
    url = reverse("batchboard:recovery_proposal", args=[execution.pk])
    form = {
        **_form(client.get(url, headers=HTMX).content.decode()),
        "directive": "FAILED",
        "failure_category": "STALE_RECOVERED",
        "failure_id": "12",
        "reason_code": "HOST_LOST",
    }
    body = client.post(
        reverse("batchboard:action_recover", args=[execution.pk]), form, headers=HTMX
    ).content.decode()
    assert "Not done" in body and "UNKNOWN_EFFECT" in body
    assert not OperatorRequest.objects.exists()
    assert JobExecution.objects.get(pk=execution.pk).status == "UNKNOWN"


def test_the_panel_stays_quiet_for_finished_executions(viewer_user: User) -> None:
    execution = factories.execution("COMPLETED")
    url = reverse("batchboard:recovery_proposal", args=[execution.pk])
    assert (
        _client(viewer_user)
        .get(url + "?panel=1", headers=HTMX)
        .content.decode()
        .strip()
        == ""
    )


def test_hold_and_release_from_the_dashboard(admin_user: User) -> None:
    instance = factories.instance()
    client = _client(admin_user, csrf=True)
    url = reverse("batchboard:action_hold", args=[instance.pk])
    form = {
        **_form(client.get(url, headers=HTMX).content.decode()),
        "reason_code": "AUDIT",
    }
    held = client.post(url, form, headers=HTMX).content.decode()
    assert "APPLIED" in held
    assert JobInstance.objects.get(pk=instance.pk).hold_reason == "AUDIT"
    # The instance page's hold and buttons come fresh, out of band, beside
    # the outcome in the page's action slot.
    assert (
        f'<div id="bb-action-slot-instance-{instance.pk}" class="bb-action-slot">'
        in held
    )
    hold_region = held[held.index(f'id="bb-instance-hold-{instance.pk}"') :]
    assert hold_region.startswith(
        f'id="bb-instance-hold-{instance.pk}" hx-swap-oob="true"'
    )
    assert "not held" not in hold_region and "(AUDIT)" in hold_region
    assert "Release hold…" in held and "Place hold…" not in held
    url = reverse("batchboard:action_release", args=[instance.pk])
    form = {**_form(client.get(url).content.decode()), "reason_code": "PLACED_IN_ERROR"}
    client.post(url, form)
    assert JobInstance.objects.get(pk=instance.pk).hold_actor is None


def test_purge_from_the_dashboard_and_a_stale_plan(admin_user: User) -> None:
    old = factories.execution("FAILED", updated_at=factories.ago(days=40))
    client = _client(admin_user, csrf=True)
    page = client.get(reverse("batchboard:purge_plan"), {"job_name": "nightly-import"})
    html = page.content.decode()
    assert "Apply this plan" in html
    assert "Rows that would be deleted" in html
    inputs = re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', html)
    data: dict[str, list[str]] = {}
    for name, value in inputs:
        data.setdefault(name, []).append(value)
    data["reason_code"] = ["RETENTION_POLICY"]
    JobExecution.objects.filter(pk=old.pk).update(version=9)
    stale = client.post(
        reverse("batchboard:purge_apply"), data, headers=HTMX
    ).content.decode()
    assert "Nothing was deleted" in stale
    assert JobExecution.objects.filter(pk=old.pk).exists()
    page = client.get(reverse("batchboard:purge_plan"), {"job_name": "nightly-import"})
    data = {}
    for name, value in re.findall(
        r'<input type="hidden" name="(\w+)" value="([^"]*)"', page.content.decode()
    ):
        data.setdefault(name, []).append(value)
    data["reason_code"] = ["RETENTION_POLICY"]
    done = client.post(
        reverse("batchboard:purge_apply"), data, headers=HTMX
    ).content.decode()
    assert "APPLIED" in done and "Job executions" in done
    assert "deleted_job_executions" not in done
    assert not JobExecution.objects.filter(pk=old.pk).exists()


def _plan_form(client: Client) -> dict[str, list[str]]:
    page = client.get(reverse("batchboard:purge_plan"), {"job_name": "nightly-import"})
    data: dict[str, list[str]] = {}
    for name, value in re.findall(
        r'<input type="hidden" name="(\w+)" value="([^"]*)"', page.content.decode()
    ):
        data.setdefault(name, []).append(value)
    data["reason_code"] = ["RETENTION_POLICY"]
    return data


def test_a_refused_purge_names_its_cause_on_the_dashboard(
    admin_user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A foreign key's refusal says retrying will not help, not that rows moved."""
    from batchboard.actions import purge

    job_instance = factories.instance()
    first = factories.execution(
        "FAILED", job_instance=job_instance, updated_at=factories.ago(days=40)
    )
    factories.execution(
        "COMPLETED",
        job_instance=job_instance,
        restart_of=first,
        updated_at=factories.ago(days=1),
    )
    # Without the restart-chain rule the plan holds the restarted attempt.
    monkeypatch.setattr(purge, "_referenced", lambda *args: set())
    client = _client(admin_user, csrf=True)
    body = client.post(
        reverse("batchboard:purge_apply"), _plan_form(client), headers=HTMX
    ).content.decode()
    assert "CONSTRAINT_VIOLATION" in body
    assert "Trying again will not help" in body
    assert "changed while the action ran" not in body
    assert JobExecution.objects.filter(pk=first.pk).exists()


def test_a_purge_of_decisions_cited_elsewhere_applies_from_the_dashboard(
    admin_user: User,
) -> None:
    old = factories.execution("FAILED", updated_at=factories.ago(days=40))
    younger = factories.execution("COMPLETED", updated_at=factories.ago(days=1))
    citing = factories.flow_decision(younger, reused=factories.flow_decision(old))
    client = _client(admin_user, csrf=True)
    body = client.post(
        reverse("batchboard:purge_apply"), _plan_form(client), headers=HTMX
    ).content.decode()
    assert "APPLIED" in body
    assert not JobExecution.objects.filter(pk=old.pk).exists()
    citing.refresh_from_db()
    assert citing.reused_decision_id is None


def _plan_page(client: Client, **params: Any) -> str:
    query = {"job_name": "nightly-import", **params}
    return client.get(reverse("batchboard:purge_plan"), query).content.decode()


def test_purge_form_asks_days_and_hours_and_offers_job_names(admin_user: User) -> None:
    old = factories.execution("FAILED", updated_at=factories.ago(days=40))
    factories.execution("COMPLETED", job_instance=factories.instance("billing.export"))
    client = _client(admin_user)
    html = client.get(reverse("batchboard:purge_plan")).content.decode()
    assert '<option value="billing.export">' in html
    assert '<option value="nightly-import">' in html
    # 30 days by default, shown as days and hours.
    assert 'name="age_days" type="number" min="0" max="36500" value="30"' in html
    assert f"#{old.pk}" in _plan_page(client, age_days="39", age_hours="23")
    assert f"#{old.pk}" not in _plan_page(client, age_days="40", age_hours="1")
    assert "one hour (3600 s)" in _plan_page(client, age_days="0", age_hours="0")
    assert 'role="alert"' in _plan_page(client, age_days="x", age_hours="")


def test_plan_shows_labels_links_and_disables_apply_when_empty(
    admin_user: User,
) -> None:
    client = _client(admin_user)
    empty = _plan_page(client)
    assert "deleted_flow_decisions" not in empty
    assert "Flow decisions" in empty
    assert re.search(r'<button type="submit" class="bb-button" disabled', empty)
    old = factories.execution("FAILED", updated_at=factories.ago(days=40))
    html = _plan_page(client)
    assert f'href="{reverse("batchboard:execution", args=[old.pk])}"' in html
    assert not re.search(r'<button type="submit" class="bb-button" disabled', html)


def test_plan_candidates_are_paged_in_place(admin_user: User) -> None:
    olds = [
        factories.execution("FAILED", updated_at=factories.ago(days=40))
        for _ in range(5)
    ]
    client = _client(admin_user)
    html = _plan_page(client, size="2")
    seen = re.findall(r'<a href="/executions/(\d+)/">', html)
    more = re.search(r'hx-get="([^"]+)"', html)
    while more:
        body = client.get(more.group(1).replace("&amp;", "&"), headers=HTMX)
        assert "<h1>" not in body.content.decode()
        seen += re.findall(r'<a href="/executions/(\d+)/">', body.content.decode())
        more = re.search(r'hx-get="([^"]+)"', body.content.decode())
    assert sorted(int(pk) for pk in seen) == sorted(e.pk for e in olds)
    bad = client.get(
        reverse("batchboard:purge_plan"), {"job_name": "nightly-import", "after": "x"}
    )
    assert bad.status_code == 400


def test_bad_plan_inputs_are_explained(viewer_user: User) -> None:
    response = _client(viewer_user).get(
        reverse("batchboard:purge_plan"), {"job_name": "x", "min_age_seconds": "5"}
    )
    assert response.status_code == 200
    assert "one hour (3600 s)" in response.content.decode()


def test_ids_beyond_bigint_are_not_found_not_database_errors(admin_user: User) -> None:
    client = _client(admin_user)
    huge = 2**63
    assert client.get(reverse("batchboard:action_stop", args=[huge])).status_code == 404
    assert (
        client.get(reverse("batchboard:recovery_proposal", args=[huge])).status_code
        == 404
    )
    held = client.post(
        reverse("batchboard:action_hold", args=[huge]),
        {"operation_id": "op", "reason_code": "AUDIT"},
    )
    assert held.status_code == 404
    assert f"There is no instance #{huge}." in held.content.decode()
    for name in ("action_stop", "action_recover"):
        stopped = client.post(
            reverse(f"batchboard:{name}", args=[huge]),
            {"operation_id": "op", "expected_version": "1"},
        )
        assert stopped.status_code == 404
        assert f"There is no execution #{huge}." in stopped.content.decode()


@pytest.mark.parametrize(
    ("url_name", "target", "data", "message"),
    [
        (
            "action_stop",
            "execution",
            {"operation_id": "op", "expected_version": "three"},
            "The execution id and version must be numbers.",
        ),
        (
            "action_abandon",
            "execution",
            {"operation_id": "op", "expected_version": "3", "reason_code": "AUDIT"},
            "AUDIT is not one of the reasons offered for ABANDON.",
        ),
        (
            "action_recover",
            "execution",
            {"operation_id": "op", "expected_version": "3", "evidence_digest": "zz"},
            "The evidence digest must be 64 hex digits.",
        ),
        (
            "action_hold",
            "instance",
            {"operation_id": "", "reason_code": "AUDIT"},
            "The operation id is empty.",
        ),
        (
            "action_release",
            "instance",
            {"operation_id": "op", "reason_code": ""},
            "The reason code is empty.",
        ),
        (
            "purge_apply",
            None,
            {"operation_id": "op", "job_name": "nightly-import", "batch": "0"},
            "The batch is 1 to 1000 executions.",
        ),
    ],
)
def test_malformed_posts_are_explained_and_write_nothing(
    admin_user: User,
    url_name: str,
    target: str | None,
    data: dict[str, str],
    message: str,
) -> None:
    """Each endpoint refuses a malformed form with a message, before acting."""
    execution = factories.execution("FAILED")
    ident = {"execution": execution.pk, "instance": execution.job_instance_id}
    args = [] if target is None else [ident[target]]
    response = _client(admin_user).post(
        reverse(f"batchboard:{url_name}", args=args), data, headers=HTMX
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert "INVALID_REQUEST" in body and message in body
    assert not OperatorRequest.objects.exists()
    assert not RetentionAction.objects.exists()
    assert JobExecution.objects.get(pk=execution.pk).status == "FAILED"


def test_the_purge_page_shows_the_defaults(viewer_user: User) -> None:
    """Without a query the form holds every finished status and the defaults."""
    body = _client(viewer_user).get(reverse("batchboard:purge_plan")).content.decode()
    for status in ("COMPLETED", "FAILED", "STOPPED", "ABANDONED"):
        assert f'value="{status}" checked' in body
    assert 'name="job_name" list="bb-purge-jobs" value=""' in body
    assert 'name="age_days" type="number" min="0" max="36500" value="30"' in body
    assert 'name="age_hours" type="number" min="0" max="23" value="0"' in body
    assert 'name="batch" type="number" min="1" max="1000" value="1000"' in body
    assert "(1–1000 executions)" in body
    assert "Plan for" not in body


def test_the_purge_page_keeps_the_query(viewer_user: User) -> None:
    body = (
        _client(viewer_user)
        .get(
            reverse("batchboard:purge_plan"),
            {"job_name": "x", "statuses": "FAILED", "batch": "5"},
        )
        .content.decode()
    )
    assert 'value="FAILED" checked' in body
    assert 'value="COMPLETED" checked' not in body
    assert 'name="job_name" list="bb-purge-jobs" value="x"' in body
    assert 'max="1000" value="5"' in body
    assert "No execution qualifies" in body


def test_a_missing_target_is_named_on_the_404_page(admin_user: User) -> None:
    client = _client(admin_user)
    for url_name, text in (
        ("action_abandon", "execution #999999"),
        ("recovery_proposal", "execution #999999"),
        ("action_hold", "instance #999999"),
    ):
        response = client.get(reverse(f"batchboard:{url_name}", args=[999999]))
        assert response.status_code == 404
        assert f"There is no {text}." in response.content.decode()


def test_dialogs_vary_on_htmx(admin_user: User) -> None:
    """A cache never serves the dialog fragment for the page, or the reverse."""
    execution = factories.execution("STARTED")
    url = reverse("batchboard:action_stop", args=[execution.pk])
    client = _client(admin_user)
    for headers in ({}, HTMX):
        assert "HX-Request" in client.get(url, headers=headers)["Vary"]


def test_the_plan_reviews_each_candidate_s_status_end_and_age(
    admin_user: User,
) -> None:
    """The survey's own statement reads them: no statement per candidate."""
    failed = factories.execution("FAILED", updated_at=factories.ago(days=40))
    completed = [
        factories.execution("COMPLETED", updated_at=factories.ago(days=50))
        for _ in range(3)
    ]
    failed.refresh_from_db()
    assert failed.ended_at is not None
    client = _client(admin_user)
    _plan_page(client)
    with CaptureQueriesContext(connection) as one:
        html = _plan_page(client, statuses=["FAILED"])
    with CaptureQueriesContext(connection) as four:
        _plan_page(client)
    assert len(one) == len(four)
    html = _plan_page(client)
    for header in ("Status", "Ended", "Age", "Version"):
        assert f">{header}</th>" in html
    row = html.split(f'<a href="/executions/{failed.pk}/">', 1)[1].split("</tr>")[0]
    assert '<span class="bb-status bb-status--bad">FAILED</span>' in row
    ended = failed.ended_at.astimezone(UTC).isoformat()
    assert f'<time datetime="{ended}"' in row
    assert f">{ended[:10]} {ended[11:19]}Z</time>" in row
    assert "40 d 0 h" in row
    later = html.split(f'<a href="/executions/{completed[0].pk}/">', 1)[1]
    assert "COMPLETED" in later.split("</tr>")[0]
    assert "50 d 0 h" in later.split("</tr>")[0]


def test_one_name_for_the_purge_page(viewer_user: User) -> None:
    body = _client(viewer_user).get(reverse("batchboard:purge_plan")).content.decode()
    assert "<title>Purge ·" in body and "<h1>Purge</h1>" in body
    nav = body.split('class="bb-nav"', 1)[1].split("</nav>", 1)[0]
    assert 'aria-current="page">Purge</a>' in nav
    assert "Retention" not in nav and "Purge history" not in body
    # The job field shows the whole name: it grows with it.
    assert 'class="bb-job-name" name="job_name"' in body
