"""
Byte-exact keys, digests and checksums of the oxide-batch contract.

Everything here is pure: bytes in, bytes out, no database. The layouts are
those of the contract (instance key v1, canonical writer digests, manifest
digest, partition context checksum, component-state checksum, operator
request, recovery evidence and retention plan digests), so values computed
here equal the ones oxide-batch computes and stores.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from batchboard import schema
from batchboard.vocabulary import MAX_BIGINT

ParameterKind = Literal["string", "i64", "u64", "bool"]
PARAMETER_KINDS: tuple[ParameterKind, ...] = ("string", "i64", "u64", "bool")

_I64 = (-MAX_BIGINT - 1, MAX_BIGINT)
_U64 = (0, 2**64 - 1)
_STRING_LIMIT = 64 * 1024
_MICROSECOND = timedelta(microseconds=1)


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _u32(value: int) -> bytes:
    return struct.pack(">I", value)


def _u64(value: int) -> bytes:
    return struct.pack(">Q", value)


def _lp4(data: bytes) -> bytes:
    return _u32(len(data)) + data


class CanonicalWriter:
    """
    Accumulate the fields of a tagged canonical digest.

    The tag and every string or byte field are written length-prefixed with
    a 64-bit big-endian length; integers are bare 64-bit big-endian. The
    digest is SHA-256 of everything written.
    """

    def __init__(self, tag: str) -> None:
        self._parts: list[bytes] = []
        self.string(tag)

    def bytes(self, value: bytes) -> CanonicalWriter:
        self._parts.append(_u64(len(value)) + bytes(value))
        return self

    def string(self, value: str) -> CanonicalWriter:
        return self.bytes(value.encode("utf-8"))

    def u64(self, value: int) -> CanonicalWriter:
        self._parts.append(_u64(value))
        return self

    def opt_u64(self, value: int | None) -> CanonicalWriter:
        self._parts.append(b"\x00" if value is None else b"\x01" + _u64(value))
        return self

    def flag(self, value: bool) -> CanonicalWriter:
        return self.u64(1 if value else 0)

    # The method bytes() shadows the type inside the class body, hence builtins.
    def preimage(self) -> builtins.bytes:
        return b"".join(self._parts)

    def digest(self) -> builtins.bytes:
        return sha256(self.preimage())


# -- parameters and instance keys (spec 7.1, 7.2) ------------------------------


class ParameterError(ValueError):
    """A job parameter name or value is outside the contract's bounds."""


@dataclass(frozen=True)
class JobParameter:
    """One identifying job parameter: a kind and a value of that kind."""

    kind: ParameterKind
    value: str | int | bool

    def __post_init__(self) -> None:
        if self.kind not in PARAMETER_KINDS:
            raise ParameterError(f"unknown parameter kind {self.kind!r}")
        if self.kind == "bool":
            if not isinstance(self.value, bool):
                raise ParameterError("a bool parameter needs True or False")
        elif self.kind == "string":
            if not isinstance(self.value, str):
                raise ParameterError("a string parameter needs a str value")
            if len(self.value.encode("utf-8")) > _STRING_LIMIT:
                raise ParameterError("a string parameter is at most 64 KiB")
        else:
            low, high = _I64 if self.kind == "i64" else _U64
            if isinstance(self.value, bool) or not isinstance(self.value, int):
                raise ParameterError(f"an {self.kind} parameter needs an int value")
            if not low <= self.value <= high:
                raise ParameterError(f"the value is out of range for {self.kind}")

    @classmethod
    def string(cls, value: str) -> JobParameter:
        return cls("string", value)

    @classmethod
    def i64(cls, value: int) -> JobParameter:
        return cls("i64", value)

    @classmethod
    def u64(cls, value: int) -> JobParameter:
        return cls("u64", value)

    @classmethod
    def boolean(cls, value: bool) -> JobParameter:
        return cls("bool", value)

    def encoded(self) -> bytes:
        if self.kind == "string":
            assert isinstance(self.value, str)
            return b"\x01" + _lp4(self.value.encode("utf-8"))
        if self.kind == "i64":
            return b"\x02" + struct.pack(">q", self.value)
        if self.kind == "u64":
            return b"\x03" + _u64(int(self.value))
        return b"\x04" + (b"\x01" if self.value else b"\x00")


