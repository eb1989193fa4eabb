"""Validity in time on a real mesh, through MCP over streamable HTTP with the official client and through the
gRPC MemoryService, in English and Chinese: a recall about now puts what holds first and marks what a later
statement replaced; ``as_of`` and a question about a time answer with what held then; ``invalidate`` ends a
memory's validity without deleting it, audited; a bad ``as_of`` is refused naming the field."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import grpc
import pytest
from mcp import Client

from hindsight.cli.export import dump
from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.runtime.records import to_timestamp
from tests.integration.mcp_http import call_tool, mcp_client, mcp_url
from tests.integration.mesh import LayerAddresses, MeshCredentials, serving_memory

TOKEN = "validity-token"
TIMEOUT = 20
NOW = "2025-06-01T12:00:00Z"
OLD_TIME = "2025-03-10T09:00:00Z"
NEW_TIME = "2025-05-01T09:00:00Z"
CASES = {
    # old statement, new statement, question about now, question about March, old value, new value
    "en": (
        "My locker number is 112.",
        "My locker number is 87.",
        "What is my locker number?",
        "What was my locker number in March?",
        "112",
        "87",
    ),
    "zh": (
        "我的车位号是B12。",
        "我的车位号是C7。",
        "我的车位号是多少？",
        "三月我的车位号是多少？",
        "B12",
        "C7",
    ),
}
STANDUP = {
    "en": ("The team standup is at 9:30 in room Aurora.", "When is the team standup?"),
    "zh": ("团队站会在早上九点半，地点是极光会议室。", "团队站会什么时候开？"),
}


@pytest.fixture(scope="module")
async def url(engine: MemoryEngine) -> AsyncIterator[str]:
    async with mcp_url(engine, "validity", TOKEN) as served:
        yield served


@pytest.fixture(scope="module")
async def stub(engine: MemoryEngine) -> AsyncIterator[memory_pb2_grpc.MemoryServiceStub]:
    async with serving_memory(engine, MeshCredentials(tokens=f"{TOKEN}=*")) as served:
        yield served.stub


METADATA = (("authorization", f"Bearer {TOKEN}"),)


async def _say(client: Client, bank: str, text: str, time: str) -> str:
    stored = await call_tool(client, "retain", {"text": text, "time": time, "bank": bank})
    assert stored["indexed"]
    [turn_id] = stored["turn_ids"]
    return str(turn_id)


async def _recall(client: Client, bank: str, query: str, **extra: Any) -> dict[str, Any]:
    return await call_tool(client, "recall", {"query": query, "bank": bank, "top_k": 3, **extra})


def _shown(recalled: dict[str, Any]) -> list[tuple[str, str, bool, str]]:
    return [(m["id"], m["text"], m["outdated"], m["outdated_note"]) for m in recalled["memories"]]


async def _semantic_history(semantic: str, bank: str, query: str) -> dict[str, semantic_pb2.SemanticRecord]:
    """The bank's turn records near ``query``, history included, by id (what the semantic layer keeps)."""
    async with grpc.aio.insecure_channel(semantic) as channel:
        reply = await semantic_pb2_grpc.SemanticServiceStub(channel).Search(
            semantic_pb2.SearchRequest(
                bank_id=bank,
                query=query,
                limit=50,
                include_history=True,
                kinds=[semantic_pb2.RECORD_KIND_TURN],
            ),
            timeout=TIMEOUT,
        )
    return {hit.record.id: hit.record for hit in reply.hits}


