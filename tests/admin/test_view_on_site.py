"""
"View on site" opens the dashboard's page of a row and loads no payload.

Django's default links to the admin site's ``view_on_site`` shortcut, which
loads the whole row again (payloads and parameter values included); the
admins build the dashboard's address from an id the row already holds.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.db.models import Model
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import resolve, reverse

from batchboard import models
from tests.admin.conftest import REGISTERED
from tests.explorer.test_audit import _retention
from tests.site.history import History

LINK = re.compile(r'<a href="([^"]+)" class="viewsitelink"')

#: Rows whose admin links to a dashboard page, and the page's URL name.
PAGES = {
    models.JobDefinition: "job",
    models.JobInstance: "instance",
    models.JobExecution: "execution",
    models.StepExecution: "step",
    models.StepPartition: "step",
    models.FlowDecision: "flow_decisions",
    models.RecoveryDecision: "recovery_decisions",
    models.OperatorRequest: "audit",
    models.RetentionAction: "audit",
}


def _payload_columns() -> list[str]:
    """Return every payload and parameter column as the SQL names it."""
    columns = []
    for model in REGISTERED:
        model_admin = admin.site.get_model_admin(model)
        for name in getattr(model_admin, "deferred", ()):
            if "__" not in name:
                column = model._meta.get_field(name).column
                columns.append(f'"{model._meta.db_table}"."{column}"')
    assert '"ob_job_instance"."identifying_parameters"' in columns
    assert '"ob_job_execution"."context_payload"' in columns
    return columns


def _selected(sql: str) -> list[str]:
    """
    Return the items a statement selects, at the top level (no subquery).

    A payload column measured (``octet_length(...)``) or tested (``... IS
    NOT NULL``) is read by the database, not loaded: only a bare column
    item brings its value back.
    """
    items, depth, item, index = [], 0, "", sql.find("SELECT ") + len("SELECT ")
    while index < len(sql):
        char = sql[index]
        if depth == 0 and sql.startswith(" FROM ", index):
            break
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            items.append(item.strip())
            item = ""
        else:
            item += char
        index += 1
    items.append(item.strip())
    return [each.split(" AS ")[0] for each in items]


def _payloads_read(queries: list[dict[str, Any]]) -> list[str]:
    columns = _payload_columns()
    return [
        item
        for query in queries
        if query["sql"].startswith("SELECT ")
        for item in _selected(query["sql"])
        if item in columns
    ]


def test_a_selected_payload_is_told_from_a_measured_one() -> None:
    sql = (
        'SELECT "ob_job_execution"."id", "ob_job_execution"."context_payload", '
        'octet_length("ob_step_execution"."checkpoint_payload") AS "size", '
        '("ob_job_execution"."owner_token" IS NOT NULL) AS "owned" '
        'FROM "ob_job_execution"'
    )
    assert _payloads_read([{"sql": sql}]) == ['"ob_job_execution"."context_payload"']


def _change_page(client: Client, row: Model) -> tuple[str, list[dict[str, Any]]]:
    opts = row._meta
    url = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[row.pk])
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode(), captured.captured_queries


def _reader() -> Client:
    user = User.objects.create_user(f"reader-{User.objects.count()}")
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="batchboard", codename__startswith="view_"
        ).exclude(codename="view_parameter_values")
    )
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("model", REGISTERED, ids=lambda m: m.__name__)
def test_view_on_site_opens_the_dashboard_and_reads_no_payload(
    viewer: Client, history: History, model: type[Model]
) -> None:
    _retention("HOLD", history.instance)
    row = model._default_manager.order_by("pk").first()
    assert row is not None, model
    body, queries = _change_page(viewer, row)
    assert _payloads_read(queries) == []
    shortcut = reverse("admin:view_on_site", args=[1, 1]).rsplit("/1/1/", 1)[0]
    assert shortcut not in body
    links = LINK.findall(body)
    if model not in PAGES:
        assert links == []
        return
    (link,) = links
    link = link.replace("&amp;", "&")
    assert resolve(link.split("?")[0]).url_name == PAGES[model]
    # The link was built from the row's ids: opening it, as a reader who
    # may not see parameter values, reads no payload.
    with CaptureQueriesContext(connection) as captured:
        response = _reader().get(link)
    assert response.status_code == 200, link
    assert _payloads_read(captured.captured_queries) == []


def test_a_request_opens_its_own_audit_record(viewer: Client, history: History) -> None:
    request = models.OperatorRequest.objects.order_by("pk").first()
    assert request is not None
    body, _queries = _change_page(viewer, request)
    (link,) = LINK.findall(body)
    listed = viewer.get(link.replace("&amp;", "&")).content.decode()
    assert f"#{request.pk}</span>" in listed
    assert listed.count('<th scope="row">') == 1


def _shortcut(model: type[Model], pk: object) -> str:
    from django.contrib.contenttypes.models import ContentType

    content_type = ContentType.objects.get_for_model(model)
    return f"/admin/r/{content_type.pk}/{pk}/"


@pytest.mark.parametrize("model", REGISTERED, ids=lambda m: m.__name__)
def test_the_admin_shortcut_redirects_without_reading_a_payload(
    viewer: Client, history: History, model: type[Model]
) -> None:
    _retention("HOLD", history.instance)
    row = model._default_manager.order_by("pk").first()
    assert row is not None, model
    with CaptureQueriesContext(connection) as captured:
        response = viewer.get(_shortcut(model, row.pk))
    assert _payloads_read(captured.captured_queries) == []
    if model not in PAGES:
        assert response.status_code == 404
        return
    assert response.status_code == 302
    body, _queries = _change_page(viewer, row)
    (link,) = LINK.findall(body)
    assert response["Location"] == link.replace("&amp;", "&")


@pytest.mark.parametrize("object_id", ["x", "²", "9" * 30, "-1", "1.0"])
def test_the_admin_shortcut_refuses_an_id_that_is_no_bigint(
    viewer: Client, history: History, object_id: str
) -> None:
    response = viewer.get(_shortcut(models.JobExecution, object_id))
    assert response.status_code == 404


def test_the_admin_shortcut_hides_rows_from_staff_without_their_view_permission(
    history: History,
) -> None:
    user = User.objects.create_user("staff-only", is_staff=True)
    client = Client()
    client.force_login(user)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(_shortcut(models.JobExecution, history.failed.pk))
    assert response.status_code == 404
    assert not any("ob_job_execution" in q["sql"] for q in captured.captured_queries)


def test_the_admin_shortcut_leaves_other_apps_to_django(viewer: Client) -> None:
    # A user has no absolute URL: Django's own shortcut answers 404.
    response = viewer.get(_shortcut(User, 1))
    assert response.status_code == 404