def validate_name(name: str, *, what: str = "name", limit: int = 128) -> str:
    """Return ``name`` if it is 1..limit UTF-8 bytes, trimmed, without controls."""
    size = len(name.encode("utf-8"))
    if not 1 <= size <= limit:
        raise ParameterError(f"{what} must be 1 to {limit} bytes, not {size}")
    if name != name.strip():
        raise ParameterError(f"{what} must not start or end with whitespace")
    if any(ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 for ch in name):
        raise ParameterError(f"{what} must not contain control characters")
    return name


def _sorted_parameters(
    parameters: Mapping[str, JobParameter],
) -> list[tuple[str, JobParameter]]:
    return sorted(parameters.items(), key=lambda item: item[0].encode("utf-8"))


def instance_key_preimage(
    job_name: str, parameters: Mapping[str, JobParameter]
) -> bytes:
    parts = [b"\x01", _lp4(job_name.encode("utf-8"))]
    for name, parameter in _sorted_parameters(parameters):
        validate_name(name, what="parameter name")
        parts.append(_lp4(name.encode("utf-8")) + parameter.encoded())
    return b"".join(parts)


def instance_key(job_name: str, parameters: Mapping[str, JobParameter]) -> bytes:
    """Return the 32-byte version-1 instance key of a job and its parameters."""
    validate_name(job_name, what="job name")
    return sha256(instance_key_preimage(job_name, parameters))


def parameters_json(parameters: Mapping[str, JobParameter]) -> dict[str, Any]:
    """Return the ``identifying_parameters`` JSON envelope of spec 7.2."""
    return {
        name: {"type": parameter.kind, "identifying": True, "value": parameter.value}
        for name, parameter in _sorted_parameters(parameters)
    }


def parameters_from_json(document: Mapping[str, Any]) -> dict[str, JobParameter]:
    """Parse a stored parameter envelope, rejecting what readers must reject."""
    parsed: dict[str, JobParameter] = {}
    for name, entry in document.items():
        if not isinstance(entry, Mapping) or entry.get("identifying") is not True:
            raise ParameterError(f"parameter {name!r} is not an identifying entry")
        kind = entry.get("type")
        if kind not in PARAMETER_KINDS:
            raise ParameterError(f"parameter {name!r} has an unknown type")
        parsed[name] = JobParameter(kind, entry.get("value"))  # type: ignore[arg-type]
    return parsed


def parameter_descriptors(document: Mapping[str, Any]) -> list[tuple[str, str]]:
    """
    Return ``(name, kind)`` pairs of a stored envelope, values left out.

    This is the displayable projection of parameters (spec 3.5).
    """
    out = []
    for name, entry in document.items():
        kind = entry.get("type") if isinstance(entry, Mapping) else None
        out.append((name, str(kind).upper() if kind in PARAMETER_KINDS else "?"))
    return sorted(out, key=lambda item: item[0].encode("utf-8"))


# -- canonical JSON, manifests and checksums (spec 2.3, 7.6) --------------------


def canonical_json(value: Any) -> bytes:
    """
    Serialize compactly with keys in byte order and non-ASCII unescaped.

    Floats are refused: their text form is not canonical across languages.
    """

    def check(node: Any) -> None:
        if isinstance(node, float):
            raise ValueError("canonical JSON takes no floats")
        if isinstance(node, Mapping):
            for item in node.values():
                check(item)
        elif isinstance(node, list | tuple):
            for item in node:
                check(item)

    check(value)
    return _dump(value).encode("utf-8")


