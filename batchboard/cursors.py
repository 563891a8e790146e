"""
Explorer continuation tokens in oxide-batch's cursor format (spec 3.3).

A token is lowercase hex over::

    u8(1) ‖ u8(discriminant) ‖ key ‖ u64be(ceiling) ‖ binding[8] ‖ sha256[32]

where ``key`` is ``Identity``, ``Ordered`` or ``Name`` and ``binding`` is the
first eight bytes of the canonical digest of the query name, the page size and
the query's filter. A token printed by the oxide-batch CLI therefore continues
the same traversal here and the other way round. Tokens are unauthenticated:
they select rows the viewer may read anyway and confer no authority, so the
checks below only tell a damaged token from one of another query.
"""

from __future__ import annotations

import hashlib
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from batchboard.digests import CanonicalWriter
from batchboard.vocabulary import MAX_BIGINT

FORMAT_VERSION = 1
BINDING_TAG = "oxide-batch.explorer-query.v1"
BINDING_BYTES = 8
CHECKSUM_BYTES = 32
MAX_TOKEN_BYTES = 256
MAX_NAME_BYTES = 128
# Keys above this bound cannot be PostgreSQL bigint identities.
MAX_KEY = MAX_BIGINT

_TAG_IDENTITY = 1
_TAG_ORDERED = 2
_TAG_NAME = 3
_TAG_WINDOWED = 4
_HEX = re.compile(r"\A(?:[0-9a-f]{2})+\Z")

#: Where a :class:`Windowed` key's times count from.
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def micros(moment: datetime) -> int:
    """Return an aware time as whole microseconds since :data:`EPOCH`."""
    return (moment - EPOCH) // _MICROSECOND


#: The last time a :class:`Windowed` key may carry (Python's last date).
MAX_MICROS = micros(datetime.max.replace(tzinfo=UTC))


def moment(count: int) -> datetime:
    """Return the UTC time ``count`` microseconds after :data:`EPOCH`."""
    return EPOCH + count * _MICROSECOND


class CursorError(ValueError):
    """A continuation token was rejected; ``message`` says why, for the 400 page."""

    message = "The continuation token is not valid."

    def __str__(self) -> str:
        return self.message


class CursorInvalid(CursorError):
    """The token is malformed, oversized, truncated or fails its checksum."""

    message = "The continuation token is damaged or not a batchboard/oxide-batch token."


class CursorQueryMismatch(CursorError):
    """The token is intact but belongs to another query, filter or page size."""

    message = "The continuation token belongs to a different list, filter or page size."


@dataclass(frozen=True)
class Identity:
    """An immutable identity column value."""

    id: int


@dataclass(frozen=True)
class Ordered:
    """An immutable ordinal (attempt, sequence, ...) paired with its identity."""

    primary: int
    id: int


@dataclass(frozen=True)
class Name:
    """A job name (keyset over names)."""

    name: str


@dataclass(frozen=True)
class Windowed:
    """
    A row of a time window: its time and identity, with the window's bounds.

    Every value is whole microseconds since 1970-01-01 UTC, except the id.
    The bounds are the window as the first page resolved it (a relative
    bound such as ``2h`` against that page's clock), so every later page
    reads the same window. batchboard's own key kind: oxide-batch reports
    such a token as damaged.
    """

    at: int
    id: int
    lower: int
    upper: int


Key = Identity | Ordered | Name | Windowed


@dataclass(frozen=True)
class TimeWindow:
    """
    A time window as given (``since``, ``until``: the canonical texts the
    cursor binds) and as resolved (``lower`` inclusive, ``upper``
    exclusive; microseconds since 1970-01-01 UTC).
    """

    since: str
    until: str
    lower: int
    upper: int

    def carried(self, key: Key) -> TimeWindow:
        """
        Return this window with the bounds a cursor's key carries.

        A bound given as an absolute time must be the one carried: a token
        carrying another was made for another window.
        """
        lower, upper = windowed_bounds(key)
        if (self.since and not _relative(self.since) and lower != self.lower) or (
            self.until and not _relative(self.until) and upper != self.upper
        ):
            raise CursorQueryMismatch
        return TimeWindow(self.since, self.until, lower, upper)


def _relative(text: str) -> bool:
    """
    Return whether a bound's canonical text is relative (``30m``, ``7d``);
    an absolute one is ISO-8601 UTC ending in ``Z``.
    """
    return not text.endswith("Z")


@dataclass(frozen=True)
class QuerySpec:
    """
    One explorer query with its filter, as the binding covers it.

    ``filter`` is a tuple of ``str`` (written as CW strings) and ``int``
    (written as bare ``u64be``) in the order the contract gives.
    """

    name: str
    discriminant: int
    filter: tuple[str | int, ...]

    def binding(self, page_size: int) -> bytes:
        """Return the eight-byte binding of this query at ``page_size``."""
        writer = CanonicalWriter(BINDING_TAG).string(self.name).u64(page_size)
        for value in self.filter:
            if isinstance(value, str):
                writer.string(value)
            else:
                writer.u64(value)
        return writer.digest()[:BINDING_BYTES]


