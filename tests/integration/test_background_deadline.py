"""Work that runs after a call has answered is not bound by that call's deadline.

The semantic layer's LLM fact pass runs after Upsert replied. Served over real gRPC with a short client
deadline and a test LLM server slower than that deadline, the facts the LLM found must still be embedded
(a call to the real inference service) and written.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.runtime import background
from hindsight.runtime.llm import LLMSettings
from hindsight.runtime.logs import bank_var, deadline_var, request_id_var
from hindsight.runtime.records import to_timestamp
from hindsight.runtime.testing import channel_to, serving
from hindsight.semantic.service import open_service
from hindsight.semantic.settings import SemanticSettings
from tests.llm_test_server import Reply, openai_test_server

CALLER_DEADLINE = 2.0
"""The Upsert caller's deadline: the test LLM answers only after it has passed."""
LLM_DELAY = CALLER_DEADLINE + 1.5
WAIT_FOR_FACTS = 60.0
"""How long the test waits for the fact to land before it fails (a bound, not a measured time)."""

LLM_ANSWER = {
    "facts": [
        {
            "turn": 1,
            "kind": "fact",
            "subject": "Alice",
            "attribute": "owns",
            "value": "a red bicycle",
            "text": "Alice owns a red bicycle.",
        }
    ]
}


async def _llm_fact(stub: semantic_pb2_grpc.SemanticServiceStub, bank: str) -> list[str]:
    reply = await stub.Search(
        semantic_pb2.SearchRequest(
            bank_id=bank, query="What does Alice have?", kinds=[semantic_pb2.RECORD_KIND_FACT], limit=50
        ),
        timeout=10,
    )
    return [hit.record.value for hit in reply.hits if hit.record.attribute == "owns"]


async def test_a_fact_pass_slower_than_the_callers_deadline_still_lands(inference_addr, unique_name) -> None:
    async with openai_test_server() as llm:
        llm.script(Reply(LLM_ANSWER, delay=LLM_DELAY))
        settings = SemanticSettings(inference_addr=inference_addr, qdrant_url="", qdrant_backend="local")
        llm_settings = LLMSettings(api_base=llm.base_url, model="test", max_retries=0, backoff_seconds=0)
        async with (
            serving(lambda: open_service(settings, llm_settings)) as server,
            channel_to(server) as channel,
        ):
            stub = semantic_pb2_grpc.SemanticServiceStub(channel)
            turn = semantic_pb2.SemanticRecord(
                id="t1",
                kind=semantic_pb2.RECORD_KIND_TURN,
                text="Got a red bike today!",
                speaker="Alice",
                session_id="s1",
                meta=common_pb2.RecordMeta(
                    source_turn_ids=["t1"],
                    source=common_pb2.SOURCE_USER,
                    time=to_timestamp(datetime(2024, 1, 1, tzinfo=UTC)),
                ),
            )
            await stub.Upsert(
                semantic_pb2.UpsertRequest(bank_id=unique_name, records=[turn]), timeout=CALLER_DEADLINE
            )
            async with asyncio.timeout(WAIT_FOR_FACTS):
                while not await _llm_fact(stub, unique_name):
                    await asyncio.sleep(0.2)
            assert await _llm_fact(stub, unique_name) == ["a red bicycle"]
            assert len(llm.requests) == 1


async def test_spawn_clears_the_deadline_keeps_the_log_context_and_holds_the_task() -> None:
    seen: dict[str, object] = {}

    async def work() -> str:
        seen.update(deadline=deadline_var.get(), request=request_id_var.get(), bank=bank_var.get())
        return "done"

    tokens = [deadline_var.set(1.0), request_id_var.set("r-1"), bank_var.set("b-1")]
    try:
        kept: set[asyncio.Task[object]] = set()
        task = background.spawn(work(), name="probe", timeout=5, keep=kept)
        assert task in kept
        assert await task == "done"
    finally:
        for var, token in zip((deadline_var, request_id_var, bank_var), tokens, strict=True):
            var.reset(token)
    assert seen == {"deadline": None, "request": "r-1", "bank": "b-1"}
    assert task not in kept


async def test_spawn_logs_a_failure_and_a_timeout_and_answers_none(caplog: pytest.LogCaptureFixture) -> None:
    async def fails() -> None:
        raise ValueError("boom")

    async def hangs() -> None:
        await asyncio.Event().wait()

    assert await background.spawn(fails(), name="failing", timeout=5) is None
    assert await background.spawn(hangs(), name="hanging", timeout=0.05) is None
    messages = {(record.getMessage(), getattr(record, "task", "")) for record in caplog.records}
    assert ("background task failed", "failing") in messages
    assert ("background task timed out", "hanging") in messages