def _dump(node: Any) -> str:
    # json.dumps(sort_keys=True) orders by code point; byte order of UTF-8 is
    # the same ordering except for surrogate-range subtleties that cannot
    # occur in str keys, so sort explicitly by encoded bytes to be exact.
    if isinstance(node, Mapping):
        items = sorted(node.items(), key=lambda item: str(item[0]).encode("utf-8"))
        return (
            "{"
            + ",".join(
                json.dumps(str(key), ensure_ascii=False) + ":" + _dump(value)
                for key, value in items
            )
            + "}"
        )
    if isinstance(node, list | tuple):
        return "[" + ",".join(_dump(item) for item in node) + "]"
    return json.dumps(node, ensure_ascii=False)


def manifest_digest(manifest: Mapping[str, Any]) -> bytes:
    """Return the manifest digest (the plan fingerprint) of a definition."""
    return sha256(canonical_json(manifest))


LEGACY_REVISION = "__m1_repository_port_v1"
LEGACY_MANIFEST: dict[str, Any] = {
    "format": 1,
    "repository_port": "m1",
    "revision": LEGACY_REVISION,
}

EMPTY_FAULT_STATE: dict[str, Any] = {"checkpoint": "0" * 64, "entries": []}


def fault_state_checksum(payload: Mapping[str, Any]) -> bytes:
    return sha256(canonical_json(payload))


def partition_context_envelope(
    format_version: int, schema_id: str, schema_version: int, payload: Mapping[str, Any]
) -> bytes:
    return canonical_json(
        {
            "format": "oxide-batch.execution-context",
            "format_version": format_version,
            "payload": payload,
            "schema": schema_id,
            "schema_version": schema_version,
        }
    )


def partition_context_checksum(
    format_version: int, schema_id: str, schema_version: int, payload: Mapping[str, Any]
) -> bytes:
    """Return the checksum stored in ``ob_step_partition.context_checksum``."""
    return sha256(
        partition_context_envelope(format_version, schema_id, schema_version, payload)
    )


def component_state_checksum(
    *,
    namespace: str,
    schema_id: str,
    schema_version: int,
    codec_id: str,
    codec_version: int,
    payload: bytes | None = None,
    external_content_id: bytes | None = None,
    external_encoded_len: int | None = None,
) -> bytes:
    """Return the checksum of a component-state row (inline or external)."""
    if payload is not None:
        marker = b"\x00" + payload
    else:
        assert external_content_id is not None and external_encoded_len is not None
        marker = b"\x01" + external_content_id + _u64(external_encoded_len)
    return sha256(
        b"oxide-batch.component-state\x00"
        + namespace.encode("utf-8")
        + b"\x00"
        + schema_id.encode("utf-8")
        + b"\x00"
        + _u32(schema_version)
        + codec_id.encode("utf-8")
        + b"\x00"
        + _u32(codec_version)
        + marker
    )


# -- operator requests (spec 4.2) -----------------------------------------------


@dataclass(frozen=True)
class DefinitionArgument:
    revision: str
    manifest_digest: bytes


@dataclass(frozen=True)
class RecoveryArgument:
    """Arguments of RECOVER; ``category`` is None for the abandon directive."""

    resulting_status: Literal["FAILED", "ABANDONED"]
    evidence_digest: bytes
    unknown_commit: bool
    category: str | None = None
    failure_id: int | None = None


def request_digest(
    *,
    action: str,
    target: str,
    expected_version: int | None,
    reason_code: str | None,
    arguments: DefinitionArgument | RecoveryArgument | None = None,
) -> bytes:
    """Return the 32-byte digest binding an operator request's identity."""
    writer = (
        CanonicalWriter("oxide-batch.operator-request.v1")
        .string(action)
        .string(target)
        .opt_u64(expected_version)
        .string(reason_code or "")
    )
    if arguments is None:
        writer.string("NONE")
    elif isinstance(arguments, DefinitionArgument):
        writer.string("DEFINITION").string(arguments.revision).bytes(
            arguments.manifest_digest
        )
    else:
        writer.string("RECOVERY").string(arguments.resulting_status).bytes(
            arguments.evidence_digest
        ).flag(arguments.unknown_commit)
        if arguments.resulting_status == "FAILED":
            assert arguments.category is not None and arguments.failure_id is not None
            writer.string(arguments.category.lower()).u64(arguments.failure_id)
        else:
            writer.string("")
    return writer.digest()


