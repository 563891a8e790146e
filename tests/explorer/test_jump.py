"""The header's jump box: records by id, jobs by name, operations by id."""

from __future__ import annotations

import html

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from batchboard.explorer import inputs
from batchboard.explorer.links import job_url
from batchboard.models import BulkOperation
from batchboard.web import BadInput
from tests import factories
from tests.explorer.conftest import History, make_user

JUMP = "/jump/"


def _job(name: str) -> str:
    return html.unescape(job_url(name))


@pytest.fixture
def jobs(db: None) -> None:
    for name in ("import", "import-daily", "import-weekly", "billing"):
        factories.definition(name)


def test_a_job_name_or_its_unique_start_opens_the_job(
    reader: Client, jobs: None
) -> None:
    for typed, name in (
        ("import", "import"),
        ("bill", "billing"),
        (" billing ", "billing"),
    ):
        response = reader.get(JUMP, {"kind": "job", "id": typed})
        assert response.status_code == 302, typed
        assert response["Location"] == _job(name)


def test_a_start_several_jobs_share_lists_them(reader: Client, jobs: None) -> None:
    response = reader.get(JUMP, {"kind": "job", "id": "import-"})
    assert response.status_code == 200
    body = response.content.decode()
    assert "import-daily" in body and "import-weekly" in body
    assert ">import<" not in body and "billing" not in body


def test_a_start_no_job_has_is_not_found(reader: Client, jobs: None) -> None:
    response = reader.get(JUMP, {"kind": "job", "id": "zzz"})
    assert response.status_code == 404
    assert "job whose name starts with “zzz”" in response.content.decode()


def test_an_operation_id_opens_its_audit_row_or_its_bulk_operation(
    history: History,
) -> None:
    user = make_user("auditor")
    user.user_permissions.add(Permission.objects.get(codename="view_retentionaction"))
    auditor = Client()
    auditor.force_login(user)
    request = history.failed.operator_requests.get()
    response = auditor.get(JUMP, {"kind": "operation", "id": request.operation_id})
    assert response.status_code == 302
    assert response["Location"] == (
        f"{reverse('batchboard:audit')}?operation={request.operation_id}"
    )
    assert request.operation_id in auditor.get(response["Location"]).content.decode()
    BulkOperation.objects.create(
        bulk_id="bulk-7",
        action="ABANDON",
        actor_ref="user:someone",
        filters="{}",
        digest="0" * 64,
        item_count=0,
        started_at=timezone.now(),
    )
    bulk = auditor.get(JUMP, {"kind": "operation", "id": "bulk-7"})
    assert bulk["Location"] == reverse("batchboard:bulk_operation", args=["bulk-7"])
    # An item of a bulk apply is an operator request of its own.
    item = auditor.get(JUMP, {"kind": "operation", "id": "bulk-7:12"})
    assert item["Location"].endswith("?operation=bulk-7%3A12")


def test_the_jump_form_reads_each_kind() -> None:
    def target(**data: str) -> tuple[str, int | str]:
        form = inputs.JumpForm(data)
        if not form.is_valid():
            raise form.bad_input()
        return form.target

    assert target(kind="job", id="a/b") == ("job", "a/b")
    assert target(kind="operation", id="op-1:2") == ("operation", "op-1:2")
    assert target(id="#5") == ("execution", 5)
    for data in (
        {"kind": "job", "id": "  "},
        {"kind": "job", "id": "x" * 129},
        {"kind": "operation", "id": "has space"},
        {"kind": "operation", "id": ""},
        {"kind": "step", "id": "name"},
    ):
        with pytest.raises(BadInput) as raised:
            target(**data)
        assert raised.value.param == "id", data
