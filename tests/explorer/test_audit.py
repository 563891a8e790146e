"""The audit log: merged, keyset-paged, filtered only where an index serves."""

from __future__ import annotations

import re
from datetime import timedelta
from itertools import count
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from batchboard.explorer import audit
from batchboard.models import JobInstance, OperatorRequest, RetentionAction
from tests import factories
from tests.explorer.conftest import make_user

HTMX = {"HTTP_HX_REQUEST": "true"}
_ops = count(1)
ROW = re.compile(r"(request|retention) <span class=\"bb-muted\">#(\d+)</span>")


@pytest.fixture
def auditor(db: None) -> Client:
    user = make_user("auditor")
    user.user_permissions.add(
        Permission.objects.get(
            content_type__app_label="batchboard", codename="view_retentionaction"
        )
    )
    client = Client()
    client.force_login(user)
    return client


def _retention(
    action: str = "HOLD", instance: JobInstance | None = None, **fields: Any
) -> RetentionAction:
    purge = action == "APPLY_PURGE"
    return RetentionAction.objects.create(
        job_instance=instance,
        action=action,
        operation_id=f"bb-{next(_ops):032x}",
        actor_ref="user:administrator",
        reason_code="AUDIT" if not purge else "RETENTION_POLICY",
        plan_digest=b"\xab" * 32 if purge else None,
        batch_bound=100 if purge else None,
        outcome_class="APPLIED",
        applied_at=fields.pop("applied_at", factories.now()),
        **fields,
    )


def _history() -> tuple[Any, Any]:
    now = factories.now()
    instance = factories.instance("nightly")
    execution = factories.execution(instance, "FAILED")
    other = factories.execution(factories.instance("billing"), "FAILED")
    for minutes in range(12):
        at = now - timedelta(minutes=60 - 3 * minutes)
        if minutes % 3 == 0:
            _retention("HOLD", instance, applied_at=at)
        else:
            target = execution if minutes % 2 else other
            factories.operator_request(target, "ABANDON", requested_at=at)
    return instance, execution


def _walk(client: Client, url: str, between: Any = None) -> list[tuple[str, int]]:
    seen: list[tuple[str, int]] = []
    response = client.get(url)
    while True:
        assert response.status_code == 200
        body = response.content.decode()
        seen += [(kind, int(pk)) for kind, pk in ROW.findall(body)]
        found = re.search(r'hx-get="([^"]+)"', body)
        if found is None:
            return seen
        if between is not None:
            between()
        response = client.get(found.group(1).replace("&amp;", "&"), **HTMX)


def test_paged_end_to_end_across_inserts_without_repeats(
    auditor: Client, db: None
) -> None:
    instance, execution = _history()
    expected = {("request", r.pk) for r in OperatorRequest.objects.all()} | {
        ("retention", r.pk) for r in RetentionAction.objects.all()
    }

    def insert() -> None:
        factories.operator_request(execution, "STOP")
        _retention("RELEASE_HOLD", instance)

    seen = _walk(auditor, reverse("batchboard:audit") + "?size=3", insert)
    assert len(seen) == len(set(seen))
    assert set(seen) == expected
    # Newest first across both tables.
    times = [
        (OperatorRequest if kind == "request" else RetentionAction)
        .objects.values_list(
            "requested_at" if kind == "request" else "applied_at", flat=True
        )
        .get(pk=pk)
        for kind, pk in seen
    ]
    assert times == sorted(times, reverse=True)


def test_tables_whose_times_run_against_their_ids_lose_no_row(
    auditor: Client, db: None
) -> None:
    """Requests recorded back-dated (ids rising, times falling) are all listed."""
    _instance, execution = _history()
    now = factories.now()
    for minutes in range(9):
        factories.operator_request(
            execution, "STOP", requested_at=now - timedelta(days=1, minutes=minutes)
        )
    _retention("HOLD", None, applied_at=now)
    expected = {("request", r.pk) for r in OperatorRequest.objects.all()} | {
        ("retention", r.pk) for r in RetentionAction.objects.all()
    }
    seen = _walk(auditor, reverse("batchboard:audit") + "?size=4")
    assert len(seen) == len(set(seen)) and set(seen) == expected


def test_merge_takes_a_prefix_of_each_table() -> None:
    first = [{"id": 3, "at": 1}, {"id": 2, "at": 5}, {"id": 1, "at": 9}]
    second = [{"id": 8, "at": 4}]
    merged = audit.merge(first, second, 3)
    assert [row["id"] for row in merged] == [8, 3, 2]


