"""One page-token codec: tokens written before it (padded base64, spaced JSON, bare ids) still read, and a
malformed token is INVALID_ARGUMENT naming the field."""

from __future__ import annotations

import base64
import json

import pytest

from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.paging import (
    decode_position,
    decode_text,
    encode_position,
    encode_text,
    page_offset,
    page_token,
)
from hindsight.semantic.export_rows import _position


def test_a_position_round_trips_in_order_without_padding() -> None:
    token = encode_position({"k": "turns", "t": 1, "i": "é/+"})
    assert "=" not in token and "+" not in token and "/" not in token
    assert list(decode_position(token, kind="turns") or {}) == ["k", "t", "i"]


def test_a_semantic_export_token_of_the_earlier_format_still_reads() -> None:
    earlier = base64.urlsafe_b64encode(json.dumps({"t": "cold", "o": "abc-12"}).encode()).decode()
    assert earlier.endswith("=")  # padded, with spaces in the JSON
    assert _position(earlier) == ("cold", "abc-12")
    assert _position(encode_position({"t": "hot", "o": 7})) == ("hot", 7)


def test_a_lesson_export_token_of_the_earlier_format_still_reads() -> None:
    earlier = base64.urlsafe_b64encode(b"lesson-123").decode()
    assert earlier.endswith("=")
    assert decode_text(earlier) == "lesson-123" == decode_text(encode_text("lesson-123"))


@pytest.mark.parametrize(
    "token",
    ["not base64!", encode_text("not json"), encode_text("[1]"), encode_position({"k": "episodes"})],
)
def test_a_malformed_or_foreign_position_names_the_field(token: str) -> None:
    with pytest.raises(InvalidArgument) as error:
        decode_position(token, "cursor", kind="turns")
    assert error.value.field == "cursor"


def test_a_foreign_semantic_export_token_names_page_token() -> None:
    with pytest.raises(InvalidArgument) as error:
        _position(encode_position({"t": "warm", "o": 1}))
    assert error.value.field == "page_token"


def test_offsets_are_digits_and_anything_else_names_the_field() -> None:
    assert page_token(0) == "" and page_offset(page_token(12)) == 12 and page_offset("") == 0
    for bad in ("-1", "1.5", "²", "12", "x"):
        with pytest.raises(InvalidArgument) as error:
            page_offset(bad, "page_token", maximum=10)
        assert error.value.field == "page_token"
