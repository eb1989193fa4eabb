"""Summaries from a configured LLM (a scripted OpenAI-compatible server), with the extractive fallback."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.working.v1 import working_pb2
from hindsight.contracts.working.v1.working_pb2_grpc import WorkingMemoryServiceStub
from hindsight.runtime.llm import LLMClient, LLMSettings
from hindsight.runtime.records import Turn
from hindsight.runtime.testing import channel_to, serving
from hindsight.working.engine import WorkingMemory
from hindsight.working.service import open_service
from hindsight.working.settings import WorkingSettings
from hindsight.working.store import RedisWindowStore
from hindsight.working.summarise import LlmSummariser
from tests.llm_test_server import Reply, openai_test_server

TEXTS = [f"Turn {i}: the team agreed that item {i} costs {i * 100} euros and Ana owns it." for i in range(12)]


@contextlib.asynccontextmanager
async def store_for(settings: WorkingSettings) -> AsyncIterator[RedisWindowStore]:
    store = RedisWindowStore.from_settings(settings)
    try:
        yield store
    finally:
        client = aioredis.from_url(settings.redis_url)
        keys = [key async for key in client.scan_iter(match=f"{settings.prefix}:*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()
        await store.close()


def _settings(redis_url: str, unique_name: str, **overrides: object) -> WorkingSettings:
    values: dict[str, object] = {
        "redis_url": redis_url,
        "prefix": f"test:{unique_name}",
        "context_tokens": 400,
        "compress_at": 0.5,
        "keep_recent": 4,
    }
    values.update(overrides)
    return WorkingSettings(**values)  # type: ignore[arg-type]


async def test_the_service_uses_the_configured_llm_for_summaries(
    redis_url: str, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _settings(redis_url, unique_name, context_tokens=100_000)
    async with openai_test_server() as server, store_for(settings):
        server.script(Reply({"summary": "Ana owns items 0-7, 2,800 euros in all."}))
        monkeypatch.setenv("LLM_API_BASE", server.base_url)
        monkeypatch.setenv("LLM_MODEL", "small")
        async with serving(lambda: open_service(settings)) as running, channel_to(running) as channel:
            stub = WorkingMemoryServiceStub(channel)
            turns = [common_pb2.Turn(id=f"t{i}", session_id="s", text=t) for i, t in enumerate(TEXTS)]
            await stub.AppendTurns(working_pb2.AppendTurnsRequest(bank_id="bank", turns=turns))
            reply = await stub.Compress(
                working_pb2.CompressRequest(bank_id="bank", session_id="s"), timeout=10
            )
            assert (reply.group_count, reply.summariser) == (1, "llm")
            state = await stub.GetContext(working_pb2.GetContextRequest(bank_id="bank", session_id="s"))
            assert state.summaries[0].turn.text == "Ana owns items 0-7, 2,800 euros in all."
        sent = server.requests[0].body
        assert "Turn 0" in sent["messages"][1]["content"] and "Turn 7" in sent["messages"][1]["content"]


async def test_an_llm_that_fails_or_overruns_gives_way_to_the_extractive_summariser(
    redis_url: str, unique_name: str
) -> None:
    settings = _settings(redis_url, unique_name)
    async with openai_test_server() as server, store_for(settings) as store:
        server.script(Reply(status=400, content={"error": "bad"}), Reply({"summary": "x" * 5000}))
        client = LLMClient(LLMSettings(api_base=server.base_url, model="small", max_retries=0))
        memory = WorkingMemory(store, settings, summariser=LlmSummariser(client))
        try:
            appended = await memory.append(
                "bank", [Turn(id=f"t{i}", session_id="s", text=t) for i, t in enumerate(TEXTS)]
            )
            assert appended.compressed_groups == 0  # with an LLM, compression runs in the background
            await memory.drain()
            headers = await store.headers("bank", "s")
            summaries = [item.decode() for item in headers if item.kind.value == "summary"]
            assert summaries, "the threshold was passed, so the session must have been compressed"
            assert sum(item.token_count for item in headers) <= settings.target_tokens
            for summary in summaries:  # the extractive stand-in kept the numbers
                assert "euros" in summary.turn.text
        finally:
            await client.close()
