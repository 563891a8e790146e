"""
The admin filters only by its declared filters (and the keyset), and its
change pages never load a payload column.

Django's ``lookup_allowed`` admits any lookup on a model's own fields, so a
staff user could filter by parameter values, payloads and manifests
(``__startswith``, ``__gt``) and read them by bisection, or pin a CPU with
``__regex`` on SQLite.
"""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.db import connections
from django.test import Client
from django.test.utils import CaptureQueriesContext

from batchboard import conf, models
from tests.admin.conftest import REGISTERED
from tests.site.history import SECRET, History

#: Columns holding payloads, manifests, parameter values or owner tokens.
PAYLOADS = {
    "identifying_parameters",
    "parameters",
    "context_payload",
    "checkpoint_payload",
    "fault_state_payload",
    "owner_token",
    "manifest",
    "payload",
}


def _changelist(model: type) -> str:
    return f"/admin/batchboard/{model._meta.model_name}/"


@pytest.mark.parametrize(
    ("model", "params"),
    [
        (
            models.JobInstance,
            {"identifying_parameters__billing_period__value": "2026-10"},
        ),
        (
            models.JobInstance,
            {"identifying_parameters__billing_period__value__startswith": "2"},
        ),
        (models.JobInstance, {"job_name__regex": "(.|.)*Z"}),
        (models.JobInstance, {"instance_key__gt": "00"}),
        (models.JobExecution, {"parameters__contains": "secret"}),
        (models.JobExecution, {"owner_token__isnull": "False"}),
        (models.JobExecution, {"status__regex": "(.|.)*Z"}),
        (models.JobExecution, {"id__gt": "1"}),
        (models.StepExecution, {"checkpoint_payload__startswith": "s"}),
        (models.JobDefinition, {"manifest__gt": "a"}),
        (models.StepPartition, {"context_payload__icontains": "secret"}),
        (models.ComponentState, {"payload__contains": "secret"}),
    ],
)
def test_undeclared_lookups_are_a_400(
    viewer: Client, history: History, model: type, params: dict[str, str]
) -> None:
    response = viewer.get(_changelist(model), params)
    assert response.status_code == 400


@pytest.mark.parametrize(
    ("model", "params"),
    [
        (models.JobExecution, {"status__exact": "FAILED"}),
        (models.JobExecution, {"failure_category__exact": "STEP_FAILED"}),
        (models.JobExecution, {"status__exact": "FAILED", "after": "99"}),
        (models.JobInstance, {"held": "yes"}),
        (models.OperatorRequest, {"action__exact": "STOP"}),
        (models.StepPartition, {"status__exact": "COMPLETED"}),
    ],
)
def test_declared_filters_still_work(
    viewer: Client, history: History, model: type, params: dict[str, str]
) -> None:
    response = viewer.get(_changelist(model), params)
    assert response.status_code == 200


def test_a_declared_filter_with_a_control_character_is_a_400(
    viewer: Client, history: History
) -> None:
    response = viewer.get(_changelist(models.JobExecution), {"status__exact": "A\x00"})
    assert response.status_code == 400


def test_the_allowed_parameters_are_the_filters_own() -> None:
    execution_admin = admin.site._registry[models.JobExecution]
    from django.test import RequestFactory

    request = RequestFactory().get("/")
    assert execution_admin.filter_parameters(request) == {
        "status__exact",
        "status__isnull",
        "failure_category__exact",
        "failure_category__isnull",
    }
    assert not execution_admin.lookup_allowed("status__exact", "FAILED", None)


def _selected_payloads(sql: str) -> set[str]:
    """Return the payload columns a statement reads, allowed shapes removed."""
    # Whether a token is set, and a parameter envelope's names and types
    # (json_each / jsonb_each), read no value.
    sql = re.sub(r'"[a-z_]+"\."owner_token" IS NOT NULL', "", sql)
    sql = re.sub(r'jsonb?_each\("[a-z_]+"\."identifying_parameters"\)', "", sql)
    return {column for column in PAYLOADS if re.search(rf'"[a-z_]+"\."{column}"', sql)}


@pytest.mark.parametrize("model", REGISTERED, ids=lambda m: m.__name__)
def test_change_pages_load_no_payload_column(
    viewer: Client, history: History, model: type
) -> None:
    row = next(obj for obj in history.objects() if type(obj) is model)
    url = f"{_changelist(model)}{row.pk}/change/"
    connection = connections[conf.database_alias()]
    with CaptureQueriesContext(connection) as captured:
        response = viewer.get(url)
    assert response.status_code == 200
    assert SECRET not in response.content.decode()
    for query in captured.captured_queries:
        assert not _selected_payloads(query["sql"]), query["sql"]


def test_the_instance_page_still_names_its_parameters(
    viewer: Client, history: History
) -> None:
    url = f"{_changelist(models.JobInstance)}{history.instance.pk}/change/"
    body = viewer.get(url).content.decode()
    names = sorted(history.instance.identifying_parameters)
    assert names
    for name in names:
        assert f"<li>{name} (" in body


@pytest.mark.parametrize("page", ["change", "delete", "history"])
@pytest.mark.parametrize("model", [models.OperatorRequest, models.SchemaVersion])
def test_an_empty_to_field_names_the_key_not_a_500(
    viewer: Client, history: History, page: str, model: type
) -> None:
    """Found by the fuzz campaign: Django looked up a field named ""."""
    row = next(obj for obj in history.objects() if type(obj) is model)
    url = f"{_changelist(model)}{row.pk}/{page}/"
    response = viewer.get(url, {"_to_field": ""})
    assert response.status_code < 500
