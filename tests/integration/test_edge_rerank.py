"""The edge's rerank of the fused head, against the real inference service (and one that is down)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from hindsight.contracts.inference.v1 import inference_pb2_grpc
from hindsight.inference.service import open_service as open_inference
from hindsight.inference.settings import InferenceSettings
from hindsight.mcp_edge.domain import LayerName, RecalledMemory
from hindsight.mcp_edge.rerank import HeadReranker, reorder
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.records import RecordMeta
from hindsight.runtime.testing import serving

BANK = "bank-rerank"
TEXTS = [
    "Interest rates rose sharply last quarter.",
    "Melanie prefers green tea to coffee.",
    "The cat sleeps on the sofa every afternoon.",
    "The train to Berlin leaves at nine.",
]


def _memories(texts: list[str]) -> list[RecalledMemory]:
    return [
        RecalledMemory(
            id=f"m{i}", text=t, score=1.0 / (i + 1), meta=RecordMeta(), layers=(LayerName.EPISODIC,)
        )
        for i, t in enumerate(texts)
    ]


@pytest.fixture(scope="module")
async def inference_addr() -> AsyncIterator[str]:
    async with serving(lambda: open_inference(InferenceSettings())) as server:
        yield f"127.0.0.1:{server.port}"


@pytest.fixture
async def reranker(inference_addr: str) -> AsyncIterator[HeadReranker]:
    client = LayerClient(inference_addr, inference_pb2_grpc.InferenceServiceStub)
    head = HeadReranker(client, head=3)
    yield head
    await head.close()


async def test_the_head_is_reordered_by_relevance_and_the_tail_keeps_its_place(
    reranker: HeadReranker,
) -> None:
    memories = _memories(TEXTS)
    reordered = await reranker.rerank(BANK, "Where does the cat nap?", memories, time.monotonic() + 10)
    assert reordered[0].id == "m2"
    assert {m.id for m in reordered[:3]} == {"m0", "m1", "m2"}
    assert reordered[3] is memories[3]
    assert [m.score for m in reordered if m.id == "m2"] == [memories[2].score]  # the fused score stays


async def test_chinese_queries_are_reranked_too(reranker: HeadReranker) -> None:
    memories = _memories(["上个季度利率大幅上升。", "猫每天下午在沙发上睡觉。", "去柏林的火车九点出发。"])
    reordered = await reranker.rerank(BANK, "猫在哪里睡觉？", memories, time.monotonic() + 10)
    assert reordered[0].id == "m1"


async def test_no_time_left_or_a_dead_inference_service_keeps_the_fused_order(reranker: HeadReranker) -> None:
    memories = _memories(TEXTS)
    assert await reranker.rerank(BANK, "cat", memories, time.monotonic()) == memories
    dead = HeadReranker(LayerClient("127.0.0.1:9", inference_pb2_grpc.InferenceServiceStub), head=3)
    try:
        assert await dead.rerank(BANK, "cat", memories, time.monotonic() + 2) == memories
    finally:
        await dead.close()


async def test_an_unknown_reranker_keeps_the_fused_order(inference_addr: str) -> None:
    client = LayerClient(inference_addr, inference_pb2_grpc.InferenceServiceStub)
    unknown = HeadReranker(client, head=3, model="no-such-reranker")
    try:
        memories = _memories(TEXTS)
        assert (
            await unknown.rerank(BANK, "Where does the cat nap?", memories, time.monotonic() + 10) == memories
        )
    finally:
        await unknown.close()


def test_reorder_sorts_only_the_head_and_keeps_ties_in_fused_order() -> None:
    memories = _memories(["a", "b", "c", "d"])
    assert [m.id for m in reorder(memories, 3, [0.1, 0.5, 0.5])] == ["m1", "m2", "m0", "m3"]
    with pytest.raises(ValueError, match="2 scores for 3 memories"):
        reorder(memories, 3, [0.1, 0.2])


def test_a_blend_below_one_mixes_the_fused_rank_with_the_rerankers_rank() -> None:
    memories = _memories(["a", "b", "c"])
    assert [m.id for m in reorder(memories, 3, [0.1, 0.9, 0.5], blend=1.0)] == ["m1", "m2", "m0"]
    assert [m.id for m in reorder(memories, 3, [0.1, 0.9, 0.5], blend=0.5)] == ["m1", "m0", "m2"]
    assert [m.id for m in reorder(memories, 3, [0.1, 0.9, 0.5], blend=0.0)] == ["m0", "m1", "m2"]