def test_rows_link_to_targets_by_id_and_show_no_digest(
    auditor: Client, db: None
) -> None:
    _instance, execution = _history()
    purge = _retention(
        "APPLY_PURGE", deleted_job_executions=3, deleted_step_executions=4
    )
    body = auditor.get(reverse("batchboard:audit")).content.decode()
    assert f'href="{reverse("batchboard:execution", args=[execution.pk])}"' in body
    assert f"#{purge.pk}" in body and "7 rows purged" in body
    assert "ab" * 32 not in body
    for digest in OperatorRequest.objects.values_list("request_digest", flat=True):
        assert bytes(digest).hex() not in body


def test_action_and_job_filters_are_exact(auditor: Client, db: None) -> None:
    _history()
    holds = auditor.get(reverse("batchboard:audit"), {"action": "HOLD"})
    kinds = {kind for kind, _pk in ROW.findall(holds.content.decode())}
    assert kinds == {"retention"}
    job = auditor.get(reverse("batchboard:audit"), {"job": "nightly"}).content.decode()
    nightly = set(
        OperatorRequest.objects.filter(
            job_execution__job_instance__job_name="nightly"
        ).values_list("pk", flat=True)
    )
    shown = {int(pk) for kind, pk in ROW.findall(job) if kind == "request"}
    assert shown == nightly


def test_filters_without_an_index_are_said_not_applied(
    auditor: Client, db: None
) -> None:
    _history()
    assert audit.served("action") and audit.served("job")
    assert not audit.served("actor") and not audit.served("outcome")
    assert not audit.served("time")
    plain = auditor.get(reverse("batchboard:audit")).content.decode()
    response = auditor.get(reverse("batchboard:audit"), {"actor": "user:nobody"})
    body = response.content.decode()
    assert response.status_code == 200
    assert "Not applied" in body and "ob_operator_request.actor_ref" in body
    assert ROW.findall(body) == ROW.findall(plain)


@pytest.mark.parametrize(
    "params", [{"action": "DELETE"}, {"outcome": "MAYBE"}, {"cursor": "zz"}]
)
def test_bad_filters_get_400(auditor: Client, db: None, params: dict[str, str]) -> None:
    assert auditor.get(reverse("batchboard:audit"), params).status_code == 400


def test_a_cursor_of_another_filter_gets_400(auditor: Client, db: None) -> None:
    _history()
    body = auditor.get(reverse("batchboard:audit") + "?size=2").content.decode()
    cursor = re.search(r"cursor=([0-9a-f]+)", body)
    assert cursor is not None
    response = auditor.get(
        reverse("batchboard:audit"),
        {"size": 2, "cursor": cursor.group(1), "action": "HOLD"},
    )
    assert response.status_code == 400


def test_read_permission_required(reader: Client, db: None) -> None:
    assert reader.get(reverse("batchboard:audit")).status_code == 403
    anonymous = Client().get(reverse("batchboard:audit"))
    assert anonymous.status_code == 302
    nobody = Client()
    nobody.force_login(User.objects.create_user("nobody"))
    assert nobody.get(reverse("batchboard:audit")).status_code == 403


def test_execution_and_instance_pages_link_to_the_audit_log(
    auditor: Client, db: None
) -> None:
    instance, execution = _history()
    link = f'href="{reverse("batchboard:audit")}?job=nightly"'
    for url in (
        reverse("batchboard:execution", args=[execution.pk]),
        reverse("batchboard:instance", args=[instance.pk]),
    ):
        assert link in auditor.get(url).content.decode()
    header = auditor.get(reverse("batchboard:index")).content.decode()
    assert f'href="{reverse("batchboard:audit")}"' in header


def test_the_page_says_what_it_filters_and_why_not_the_rest(
    auditor: Client, db: None
) -> None:
    body = auditor.get(reverse("batchboard:audit")).content.decode()
    assert "You can filter by: Action, Job name." in body
    assert "Not offered: Outcome, Actor, Time window." in body
    assert "Schema version 4 has no index on those columns" in body
    assert "<code>ob_retention_action.applied_at</code>" in body
    # The unserved inputs are disabled and say why.
    for name in ("outcome", "actor", "since", "until"):
        field = re.search(rf'<(?:input|select) name="{name}"[^>]*>', body)
        assert field is not None
        assert "disabled" in field.group(0)
        assert 'aria-describedby="bb-audit-unserved"' in field.group(0)
