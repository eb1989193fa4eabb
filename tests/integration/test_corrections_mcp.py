"""Corrections through MCP over streamable HTTP on a real mesh: a later statement that corrects or replaces an
earlier one comes first in recall, the old one stays below it marked as superseded, in English and Chinese,
with and without a correction cue; statements that do not correct anything leave each other alone."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import grpc
import pytest
from mcp import Client

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.runtime.records import to_timestamp
from tests.integration.mcp_http import call_tool, mcp_client, mcp_url
from tests.integration.mesh import LayerAddresses

TOKEN = "corrections-token"
NOW = "2025-06-01T12:00:00Z"


@pytest.fixture(scope="module")
async def url(engine: MemoryEngine) -> AsyncIterator[str]:
    async with mcp_url(engine, "corrections", TOKEN) as served:
        yield served


def _client(url: str) -> Client:
    return mcp_client(url, TOKEN)


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return await call_tool(client, tool, arguments)


async def _say(client: Client, bank: str, text: str, time: str, **extra: Any) -> str:
    stored = await _call(client, "retain", {"text": text, "time": time, "bank": bank, **extra})
    assert stored["indexed"]
    [turn_id] = stored["turn_ids"]
    return str(turn_id)


async def _recall(client: Client, bank: str, query: str) -> list[dict[str, Any]]:
    recalled = await _call(client, "recall", {"query": query, "bank": bank, "now": NOW})
    return list(recalled["memories"])


def _by_id(memories: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {memory["id"]: memory for memory in memories}


def _rank_of(memories: list[dict[str, Any]], turn_id: str) -> int:
    """Where the turn, or the first memory drawn from it, ranks (len when absent)."""
    for rank, memory in enumerate(memories):
        if memory["id"] == turn_id or (memory["kind"] != "turn" and turn_id in memory["source_turn_ids"]):
            return rank
    return len(memories)


def _assert_corrected(memories: list[dict[str, Any]], old: str, new: str) -> None:
    """The correction (or a fact drawn from it) ranks first and names what it replaced; the old statement
    ranks below it, marked as superseded by it."""
    shown = [(m["id"], m["text"], m["supersedes"], m["superseded_by"]) for m in memories]
    assert _rank_of(memories, new) == 0, shown
    found = _by_id(memories)
    assert old in found[new]["supersedes"], shown
    assert found[new]["superseded_by"] == "", shown
    if old in found:
        assert _rank_of(memories, old) > [m["id"] for m in memories].index(new), shown
        assert found[old]["superseded_by"] == new, shown


def _assert_untouched(memories: list[dict[str, Any]], *turn_ids: str) -> None:
    found = _by_id(memories)
    for turn_id in turn_ids:
        assert turn_id in found, (turn_id, list(found))
        assert found[turn_id]["superseded_by"] == "" and found[turn_id]["supersedes"] == []


@pytest.mark.parametrize(
    ("first", "correction", "query"),
    [
        (
            "My deploy target is the staging-1 cluster.",
            "Correction: my deploy target is the staging-2 cluster, not staging-1.",
            "Which cluster is my deploy target?",
        ),
        (
            "My deploy target is the staging-1 cluster.",
            "Actually, it's staging-2, not staging-1.",
            "Which cluster is my deploy target?",
        ),
        (
            "我的部署目标是staging-1集群。",
            "更正：我的部署目标是staging-2集群，不是staging-1。",
            "我的部署目标是哪个集群？",
        ),
        (
            "我的部署目标是staging-1集群。",
            "我的部署目标不是staging-1，而是staging-2。",
            "我的部署目标是哪个集群？",
        ),
        (
            "我的部署目标是staging-1集群。",
            "我的部署目标改成了staging-2集群。",
            "我的部署目标是哪个集群？",
        ),
        (
            "My deploy target is the staging-1 cluster.",
            "I changed my deploy target to the staging-2 cluster.",
            "Which cluster is my deploy target?",
        ),
        (
            "My deploy target is the staging-1 cluster.",
            "My deploy target isn't staging-1 anymore.",
            "Which cluster is my deploy target?",
        ),
        (
            "我的部署目标是staging-1集群。",
            "我已经把部署目标换成了staging-2集群。",
            "我的部署目标是哪个集群？",
        ),
    ],
    ids=[
        "en-correction",
        "en-value-only",
        "zh-gengzheng",
        "zh-bushi-ershi",
        "zh-gaicheng",
        "en-changed-to",
        "en-no-longer",
        "zh-ba",
    ],
)
async def test_a_correction_ranks_first_and_the_old_value_stays_below_it_as_history(
    url: str, unique_name: str, first: str, correction: str, query: str
) -> None:
    async with _client(url) as client:
        old = await _say(client, unique_name, first, "2025-05-01T09:00:00Z")
        await _say(client, unique_name, "Lunch was a sandwich by the river.", "2025-05-02T09:00:00Z")
        new = await _say(client, unique_name, correction, "2025-05-03T09:00:00Z")
        memories = await _recall(client, unique_name, query)
        _assert_corrected(memories, old, new)
        assert old in _by_id(memories)  # kept, as history
        recalled = await _call(client, "recall", {"query": query, "bank": unique_name, "now": NOW})
        assert f"superseded_by={new}" in recalled["context"]


@pytest.mark.parametrize(
    ("first", "later", "query"),
    [
        ("My locker number is 112.", "My locker number is 87.", "What is my locker number?"),
        ("I live in Lisbon.", "I moved to Porto.", "Where do I live?"),
        ("我的车位号是B12。", "我的车位号是C7。", "我的车位号是多少？"),
        ("我住在杭州。", "我搬到了苏州。", "我住在哪里？"),
    ],
    ids=["en-copula", "en-moved", "zh-copula", "zh-moved"],
)
async def test_a_new_value_without_any_cue_replaces_the_old_one(
    url: str, unique_name: str, first: str, later: str, query: str
) -> None:
    async with _client(url) as client:
        old = await _say(client, unique_name, first, "2025-05-01T09:00:00Z")
        new = await _say(client, unique_name, later, "2025-05-20T09:00:00Z")
        _assert_corrected(await _recall(client, unique_name, query), old, new)


async def test_a_statement_retained_late_about_an_earlier_time_stays_history(
    url: str, unique_name: str
) -> None:
    async with _client(url) as client:
        new = await _say(client, unique_name, "My locker number is 87.", "2025-05-20T09:00:00Z")
        old = await _say(client, unique_name, "My locker number is 112.", "2025-05-01T09:00:00Z")
        _assert_corrected(await _recall(client, unique_name, "What is my locker number?"), old, new)


async def test_a_question_about_the_earlier_time_is_answered_by_the_value_of_then(
    url: str, unique_name: str
) -> None:
    async with _client(url) as client:
        old = await _say(client, unique_name, "I live in Lisbon.", "2019-03-01T09:00:00Z")
        new = await _say(client, unique_name, "I live in Porto.", "2021-03-01T09:00:00Z")
        current = await _recall(client, unique_name, "Where do I live?")
        _assert_corrected(current, old, new)
        then = await _recall(client, unique_name, "Where did I live in 2019?")
        assert then[0]["id"] == old and then[0]["superseded_by"] == new


async def test_a_cue_word_without_an_earlier_value_supersedes_nothing(url: str, unique_name: str) -> None:
    async with _client(url) as client:
        target = await _say(
            client, unique_name, "My deploy target is the staging-1 cluster.", "2025-05-01T09:00:00Z"
        )
        concert = await _say(client, unique_name, "I actually enjoyed the concert.", "2025-05-03T09:00:00Z")
        _assert_untouched(await _recall(client, unique_name, "Which cluster is my deploy target?"), target)
        _assert_untouched(await _recall(client, unique_name, "Did I enjoy the concert?"), concert)


async def test_another_subject_multiple_values_and_past_times_do_not_supersede(
    url: str, unique_name: str
) -> None:
    async with _client(url) as client:
        mine = await _say(
            client, unique_name, "My deploy target is the staging-1 cluster.", "2025-05-01T09:00:00Z"
        )
        sister = await _say(
            client, unique_name, "My sister's deploy target is the staging-3 cluster.", "2025-05-02T09:00:00Z"
        )
        tea = await _say(client, unique_name, "I like green tea.", "2025-05-03T09:00:00Z")
        coffee = await _say(client, unique_name, "I like black coffee.", "2025-05-04T09:00:00Z")
        paris = await _say(client, unique_name, "In 2019 I lived in Paris.", "2025-05-05T09:00:00Z")
        berlin = await _say(client, unique_name, "In 2021 I lived in Berlin.", "2025-05-06T09:00:00Z")
        _assert_untouched(
            await _recall(client, unique_name, "Which cluster is the deploy target?"), mine, sister
        )
        _assert_untouched(await _recall(client, unique_name, "What do I like to drink?"), tea, coffee)
        _assert_untouched(await _recall(client, unique_name, "Where did I live?"), paris, berlin)


async def test_an_unnamed_speaker_is_one_person_across_sessions_by_default(
    url: str, unique_name: str
) -> None:
    """By default a bank's unnamed speakers ("user") are one person (HINDSIGHT_SEMANTIC_SPEAKERS=auto; a
    pooled bank keeps sessions apart: tests/integration/test_semantic_by_meaning.py): a new value in a later
    conversation replaces the earlier one, and a cued correction replaces the value it names as wrong."""
    async with _client(url) as client:
        first = await _say(
            client, unique_name, "My locker number is 112.", "2025-05-01T09:00:00Z", session_id="a"
        )
        other = await _say(
            client, unique_name, "My locker number is 87.", "2025-05-02T09:00:00Z", session_id="b"
        )
        _assert_corrected(await _recall(client, unique_name, "What is my locker number?"), first, other)
        fixed = await _say(
            client,
            unique_name,
            "Correction: my locker number is 64, not 87.",
            "2025-05-03T09:00:00Z",
            session_id="c",
        )
        memories = await _recall(client, unique_name, "What is my locker number?")
        found, ids = _by_id(memories), [memory["id"] for memory in memories]
        assert other in found[fixed]["supersedes"] and found[other]["superseded_by"] == fixed
        assert ids.index(fixed) < ids.index(other)


async def test_a_denial_ends_the_turn_and_the_fact_it_denies(url: str, unique_name: str) -> None:
    async with _client(url) as client:
        old = await _say(client, unique_name, "I live in Lisbon.", "2025-05-01T09:00:00Z")
        new = await _say(client, unique_name, "I no longer live in Lisbon.", "2025-05-20T09:00:00Z")
        memories = await _recall(client, unique_name, "Where do I live?")
        _assert_corrected(memories, old, new)
        # the fact "user lives in Lisbon" ended: recalled at most as history, marked outdated
        assert all(m["kind"] == "turn" or m["outdated"] for m in memories)


async def test_the_turns_stay_whole_and_a_redelivered_turn_keeps_its_place_in_the_chain(
    url: str, unique_name: str, mesh_layers: LayerAddresses
) -> None:
    said = [
        ("My locker number is 112.", "2025-05-01T09:00:00Z"),
        ("My locker number is 87.", "2025-05-20T09:00:00Z"),
    ]
    async with _client(url) as client:
        old, new = [await _say(client, unique_name, text, time) for text, time in said]
        recent = await _call(client, "list_recent", {"bank": unique_name})
        assert {turn["id"]: turn["text"] for turn in recent["turns"]} == {old: said[0][0], new: said[1][0]}
        async with grpc.aio.insecure_channel(mesh_layers.semantic) as channel:  # as the outbox retries
            stub = semantic_pb2_grpc.SemanticServiceStub(channel)
            for turn_id, (text, time) in zip((new, old), reversed(said), strict=True):
                record = semantic_pb2.SemanticRecord(
                    id=turn_id,
                    kind=semantic_pb2.RECORD_KIND_TURN,
                    text=text,
                    session_id="default",
                    meta=common_pb2.RecordMeta(
                        source_turn_ids=[turn_id],
                        source=common_pb2.SOURCE_USER,
                        trust=common_pb2.TRUST_HIGH,
                        time=to_timestamp(datetime.fromisoformat(time)),
                    ),
                )
                await stub.Upsert(semantic_pb2.UpsertRequest(bank_id=unique_name, records=[record]))
        _assert_corrected(await _recall(client, unique_name, "What is my locker number?"), old, new)
