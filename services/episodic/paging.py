"""Opaque page tokens for keyset pagination over (occurred_at, id).

A token (:mod:`hindsight.runtime.paging`) names the list it belongs to and the last row of the previous
page; callers must treat it as opaque. Keyset (not offset) pagination stays fast
and stable while new rows arrive.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hindsight.runtime.paging import decode_position, encode_position, foreign_token, not_a_token

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
    return encode_position({"k": kind, "t": _micros(key.occurred_at), "i": key.id})


def decode_page_token(kind: str, token: str, field: str = "page_token") -> PageKey | None:
    """The key a token encodes (None for an empty token); a malformed token is INVALID_ARGUMENT."""
    data = decode_position(token, field, kind)
    if data is None:
        return None
    if (
        not isinstance(data.get("i"), str)
        or not isinstance(data.get("t"), int)
        or isinstance(data.get("t"), bool)
    ):
        raise foreign_token(field)
    try:
        moment = _EPOCH + timedelta(microseconds=data["t"])
    except OverflowError:
        raise not_a_token(field) from None
    return PageKey(moment, data["i"])