@pytest.mark.parametrize("language", sorted(CASES))
async def test_as_of_and_a_time_question_answer_with_the_value_of_then_and_now_with_the_new_one(
    url: str, unique_name: str, language: str
) -> None:
    first, later, now_question, march_question, old_value, new_value = CASES[language]
    async with mcp_client(url, TOKEN) as client:
        old = await _say(client, unique_name, first, OLD_TIME)
        await _say(client, unique_name, "Lunch was a sandwich by the river.", "2025-04-02T09:00:00Z")
        new = await _say(client, unique_name, later, NEW_TIME)

        current = await _recall(client, unique_name, now_question, now=NOW)
        top = current["memories"][0]
        assert top["id"] == new and not top["outdated"], _shown(current)
        marked = [m for m in current["memories"] if m["id"] == old]
        if marked:  # history stays, below and marked
            assert marked[0]["outdated"] and marked[0]["superseded_by"] == new, _shown(current)
            assert marked[0]["outdated_note"].startswith("outdated since 2025-05-01, now: "), _shown(current)
            assert f"[{marked[0]['outdated_note']}]" in current["context"]

        then = await _recall(client, unique_name, now_question, now=NOW, as_of="2025-04-01T00:00:00Z")
        assert then["memories"][0]["id"] == old, _shown(then)
        assert old_value in then["memories"][0]["text"] and not then["memories"][0]["outdated"]
        assert new not in [m["id"] for m in then["memories"]], _shown(then)  # said after as_of

        march = await _recall(client, unique_name, march_question, now=NOW)
        assert march["memories"][0]["id"] == old, _shown(march)
        assert not march["memories"][0]["outdated"], _shown(march)
        for memory in march["memories"]:
            if memory["id"] == new:
                assert memory["outdated"] and "not yet valid then" in memory["outdated_note"], _shown(march)
    assert new_value in top["text"]


@pytest.mark.parametrize("language", sorted(STANDUP))
async def test_invalidate_ends_validity_without_deleting_and_is_audited(
    url: str, engine: MemoryEngine, mesh_layers: LayerAddresses, unique_name: str, language: str
) -> None:
    text, question = STANDUP[language]
    async with mcp_client(url, TOKEN) as client:
        standup = await _say(client, unique_name, text, OLD_TIME)
        before = await _recall(client, unique_name, question)
        assert before["memories"][0]["id"] == standup and not before["memories"][0]["outdated"]

        done = await call_tool(
            client,
            "invalidate",
            {"ids": [standup], "reason": "the standup was cancelled", "bank": unique_name},
        )
        assert done["invalidated_ids"] == [standup] and done["unknown_ids"] == [], done
        again = await call_tool(client, "invalidate", {"ids": [standup], "bank": unique_name})
        assert again["invalidated_ids"] == [] and again["unchanged_ids"] == [standup], again

        after = await _recall(client, unique_name, question)
        for memory in after["memories"]:  # never returned as current any more
            if memory["id"] == standup:
                assert memory["outdated"] and memory["valid_to"] is not None, _shown(after)
                assert "(invalidated)" in memory["outdated_note"], _shown(after)
        assert all(m["id"] != standup for m in after["memories"] if not m["outdated"]), _shown(after)

        earlier = await _recall(client, unique_name, question, as_of="2025-04-01T00:00:00Z")
        assert earlier["memories"][0]["id"] == standup and not earlier["memories"][0]["outdated"]

        recent = await call_tool(client, "list_recent", {"bank": unique_name, "limit": 10})
        assert standup in [turn["id"] for turn in recent["turns"]]  # nothing deleted

    kept = await _semantic_history(mesh_layers.semantic, unique_name, question)
    assert kept[standup].HasField("valid_to") and kept[standup].superseded_by == ""
    log = await engine.list_audit(episodic_pb2.ListAuditRequest(bank_id=unique_name, action="invalidate"))
    assert [(e.action, e.target, e.reason) for e in log.entries] == [  # newest first
        ("invalidate", standup, "no reason given"),
        ("invalidate", standup, "the standup was cancelled"),
    ]


