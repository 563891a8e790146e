from __future__ import annotations

import pytest

from batchboard import cursors
from batchboard.cursors import (
    CursorInvalid,
    CursorQueryMismatch,
    Identity,
    Name,
    Ordered,
)

# Spec 8.2: tokens computed by oxide-batch's own Rust encoder.
JOB_NAMES = (
    "0101030462657461000000000000000551b5a03c32b5c160c25fbc4d6ead3a424c633345543765"
    "61bb04caa1731ed2dc64bed5b8f7d5afec"
)
INSTANCES = (
    "0102010000000000000008000000000000000982a58b45f7bab3b144d01fb1f78a67d100055515"
    "49bf8b7382a41256a1a96d6e6ea135779194cb3d"
)
EXECUTIONS = (
    "0103020000000000000003000000000000001500000000000000195a49f6ac623f6bde09fdb0b9"
    "8a0e88ededeb3a2cd532bbea4dbc3c5aad80dc3f1071330078ca3127"
)
UNRESOLVED = (
    "0105020000000000000001000000000000001e000000000000001f3b41e01691a460cf4d83a5fb"
    "cc4156478fb1abf1a4c74408444cb5c8642d8d7399b75588c001a8f6"
)
STEPS = (
    "010401000000000000006400000000000000786b85eccd25544a869e2770067b691fc3b5c7acf4"
    "21b652bd5fc17e03720817d0d83430df8b7f9b4e"
)


@pytest.mark.parametrize(
    ("spec", "size", "key", "ceiling", "token"),
    [
        (cursors.job_names(), 2, Name("beta"), 5, JOB_NAMES),
        (cursors.instances("nightly-import"), 2, Identity(8), 9, INSTANCES),
        (cursors.executions(7), 1, Ordered(3, 21), 25, EXECUTIONS),
        (cursors.unresolved_executions(900), 1, Ordered(1, 30), 31, UNRESOLVED),
        (cursors.step_executions(42), 50, Identity(100), 120, STEPS),
    ],
)
def test_tokens_match_oxide_batch_vectors(spec, size, key, ceiling, token) -> None:
    """Encoding reproduces oxide-batch's tokens byte for byte and decodes back."""
    assert cursors.encode(spec, size, key, ceiling) == token
    assert cursors.decode(token, spec, size) == (key, ceiling)


def test_job_names_cursor_resumes_after_beta() -> None:
    """The job-names vector resumes as (Name "beta", ceiling 5) at limit 2."""
    key, ceiling = cursors.decode(JOB_NAMES, cursors.job_names(), 2)
    assert cursors.name_key(key) == "beta"
    assert ceiling == 5


def test_other_page_size_is_a_query_mismatch() -> None:
    with pytest.raises(CursorQueryMismatch):
        cursors.decode(JOB_NAMES, cursors.job_names(), 3)


def test_other_query_is_a_query_mismatch() -> None:
    with pytest.raises(CursorQueryMismatch):
        cursors.decode(JOB_NAMES, cursors.instances("beta"), 2)


def test_other_filter_is_a_query_mismatch() -> None:
    with pytest.raises(CursorQueryMismatch):
        cursors.decode(INSTANCES, cursors.instances("nightly-export"), 2)


def test_flipped_last_byte_is_invalid() -> None:
    flipped = JOB_NAMES[:-2] + format(int(JOB_NAMES[-2:], 16) ^ 0xFF, "02x")
    with pytest.raises(CursorInvalid):
        cursors.decode(flipped, cursors.job_names(), 2)


@pytest.mark.parametrize(
    "token",
    [
        "",
        "0",
        "zz",
        JOB_NAMES.upper(),
        JOB_NAMES[:-1],
        "00" * 32,
        "00" * 257,
        " " + JOB_NAMES,
    ],
)
def test_malformed_text_is_invalid(token: str) -> None:
    with pytest.raises(CursorInvalid):
        cursors.decode(token, cursors.job_names(), 2)


def _reseal(body: bytes) -> str:
    import hashlib

    return (body + hashlib.sha256(body).digest()).hex()


def test_resealed_damage_is_invalid() -> None:
    """Bodies with a valid checksum but a bad structure are still invalid."""
    body = bytes.fromhex(JOB_NAMES)[:-32]
    spec = cursors.job_names()
    for damaged in (
        b"\x02" + body[1:],  # version
        body[:2] + b"\x09" + body[3:],  # unknown key tag
        body[:-9],  # truncated binding
        body + b"\x00",  # trailing byte
        body[:3] + b"\x04\xff\xfe\xfd\xfc" + body[8:],  # invalid UTF-8
    ):
        with pytest.raises(CursorInvalid):
            cursors.decode(_reseal(damaged), spec, 2)


def test_key_kind_checks() -> None:
    """Each query accepts only its key kind and bigint-sized values."""
    with pytest.raises(CursorInvalid):
        cursors.identity_key(Name("x"))
    with pytest.raises(CursorInvalid):
        cursors.identity_key(Identity(2**63))
    with pytest.raises(CursorInvalid):
        cursors.ordered_key(Identity(3))
    with pytest.raises(CursorInvalid):
        cursors.name_key(Identity(3))
    assert cursors.unresolved_key(Ordered(1, 30)) == 30
    assert cursors.unresolved_key(Identity(30)) == 30


def test_ceiling_beyond_bigint_is_invalid() -> None:
    spec = cursors.step_executions(1)
    token = cursors.encode(spec, 5, Identity(3), 2**63)
    with pytest.raises(CursorInvalid):
        cursors.decode(token, spec, 5)


def test_name_keys_round_trip_non_ascii() -> None:
    spec = cursors.job_names()
    token = cursors.encode(spec, 50, Name('서울/%"<b>'), 7)
    assert cursors.decode(token, spec, 50) == (Name('서울/%"<b>'), 7)
    assert len(bytes.fromhex(token)) == 52 + len('서울/%"<b>'.encode())


@pytest.mark.django_db
def test_cli_cursor_continues_the_same_traversal_here(client) -> None:
    """A token printed by oxide-batch resumes here: after id 8, ceiling 9."""
    from django.contrib.auth.models import Permission, User

    from tests import factories

    for pk in (7, 8, 9, 10):
        factories.instance("nightly-import", id=pk)
    user = User.objects.create_user("cli")
    user.user_permissions.set(
        Permission.objects.filter(
            codename__in=["view_jobinstance", "view_jobexecution"]
        )
    )
    client.force_login(user)
    response = client.get("/jobs/nightly-import/", {"size": "2", "cursor": INSTANCES})
    assert response.status_code == 200
    body = response.content.decode()
    # Only instance 7 lies below the key 8; 10 is above the ceiling 9.
    assert 'href="/instances/7/"' in body
    for pk in (8, 9, 10):
        assert f'href="/instances/{pk}/"' not in body
    assert "Load more" not in body


@pytest.mark.django_db
def test_cli_job_names_and_unresolved_cursors_are_accepted(admin_client) -> None:
    assert admin_client.get("/", {"size": "2", "cursor": JOB_NAMES}).status_code == 200
    response = admin_client.get(
        "/unresolved/", {"size": "1", "age": "900", "cursor": UNRESOLVED}
    )
    assert response.status_code == 200
    mismatch = admin_client.get(
        "/unresolved/", {"size": "1", "age": "901", "cursor": UNRESOLVED}
    )
    assert mismatch.status_code == 400
