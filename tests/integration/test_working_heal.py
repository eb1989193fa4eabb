"""A session window that missed a turn while working memory was down is filled from episodic memory once it
is back, in time order: a real working service stopped and started again on its address."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from datetime import UTC, datetime, timedelta

from hindsight.contracts.working.v1 import working_pb2, working_pb2_grpc
from hindsight.episodic.service import open_service as open_episodic
from hindsight.episodic.settings import EpisodicSettings
from hindsight.mcp_edge.engine import open_engine
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.embedded import free_ports
from hindsight.runtime.errors import Unavailable
from hindsight.runtime.records import RecordMeta, Turn
from hindsight.runtime.server import RunningServer
from hindsight.runtime.testing import channel_to, serving
from hindsight.working.service import open_service as open_working
from hindsight.working.settings import WorkingSettings
from tests.integration.mesh import drop_schemas

WAIT_SECONDS = 30.0
"""Bound on waiting for the outbox to fill the window (it retries every 0.2 s at most here)."""
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def turn(turn_id: str, minute: int) -> Turn:
    return Turn(
        id=turn_id,
        session_id="s1",
        text=f"Step {minute} of the migration plan: {turn_id}.",
        meta=RecordMeta(time=T0 + timedelta(minutes=minute)),
    )


async def test_a_window_that_missed_a_turn_while_working_memory_was_down_is_filled_in_order(
    database_url: str, redis_url: str, unique_name: str
) -> None:
    working_port, semantic_port, reflect_port = free_ports(3)
    working_addr = f"127.0.0.1:{working_port}"
    prefix = f"t:{uuid.uuid4().hex[:10]}"

    def working_service() -> contextlib.AbstractAsyncContextManager[RunningServer]:
        return serving(
            lambda: open_working(WorkingSettings(redis_url=redis_url, prefix=prefix)), port=working_port
        )

    episodic_settings = EpisodicSettings(
        database_url=database_url,
        schema=unique_name,
        working_addr=working_addr,
        outbox_backoff_seconds=0.05,
        outbox_max_backoff_seconds=0.2,
        outbox_poll_seconds=0.1,
        outbox_timeout_seconds=2.0,
    )
    try:
        async with (
            serving(lambda: open_episodic(episodic_settings)) as episodic,
            open_engine(
                EdgeSettings(
                    working_addr=working_addr,
                    episodic_addr=f"127.0.0.1:{episodic.port}",
                    semantic_addr=f"127.0.0.1:{semantic_port}",  # never called by a retain
                    reflect_addr=f"127.0.0.1:{reflect_port}",
                    mcp_port=0,
                    write_timeout=2.0,
                )
            ) as engine,
        ):
            async with working_service():
                await engine.retain("b", [turn("t1", 1)])
            await engine.retain("b", [turn("t2", 2)])  # working memory is down: its window misses t2
            async with working_service() as working, channel_to(working) as channel:
                stub = working_pb2_grpc.WorkingMemoryServiceStub(channel)
                await reachable(engine.clients.working)
                await engine.retain("b", [turn("t3", 3)])  # appended at once, after the window missed t2
                window = await filled(stub, 3)
                assert window == ["t1", "t2", "t3"]
    finally:
        await drop_schemas(database_url, unique_name)


async def filled(stub: working_pb2_grpc.WorkingMemoryServiceStub, count: int) -> list[str]:
    """The window's turn ids once it holds ``count`` turns (waits, bounded)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        reply = await stub.GetWindow(working_pb2.GetWindowRequest(bank_id="b", session_id="s1"), timeout=10)
        ids = [entry.id for entry in reply.turns]
        if len(ids) >= count or time.monotonic() > deadline:
            return ids
        await asyncio.sleep(0.05)


async def reachable(client: LayerClient[working_pb2_grpc.WorkingMemoryServiceStub]) -> None:
    """Wait (bounded) until the edge's channel to working memory answers again."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        try:
            await client.call("GetWindow", working_pb2.GetWindowRequest(bank_id="b", session_id="s0"), 2.0)
            return
        except Unavailable:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


async def test_a_late_turn_goes_into_the_window_in_its_place_by_time(redis_url: str) -> None:
    prefix = f"t:{uuid.uuid4().hex[:10]}"
    async with (
        serving(lambda: open_working(WorkingSettings(redis_url=redis_url, prefix=prefix))) as working,
        channel_to(working) as channel,
    ):
        stub = working_pb2_grpc.WorkingMemoryServiceStub(channel)
        for turn_id, minute in (("t1", 1), ("t3", 3), ("t2", 2), ("t0", 0), ("t4", 4)):
            await stub.AppendTurns(
                working_pb2.AppendTurnsRequest(bank_id="b", turns=[turn(turn_id, minute).to_pb()]), timeout=10
            )
        reply = await stub.GetWindow(working_pb2.GetWindowRequest(bank_id="b", session_id="s1"), timeout=10)
        assert [entry.id for entry in reply.turns] == ["t0", "t1", "t2", "t3", "t4"]
        context = await stub.GetContext(
            working_pb2.GetContextRequest(bank_id="b", session_id="s1"), timeout=10
        )
        assert [entry.turn.id for entry in context.turns] == ["t0", "t1", "t2", "t3", "t4"]
        assert context.session_token_count == sum(entry.token_count for entry in context.turns)