# -- recovery evidence (spec 5.3) -----------------------------------------------


@dataclass(frozen=True)
class CheckpointDescriptor:
    format_version: int
    schema_id: str
    schema_version: int
    encoded_len: int


@dataclass(frozen=True)
class StepEvidence:
    step_id: int
    status: str
    checkpoint: CheckpointDescriptor | None


@dataclass(frozen=True)
class RecoveryEvidence:
    execution_id: int
    status: str
    attempt: int
    version: int
    owner: Literal["ABSENT", "CURRENT_PROCESS", "OTHER_PROCESS"]
    updated_at_ms: int
    latest_step: StepEvidence | None
    unknown_commit: bool
    completed_partition: bool
    committed_flow_decision: bool
    ambiguous_external_effect: bool


def evidence_digest(evidence: RecoveryEvidence) -> bytes:
    """Return the digest that pins a recovery proposal's evidence."""
    writer = (
        CanonicalWriter("oxide-batch.recovery-evidence.v1")
        .u64(evidence.execution_id)
        .string(evidence.status)
        .u64(evidence.attempt)
        .u64(evidence.version)
        .string(evidence.owner)
    )
    ms = evidence.updated_at_ms
    if ms >= 0:
        writer.string("AFTER_EPOCH").u64(ms // 1000).u64((ms % 1000) * 1_000_000)
    else:
        before = -ms
        writer.string("BEFORE_EPOCH").u64(before // 1000).u64(
            (before % 1000) * 1_000_000
        )
    step = evidence.latest_step
    if step is None:
        writer.string("NO_STEP")
    else:
        writer.u64(step.step_id).string(step.status)
        if step.checkpoint is None:
            writer.string("NO_CHECKPOINT")
        else:
            writer.u64(step.checkpoint.format_version).string(
                step.checkpoint.schema_id
            ).u64(step.checkpoint.schema_version).u64(step.checkpoint.encoded_len)
    for marker in (
        evidence.unknown_commit,
        evidence.completed_partition,
        evidence.committed_flow_decision,
        evidence.ambiguous_external_effect,
    ):
        writer.flag(marker)
    return writer.digest()


# -- retention plans (spec 6.2) ---------------------------------------------------


def plan_digest(
    *,
    job_name: str,
    statuses: Iterable[str],
    min_age_seconds: int,
    batch: int,
    candidates: Iterable[tuple[int, int, int]],
) -> bytes:
    """
    Return the digest of a purge plan.

    ``statuses`` are written in the schema's enum order whatever order they
    come in; ``candidates`` are ``(instance id, execution id, version)``.
    """
    wanted = set(statuses)
    writer = CanonicalWriter("oxide-batch.retention-plan.v1").string(job_name)
    for status in schema.FINISHED:
        if status in wanted:
            writer.string(status)
    writer.u64(min_age_seconds).u64(batch)
    for instance_id, execution_id, version in candidates:
        writer.u64(instance_id).u64(execution_id).u64(version)
    return writer.digest()


# -- time -----------------------------------------------------------------------


def epoch_ms(moment: datetime) -> int:
    """Return ``moment`` as whole milliseconds since the epoch, half away from zero."""
    micros = (moment - datetime(1970, 1, 1, tzinfo=moment.tzinfo)) // _MICROSECOND
    sign = -1 if micros < 0 else 1
    return sign * ((abs(micros) + 500) // 1000)
