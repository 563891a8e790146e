"""
The spec's golden outputs (A.2.6), byte for byte, on the data each implies.

The data is built with the factories as oxide-batch's CLI fixture builds
it: job ``orders``, clock 1,800,000,000 s, one id sequence shared by
instances and executions. Reads go through the API over HTTP; the action
goldens name the actor ``ops:alice``, a service actor, so they are rendered
by the same function the action views answer with.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import OperationalError, connection, connections
from django.test import Client

from batchboard import actions, digests
from batchboard.actions import ServiceActor, recovery
from batchboard.api import views
from batchboard.api.output import Envelope
from batchboard.db import alias, back_dated, read_alias
from batchboard.explorer import queries
from batchboard.models import JobDefinition, JobExecution, JobInstance, OperatorRequest
from batchboard.vocabulary import DESTRUCTIVE, LIFECYCLE, MAX_RESPONSE_BYTES
from tests import factories

pytestmark = pytest.mark.django_db

T0 = datetime.fromtimestamp(1_800_000_000, tz=UTC)
KEYS = {
    5: "bed273dabf32772da2c206d913dc17729f7b03b13b7d70b0519e8b4034cd1e0e",
    3: "da1f222328e1d013971c561f6334ef4003882c1eef747db73789f7e095931e7c",
    1: "00" * 32,
}


def _fetch(client: Client, url: str) -> bytes:
    response = client.get(url)
    assert response["Content-Type"] == "application/json"
    return bytes(response.content)


@pytest.fixture
def reader(db: None) -> Client:
    client = Client()
    client.force_login(factories.viewer())
    return client


def _orders() -> dict[int, JobInstance]:
    made = {}
    for ident in (1, 3, 5):
        made[ident] = factories.instance(
            "orders",
            {"region": digests.JobParameter.string(f"r{ident}")},
            created_at=T0,
            id=ident,
        )
        JobInstance.objects.filter(id=ident).update(
            instance_key=bytes.fromhex(KEYS[ident])
        )
    return made


def _next_request_id(value: int) -> None:
    """Make the next operator request's id ``value`` (ids are shared upstream)."""
    table = OperatorRequest._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), %s)",
                [value - 1],
            )
        else:
            cursor.execute(
                "UPDATE sqlite_sequence SET seq = %s WHERE name = %s",
                [value - 1, table],
            )
            if cursor.rowcount == 0:
                cursor.execute(
                    "INSERT INTO sqlite_sequence (name, seq) VALUES (%s, %s)",
                    [table, value - 1],
                )


def test_the_empty_unresolved_list(reader: Client) -> None:
    assert _fetch(reader, "/api/v1/unresolved/?unresolved_age=15m") == (
        b'{"command":"execution list","data":[],"diagnostics":[],"outcome":"success",'
        b'"page":{"next_cursor":null,"page_size":50,"returned":0},'
        b'"schema_version":1,"truncated":false}\n'
    )


GOLDEN_1 = (
    '{"command":"instance list","data":[{"created_at":1800000000,"hold":null,'
    '"instance_id":5,"instance_key_digest":"bed273dabf32772da2c206d913dc17729f7b03b13b7d70b0519e8b4034cd1e0e",'
    '"job_name":"orders","parameters":[{"identifying":true,"kind":"STRING","name":"region"}]},'
    '{"created_at":1800000000,"hold":null,"instance_id":3,'
    '"instance_key_digest":"da1f222328e1d013971c561f6334ef4003882c1eef747db73789f7e095931e7c",'
    '"job_name":"orders","parameters":[{"identifying":true,"kind":"STRING","name":"region"}]}],'
    '"diagnostics":[],"outcome":"success","page":{"next_cursor":'
    '"010201000000000000000300000000000000052766d7b5c8ec3a3f48b557e2e0e3fec5caaaeb6dc9ad294eabc73fbf4941391a459b84a013c42f96",'
    '"page_size":2,"returned":2},"schema_version":1,"truncated":false}\n'
)