async def test_invalidate_with_an_end_time_marks_the_memory_outdated_since_then(
    url: str, unique_name: str
) -> None:
    async with mcp_client(url, TOKEN) as client:
        standup = await _say(client, unique_name, STANDUP["en"][0], OLD_TIME)
        await call_tool(
            client,
            "invalidate",
            {"ids": standup, "valid_to": "2025-05-15T00:00:00Z", "bank": unique_name},
        )
        after = await _recall(client, unique_name, STANDUP["en"][1], now=NOW)
        [memory] = [m for m in after["memories"] if m["id"] == standup]
        assert memory["outdated_note"] == "outdated since 2025-05-15 (invalidated)", _shown(after)
        assert "[outdated since 2025-05-15 (invalidated)]" in after["context"]
        within = await _recall(client, unique_name, STANDUP["en"][1], now=NOW, as_of="2025-05-01T00:00:00Z")
        assert within["memories"][0]["id"] == standup and not within["memories"][0]["outdated"]


@pytest.mark.parametrize(
    ("as_of", "needle"),
    [("not a time", "as_of"), ("2999-01-01T00:00:00Z", "as_of: must not be later than now")],
    ids=["unparsable", "future"],
)
async def test_a_bad_as_of_is_refused_naming_the_field(
    url: str, unique_name: str, as_of: str, needle: str
) -> None:
    async with mcp_client(url, TOKEN) as client:
        result = await client.call_tool("recall", {"query": "anything", "bank": unique_name, "as_of": as_of})
    assert result.is_error
    assert needle in str(result.content), result.content


async def test_invalidate_refuses_what_it_cannot_do_naming_the_field(url: str, unique_name: str) -> None:
    async with mcp_client(url, TOKEN) as client:
        future = await client.call_tool(
            "invalidate", {"ids": ["x"], "valid_to": "2999-01-01T00:00:00Z", "bank": unique_name}
        )
        assert future.is_error and "valid_to" in str(future.content), future.content
        unknown = await client.call_tool("invalidate", {"ids": ["no-such-memory"], "bank": unique_name})
        assert unknown.is_error and "NOT_FOUND" in str(unknown.content), unknown.content
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    hints = tools["invalidate"].annotations
    assert hints is not None and hints.destructive_hint and hints.idempotent_hint and not hints.read_only_hint


def _turn(text: str, time: str) -> common_pb2.Turn:
    turn = common_pb2.Turn(text=text, role=common_pb2.ROLE_USER, session_id="s")
    turn.meta.time.CopyFrom(to_timestamp(datetime.fromisoformat(time)))
    return turn


