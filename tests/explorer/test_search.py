"""Parameter search: typed values give the instance key, looked up once."""

from __future__ import annotations

import logging

import pytest
from django.db import connection
from django.http import QueryDict
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from batchboard.digests import JobParameter
from batchboard.explorer import search
from tests import factories

URL = "/instances/search/"
SECRET = "acct-7731-secret"


@pytest.fixture
def ledger(db: None) -> int:
    """An instance keyed by four typed parameters, and a near miss."""
    factories.definition("ledger")
    factories.instance("ledger", {"account": JobParameter.string(SECRET)})
    found = factories.instance(
        "ledger",
        {
            "account": JobParameter.string(SECRET),
            "offset": JobParameter.i64(-42),
            "shard": JobParameter.u64(18446744073709551615),
            "dry_run": JobParameter.boolean(False),
        },
    )
    return int(found.pk)


def _typed(**overrides: str) -> dict[str, object]:
    rows = {
        "account": ("string", SECRET),
        "offset": ("i64", "-42"),
        "shard": ("u64", "18446744073709551615"),
        "dry_run": ("bool", "FALSE"),
    }
    data: dict[str, object] = {
        "job": "ledger",
        "name": [*rows, ""],
        "kind": [kind for kind, _value in rows.values()] + ["string"],
        "value": [overrides.get(name, value) for name, (_kind, value) in rows.items()]
        + [""],
    }
    return data


def test_the_url_is_the_named_one() -> None:
    assert reverse("batchboard:parameter_search") == URL


def test_typed_values_find_the_instance_in_one_lookup(
    value_reader: Client, ledger: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="django")
    caplog.set_level(logging.DEBUG, logger="batchboard")
    with CaptureQueriesContext(connection) as captured:
        response = value_reader.post(URL, _typed())
    assert response.status_code == 302
    assert response["Location"] == reverse("batchboard:instance", args=[ledger])
    lookups = [
        query["sql"]
        for query in captured.captured_queries
        if "ob_job_instance" in query["sql"]
    ]
    assert len(lookups) == 1 and "instance_key" in lookups[0]
    # The value travels in the body only: not in the URL, nor in a log.
    assert SECRET not in response["Location"] and "7731" not in response["Location"]
    assert SECRET not in caplog.text and "18446744073709551615" not in caplog.text
    followed = value_reader.get(response["Location"])
    assert followed.status_code == 200


def test_a_value_that_differs_finds_nothing_and_is_not_given_back(
    value_reader: Client, ledger: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="django")
    caplog.set_level(logging.DEBUG, logger="batchboard")
    response = value_reader.post(URL, _typed(offset="-43"))
    assert response.status_code == 404
    body = response.content.decode()
    assert "No instance of job “ledger” has these identifying parameters." in body
    # Names and kinds come back to the form; no value does.
    assert 'value="account"' in body and SECRET not in body and "-43" not in body
    assert SECRET not in caplog.text and "-43" not in caplog.text


def test_a_value_not_of_its_kind_is_refused_without_repeating_it(
    value_reader: Client, ledger: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="django")
    caplog.set_level(logging.DEBUG, logger="batchboard")
    for overrides, message in (
        ({"offset": "9223372036854775808"}, "“offset” is not a whole number"),
        ({"shard": "-1"}, "“shard” is not a whole number"),
        ({"dry_run": "maybe-secret"}, "“dry_run” must be true or false"),
    ):
        response = value_reader.post(URL, _typed(**overrides))
        assert response.status_code == 400
        body = response.content.decode()
        assert message in body
        for value in overrides.values():
            assert value not in body and value not in caplog.text


def test_search_needs_the_parameter_values_permission(
    reader: Client, ledger: int
) -> None:
    refused = reader.post(URL, _typed())
    assert refused.status_code == 403
    assert "Location" not in refused
    assert reader.get(URL, {"job": "ledger"}).status_code == 403


def test_the_form_offers_the_jobs_names_and_kinds(
    value_reader: Client, ledger: int
) -> None:
    body = value_reader.get(URL, {"job": "ledger"}).content.decode()
    assert 'value="account"' in body and 'value="dry_run"' in body
    assert SECRET not in body
    job = value_reader.get(reverse("batchboard:job", args=["ledger"]))
    assert f"{URL}?job=ledger" in job.content.decode()


def test_reading_a_search() -> None:
    read = search.read(
        QueryDict(
            "job=j&name=a&kind=i64&value=-5&name=b&kind=bool&value=True"
            "&name=&kind=string&value="
        )
    )
    assert read.errors == []
    assert read.parameters == {
        "a": JobParameter.i64(-5),
        "b": JobParameter.boolean(True),
    }
    bounds = search.read(
        QueryDict(
            "job=j&name=low&kind=i64&value=-9223372036854775808"
            "&name=high&kind=u64&value=18446744073709551615"
        )
    )
    assert bounds.parameters == {
        "low": JobParameter.i64(-(2**63)),
        "high": JobParameter.u64(2**64 - 1),
    }
    for kind, value in (("u64", "18446744073709551616"), ("i64", "1e3"), ("u64", "٣")):
        refused = search.read(QueryDict(f"job=j&name=n&kind={kind}&value={value}"))
        assert refused.parameters == {} and len(refused.errors) == 1
        assert value not in refused.errors[0]
    twice = search.read(
        QueryDict("job=j&name=a&kind=u64&value=1&name=a&kind=u64&value=2")
    )
    assert twice.errors == ["The parameter “a” is given twice."]
    nameless = search.read(QueryDict("job=&name=&kind=string&value=x"))
    assert len(nameless.errors) == 2
    kindless = search.read(QueryDict("job=j&name=a&kind=float&value=1"))
    assert "Choose the type of “a”" in kindless.errors[0]
    many = "&".join(["name=n&kind=string&value=v"] * (search.MAX_SEARCH_PARAMETERS + 1))
    assert (
        search.read(QueryDict(f"job=j&{many}"))
        .errors[0]
        .startswith("A search takes at most")
    )