def test_a_list_page_with_a_next_cursor(reader: Client) -> None:
    _orders()
    body = _fetch(reader, "/api/v1/jobs/orders/instances/?page_size=2")
    assert body.decode() == GOLDEN_1
    # The CLI's cursor continues here: the last page holds instance 1.
    cursor = "010201000000000000000300000000000000052766d7b5c8ec3a3f48b557e2e0e3fec5caaaeb6dc9ad294eabc73fbf4941391a459b84a013c42f96"
    rest = _fetch(reader, f"/api/v1/jobs/orders/instances/?page_size=2&cursor={cursor}")
    assert b'"instance_id":1,' in rest
    assert b'"next_cursor":null,"page_size":2,"returned":1' in rest


def test_a_missing_execution(reader: Client) -> None:
    assert _fetch(reader, "/api/v1/executions/4242/") == (
        b'{"command":"execution show","data":null,"diagnostics":[{"code":"TARGET_NOT_FOUND",'
        b'"detail":"the execution does not exist"}],"outcome":"error","schema_version":1,'
        b'"truncated":false}\n'
    )


def _starting(*placed: tuple[JobInstance, int]) -> None:
    """Create a STARTING execution per (instance, id), with exactly that id."""
    made = [
        (factories.execution(instance, "STARTING", created_at=T0, updated_at=T0), ident)
        for instance, ident in placed
    ]
    # Off every sequence-given id first, so no two rows ever share one.
    for execution, ident in made:
        JobExecution.objects.filter(pk=execution.pk).update(id=ident + 10_000)
    for _execution, ident in made:
        JobExecution.objects.filter(pk=ident + 10_000).update(id=ident)


GOLDEN_3 = (
    '{"command":"execution stop","data":{"changed":true,"execution":{"execution_id":2,'
    '"status":"STARTING","version":0},"operation_id":"stop-2","outcome":"APPLIED","record":'
    '{"action":"STOP","actor":"ops:alice","digest":"a0650820e1be078c8d6ee12e9bd7699ba86245deaa7fbeb33829a9bb5d5a53ff",'
    '"execution_id":2,"instance_id":1,"observed_version":0,"operation_id":"stop-2",'
    '"outcome":"APPLIED","prior_status":"STARTING","reason":null,"record":"operator_request",'
    '"rejection":null,"request_id":4,"requested_at":1800000001,"result_status":"STARTING"}},'
    '"diagnostics":[],"outcome":"success","schema_version":1,"truncated":false}\n'
)
GOLDEN_4 = (
    '{"command":"execution stop","data":{"changed":false,"execution":null,"operation_id":"stop-2",'
    '"outcome":"REPLAYED","record":{"action":"STOP","actor":"ops:alice","digest":'
    '"a0650820e1be078c8d6ee12e9bd7699ba86245deaa7fbeb33829a9bb5d5a53ff","execution_id":2,'
    '"instance_id":1,"observed_version":0,"operation_id":"stop-2","outcome":"APPLIED",'
    '"prior_status":"STARTING","reason":null,"record":"operator_request","rejection":null,'
    '"request_id":4,"requested_at":1800000001,"result_status":"STARTING"}},"diagnostics":'
    '[{"code":"REPLAYED","detail":"the recorded outcome of this operation identifier was returned"}],'
    '"outcome":"success","schema_version":1,"truncated":false}\n'
)
GOLDEN_5 = (
    '{"command":"execution abandon","data":{"changed":false,"execution":null,'
    '"operation_id":"abandon-4a","outcome":"REJECTED","record":{"action":"ABANDON",'
    '"actor":"ops:alice","digest":"d990a132c0d0f9c50596ab693c12e9b7cd9b6d261f7c9e8549658ff68ee8a211",'
    '"execution_id":4,"instance_id":null,"observed_version":0,"operation_id":"abandon-4a",'
    '"outcome":"REJECTED","prior_status":null,"reason":"OPERATOR_DECISION",'
    '"record":"operator_request","rejection":"INVALID_STATE","request_id":6,'
    '"requested_at":1800000001,"result_status":null}},"diagnostics":[{"code":"GUARD_REJECTED",'
    '"detail":"the action was rejected as INVALID_STATE"}],"outcome":"rejected",'
    '"schema_version":1,"truncated":false}\n'
)


def _at_t1() -> datetime:
    return datetime.fromtimestamp(1_800_000_001, tz=UTC)


