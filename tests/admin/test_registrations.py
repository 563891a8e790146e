"""The admin over the metadata: read-only and redacted."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.db import connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from batchboard import conf
from batchboard.admin.readonly import ReadOnlyAdmin
from batchboard.models import DefinitionUpgrade, JobInstance
from tests.admin.conftest import REGISTERED, count_statements
from tests.site.history import OWNER_TOKEN, SECRET, History


def _forbidden_text() -> list[str]:
    return [SECRET, OWNER_TOKEN.hex(), repr(OWNER_TOKEN)]


def test_every_model_but_the_composite_key_is_registered_read_only() -> None:
    """Eleven models are registered; none can be added, changed or deleted."""
    registered = {m for m in REGISTERED if admin.site.is_registered(m)}
    assert registered == set(REGISTERED)
    assert len(registered) == 11
    # The Django admin cannot register a composite primary key; definition
    # pages list the upgrade edges instead.
    assert not admin.site.is_registered(DefinitionUpgrade)
    for model in registered:
        model_admin = admin.site.get_model_admin(model)
        assert isinstance(model_admin, ReadOnlyAdmin)
        assert model_admin.has_add_permission(None) is False  # type: ignore[arg-type]
        assert model_admin.has_change_permission(None) is False  # type: ignore[arg-type]
        assert model_admin.has_delete_permission(None) is False  # type: ignore[arg-type]


@pytest.mark.parametrize("model", REGISTERED, ids=lambda m: m.__name__)
def test_changelist_loads_redacted_without_count(
    model: type, history: History, viewer: Client
) -> None:
    """Each changelist renders, shows no payload and runs no COUNT."""
    url = reverse(f"admin:batchboard_{model._meta.model_name}_changelist")
    with CaptureQueriesContext(connections[conf.database_alias()]) as captured:
        response = viewer.get(url)
    assert response.status_code == 200
    body = response.content.decode()
    for text in _forbidden_text():
        assert text not in body
    assert count_statements(captured.captured_queries) == []
    assert "DISTINCT" not in " ".join(q["sql"] for q in captured.captured_queries)
    assert 'class="addlink"' not in body
    assert 'name="action"' not in body


@pytest.mark.parametrize("model", REGISTERED, ids=lambda m: m.__name__)
def test_change_page_loads_redacted(
    model: type, history: History, viewer: Client
) -> None:
    """Each change page renders read-only without payloads or token bytes."""
    obj = next(o for o in history.objects() if type(o) is model)
    url = reverse(f"admin:batchboard_{model._meta.model_name}_change", args=[obj.pk])
    response = viewer.get(url)
    assert response.status_code == 200
    body = response.content.decode()
    for text in _forbidden_text():
        assert text not in body
    assert 'type="submit" value="Save"' not in body
    assert "<textarea" not in body


def test_instance_page_lists_parameter_names_and_types(
    history: History, viewer: Client
) -> None:
    """Parameters appear as names and types; the instance key as hex."""
    url = reverse("admin:batchboard_jobinstance_change", args=[history.instance.pk])
    body = viewer.get(url).content.decode()
    assert "region (STRING)" in body
    assert "run_date (I64)" in body
    assert "20261130" not in body
    assert bytes(history.instance.instance_key).hex() in body


def test_execution_page_shows_owner_flag_and_descriptor(
    history: History, viewer: Client
) -> None:
    """The owner token shows as a flag; the context as its descriptor."""
    url = reverse("admin:batchboard_jobexecution_change", args=[history.restart.pk])
    body = viewer.get(url).content.decode()
    assert "icon-yes.svg" in body
    assert "batchboard.tests.v1 v1 (format 1)" in body


def test_definition_page_lists_upgrade_edges(history: History, viewer: Client) -> None:
    """A definition's page names its upgrade edges by key and revisions."""
    url = reverse("admin:batchboard_jobdefinition_change", args=[history.upgraded.pk])
    body = viewer.get(url).content.decode()
    assert "rename-load: r1 → r2" in body


def test_status_filter_comes_from_choices(history: History, viewer: Client) -> None:
    """Filtering by status narrows the list without a COUNT or DISTINCT."""
    url = reverse("admin:batchboard_jobexecution_changelist")
    with CaptureQueriesContext(connections[conf.database_alias()]) as captured:
        response = viewer.get(url, {"status__exact": "FAILED"})
    assert response.status_code == 200
    assert response.context["cl"].result_count == 1
    assert count_statements(captured.captured_queries) == []
    for status in ("STARTING", "ABANDONED", "UNKNOWN"):
        assert f"status__exact={status}" in response.content.decode()


def test_changelist_rows_come_newest_first(history: History, viewer: Client) -> None:
    """Executions are ordered by descending id."""
    url = reverse("admin:batchboard_jobexecution_changelist")
    response = viewer.get(url)
    ids = [row.pk for row in response.context["cl"].result_list]
    assert ids == [history.restart.pk, history.failed.pk]


def test_viewer_without_permission_is_refused(history: History, db: None) -> None:
    """A staff user without view permissions cannot open the changelist."""
    user = User.objects.create_user("nobody", password="x", is_staff=True)
    client = Client()
    client.force_login(user)
    url = reverse("admin:batchboard_jobexecution_changelist")
    assert client.get(url).status_code == 403


def test_posting_a_change_is_refused(history: History, viewer: Client) -> None:
    """Even a crafted POST cannot change metadata through the admin."""
    url = reverse("admin:batchboard_jobinstance_change", args=[history.instance.pk])
    response = viewer.post(url, {"job_name": "renamed"})
    assert response.status_code == 403
    assert JobInstance.objects.get(pk=history.instance.pk).job_name == "nightly_export"


def test_columns_are_not_sortable(history: History, viewer: Client) -> None:
    """No column header offers a sort that would bypass the id index."""
    url = reverse("admin:batchboard_jobexecution_changelist")
    response = viewer.get(url)
    assert 'class="sortable' not in response.content.decode()
    assert "?o=" not in response.content.decode()
