"""Page tokens, one codec for every list of every layer; callers treat a token as opaque.

A keyset list (rows after the last one seen) writes its position as a small JSON object in URL-safe base64,
naming the list under ``"k"`` where several lists share a reader; an offset list (rows after the first
``n``) writes the offset as digits. Reading accepts what every earlier release wrote (base64 padded or
not, JSON compact or not), so a token handed out before an upgrade still reads. A token that does not
decode, or that belongs to another list, is the caller's error: INVALID_ARGUMENT naming the field.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from hindsight.runtime.errors import InvalidArgument

MAX_OFFSET = 2**63 - 1
"""The largest offset or row id a token may name (PostgreSQL's bigint)."""


def not_a_token(field: str = "page_token") -> InvalidArgument:
    """The error for a token that does not decode."""
    return InvalidArgument(field, "is not a valid page token")


def foreign_token(field: str = "page_token") -> InvalidArgument:
    """The error for a token that decodes but does not name a position in this list."""
    return InvalidArgument(field, "is not a valid page token for this list")


def encode_text(text: str) -> str:
    """``text`` as a token: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_text(token: str, field: str = "page_token") -> str:
    """The text a token holds; padding is optional."""
    try:
        raw = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_", validate=True)
        return raw.decode()
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise not_a_token(field) from None


def encode_position(position: Mapping[str, Any]) -> str:
    """The token of a keyset position (JSON values only; the keys are kept in order)."""
    return encode_text(json.dumps(position, separators=(",", ":")))


def decode_position(token: str, field: str = "page_token", kind: str | None = None) -> dict[str, Any] | None:
    """The position a token holds (None for an empty token: the first page). With ``kind``, a token of
    another list is refused; the caller checks the values it needs and raises :func:`foreign_token`."""
    if not token:
        return None
    try:
        data = json.loads(decode_text(token, field))
    except ValueError:
        raise not_a_token(field) from None
    if not isinstance(data, dict) or (kind is not None and data.get("k") != kind):
        raise foreign_token(field)
    return data


def page_token(offset: int) -> str:
    """The token of the page starting at ``offset`` ("" when there is none)."""
    return str(offset) if offset > 0 else ""


def page_offset(token: str, field: str = "page_token", maximum: int = MAX_OFFSET) -> int:
    """The offset a token names (0 for an empty token); one this service did not give is refused."""
    if not token:
        return 0
    if not (token.isascii() and token.isdigit()) or int(token) > maximum:
        raise InvalidArgument(field, "is not a token from a previous page")
    return int(token)