@pytest.mark.parametrize("language", sorted(CASES))
async def test_grpc_recall_as_of_and_invalidate(
    stub: memory_pb2_grpc.MemoryServiceStub, unique_name: str, language: str
) -> None:
    first, later, now_question, _, old_value, new_value = CASES[language]
    stored = await stub.Retain(
        memory_pb2.RetainRequest(bank_id=unique_name, turns=[_turn(first, OLD_TIME)]),
        metadata=METADATA,
        timeout=TIMEOUT,
    )
    [old] = stored.turn_ids
    stored = await stub.Retain(
        memory_pb2.RetainRequest(bank_id=unique_name, turns=[_turn(later, NEW_TIME)]),
        metadata=METADATA,
        timeout=TIMEOUT,
    )
    [new] = stored.turn_ids
    now = to_timestamp(datetime.fromisoformat(NOW))
    current = await stub.Recall(
        memory_pb2.RecallRequest(bank_id=unique_name, query=now_question, top_k=3, reference_time=now),
        metadata=METADATA,
        timeout=TIMEOUT,
    )
    shown = [(m.id, m.text, m.outdated, m.outdated_note) for m in current.memories]
    assert current.memories[0].id == new and new_value in current.memories[0].text, shown
    for memory in current.memories:
        if memory.id == old:
            assert memory.outdated and memory.superseded_by == new and memory.HasField("valid_to"), shown

    then = await stub.Recall(
        memory_pb2.RecallRequest(
            bank_id=unique_name,
            query=now_question,
            top_k=3,
            reference_time=now,
            as_of=to_timestamp(datetime(2025, 4, 1, tzinfo=UTC)),
        ),
        metadata=METADATA,
        timeout=TIMEOUT,
    )
    assert then.memories[0].id == old and old_value in then.memories[0].text
    assert not then.memories[0].outdated and new not in [m.id for m in then.memories]

    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.Recall(
            memory_pb2.RecallRequest(
                bank_id=unique_name,
                query=now_question,
                reference_time=now,
                as_of=to_timestamp(datetime(2025, 7, 1, tzinfo=UTC)),
            ),
            metadata=METADATA,
            timeout=TIMEOUT,
        )
    assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "as_of" in (refused.value.details() or "")

    ended = await stub.Invalidate(
        memory_pb2.InvalidateRequest(bank_id=unique_name, ids=[new], reason="moved out"),
        metadata=METADATA,
        timeout=TIMEOUT,
    )
    assert list(ended.invalidated_ids) == [new]
    after = await stub.Recall(
        memory_pb2.RecallRequest(bank_id=unique_name, query=now_question, top_k=3),
        metadata=METADATA,
        timeout=TIMEOUT,
    )
    shown = [(m.id, m.text, m.outdated, m.outdated_note) for m in after.memories]
    assert all(m.outdated for m in after.memories if m.id in (old, new)), shown

    with pytest.raises(grpc.aio.AioRpcError) as empty:
        await stub.Invalidate(
            memory_pb2.InvalidateRequest(bank_id=unique_name), metadata=METADATA, timeout=TIMEOUT
        )
    assert empty.value.code() is grpc.StatusCode.INVALID_ARGUMENT and "ids" in (empty.value.details() or "")


@pytest.mark.parametrize(
    ("text", "question"),
    [("I live in Lisbon.", "Where do I live?"), ("我住在杭州。", "我住在哪里？")],
    ids=["en", "zh"],
)
async def test_invalidating_a_turn_ends_the_facts_drawn_from_it_and_the_export_says_when(
    url: str, engine: MemoryEngine, unique_name: str, text: str, question: str
) -> None:
    async with mcp_client(url, TOKEN) as client:
        said = await _say(client, unique_name, text, OLD_TIME)
        done = await call_tool(client, "invalidate", {"ids": [said], "bank": unique_name})
        assert done["invalidated_ids"] == [said] and done["derived_ids"], done
        after = await _recall(client, unique_name, question)
        assert all(m["outdated"] for m in after["memories"] if m["id"] in {said, *done["derived_ids"]})
    lines = [line async for line in dump.records(engine.clients, unique_name)]
    facts = {line["id"]: line for line in lines if line["kind"] == "fact"}
    for fact_id in done["derived_ids"]:
        assert facts[fact_id]["valid_to"] and not facts[fact_id].get("superseded_by"), facts[fact_id]


async def test_the_semantic_layer_refuses_an_end_before_a_memory_began_and_writes_nothing(
    url: str, mesh_layers: LayerAddresses, unique_name: str
) -> None:
    async with mcp_client(url, TOKEN) as client:
        first = await _say(client, unique_name, STANDUP["en"][0], "2025-01-10T09:00:00Z")
        later = await _say(client, unique_name, "The retro is on Fridays in room Borealis.", OLD_TIME)
    async with grpc.aio.insecure_channel(mesh_layers.semantic) as channel:
        semantic = semantic_pb2_grpc.SemanticServiceStub(channel)
        request = semantic_pb2.InvalidateRequest(
            bank_id=unique_name, ids=[first, later], valid_to=to_timestamp(datetime(2025, 2, 1, tzinfo=UTC))
        )
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await semantic.Invalidate(request, timeout=TIMEOUT)
    assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert (refused.value.details() or "").startswith("valid_to:")
    kept = await _semantic_history(mesh_layers.semantic, unique_name, STANDUP["en"][1])
    assert not kept[first].HasField("valid_to") and not kept[later].HasField("valid_to")  # no partial write