def test_applied_replayed_and_rejected_actions(db: None) -> None:
    made = _orders()
    _starting((made[1], 2), (made[3], 4))
    alice = ServiceActor("ops:alice", {LIFECYCLE, DESTRUCTIVE})
    bob = ServiceActor("ops:bob", {LIFECYCLE, DESTRUCTIVE})
    _next_request_id(4)
    with back_dated(_at_t1, using=alias()):
        stop = {"execution_id": 2, "expected_version": 0, "operation_id": "stop-2"}
        applied = actions.stop_execution(user=alice, **stop)
        replayed = actions.stop_execution(user=bob, **stop)
        _next_request_id(6)
        rejected = actions.abandon_execution(
            user=alice,
            execution_id=4,
            expected_version=0,
            reason_code="OPERATOR_DECISION",
            operation_id="abandon-4a",
        )
    render = views.operator_outcome
    assert render("execution stop", applied).render().decode() == GOLDEN_3
    assert render("execution stop", replayed).render().decode() == GOLDEN_4
    assert render("execution abandon", rejected).render().decode() == GOLDEN_5


def test_the_same_stop_over_http_answers_in_the_same_shape(db: None) -> None:
    made = _orders()
    _starting((made[1], 2))
    client = Client()
    client.force_login(factories.operator())
    url = "/api/v1/executions/2/stop/"
    body = {"expected_version": 0, "operation_id": "stop-2"}
    first = client.post(url, body, content_type="application/json")
    assert first.status_code == 200
    again = client.post(url, body, content_type="application/json")
    assert again.status_code == 200
    assert b'"outcome":"REPLAYED"' in again.content
    assert again.content.endswith(
        b'"outcome":"success","schema_version":1,"truncated":false}\n'
    )


