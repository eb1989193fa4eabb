"""The context a recall assembles within a small token budget, over every real layer: each memory once,
every line with its speaker and time, and the budget spent on the best-ranked distinct memories."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.mcp_edge.context import count_tokens
from hindsight.mcp_edge.service import open_service
from hindsight.runtime.records import to_timestamp
from hindsight.runtime.testing import channel_to, serving
from tests.integration.mesh import LayerAddresses

TIMEOUT = 20
BANK = "context-budget"
BISCUIT = "I adopted a golden retriever puppy named Biscuit last weekend."
TURNS = [  # id, speaker, text, day of May 2025
    ("b1", "Caroline", BISCUIT, 1),
    ("b1-again", "Caroline", BISCUIT, 1),  # the same turn retained a second time under another id
    ("b2", "Melanie", "Biscuit the puppy chewed through my favourite running shoes yesterday.", 2),
    ("b3", "Caroline", "Biscuit the golden retriever starts puppy school at the dog park on Saturdays.", 3),
    ("b4", "Caroline", "My sister is moving to Lisbon for a job at a robotics startup.", 4),
    ("b5", "Melanie", "I ran my first half marathon in Rotterdam this spring.", 5),
]
LINE = re.compile(
    r"^- \[id=(?P<id>\S+?) (?P<time>\d{4}-\d\d-\d\d \d\d:\d\dZ)\] (?P<speaker>[^:]+): (?P<text>.+)$"
)


@pytest.fixture(scope="module")
async def memory(mesh_layers: LayerAddresses) -> AsyncIterator[memory_pb2_grpc.MemoryServiceStub]:
    # No relevance floor: a bank of six turns holds too little near a question for the floor to be what
    # this checks; the assembly sees every memory the recall returns.
    settings = mesh_layers.edge_settings(relevance_floor=0.0, relevance_support=0.0)
    async with serving(lambda: open_service(settings)) as server, channel_to(server) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        turns = [
            common_pb2.Turn(
                id=turn_id,
                session_id="s1",
                role=common_pb2.ROLE_USER,
                speaker=speaker,
                text=text,
                meta=common_pb2.RecordMeta(time=to_timestamp(datetime(2025, 5, day, 12, tzinfo=UTC))),
            )
            for turn_id, speaker, text, day in TURNS
        ]
        reply = await stub.Retain(memory_pb2.RetainRequest(bank_id=BANK, turns=turns), timeout=TIMEOUT)
        assert reply.indexed
        yield stub


async def _recall(stub: memory_pb2_grpc.MemoryServiceStub, budget: int) -> memory_pb2.RecallReply:
    request = memory_pb2.RecallRequest(
        bank_id=BANK,
        query="Tell me about Biscuit, Caroline's golden retriever puppy",
        top_k=10,
        token_budget=budget,
    )
    reply = await stub.Recall(request, timeout=TIMEOUT)
    assert not reply.partial, [r for r in reply.layer_reports if not r.ok]
    return reply


async def test_a_small_budget_holds_each_memory_once_with_its_speaker_and_time(memory) -> None:
    reply = await _recall(memory, budget=90)
    returned = [m.id for m in reply.memories]
    assert {"b1", "b1-again"} <= set(returned)  # both copies reached the assembly
    lines = [line for line in reply.context.splitlines() if line.startswith("- ")]
    assert sum(BISCUIT in line for line in lines) == 1, reply.context  # one line per thing said
    ids = [line.removeprefix("- [id=").split()[0].rstrip("]") for line in lines]
    assert len(ids) == len(set(ids)), reply.context
    said = {turn_id: (speaker, text, f"2025-05-0{day} 12:00Z") for turn_id, speaker, text, day in TURNS}
    for line in lines:  # every memory line: id, time, speaker, words
        match = LINE.match(line)
        assert match is not None, line
        assert (match["speaker"], match["text"], match["time"]) == said[match["id"]]
    assert list(reply.context_ids) == ids
    assert reply.context_tokens <= 90 and reply.context_tokens == count_tokens(reply.context)
    # The budget goes to the best-ranked distinct memories: the copy's place went to the next one.
    copy = max(("b1", "b1-again"), key=returned.index)  # the lower-ranked copy
    distinct = [rid for rid in returned if rid != copy]
    assert len(ids) >= 2 and set(ids) == set(distinct[: len(ids)])


async def test_the_whole_answer_fits_a_larger_budget_without_the_copy(memory) -> None:
    reply = await _recall(memory, budget=2000)
    assert len(reply.context_ids) == len(reply.memories) - 1
    assert not {"b1", "b1-again"} <= set(reply.context_ids)
    assert reply.context.count(BISCUIT) == 1
