"""The edge's session calls over real layers: Compress and CloseSession (gRPC) and their MCP tools.

Only the layers these calls reach are served (working, episodic, reflect); the semantic layer's address
refuses connections, which retain tolerates (the turns are safe in episodic memory).
"""

from __future__ import annotations

import contextlib
import socket
import uuid
from collections.abc import AsyncIterator

import grpc
import psycopg
import pytest
import redis.asyncio as aioredis
from mcp import Client
from psycopg import sql

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.episodic.service import open_service as open_episodic
from hindsight.episodic.settings import EpisodicSettings
from hindsight.mcp_edge.engine import open_engine
from hindsight.mcp_edge.mcp_server import build_mcp_server
from hindsight.mcp_edge.service import open_service as open_edge
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.reflect.service import open_service as open_reflect
from hindsight.reflect.settings import ReflectSettings
from hindsight.runtime.auth import Grants
from hindsight.runtime.records import Turn
from hindsight.runtime.testing import channel_to, serving
from hindsight.working.service import open_service as open_working
from hindsight.working.settings import WorkingSettings

TIMEOUT = 20
FACTS = [
    "We agreed the release ships on June 3 after Priya signs off.",
    "Please keep the cloud bill under 4,000 dollars a month.",
    "The staging database lives in Frankfurt and holds 120 GB.",
    "Still need to rotate the API keys before the audit by Tom.",
    "The deploy script needs the --force flag on staging.",
    "Omar will write the runbook for the 2 on-call engineers.",
]


def _refused_address() -> str:
    """An address nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


@contextlib.asynccontextmanager
async def session_layers(database_url: str, redis_url: str) -> AsyncIterator[EdgeSettings]:
    suffix = uuid.uuid4().hex[:10]
    episodic_schema, reflect_schema, prefix = f"t_ep_{suffix}", f"t_rf_{suffix}", f"t:{suffix}"
    try:
        async with contextlib.AsyncExitStack() as stack:
            working = await stack.enter_async_context(
                serving(lambda: open_working(WorkingSettings(redis_url=redis_url, prefix=prefix)))
            )
            episodic = await stack.enter_async_context(
                serving(
                    lambda: open_episodic(EpisodicSettings(database_url=database_url, schema=episodic_schema))
                )
            )
            episodic_addr = f"127.0.0.1:{episodic.port}"
            reflect = await stack.enter_async_context(
                serving(
                    lambda: open_reflect(
                        ReflectSettings(
                            database_url=database_url, schema=reflect_schema, episodic_addr=episodic_addr
                        )
                    )
                )
            )
            yield EdgeSettings(
                working_addr=f"127.0.0.1:{working.port}",
                episodic_addr=episodic_addr,
                semantic_addr=_refused_address(),
                reflect_addr=f"127.0.0.1:{reflect.port}",
                mcp_port=0,
                recall_timeout=5.0,
            )
    finally:
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
            for schema in (episodic_schema, reflect_schema):
                await conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        client = aioredis.from_url(redis_url)
        try:
            keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
            if keys:
                await client.delete(*keys)
        finally:
            await client.aclose()


@pytest.fixture(scope="module")
async def layers(database_url: str, redis_url: str) -> AsyncIterator[EdgeSettings]:
    async with session_layers(database_url, redis_url) as settings:
        yield settings


def _turns(session: str, count: int) -> list[common_pb2.Turn]:
    return [
        common_pb2.Turn(id=f"{session}-{i}", session_id=session, text=FACTS[i % len(FACTS)], speaker="Lee")
        for i in range(count)
    ]


async def test_compress_and_close_session_run_through_the_memory_service(layers: EdgeSettings) -> None:
    async with (
        serving(lambda: open_edge(layers)) as edge,
        channel_to(edge) as channel,
    ):
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        await stub.Retain(memory_pb2.RetainRequest(bank_id="b", turns=_turns("work", 14)), timeout=TIMEOUT)
        compressed = await stub.Compress(
            memory_pb2.CompressRequest(bank_id="b", session_id="work"), timeout=TIMEOUT
        )
        assert compressed.group_count == 1 and compressed.summarised_turn_count == 6  # 14 - 8 kept = 6
        assert compressed.tokens_after < compressed.tokens_before

        closed = await stub.CloseSession(
            memory_pb2.CloseSessionRequest(bank_id="b", session_id="work"), timeout=TIMEOUT
        )
        assert closed.closed and closed.reflected and not closed.reflect_error
        assert (closed.turn_count, closed.summary_count) == (8, 1) and closed.token_count > 0
        working = await stub.Recall(
            memory_pb2.RecallRequest(bank_id="b", query="cloud bill", layers=[memory_pb2.LAYER_WORKING]),
            timeout=TIMEOUT,
        )
        assert not working.memories  # the session's working memory is gone ...
        episodic = await stub.Recall(
            memory_pb2.RecallRequest(bank_id="b", query="cloud bill", layers=[memory_pb2.LAYER_EPISODIC]),
            timeout=TIMEOUT,
        )
        assert "work-1" in [m.id for m in episodic.memories]  # ... its turns are still in episodic memory

        again = await stub.CloseSession(memory_pb2.CloseSessionRequest(bank_id="b", session_id="work"))
        assert not again.closed
        with pytest.raises(grpc.aio.AioRpcError) as missing:
            await stub.Compress(memory_pb2.CompressRequest(bank_id="b"), timeout=TIMEOUT)
        assert missing.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert (missing.value.details() or "").startswith("session_id:")


async def test_mcp_compress_and_close_session_tools(layers: EdgeSettings) -> None:
    async with open_engine(layers) as engine:
        server = build_mcp_server(engine, Grants.off(), default_bank="mcp-bank")
        async with Client(server) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert {"compress", "close_session"} <= set(tools)
            assert tools["compress"].annotations.destructive_hint is False
            turns = [{"text": FACTS[i % len(FACTS)], "speaker": "Lee"} for i in range(16)]
            stored = await client.call_tool("retain", {"turns": turns, "session_id": "chat"})
            assert not stored.is_error, stored.content
            compressed = await client.call_tool("compress", {"session_id": "chat"})
            assert not compressed.is_error, compressed.content
            assert compressed.structured_content["group_count"] == 1
            assert compressed.structured_content["summarised_turn_count"] == 8
            episode = await client.call_tool(
                "write_episode",
                {"situation": "preparing the release", "action": "froze the branch", "session_id": "chat"},
            )
            assert not episode.is_error, episode.content
            closed = await client.call_tool("close_session", {"session_id": "chat"})
            assert not closed.is_error, closed.content
            result = closed.structured_content
            assert result["closed"] and result["reflected"] and result["episodes_read"] == 1


async def test_a_failed_reflection_does_not_undo_closing_the_session(
    database_url: str, redis_url: str
) -> None:
    async with session_layers(database_url, redis_url) as settings:
        broken = EdgeSettings(**{**vars(settings), "reflect_addr": _refused_address(), "write_timeout": 2.0})
        async with open_engine(broken) as engine:
            await engine.retain("b", [Turn(id="x1", session_id="s", text="remember the 42 lockers")])
            result = await engine.close_session("b", "s")
            assert result.closed and result.turn_count == 1
            assert not result.reflected and result.reflect_error