def test_an_unavailable_repository(
    reader: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    def down(*args: object, **kwargs: object) -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(queries, "job_names", down)
    response = reader.get("/api/v1/jobs/")
    assert response.status_code == 503
    assert response.content == (
        b'{"command":"job list","data":null,"diagnostics":[{"code":"REPOSITORY_UNAVAILABLE",'
        b'"detail":"the repository is unavailable"}],"outcome":"error","schema_version":1,'
        b'"truncated":false}\n'
    )


def test_the_size_bound_keeps_the_longest_prefix_that_fits() -> None:
    rows = [{"n": index, "pad": "é" * 1000} for index in range(400)]
    page = {"next_cursor": None, "page_size": 400, "returned": 400}
    rendered = Envelope("job list", rows, page=page).render()
    assert len(rendered) <= MAX_RESPONSE_BYTES
    body = json.loads(rendered)
    assert body["truncated"] is True and body["page"] == page
    kept = len(body["data"])
    assert 0 < kept < 400 and body["data"] == rows[:kept]
    longer = Envelope("job list", rows[: kept + 1], page=page)
    assert len(longer._fits(rows[: kept + 1]) or b"x" * MAX_RESPONSE_BYTES * 2) > (
        MAX_RESPONSE_BYTES
    )
    scalar = json.loads(Envelope("job list", "x" * MAX_RESPONSE_BYTES).render())
    assert scalar["data"] == {"omitted": "the value exceeds the response bound"}
    keyed = json.loads(
        Envelope(
            "execution show", {f"k{i:03}": "y" * 1000 for i in range(300)}
        ).render()
    )
    assert keyed["truncated"] is True
    assert list(keyed["data"]) == [f"k{i:03}" for i in range(len(keyed["data"]))]


GOLDEN_PLAN = (
    '{"command":"retention plan","data":{"batch_bound":10,"candidates":[{"execution_id":4,'
    '"instance_id":3,"version":2},{"execution_id":6,"instance_id":5,"version":2}],"counts":'
    '{"flow_decisions":0,"job_executions":2,"job_instances":2,"operator_requests":5,'
    '"recovery_decisions":1,"step_executions":0,"step_partitions":0},"empty":false,'
    '"job_name":"orders","minimum_age_seconds":2592000,"plan_digest":'
    '"a0c8bbbb2ed0f56a80df1093f3cce7d7ded2e596ab242e156b4980c7901fbc45",'
    '"statuses":["FAILED","ABANDONED"]},"diagnostics":[],"outcome":"success",'
    '"schema_version":1,"truncated":false}\n'
)


def test_a_retention_plan_with_candidates(db: None) -> None:
    made = _orders()
    _starting((made[1], 2), (made[3], 4), (made[5], 6))
    JobExecution.objects.filter(id=4).update(
        status="FAILED", exit_code="FAILED", version=2, ended_at=T0
    )
    JobExecution.objects.filter(id=6).update(
        status="ABANDONED", exit_code="ABANDONED", version=2, ended_at=T0
    )
    four, six = JobExecution.objects.get(id=4), JobExecution.objects.get(id=6)
    for target in (four, four, six, six, six):
        factories.operator_request(target, requested_at=T0)
    factories.recovery_decision(six, prior="UNKNOWN", result="ABANDONED")
    client = Client()
    client.force_login(factories.administrator())
    body = {
        "job": "orders",
        "older_than": "30d",
        "batch": 10,
        "status": ["ABANDONED", "FAILED"],
    }

    def later() -> datetime:
        return datetime.fromtimestamp(1_800_000_000 + 31 * 86400, tz=UTC)

    with back_dated(later, using=alias()):
        response = client.post(
            "/api/v1/retention/plan/", body, content_type="application/json"
        )
        assert response.content.decode() == GOLDEN_PLAN
        stale = client.post(
            "/api/v1/retention/apply/",
            body
            | {
                "plan_digest": "b9c661b6ad332a08e69f113745583e9f564b993e8ddcfd6dc8b99999006cd96a",
                "reason": "RETENTION_POLICY",
                "operation_id": "purge-1",
            },
            content_type="application/json",
        )
    assert stale.status_code == 409
    # The CLI's stale-plan line names its own observed digest; here, this plan's.
    assert stale.content.decode() == (
        '{"command":"retention apply","data":{"observed_plan_digest":'
        '"a0c8bbbb2ed0f56a80df1093f3cce7d7ded2e596ab242e156b4980c7901fbc45"},'
        '"diagnostics":[{"code":"PLAN_STALE","detail":"the observed plan digest does not '
        'match the supplied digest; nothing was deleted"}],"outcome":"conflict",'
        '"schema_version":1,"truncated":false}\n'
    )


def test_a_statement_timeout_is_the_deadline_category(
    reader: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Cancelled(Exception):
        sqlstate = "57014"

    def slow(*args: object, **kwargs: object) -> None:
        raise OperationalError("canceling statement") from Cancelled()

    monkeypatch.setattr(queries, "job_names", slow)
    response = reader.get("/api/v1/jobs/")
    assert response.status_code == 504
    assert response.content == (
        b'{"command":"job list","data":null,"diagnostics":[{"code":"STATEMENT_TIMEOUT",'
        b'"detail":"the bounded query exceeded its statement timeout"}],"outcome":"error",'
        b'"schema_version":1,"truncated":false}\n'
    )


GOLDEN_2 = (
    '{"command":"execution show","data":{"attempt":1,"context":null,"counts":'
    '{"committed":0,"filtered":0,"processed":0,"read":0,"written":0},"definition":'
    '{"manifest_digest":"7b5fa0fd68076c75cd61bedaefcf4b7410e1003b53c575d7ba625c5ce5fd0104",'
    '"manifest_format":1,"revision":"r1"},"execution_id":6,"exit_code":"UNKNOWN",'
    '"failure":null,"instance_id":5,"job_name":"orders","owner_recorded":false,'
    '"recovery_proposal":{"ambiguous_external_effect":true,"attempt":1,'
    '"committed_flow_decision":false,"completed_partition":false,"evidence_digest":'
    '"0bcb0541104b8a0151dbf54c79bcd1a75bf106bf8beec32673fa2a1c2049e8ae",'
    '"inactivity_millis":3599500,"latest_step":null,"observation_window_millis":0,'
    '"observed_clock_offset_millis":0,"observed_version":1,"owner":"absent",'
    '"server_time":1800003601,"status":"UNKNOWN","unknown_commit":true,'
    '"updated_at":1800000002},"status":"UNKNOWN","stop_requested_at":null,'
    '"timestamps":{"created_at":1800000000,"ended_at":null,"started_at":null},'
    '"updated_at":1800000002,"version":1},"diagnostics":[],"outcome":"success",'
    '"schema_version":1,"truncated":false}\n'
)


def test_an_unknown_execution_with_its_recovery_proposal(
    reader: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """
    Golden 2: every byte, the evidence digest included, but ``context``.

    The CLI's in-memory adapter keeps no context and prints ``null``; over a
    database the execution has one, and the API shows its descriptor, as
    oxide-batch's PostgreSQL adapter does (docs/api.md).
    """
    made = _orders()
    revision = factories.definition("orders", "r1")
    JobDefinition.objects.filter(pk=revision.pk).update(
        manifest_digest=bytes.fromhex(
            "7b5fa0fd68076c75cd61bedaefcf4b7410e1003b53c575d7ba625c5ce5fd0104"
        )
    )
    execution = factories.execution(
        made[5],
        "STARTING",
        job_definition=revision,
        created_at=T0,
        updated_at=T0,
    )
    JobExecution.objects.filter(pk=execution.pk).update(
        id=6,
        status="UNKNOWN",
        version=1,
        updated_at=T0 + timedelta(seconds=2),
    )
    taken = recovery.snapshot

    def at_the_goldens_clock(execution_id: int) -> tuple[Any, int]:
        evidence, _server_ms = taken(execution_id)
        return evidence, 1_800_003_601_500

    monkeypatch.setattr(recovery, "snapshot", at_the_goldens_clock)
    body = _fetch(reader, "/api/v1/executions/6/").decode()
    context = json.loads(body)["data"]["context"]
    assert context is not None and set(context) >= {"format_version", "schema_id"}
    ours = body.replace(
        '"context":' + json.dumps(context, separators=(",", ":"), sort_keys=True),
        '"context":null',
        1,
    )
    assert ours == GOLDEN_2


GOLDEN_6C = (
    b'{"command":"job list","data":{"operation_id":null},"diagnostics":'
    b'[{"code":"DEADLINE_EXCEEDED","detail":"the client deadline elapsed; the '
    b'durable outcome is undetermined"}],"outcome":"error","schema_version":1,'
    b'"truncated":false}\n'
)


def _slow_read(*args: object, **kwargs: object) -> None:
    """A read that outlasts a one-second timeout on either backend."""
    with connections[read_alias()].cursor() as cursor:
        if cursor.db.vendor == "postgresql":
            cursor.execute("SELECT pg_sleep(3)")
        else:
            cursor.execute(
                "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n"
                " WHERE x < 1000000000) SELECT count(*) FROM n"
            )
        cursor.fetchall()


def test_a_read_past_its_timeout_is_the_client_deadline(
    reader: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Golden 6, third line: a read stopped by the caller's ``timeout``."""
    monkeypatch.setattr(queries, "job_names", _slow_read)
    response = reader.get("/api/v1/jobs/?timeout=1s")
    assert response.status_code == 504
    assert response.content == GOLDEN_6C
    # The connection serves the next read as before.
    factories.definition("orders")
    monkeypatch.undo()
    assert reader.get("/api/v1/jobs/?timeout=1h").status_code == 200


@pytest.mark.parametrize("value", ["0s", "999ms", "2h", "61m", "5", "1x", "", "1 s"])
def test_a_timeout_outside_the_clis_bounds_is_refused(
    reader: Client, value: str
) -> None:
    response = reader.get("/api/v1/jobs/", {"timeout": value})
    assert response.status_code == 400
    body = json.loads(response.content)
    assert body["outcome"] == "error"
    assert body["diagnostics"][0]["code"] == "INVALID_VALUE"


def test_a_write_takes_no_timeout(db: None) -> None:
    made = _orders()
    _starting((made[1], 2))
    client = Client()
    client.force_login(factories.operator())
    response = client.post(
        "/api/v1/executions/2/stop/?timeout=5s",
        {"expected_version": 0, "operation_id": "stop-2"},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert b'"code":"OPTION_NOT_ACCEPTED"' in response.content
    assert not OperatorRequest.objects.exists()
