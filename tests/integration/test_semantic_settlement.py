"""Semantic settlement that survives what happens around it: a write retried after it stopped half-way, LLM
fact passes that answer after a purge, fail, wait behind others, or outlive their process. The engine runs on
Qdrant Edge with the real inference service; the LLM is the scripted OpenAI-compatible test server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import REGISTRY

from hindsight.contracts.inference.v1 import inference_pb2_grpc
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.errors import Unavailable
from hindsight.runtime.llm import LLMClient, LLMSettings
from hindsight.runtime.records import RecordMeta
from hindsight.semantic.backend import open_vector_store
from hindsight.semantic.embedder import InferenceEmbedder, describe_model
from hindsight.semantic.engine import SemanticEngine
from hindsight.semantic.lineage_store import QdrantSemanticStore
from hindsight.semantic.llm_extract import LLMExtractor
from hindsight.semantic.records import Resolution, SemanticRecord
from hindsight.semantic.settings import SemanticSettings
from tests.llm_test_server import OpenAITestServer, Reply, openai_test_server

START = datetime(2024, 3, 1, 12, tzinfo=UTC)
WAIT_S = 30.0


class StopsBeforeSettling(QdrantSemanticStore):
    """The real store, made to fail its next supersede (as a Qdrant that drops the connection would)."""

    fail_next_supersede = False

    async def supersede(self, bank_id: str, record_id: str, valid_to: datetime, by: str) -> None:
        if self.fail_next_supersede:
            self.fail_next_supersede = False
            raise Unavailable("qdrant went away in the middle of a write")
        await super().supersede(bank_id, record_id, valid_to, by)


@contextlib.asynccontextmanager
async def parts(inference_addr: str) -> AsyncIterator[tuple[StopsBeforeSettling, InferenceEmbedder]]:
    client = LayerClient(inference_addr, inference_pb2_grpc.InferenceServiceStub)
    try:
        model = await describe_model(client, "", wait_seconds=5)
        async with open_vector_store(SemanticSettings(), model) as opened:
            store = StopsBeforeSettling(opened._client, opened.collection, opened._target)
            yield store, InferenceEmbedder(client, model)
    finally:
        await client.close()


def turn(turn_id: str, text: str, day: int = 0) -> SemanticRecord:
    return SemanticRecord(
        id=turn_id, text=text, speaker="Alice", meta=RecordMeta(time=START + timedelta(days=day))
    )


def owns(turn_number: int, value: str) -> dict[str, Any]:
    return {
        "turn": turn_number,
        "kind": "fact",
        "subject": "Alice",
        "attribute": "owns",
        "value": value,
        "text": f"Alice owns {value}.",
    }


async def until(condition: Callable[[], Awaitable[bool]], what: str) -> None:
    """Wait for ``condition`` (polled), at most :data:`WAIT_S` seconds."""
    async with asyncio.timeout(WAIT_S):
        while not await condition():
            await asyncio.sleep(0.02)
    assert await condition(), what


async def values(store: QdrantSemanticStore, bank: str, attribute: str) -> list[tuple[str, bool]]:
    chain = await store.facts_about(bank, [("Alice", attribute)], current_only=False)
    return sorted((fact.value, fact.current) for fact in chain)


def llm_engine(
    store: QdrantSemanticStore, embedder: InferenceEmbedder, server: OpenAITestServer, **more
) -> SemanticEngine:
    llm = LLMClient(LLMSettings(api_base=server.base_url, model="test", max_retries=0, backoff_seconds=0))
    return SemanticEngine(store, embedder, llm=LLMExtractor(llm, 10), **more)


async def test_an_upsert_retried_after_it_stopped_before_settling_leaves_one_current_value(
    inference_addr, unique_name
) -> None:
    async with parts(inference_addr) as (store, embedder):
        engine = SemanticEngine(store, embedder)
        await engine.upsert(unique_name, [turn("t1", "I live in Boston.")])
        store.fail_next_supersede = True
        with pytest.raises(Unavailable):
            await engine.upsert(unique_name, [turn("t2", "I live in Denver.", day=1)])
        await engine.upsert(unique_name, [turn("t2", "I live in Denver.", day=1)])  # the outbox retries
        assert await values(store, unique_name, "lives_in") == [("Boston", False), ("Denver", True)]


async def test_an_llm_pass_that_answers_after_a_purge_writes_nothing(inference_addr, unique_name) -> None:
    async with parts(inference_addr) as (store, embedder), openai_test_server() as server:
        server.script(Reply({"facts": [owns(1, "a red bicycle")]}, delay=0.5))
        engine = llm_engine(store, embedder, server)
        await engine.upsert(unique_name, [turn("t1", "Got a red bike today!")])

        async def asked() -> bool:
            return bool(server.requests)

        await until(asked, "the LLM was asked")
        await engine.delete(unique_name, ["t1"], ["t1"])  # the pass is waiting for the LLM's answer
        await engine.drain()
        assert await values(store, unique_name, "owns") == []
        assert await store.due_passes(datetime.now(UTC) + timedelta(days=1), 10) == []


async def test_failed_llm_passes_are_retried_and_the_last_failure_is_kept_and_counted(
    inference_addr, unique_name
) -> None:
    async with parts(inference_addr) as (store, embedder), openai_test_server() as server:
        server.script(Reply(status=500), Reply({"facts": [owns(1, "a red bicycle")]}))
        engine = llm_engine(store, embedder, server, llm_pass_attempts=3, llm_pass_backoff=0.05)
        await engine.upsert(unique_name, [turn("t1", "Got a red bike today!")])

        async def learned() -> bool:
            return await values(store, unique_name, "owns") == [("a red bicycle", True)]

        await until(learned, "the second attempt wrote the fact")
        counted = REGISTRY.get_sample_value("hindsight_semantic_llm_passes_given_up_total") or 0.0
        server.script(Reply(status=500), Reply(status=503), Reply(status=500))
        await engine.upsert(unique_name, [turn("t2", "I love tea.", day=1)])

        async def given_up() -> bool:
            return engine.passes.given_up == 1

        await until(given_up, "the pass was given up after its third attempt")
        [kept] = await store.failed_passes(unique_name)
        assert kept.attempts == 3 and [t.id for t in kept.turns] == ["t2"] and "500" in kept.error
        assert len(server.requests) == 5
        assert REGISTRY.get_sample_value("hindsight_semantic_llm_passes_given_up_total") == counted + 1
        await engine.delete(unique_name, ["t2"], ["t2"])  # its copy of the turn goes with the turn
        assert await store.failed_passes(unique_name) == []
        engine.close()


async def test_llm_passes_beyond_eight_wait_their_turn_and_a_restart_resumes_them(
    inference_addr, unique_name
) -> None:
    async with parts(inference_addr) as (store, embedder), openai_test_server() as server:
        things = [
            "a red bicycle",
            "a wooden violin",
            "a vintage camera",
            "a sailing boat",
            "a golden retriever",
            "an electric guitar",
            "a mountain cabin",
            "a telescope",
            "a chess set",
            "a pottery wheel",
            "a espresso machine",
            "a kayak",
        ]
        server.script(*(Reply({"facts": [owns(1, thing)]}, delay=0.1) for thing in things))
        engine = llm_engine(store, embedder, server)
        for n in range(12):
            await engine.upsert(unique_name, [turn(f"k{n}", f"Look at what I got, number {n}!", day=n)])

        async def all_learned() -> bool:
            return len(await values(store, unique_name, "owns")) == 12

        await until(all_learned, "every pass ran, none dropped")

        server.script(Reply(status=500))
        first = llm_engine(store, embedder, server, llm_pass_backoff=0.2)
        await first.upsert(unique_name, [turn("r1", "Got a green scooter!", day=20)])

        async def failed_once() -> bool:
            due = await store.due_passes(datetime.now(UTC) + timedelta(days=1), 10)
            return [item.attempts for _, item in due] == [1]

        await until(failed_once, "the first attempt failed")
        first.close()  # the process stops; the pass stays in the store
        server.script(Reply({"facts": [owns(1, "a green scooter")]}))
        second = llm_engine(store, embedder, server, llm_pass_backoff=0.2)
        second.resume()

        async def resumed() -> bool:
            return ("a green scooter", True) in await values(store, unique_name, "owns")

        await until(resumed, "the next process ran the pass")
        second.close()


async def test_a_review_decision_that_stops_half_way_stays_queued_and_a_retry_completes_it(
    inference_addr, unique_name
) -> None:
    async with parts(inference_addr) as (store, embedder):
        engine = SemanticEngine(store, embedder)
        await engine.upsert(unique_name, [turn("t1", "I live in Boston.")])
        await engine.upsert(unique_name, [turn("t2", "I live in Denver.")])  # same moment, same trust
        [item] = await engine.reviews(unique_name, 10)
        store.fail_next_supersede = True
        with pytest.raises(Unavailable):
            await engine.resolve(unique_name, item.id, Resolution.ACCEPT)
        assert [queued.id for queued in await engine.reviews(unique_name, 10)] == [item.id]
        await engine.resolve(unique_name, item.id, Resolution.ACCEPT)
        assert await engine.reviews(unique_name, 10) == []
        assert await values(store, unique_name, "lives_in") == [("Boston", False), ("Denver", True)]
