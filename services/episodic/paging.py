"""Opaque page tokens for keyset pagination over (occurred_at, id).

A token is URL-safe base64 of a small JSON object naming the list it belongs to and the last row
of the previous page; callers must treat it as opaque. Keyset (not offset) pagination stays fast
and stable while new rows arrive.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hindsight.runtime.errors import InvalidArgument

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class PageKey:
    """The position after which the next page starts: the last row's time and id."""

    occurred_at: datetime
    id: str


def _micros(moment: datetime) -> int:
    delta = moment.astimezone(UTC) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def encode_page_token(kind: str, key: PageKey) -> str:
    """An opaque token for the page after ``key`` in the list named ``kind``."""
    payload = json.dumps({"k": kind, "t": _micros(key.occurred_at), "i": key.id}, separators=(",", ":"))
    return base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")


def decode_page_token(kind: str, token: str, field: str = "page_token") -> PageKey | None:
    """The key a token encodes (None for an empty token); a malformed token is INVALID_ARGUMENT."""
    if not token:
        return None
    try:
        raw = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_", validate=True)
        data = json.loads(raw.decode())
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidArgument(field, "is not a valid page token") from None
    if (
        not isinstance(data, dict)
        or data.get("k") != kind
        or not isinstance(data.get("i"), str)
        or not isinstance(data.get("t"), int)
        or isinstance(data.get("t"), bool)
    ):
        raise InvalidArgument(field, "is not a valid page token for this list")
    try:
        moment = _EPOCH + timedelta(microseconds=data["t"])
    except OverflowError:
        raise InvalidArgument(field, "is not a valid page token") from None
    return PageKey(moment, data["i"])
