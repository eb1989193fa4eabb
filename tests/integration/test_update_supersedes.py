"""A correction through ``update`` on a real mesh (MCP over streamable HTTP with the official client, and
the gRPC ``MemoryService``): the new value answers first, and the fact drawn from the old version is history,
no longer current, in English and Chinese, every time (repeated: the semantic layer gets the new version and
the archive of the old one from the outbox)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import grpc
import pytest
from mcp import Client

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.runtime.records import to_timestamp
from tests.integration.mcp_http import call_tool, mcp_client, mcp_url
from tests.integration.mesh import LayerAddresses, MeshCredentials, serving_memory

TOKEN = "update-token"
TIMEOUT = 20
NOW = "2025-06-01T12:00:00Z"
RUNS = 5
CASES = {
    "en": ("I live in Berlin.", "I live in Munich.", "Where does the user live?", "Berlin", "Munich"),
    "zh": ("我住在北京。", "我住在上海。", "用户住在哪里？", "北京", "上海"),
}


@pytest.fixture(scope="module")
async def url(engine: MemoryEngine) -> AsyncIterator[str]:
    async with mcp_url(engine, "updates", TOKEN) as served:
        yield served


@pytest.fixture(scope="module")
async def stub(engine: MemoryEngine) -> AsyncIterator[memory_pb2_grpc.MemoryServiceStub]:
    async with serving_memory(engine, MeshCredentials(tokens=f"{TOKEN}=*")) as served:
        yield served.stub


def _client(url: str) -> Client:
    return mcp_client(url, TOKEN)


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return await call_tool(client, tool, arguments)


async def _facts(semantic: str, bank: str) -> list[semantic_pb2.SemanticRecord]:
    """Every fact of the bank about where the user lives, superseded ones included; none may wait in the
    review queue (a correction is no conflict to decide)."""
    async with grpc.aio.insecure_channel(semantic) as channel:
        stub = semantic_pb2_grpc.SemanticServiceStub(channel)
        reply = await stub.History(
            semantic_pb2.HistoryRequest(bank_id=bank, subject="user", attribute="lives_in"), timeout=TIMEOUT
        )
        queued = await stub.ListReviews(semantic_pb2.ListReviewsRequest(bank_id=bank), timeout=TIMEOUT)
    assert [(item.candidate.text, item.reason) for item in queued.items] == []
    return list(reply.records)


async def _current_turns(semantic: str, bank: str, query: str) -> list[str]:
    """The texts of the bank's current turns (history left out), as the semantic layer answers."""
    async with grpc.aio.insecure_channel(semantic) as channel:
        stub = semantic_pb2_grpc.SemanticServiceStub(channel)
        reply = await stub.Search(
            semantic_pb2.SearchRequest(
                bank_id=bank, query=query, limit=50, kinds=[semantic_pb2.RECORD_KIND_TURN]
            ),
            timeout=TIMEOUT,
        )
    return [hit.record.text for hit in reply.hits]


async def _assert_settled(semantic: str, bank: str, old_value: str, new_value: str) -> None:
    """One current fact, the new value; the old value's fact kept as history, superseded by it."""
    facts = await _facts(semantic, bank)
    shown = [(f.id, f.value, f.superseded_by, list(f.supersedes)) for f in facts]
    current = [fact for fact in facts if not fact.superseded_by]
    assert [fact.value for fact in current] == [new_value], shown
    [old] = [fact for fact in facts if fact.value == old_value]
    assert old.superseded_by == current[0].id and old.id in current[0].supersedes, shown


def _assert_new_value_first(memories: list[tuple[str, str]], old_value: str, new_value: str) -> None:
    """``memories``: (text, superseded_by) best first. The first names the new value; every memory that
    names the old one (the archived turn is gone, its fact stays as history) is marked superseded."""
    assert memories and new_value in memories[0][0], memories
    assert all(by for text, by in memories if old_value in text and new_value not in text), memories


@pytest.mark.parametrize("run", range(RUNS))
@pytest.mark.parametrize("language", sorted(CASES))
async def test_an_update_through_mcp_makes_the_new_value_current(
    url: str, mesh_layers: LayerAddresses, unique_name: str, language: str, run: int
) -> None:
    first, corrected, query, old_value, new_value = CASES[language]
    bank = f"{unique_name}-{run}"
    async with _client(url) as client:
        stored = await _call(client, "retain", {"text": first, "time": "2025-05-01T09:00:00Z", "bank": bank})
        [old_id] = stored["turn_ids"]
        await _call(
            client, "retain", {"text": "Lunch was a sandwich by the river.", "bank": bank, "time": NOW}
        )
        updated = await _call(client, "update", {"turn_id": old_id, "text": corrected, "bank": bank})
        assert updated["superseded_id"] == old_id and updated["indexed"], updated
        recalled = await _call(client, "recall", {"query": query, "bank": bank, "now": NOW})
    memories = [(m["text"], m["superseded_by"]) for m in recalled["memories"]]
    _assert_new_value_first(memories, old_value, new_value)
    await _assert_settled(mesh_layers.semantic, bank, old_value, new_value)


