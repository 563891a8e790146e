"""Bounds checks shared by the repository's operations (spec 1.3, 9.3)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from batchboard import digests
from batchboard.repository.errors import InvalidArgument
from batchboard.vocabulary import MAX_BIGINT

PAYLOAD_LIMIT = 1_048_576


def check_name(value: object, what: str, limit: int = 128) -> str:
    """Return ``value`` if it is a contract name of 1..limit bytes."""
    if not isinstance(value, str):
        raise InvalidArgument(f"the {what} must be a string")
    try:
        return digests.validate_name(value, what=what, limit=limit)
    except digests.ParameterError as error:
        raise InvalidArgument(str(error)) from None


def check_code(value: object, what: str) -> str:
    """Return ``value`` if it is a 1..64-byte code (exit code, reason)."""
    if not isinstance(value, str) or not 1 <= len(value.encode("utf-8")) <= 64:
        raise InvalidArgument(f"the {what} must be 1 to 64 bytes")
    return value


def check_bytes(value: object, size: int, message: str) -> bytes:
    """Return ``value`` as bytes if it is exactly ``size`` bytes, else raise."""
    if not isinstance(value, bytes | bytearray) or len(value) != size:
        raise InvalidArgument(message)
    return bytes(value)


def json_size(value: Any) -> int:
    """Return the UTF-8 size of ``value``'s compact JSON text."""
    # NaN and infinities are refused: they are not JSON and jsonb rejects them.
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return len(text.encode("utf-8"))


def check_payload(
    value: object, what: str, limit: int = PAYLOAD_LIMIT
) -> dict[str, Any]:
    """
    Return ``value`` as a dict if it is a JSON object within ``limit`` bytes.

    The message names the payload, never its content.
    """
    if not isinstance(value, Mapping):
        raise InvalidArgument(f"the {what} must be a JSON object")
    try:
        size = json_size(value)
    except (TypeError, ValueError):
        raise InvalidArgument(f"the {what} is not JSON-serialisable") from None
    if size > limit:
        raise InvalidArgument(f"the {what} is {size} bytes; the limit is {limit}")
    return dict(value)


def check_count(value: object, what: str) -> int:
    """Return ``value`` if it is a counter value, 0..2^63-1."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not 0 <= value <= MAX_BIGINT
    ):
        raise InvalidArgument(f"the {what} must be an integer from 0 to 2^63-1")
    return value
