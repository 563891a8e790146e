"""
Redaction by construction: a secret placed in every payload column and every
parameter value appears in no page, fragment, error page or log line.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse

from batchboard.digests import JobParameter
from batchboard.models import ComponentState, DefinitionUpgrade, JobExecution
from tests import factories

SECRET = "S3CR3T-7f1e-do-not-show"
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def secret_history(db: None) -> dict[str, int]:
    now = factories.now()
    old = factories.definition(
        "secret-job", "v1", manifest={"format": 1, "job": "secret-job", "token": SECRET}
    )
    new = factories.definition(
        "secret-job", "v2", manifest={"format": 1, "job": "secret-job", "note": SECRET}
    )
    DefinitionUpgrade.objects.create(
        from_definition=old,
        to_definition=new,
        upgrade_key="upgrade",
        step_mapping={"load": "load", "secret": SECRET},
        registered_at=now,
    )
    instance = factories.instance(
        "secret-job",
        {
            "password": JobParameter.string(SECRET),
            "count": JobParameter.u64(7),
        },
        created_at=now - timedelta(hours=2),
    )
    failed = factories.execution(
        instance,
        "FAILED",
        job_definition=old,
        context_payload={"secret": SECRET},
        created_at=now - timedelta(hours=2),
    )
    running = factories.execution(
        instance,
        "STARTED",
        job_definition=new,
        restart_of=failed,
        context_payload={"secret": SECRET},
        created_at=now - timedelta(hours=1),
        updated_at=now - timedelta(hours=1),
        owner_token=SECRET.encode()[:16],
    )
    JobExecution.objects.filter(pk=running.pk).update(upgrade_from_definition=old)
    step = factories.step(
        running,
        "load",
        "STARTED",
        checkpoint_payload={"offset": SECRET},
        context_payload={"cursor": SECRET},
    )
    step.fault_state_payload = {"checkpoint": "0" * 64, "entries": [SECRET]}
    step.save(update_fields=["fault_state_payload"])
    factories.partition(step, "p-1", 1, context_payload={"range": SECRET})
    ComponentState.objects.create(
        step_execution=step,
        namespace="reader",
        schema_id="reader.state",
        schema_version=1,
        codec_id="json",
        codec_version=1,
        checksum_algorithm=1,
        checksum_algorithm_version=1,
        checksum=b"\x00" * 32,
        payload_kind="INLINE",
        payload=('{"position": "' + SECRET + '"}').encode(),
        version=1,
        updated_at=now,
    )
    factories.flow_decision(failed, 1, "load", source_step=None)
    factories.recovery_decision(failed)
    factories.operator_request(failed)
    return {
        "instance": instance.pk,
        "failed": failed.pk,
        "running": running.pk,
        "step": step.pk,
    }


def _urls(ids: dict[str, int]) -> list[str]:
    return [
        reverse("batchboard:index"),
        reverse("batchboard:attention"),
        reverse("batchboard:job", args=["secret-job"]),
        reverse("batchboard:instance", args=[ids["instance"]]),
        reverse("batchboard:executions"),
        reverse("batchboard:executions") + "?job=secret-job&status=STARTED",
        reverse("batchboard:execution", args=[ids["failed"]]),
        reverse("batchboard:execution", args=[ids["running"]]),
        reverse("batchboard:execution_live", args=[ids["running"]]),
        reverse("batchboard:execution_row", args=[ids["running"]]),
        reverse("batchboard:flow_decisions", args=[ids["failed"]]),
        reverse("batchboard:recovery_decisions", args=[ids["failed"]]),
        reverse("batchboard:operator_requests", args=[ids["failed"]]),
        reverse("batchboard:step", args=[ids["step"]]),
        reverse("batchboard:step_live", args=[ids["step"]]),
        reverse("batchboard:step_row", args=[ids["step"]]),
        reverse("batchboard:unresolved") + "?age=60",
        reverse("batchboard:executions") + "?cursor=00",
        reverse("batchboard:executions") + "?status=" + SECRET,
        reverse("batchboard:instance", args=[ids["instance"]]) + "?size=9999",
        "/executions/424242/",
    ]


def _visit_all(client: Client, ids: dict[str, int]) -> list[str]:
    bodies = []
    for url in _urls(ids):
        for headers in ({}, HTMX):
            response = client.get(url, **headers)
            assert response.status_code in (200, 302, 400, 404), url
            bodies.append(response.content.decode())
    partition_page = client.get(reverse("batchboard:step", args=[ids["step"]]))
    bodies.append(partition_page.content.decode())
    return bodies


def test_secret_reaches_no_page_fragment_error_or_log(
    reader: Client, secret_history: dict[str, int], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for body in _visit_all(reader, secret_history):
        assert SECRET not in body
        # Echoing a bad filter value back would also be a leak path.
        assert SECRET[:10] not in body
    assert SECRET not in caplog.text


def test_parameter_values_only_with_the_permission(
    reader: Client, value_reader: Client, secret_history: dict[str, int]
) -> None:
    url = reverse("batchboard:instance", args=[secret_history["instance"]])
    hidden = reader.get(url).content.decode()
    assert "password" in hidden and "STRING" in hidden
    assert "values hidden" in hidden
    shown = value_reader.get(url).content.decode()
    assert SECRET in shown
    job_url = reverse("batchboard:job", args=["secret-job"])
    assert SECRET not in reader.get(job_url).content.decode()
    job_page = value_reader.get(job_url).content.decode()
    assert SECRET in job_page
    # Holding the values permission reveals parameter values on the instance
    # and job pages only; payloads stay hidden everywhere for everyone.
    allowed = (url, job_url)
    for page in _urls(secret_history):
        if page.startswith(allowed):
            continue
        for headers in ({}, HTMX):
            assert SECRET not in value_reader.get(page, **headers).content.decode()