# -- the queries of spec 3.1 ---------------------------------------------------


def job_names() -> QuerySpec:
    return QuerySpec("list_job_names", 1, ("",))


def instances(job_name: str) -> QuerySpec:
    return QuerySpec("list_instances", 2, (job_name,))


def executions(job_instance_id: int) -> QuerySpec:
    return QuerySpec("list_executions", 3, (job_instance_id,))


def step_executions(job_execution_id: int) -> QuerySpec:
    return QuerySpec("list_step_executions", 4, (job_execution_id,))


def unresolved_executions(minimum_age_seconds: int) -> QuerySpec:
    return QuerySpec("list_unresolved_executions", 5, (minimum_age_seconds,))


def recovery_decisions(job_execution_id: int) -> QuerySpec:
    return QuerySpec("list_recovery_decisions", 6, (job_execution_id,))


def flow_decisions(job_execution_id: int) -> QuerySpec:
    return QuerySpec("list_flow_decisions", 7, (job_execution_id,))


def step_partitions(step_execution_id: int) -> QuerySpec:
    return QuerySpec("list_step_partitions", 8, (step_execution_id,))


def operator_requests(job_execution_id: int) -> QuerySpec:
    return QuerySpec("list_operator_requests", 9, (job_execution_id,))


def recent_executions(status: str | Sequence[str], job_name: str) -> QuerySpec:
    """
    Return batchboard's own query: executions across all jobs, newest first.

    oxide-batch has no such query; its discriminant (129) lies outside the
    range oxide-batch uses, so oxide-batch reports such a token as belonging
    to another query instead of misreading it. Several statuses are bound
    as one string, comma-separated in the order given (the explorer gives
    the schema's order), so one status binds as it always has.
    """
    statuses = status if isinstance(status, str) else ",".join(status)
    return QuerySpec("batchboard_recent_executions", 129, (statuses, job_name))


def windowed_executions(
    statuses: Sequence[str], job_name: str, window: TimeWindow
) -> QuerySpec:
    """
    Return batchboard's own query: executions updated within a time window.

    Ordered by last update, newest first, then by id; the key is
    :class:`Windowed`. The binding covers the statuses (as
    :func:`recent_executions` binds them), the job and the window's bounds
    as given, so a token for one window is refused under another; the
    resolved bounds travel in the key.
    """
    return QuerySpec(
        "batchboard_windowed_executions",
        140,
        (",".join(statuses), job_name, window.since, window.until),
    )


def windowed_instances(job_name: str, window: TimeWindow) -> QuerySpec:
    """Return batchboard's own query: a job's instances created within a window."""
    return QuerySpec(
        "batchboard_windowed_instances", 141, (job_name, window.since, window.until)
    )


def bulk_operations() -> QuerySpec:
    """Return batchboard's own query: bulk operations, newest first (131)."""
    return QuerySpec("batchboard_bulk_operations", 131, ())


# -- encoding ------------------------------------------------------------------


def _encode_key(key: Key) -> bytes:
    if isinstance(key, Identity):
        return struct.pack(">BQ", _TAG_IDENTITY, key.id)
    if isinstance(key, Ordered):
        return struct.pack(">BQQ", _TAG_ORDERED, key.primary, key.id)
    if isinstance(key, Windowed):
        return struct.pack(
            ">BQQQQ", _TAG_WINDOWED, key.at, key.id, key.lower, key.upper
        )
    raw = key.name.encode("utf-8")
    if not 1 <= len(raw) <= MAX_NAME_BYTES:
        raise ValueError("a name key holds 1 to 128 UTF-8 bytes")
    return struct.pack(">BB", _TAG_NAME, len(raw)) + raw


def encode(spec: QuerySpec, page_size: int, key: Key, ceiling: int) -> str:
    """Return the hex token that resumes ``spec`` after ``key``."""
    body = (
        struct.pack(">BB", FORMAT_VERSION, spec.discriminant)
        + _encode_key(key)
        + struct.pack(">Q", ceiling)
        + spec.binding(page_size)
    )
    return (body + hashlib.sha256(body).digest()).hex()


