"""Page tokens are opaque, round-trip exactly, and a malformed one is an error naming page_token."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest

from hindsight.episodic.paging import PageKey, decode_page_token, encode_page_token
from hindsight.runtime.errors import InvalidArgument


def test_a_token_round_trips_time_to_the_microsecond_and_the_id() -> None:
    key = PageKey(datetime(2025, 3, 14, 15, 9, 26, 535897, tzinfo=UTC), "turn:42/é")
    token = encode_page_token("turns", key)
    assert "=" not in token and "+" not in token and "/" not in token
    assert decode_page_token("turns", token) == key


def test_times_before_the_epoch_and_in_other_zones_survive() -> None:
    key = PageKey(datetime(1969, 7, 20, 20, 17, 40, 1, tzinfo=UTC), "apollo")
    assert decode_page_token("episodes", encode_page_token("episodes", key)) == key


def test_an_empty_token_means_the_first_page() -> None:
    assert decode_page_token("turns", "") is None


@pytest.mark.parametrize(
    "token",
    [
        "not base64 at all!",
        base64.urlsafe_b64encode(b"not json").decode(),
        base64.urlsafe_b64encode(b"[1, 2]").decode(),
        base64.urlsafe_b64encode(b'{"k": "turns", "t": "soon", "i": "x"}').decode(),
        base64.urlsafe_b64encode(b'{"k": "turns", "t": 1, "i": 7}').decode(),
        base64.urlsafe_b64encode(b'{"k": "turns", "t": 99999999999999999999999, "i": "x"}').decode(),
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
    ],
)
def test_a_malformed_token_is_invalid_and_names_page_token(token: str) -> None:
    with pytest.raises(InvalidArgument) as error:
        decode_page_token("turns", token)
    assert error.value.field == "page_token"


def test_a_token_from_another_list_is_refused() -> None:
    token = encode_page_token("episodes", PageKey(datetime(2025, 1, 1, tzinfo=UTC), "e1"))
    with pytest.raises(InvalidArgument, match="page_token"):
        decode_page_token("turns", token)
