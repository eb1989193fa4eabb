"""Working memory through a real gRPC server on a real Redis."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import grpc
import pytest
import redis.asyncio as aioredis

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.working.v1 import working_pb2, working_pb2_grpc
from hindsight.runtime.records import Turn
from hindsight.runtime.testing import channel_to, serving, wait_serving
from hindsight.working.engine import WorkingMemory
from hindsight.working.service import SERVICE_NAME, open_service
from hindsight.working.settings import WorkingSettings
from hindsight.working.store import Keys, RedisWindowStore
from tests.integration.rpcs import assert_rejected_naming

TTL = 600


def turn(turn_id: str, text: str, session: str = "s1") -> common_pb2.Turn:
    return common_pb2.Turn(id=turn_id, session_id=session, text=text, role=common_pb2.ROLE_USER)


@pytest.fixture
async def settings(redis_url: str, unique_name: str) -> AsyncIterator[WorkingSettings]:
    """Settings with a key prefix of the test's own; its keys are deleted afterwards."""
    yield WorkingSettings(
        redis_url=redis_url, prefix=f"test:{unique_name}", ttl_seconds=TTL, max_window=50, remembered_ids=100
    )
    client = aioredis.from_url(redis_url)
    try:
        keys = [key async for key in client.scan_iter(match=f"test:{unique_name}:*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


@contextlib.asynccontextmanager
async def working(settings: WorkingSettings) -> AsyncIterator[working_pb2_grpc.WorkingMemoryServiceStub]:
    async with serving(lambda: open_service(settings)) as server, channel_to(server) as channel:
        yield working_pb2_grpc.WorkingMemoryServiceStub(channel)


async def append(stub: working_pb2_grpc.WorkingMemoryServiceStub, bank: str, *turns: common_pb2.Turn) -> int:
    reply = await stub.AppendTurns(working_pb2.AppendTurnsRequest(bank_id=bank, turns=turns), timeout=5)
    return reply.appended_count


async def window_ids(
    stub: working_pb2_grpc.WorkingMemoryServiceStub, bank: str, session: str = "s1", max_turns: int = 0
) -> list[str]:
    reply = await stub.GetWindow(
        working_pb2.GetWindowRequest(bank_id=bank, session_id=session, max_turns=max_turns), timeout=5
    )
    return [item.id for item in reply.turns]


async def test_the_window_returns_the_last_turns_oldest_first(settings: WorkingSettings) -> None:
    async with working(settings) as stub:
        assert await append(stub, "bank", *(turn(f"t{i}", f"message {i}") for i in range(25))) == 25
        assert await window_ids(stub, "bank", max_turns=3) == ["t22", "t23", "t24"]
        assert await window_ids(stub, "bank") == [f"t{i}" for i in range(5, 25)]  # default 20
        reply = await stub.GetWindow(
            working_pb2.GetWindowRequest(bank_id="bank", session_id="s1", max_turns=1)
        )
        assert reply.turns[0].text == "message 24"
        assert reply.turns[0].meta.source == common_pb2.SOURCE_USER


async def test_the_window_is_trimmed_to_its_maximum_length(settings: WorkingSettings) -> None:
    async with working(settings) as stub:
        for start in range(0, 60, 20):
            await append(stub, "bank", *(turn(f"t{i}", "x") for i in range(start, start + 20)))
        ids = await window_ids(stub, "bank", max_turns=200)
        assert ids == [f"t{i}" for i in range(10, 60)]


async def test_appending_a_turn_again_keeps_one_copy(settings: WorkingSettings) -> None:
    async with working(settings) as stub:
        assert (
            await append(stub, "bank", turn("a", "first"), turn("a", "first again"), turn("b", "second")) == 2
        )
        assert await append(stub, "bank", turn("b", "second"), turn("c", "third")) == 1
        assert await window_ids(stub, "bank") == ["a", "b", "c"]


async def test_concurrent_appends_of_the_same_turn_append_it_once(settings: WorkingSettings) -> None:
    async with working(settings) as stub:
        counts = await asyncio.gather(
            *(append(stub, "bank", turn("same", "hello"), turn(f"own{i}", "x")) for i in range(8))
        )
        assert sum(counts) == 9
        ids = await window_ids(stub, "bank", max_turns=50)
        assert ids.count("same") == 1 and len(ids) == 9


async def test_every_write_sets_a_ttl_on_the_session_keys(settings: WorkingSettings, redis_url: str) -> None:
    async with working(settings) as stub:
        await append(stub, "bank", turn("a", "hello"))
    keys = Keys(settings.prefix)
    client = aioredis.from_url(redis_url)
    try:
        for key in (keys.turns("bank", "s1"), keys.ids("bank", "s1"), keys.sessions("bank")):
            assert 0 < await client.ttl(key) <= TTL, key
    finally:
        await client.aclose()


async def test_an_unknown_session_has_an_empty_window(settings: WorkingSettings) -> None:
    async with working(settings) as stub:
        assert await window_ids(stub, "bank", session="never-seen") == []


async def test_search_ranks_recent_turns_and_leaves_out_non_matching_ones(settings: WorkingSettings) -> None:
    async with working(settings) as stub:
        await append(
            stub,
            "bank",
            turn("a", "the database migration timed out"),
            turn("b", "lunch at noon"),
            turn("c", "database is healthy", session="s2"),
            turn("d", "我昨天在北京大学见了王老师", session="s2"),
        )
        reply = await stub.SearchRecent(
            working_pb2.SearchRecentRequest(bank_id="bank", query="database migration")
        )
        assert [hit.turn.id for hit in reply.hits] == ["a", "c"]
        assert reply.hits[0].score > reply.hits[1].score > 0
        one = await stub.SearchRecent(
            working_pb2.SearchRecentRequest(bank_id="bank", query="database", session_id="s2")
        )
        assert [hit.turn.id for hit in one.hits] == ["c"]
        chinese = await stub.SearchRecent(working_pb2.SearchRecentRequest(bank_id="bank", query="北京大学"))
        assert [hit.turn.id for hit in chinese.hits] == ["d"]
        limited = await stub.SearchRecent(
            working_pb2.SearchRecentRequest(bank_id="bank", query="database", limit=1)
        )
        assert len(limited.hits) == 1


async def test_a_bank_never_sees_another_banks_turns(settings: WorkingSettings) -> None:
    async with working(settings) as stub:
        await append(stub, "bank-a", turn("a1", "secret plan alpha"))
        await append(stub, "bank-b", turn("b1", "secret plan beta"))
        assert await window_ids(stub, "bank-a") == ["a1"]
        assert await window_ids(stub, "bank-b") == ["b1"]
        reply = await stub.SearchRecent(
            working_pb2.SearchRecentRequest(bank_id="bank-b", query="secret plan")
        )
        assert [hit.turn.id for hit in reply.hits] == ["b1"]
        # the same turn id in another bank is a different turn
        assert await append(stub, "bank-b", turn("a1", "not a duplicate here")) == 1


async def test_sessions_older_than_the_ttl_are_pruned_from_the_live_set(settings: WorkingSettings) -> None:
    """The sessions index is pruned by last-write time, so searches stop scanning expired windows."""
    clock = [1_000_000.0]
    store = RedisWindowStore.from_settings(settings)
    memory = WorkingMemory(store, settings, clock=lambda: clock[0])
    try:
        await memory.append("bank", [Turn(id="old", session_id="old-session", text="deploy notes")])
        clock[0] += TTL / 2
        await memory.append("bank", [Turn(id="new", session_id="new-session", text="deploy again")])
        assert await store.live_sessions("bank", clock[0], 10) == ["new-session", "old-session"]
        clock[0] += TTL / 2 + 1
        hits = await memory.search("bank", "deploy", "", 10)
        assert [hit.turn.id for hit in hits] == ["new"]
        assert await store.live_sessions("bank", clock[0], 10) == ["new-session"]
    finally:
        await store.close()


async def test_forgotten_turns_leave_every_window_of_the_bank_and_only_that_bank(
    settings: WorkingSettings,
) -> None:
    async with working(settings) as stub:
        await append(
            stub, "bank", turn("a1", "keep me"), turn("a2", "forget me"), turn("b1", "forget me", "s2")
        )
        await append(stub, "other", turn("a2", "same id, other bank"))
        reply = await stub.ForgetTurns(working_pb2.ForgetTurnsRequest(bank_id="bank", turn_ids=["a2", "b1"]))
        assert reply.removed_count == 2
        assert await window_ids(stub, "bank") == ["a1"]
        assert await window_ids(stub, "bank", session="s2") == []
        assert await window_ids(stub, "other") == ["a2"]
        again = await stub.ForgetTurns(working_pb2.ForgetTurnsRequest(bank_id="bank", turn_ids=["a2"]))
        assert again.removed_count == 0
        assert await append(stub, "bank", turn("a2", "retained again after forgetting")) == 1
        with pytest.raises(grpc.aio.AioRpcError) as empty:
            await stub.ForgetTurns(working_pb2.ForgetTurnsRequest(bank_id="bank"))
        assert empty.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "turn_ids" in (empty.value.details() or "")


async def test_validation_errors_name_the_field(settings: WorkingSettings) -> None:
    async with working(settings) as stub:
        cases = [
            (
                stub.GetWindow(working_pb2.GetWindowRequest(bank_id="bank", session_id="s1", max_turns=201)),
                "max_turns",
            ),
            (stub.GetWindow(working_pb2.GetWindowRequest(bank_id="bank")), "session_id"),
            (stub.AppendTurns(working_pb2.AppendTurnsRequest(bank_id="bank")), "turns"),
            (
                stub.AppendTurns(
                    working_pb2.AppendTurnsRequest(bank_id="bank", turns=[turn("a", "ok"), turn("b", "  ")])
                ),
                "turns[1].text",
            ),
            (
                stub.AppendTurns(
                    working_pb2.AppendTurnsRequest(bank_id="bank", turns=[turn("a", "x", session="")])
                ),
                "turns[0].session_id",
            ),
            (stub.SearchRecent(working_pb2.SearchRecentRequest(bank_id="bank", query="")), "query"),
            (
                stub.SearchRecent(working_pb2.SearchRecentRequest(bank_id="bank", query="x", limit=101)),
                "limit",
            ),
        ]
        for call, field in cases:
            await assert_rejected_naming(call, field)
        # the rejected append wrote nothing
        assert await window_ids(stub, "bank") == []


async def test_readiness_turns_serving_once_redis_answers(settings: WorkingSettings) -> None:
    async with serving(lambda: open_service(settings)) as server, channel_to(server) as channel:
        await wait_serving(channel, SERVICE_NAME)