def _decode_key(rest: bytes) -> tuple[Key, bytes]:
    if not rest:
        raise CursorInvalid
    tag, rest = rest[0], rest[1:]
    if tag == _TAG_IDENTITY:
        if len(rest) < 8:
            raise CursorInvalid
        (value,) = struct.unpack(">Q", rest[:8])
        return Identity(value), rest[8:]
    if tag == _TAG_ORDERED:
        if len(rest) < 16:
            raise CursorInvalid
        primary, value = struct.unpack(">QQ", rest[:16])
        return Ordered(primary, value), rest[16:]
    if tag == _TAG_WINDOWED:
        if len(rest) < 32:
            raise CursorInvalid
        at, value, lower, upper = struct.unpack(">QQQQ", rest[:32])
        return Windowed(at, value, lower, upper), rest[32:]
    if tag == _TAG_NAME:
        if not rest:
            raise CursorInvalid
        length, rest = rest[0], rest[1:]
        if len(rest) < length:
            raise CursorInvalid
        try:
            name = rest[:length].decode("utf-8")
        except UnicodeDecodeError:
            raise CursorInvalid from None
        if "\x00" in name:
            # No stored name holds NUL (PostgreSQL refuses it in text).
            raise CursorInvalid
        return Name(name), rest[length:]
    raise CursorInvalid


def decode(token: object, spec: QuerySpec, page_size: int) -> tuple[Key, int]:
    """
    Return ``(key, ceiling)`` of a token for ``spec`` at ``page_size``.

    Raise :class:`CursorInvalid` or :class:`CursorQueryMismatch` in the order
    oxide-batch checks: text, length, checksum, version, key, ceiling and
    binding size first (invalid); then discriminant and binding (mismatch).
    The caller checks the key kind and range for its query.
    """
    if not isinstance(token, str) or not _HEX.match(token):
        raise CursorInvalid
    raw = bytes.fromhex(token)
    if not 1 <= len(raw) <= MAX_TOKEN_BYTES or len(raw) <= CHECKSUM_BYTES:
        raise CursorInvalid
    body, checksum = raw[:-CHECKSUM_BYTES], raw[-CHECKSUM_BYTES:]
    if hashlib.sha256(body).digest() != checksum:
        raise CursorInvalid
    if len(body) < 2 or body[0] != FORMAT_VERSION:
        raise CursorInvalid
    discriminant = body[1]
    key, rest = _decode_key(body[2:])
    if len(rest) < 8:
        raise CursorInvalid
    (ceiling,) = struct.unpack(">Q", rest[:8])
    binding = rest[8:]
    if len(binding) != BINDING_BYTES:
        raise CursorInvalid
    # The token is intact; a different query, filter or page size is a
    # mismatch, which the page reports differently from damage.
    if discriminant != spec.discriminant or binding != spec.binding(page_size):
        raise CursorQueryMismatch
    if ceiling > MAX_KEY:
        raise CursorInvalid
    return key, ceiling


def identity_key(key: Key) -> int:
    """Return the id of an ``Identity`` key; any other kind is invalid here."""
    if not isinstance(key, Identity) or not 0 < key.id <= MAX_KEY:
        raise CursorInvalid
    return key.id


def ordered_key(key: Key) -> tuple[int, int]:
    """Return ``(primary, id)`` of an ``Ordered`` key; any other kind is invalid."""
    if (
        not isinstance(key, Ordered)
        or not 0 <= key.primary <= MAX_KEY
        or not 0 < key.id <= MAX_KEY
    ):
        raise CursorInvalid
    return key.primary, key.id


def name_key(key: Key) -> str:
    """Return the name of a ``Name`` key; any other kind is invalid here."""
    if not isinstance(key, Name) or not key.name:
        raise CursorInvalid
    return key.name


def windowed_key(key: Key) -> tuple[int, int]:
    """Return ``(at, id)`` of a ``Windowed`` key; any other kind is invalid here."""
    windowed_bounds(key)
    assert isinstance(key, Windowed)
    if not 0 <= key.at <= MAX_MICROS or not 0 < key.id <= MAX_KEY:
        raise CursorInvalid
    return key.at, key.id


def windowed_bounds(key: Key) -> tuple[int, int]:
    """Return ``(lower, upper)`` a ``Windowed`` key carries; checked in order."""
    if not isinstance(key, Windowed) or not 0 <= key.lower <= key.upper <= MAX_MICROS:
        raise CursorInvalid
    return key.lower, key.upper


def unresolved_key(key: Key) -> int:
    """
    Return the id to resume the unresolved-executions list after.

    oxide-batch's own PostgreSQL query pages this list by identity while its
    rows carry ``Ordered(attempt, id)`` keys (spec 3.4), so a token it prints
    cannot be resumed there. batchboard emits ``Ordered(attempt, id)`` (what
    oxide-batch's encoder produces for these rows) and accepts both
    ``Ordered`` and ``Identity`` keys, resuming after the id part: the order
    is by id alone, so the attempt adds nothing.
    """
    if isinstance(key, Ordered):
        return ordered_key(key)[1]
    return identity_key(key)