@pytest.mark.parametrize("run", range(RUNS))
@pytest.mark.parametrize("language", sorted(CASES))
async def test_an_update_through_grpc_makes_the_new_value_current(
    stub: memory_pb2_grpc.MemoryServiceStub,
    mesh_layers: LayerAddresses,
    unique_name: str,
    language: str,
    run: int,
) -> None:
    first, corrected, query, old_value, new_value = CASES[language]
    bank = f"{unique_name}-{run}"
    auth = (("authorization", f"Bearer {TOKEN}"),)
    turn = common_pb2.Turn(id="home", session_id="s1", role=common_pb2.ROLE_USER, text=first)
    await stub.Retain(memory_pb2.RetainRequest(bank_id=bank, turns=[turn]), metadata=auth, timeout=TIMEOUT)
    updated = await stub.Update(
        memory_pb2.UpdateRequest(bank_id=bank, turn_id="home", text=corrected), metadata=auth, timeout=TIMEOUT
    )
    assert updated.superseded_id == "home" and updated.indexed
    reply = await stub.Recall(
        memory_pb2.RecallRequest(bank_id=bank, query=query, top_k=10), metadata=auth, timeout=TIMEOUT
    )
    _assert_new_value_first([(m.text, m.superseded_by) for m in reply.memories], old_value, new_value)
    await _assert_settled(mesh_layers.semantic, bank, old_value, new_value)


@pytest.mark.parametrize("language", sorted(CASES))
async def test_an_update_of_a_value_that_replaced_an_earlier_one_leaves_both_as_history(
    url: str, mesh_layers: LayerAddresses, unique_name: str, language: str
) -> None:
    """The archived version leaves the semantic index; what it had replaced stays replaced (by the new
    version), not current again as it would be were the version deleted for good."""
    first, corrected, query, old_value, new_value = CASES[language]
    earliest, earliest_value = ("I live in Paris.", "Paris") if language == "en" else ("我住在广州。", "广州")
    async with _client(url) as client:
        await _call(client, "retain", {"text": earliest, "time": "2025-04-01T09:00:00Z", "bank": unique_name})
        stored = await _call(
            client, "retain", {"text": first, "time": "2025-05-01T09:00:00Z", "bank": unique_name}
        )
        [old_id] = stored["turn_ids"]
        await _call(client, "update", {"turn_id": old_id, "text": corrected, "bank": unique_name})
        recalled = await _call(client, "recall", {"query": query, "bank": unique_name, "now": NOW})
    memories = [(m["text"], m["superseded_by"]) for m in recalled["memories"]]
    _assert_new_value_first(memories, old_value, new_value)
    _assert_new_value_first(memories, earliest_value, new_value)
    facts = await _facts(mesh_layers.semantic, unique_name)
    shown = [(f.value, f.superseded_by) for f in facts]
    assert [f.value for f in facts if not f.superseded_by] == [new_value], shown
    turns = await _current_turns(mesh_layers.semantic, unique_name, query)
    assert [text for text in turns if earliest_value in text or old_value in text] == [], turns
    assert [text for text in turns if new_value in text] == [corrected], turns


async def test_deleting_a_value_inside_a_chain_links_its_predecessor_to_its_successor(
    mesh_layers: LayerAddresses, unique_name: str
) -> None:
    """Deleting a superseded value leaves the one before it superseded by the one after it; deleting the
    current value makes the one before it current again."""
    said = [
        ("paris", "I live in Paris.", 2019),
        ("berlin", "I live in Berlin.", 2021),
        ("munich", "I live in Munich.", 2023),
    ]
    async with grpc.aio.insecure_channel(mesh_layers.semantic) as channel:
        stub = semantic_pb2_grpc.SemanticServiceStub(channel)
        for turn_id, text, year in said:
            record = semantic_pb2.SemanticRecord(
                id=turn_id,
                kind=semantic_pb2.RECORD_KIND_TURN,
                text=text,
                session_id="s1",
                meta=common_pb2.RecordMeta(
                    source=common_pb2.SOURCE_USER,
                    trust=common_pb2.TRUST_HIGH,
                    time=to_timestamp(datetime(year, 3, 1, tzinfo=UTC)),
                ),
            )
            await stub.Upsert(
                semantic_pb2.UpsertRequest(bank_id=unique_name, records=[record]), timeout=TIMEOUT
            )
        chain = {fact.value: fact for fact in await _facts(mesh_layers.semantic, unique_name)}
        assert chain["Paris"].superseded_by == chain["Berlin"].id
        await stub.Delete(semantic_pb2.DeleteRequest(bank_id=unique_name, ids=["berlin", chain["Berlin"].id]))
        links = {f.value: f.superseded_by for f in await _facts(mesh_layers.semantic, unique_name)}
        assert links == {"Paris": chain["Munich"].id, "Munich": ""}, links
        turns = await _current_turns(mesh_layers.semantic, unique_name, "Where do I live?")
        assert turns == ["I live in Munich."], turns
        await stub.Delete(semantic_pb2.DeleteRequest(bank_id=unique_name, ids=["munich", chain["Munich"].id]))
        links = {f.value: f.superseded_by for f in await _facts(mesh_layers.semantic, unique_name)}
        assert links == {"Paris": ""}, links
        assert await _current_turns(mesh_layers.semantic, unique_name, "Where do I live?") == [
            "I live in Paris."
        ]
