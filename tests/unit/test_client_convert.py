"""The client's generic message <-> dataclass copy: plain fields copy by name, the rest must be overridden,
and the blocking client keeps the async client's signatures."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from hindsight.client import AsyncMemoryClient, MemoryClient
from hindsight.client import types as t
from hindsight.client.convert import (
    episode_to_pb,
    from_message,
    from_messages,
    meta_from_pb,
    meta_to_pb,
    to_message,
    turn_from_pb,
    turn_to_pb,
)
from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.memory.v1 import memory_pb2
from hindsight.contracts.semantic.v1 import semantic_pb2

MOMENT = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)


def test_plain_fields_copy_by_name_repeated_as_tuples() -> None:
    reply = memory_pb2.InvalidateResponse(invalidated_ids=["a", "b"], unknown_ids=["c"])
    assert from_message(t.InvalidateResult, reply) == t.InvalidateResult(("a", "b"), (), ("c",), ())


def test_timestamps_read_as_datetimes_and_unset_as_none() -> None:
    stamp = Timestamp()
    stamp.FromDatetime(MOMENT)
    assert from_message(t.TimeRange, common_pb2.TimeRange(start=stamp)) == t.TimeRange(MOMENT, None)


def test_repeated_messages_read_as_a_tuple_of_records() -> None:
    relations = [semantic_pb2.Relation(type="sister", target="Ann"), semantic_pb2.Relation(type="boss")]
    assert from_messages(t.Relation, relations) == (t.Relation("sister", "Ann"), t.Relation("boss", ""))


def test_an_enum_a_nested_message_or_a_missing_field_must_be_overridden() -> None:
    with pytest.raises(TypeError, match=r"Turn\.role"):
        from_message(t.Turn, common_pb2.Turn(text="hi"), meta=t.RecordMeta())
    with pytest.raises(TypeError, match=r"Turn\.meta"):
        from_message(t.Turn, common_pb2.Turn(text="hi"), role=t.Role.USER)
    with pytest.raises(TypeError, match=r"ShareResult\.target_bank"):
        from_message(t.ShareResult, memory_pb2.ShareResponse(), shared=())
    with pytest.raises(TypeError, match=r"Turn\.role"):
        to_message(common_pb2.Turn, t.Turn("hi"), meta=None)


def test_to_message_copies_by_name_and_leaves_what_the_record_lacks_unset() -> None:
    spec = t.TurnFilter(session_id="s", tags=("a",))
    message = to_message(common_pb2.TimeRange, t.TimeRange(None, MOMENT))
    assert not message.HasField("start") and message.end.ToDatetime(tzinfo=UTC) == MOMENT
    built = to_message(memory_pb2.ListRecentRequest, spec)  # no bank_id or limit on the record
    assert (built.session_id, list(built.tags), built.bank_id, built.limit) == ("s", ["a"], "", 0)


def test_records_survive_a_round_trip() -> None:
    meta = t.RecordMeta(("t1",), t.Source.TOOL, t.Trust.HIGH, MOMENT, ("x",), 0.5, "agent")
    turn = t.Turn("hello", "s1", "id1", t.Role.ASSISTANT, "bot", meta)
    assert meta_from_pb(meta_to_pb(meta)) == meta
    assert turn_from_pb(turn_to_pb(turn)) == turn


def test_an_episode_sent_carries_its_outcome_but_not_its_recorded_time() -> None:
    message = episode_to_pb(t.Episode("s", "a", "o", success=False, recorded_at=MOMENT))
    assert not message.HasField("recorded_at")
    assert message.result != 0


def test_the_blocking_client_has_the_async_clients_signatures_and_docstrings() -> None:
    calls = [name for name, _ in inspect.getmembers(AsyncMemoryClient, inspect.iscoroutinefunction)]
    calls = [name for name in calls if not name.startswith("_") and name != "close"]
    assert len(calls) == 15
    for name in calls:
        blocking, awaited = getattr(MemoryClient, name), getattr(AsyncMemoryClient, name)
        assert not inspect.iscoroutinefunction(blocking)
        assert inspect.signature(blocking) == inspect.signature(awaited)
        assert blocking.__doc__ == awaited.__doc__ and blocking.__qualname__ == f"MemoryClient.{name}"
