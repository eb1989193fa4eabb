"""Entity pages on a real in-process mesh: kept up to date on retain, listed and read through the semantic
layer's gRPC service, the edge's MemoryService and the MCP tools (official SDK client); the entity channel."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import pytest
from mcp import Client

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.mcp_edge.engine import MemoryEngine, open_engine
from hindsight.mcp_edge.mcp_server import build_mcp_server
from hindsight.mcp_edge.service import memory_service_spec
from hindsight.runtime.auth import Grants
from hindsight.runtime.records import to_timestamp
from hindsight.runtime.server import ServiceSpec
from hindsight.runtime.testing import channel_to, serving
from tests.integration.mesh import LayerAddresses

TIMEOUT = 60
START = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)
DIALOGUE = [
    ("c1", "Caroline", "Hey Melanie! I went to a support group yesterday, it was powerful."),
    ("m1", "Melanie", "Wow, Caroline! I painted a lake sunrise with my kids last weekend."),
    ("c2", "Caroline", "I live in Boston now, near my grandma."),
    ("m2", "Melanie", "My kids loved the dinosaur exhibit at the museum."),
    ("c3", "Caroline", "Thanks, Mel! I painted a portrait for the art show."),
    ("m3", "Melanie", "Caroline told me about her art show, I can't wait to see it."),
    ("c4", "Caroline", "Big news: I moved to Denver last month."),
    ("m4", "Melanie", "I signed up for a pottery class, it calms me down."),
]


def _turns() -> list[common_pb2.Turn]:
    return [
        common_pb2.Turn(
            id=turn_id,
            session_id=f"s{index // 4 + 1}",
            role=common_pb2.ROLE_USER,
            speaker=speaker,
            text=text,
            meta=common_pb2.RecordMeta(
                source_turn_ids=[turn_id],
                source=common_pb2.SOURCE_USER,
                time=to_timestamp(START + timedelta(days=index)),
            ),
        )
        for index, (turn_id, speaker, text) in enumerate(DIALOGUE)
    ]


@contextlib.asynccontextmanager
async def _served(engine: MemoryEngine) -> AsyncIterator[ServiceSpec]:
    yield memory_service_spec(engine)


@pytest.fixture(scope="module")
async def memory(engine: MemoryEngine) -> AsyncIterator[memory_pb2_grpc.MemoryServiceStub]:
    """The MemoryService over the engine, with the dialogue retained in bank ``pages``."""
    async with serving(lambda: _served(engine)) as server, channel_to(server) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        reply = await stub.Retain(memory_pb2.RetainRequest(bank_id="pages", turns=_turns()), timeout=TIMEOUT)
        assert reply.indexed
        yield stub


@pytest.fixture(scope="module")
async def semantic(
    mesh_layers: LayerAddresses, memory: memory_pb2_grpc.MemoryServiceStub
) -> AsyncIterator[semantic_pb2_grpc.SemanticServiceStub]:
    async with grpc.aio.insecure_channel(mesh_layers.semantic) as channel:
        yield semantic_pb2_grpc.SemanticServiceStub(channel)


async def test_retain_keeps_a_page_per_speaker_name_and_relative(
    semantic: semantic_pb2_grpc.SemanticServiceStub,
) -> None:
    reply = await semantic.ListEntities(semantic_pb2.ListEntitiesRequest(bank_id="pages"), timeout=TIMEOUT)
    entities = {e.name: e for e in reply.entities}
    caroline, melanie = entities["Caroline"], entities["Melanie"]
    assert (caroline.type, caroline.mention_count, caroline.spoken_count) == (
        "person",
        5,
        4,
    )  # + m3 names her
    assert (melanie.mention_count, melanie.spoken_count) == (4, 4)  # "Hey Melanie!" addresses her
    assert (
        "Mel" in melanie.aliases
    )  # "Thanks, Mel!" only addressed her, but a short form is learned from names
    assert caroline.first_seen.ToDatetime(tzinfo=UTC) == START
    assert caroline.last_seen.ToDatetime(tzinfo=UTC) == START + timedelta(days=6)
    kids = entities["Melanie's kids"]
    assert kids.mention_count == 2 and {r.name: r.count for r in kids.related} == {"Melanie": 2}
    people = await semantic.ListEntities(
        semantic_pb2.ListEntitiesRequest(bank_id="pages", type="PERSON", prefix="car", limit=1),
        timeout=TIMEOUT,
    )
    assert [e.name for e in people.entities] == ["Caroline"] and people.next_page_token
    following = await semantic.ListEntities(
        semantic_pb2.ListEntitiesRequest(
            bank_id="pages", type="person", prefix="car", limit=1, page_token=people.next_page_token
        ),
        timeout=TIMEOUT,
    )
    assert [e.name for e in following.entities] == ["Caroline's grandmother"]
    other = await semantic.ListEntities(
        semantic_pb2.ListEntitiesRequest(bank_id="elsewhere"), timeout=TIMEOUT
    )
    assert list(other.entities) == []


async def test_a_page_holds_the_facts_with_their_history_and_the_turns_newest_first(
    memory: memory_pb2_grpc.MemoryServiceStub,
) -> None:
    page = await memory.GetEntityPage(
        memory_pb2.GetEntityPageRequest(bank_id="pages", entity="caroline", mention_limit=3), timeout=TIMEOUT
    )
    assert page.entity.name == "Caroline"
    homes = [(f.value, f.superseded_by != "") for f in page.facts if f.attribute == "lives_in"]
    assert homes == [("Boston", True), ("Denver", False)]  # the move superseded Boston, kept as history
    assert [m.id for m in page.mentions] == ["c4", "m3", "c3"] and page.next_page_token
    rest = await memory.GetEntityPage(
        memory_pb2.GetEntityPageRequest(bank_id="pages", entity="Caroline", page_token=page.next_page_token),
        timeout=TIMEOUT,
    )
    assert [m.id for m in rest.mentions] == ["c2", "c1"] and rest.next_page_token == ""
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await memory.GetEntityPage(
            memory_pb2.GetEntityPageRequest(bank_id="pages", entity="Zed"), timeout=TIMEOUT
        )
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND
    for bad in (
        memory_pb2.GetEntityPageRequest(bank_id="pages", entity=" "),
        memory_pb2.GetEntityPageRequest(bank_id="pages", entity="Caroline", page_token="x"),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await memory.GetEntityPage(bad, timeout=TIMEOUT)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert ("entity" if not bad.page_token else "page_token") in (refused.value.details() or "")
    listed = await memory.ListEntities(
        memory_pb2.ListEntitiesRequest(bank_id="pages", prefix="Mel"), timeout=TIMEOUT
    )
    assert [e.name for e in listed.entities] == ["Melanie", "Melanie's kids"]


async def test_a_query_is_matched_to_the_entities_it_names_with_the_turns_naming_them(
    semantic: semantic_pb2_grpc.SemanticServiceStub,
) -> None:
    query = "What did Caroline paint?"
    common = await semantic.MatchEntities(
        semantic_pb2.MatchEntitiesRequest(bank_id="pages", query=query), timeout=TIMEOUT
    )
    assert list(common.matches) == []  # 5 of the 8 turns mention her: above the default share, 0.6
    reply = await semantic.MatchEntities(
        semantic_pb2.MatchEntitiesRequest(bank_id="pages", query=query, max_share=0.7), timeout=TIMEOUT
    )
    [match] = reply.matches
    assert match.entity.name == "Caroline" and list(match.named_turn_ids) == ["m3"]
    assert match.share == pytest.approx(5 / 8, abs=1e-3)
    searched = await semantic.Search(
        semantic_pb2.SearchRequest(bank_id="pages", query="What did Melanie paint?", match_entities=True),
        timeout=TIMEOUT,
    )
    assert searched.hits and [m.entity.name for m in searched.entities] == ["Melanie"]  # in the one call
    plain = await semantic.Search(
        semantic_pb2.SearchRequest(bank_id="pages", query="What did Melanie paint?"), timeout=TIMEOUT
    )
    assert list(plain.entities) == []
    mel = await semantic.MatchEntities(
        semantic_pb2.MatchEntitiesRequest(bank_id="pages", query="What does Mel like?", max_share=1.0),
        timeout=TIMEOUT,
    )
    assert [m.entity.name for m in mel.matches] == ["Melanie"]
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await semantic.MatchEntities(
            semantic_pb2.MatchEntitiesRequest(bank_id="pages", query="x", max_share=2.0), timeout=TIMEOUT
        )
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "max_share" in (
        refused.value.details() or ""
    )


async def test_a_chinese_dialogue_gets_pages_for_its_speakers_their_relatives_and_names(
    memory: memory_pb2_grpc.MemoryServiceStub, semantic: semantic_pb2_grpc.SemanticServiceStub
) -> None:
    lines = [
        ("z1", "小红", "我的妹妹下个月要去杭州读书。"),
        ("z2", "小明", "真好！我上周和王芳一起去爬山了。"),
        ("z3", "小红", "王芳是我的同事，她也喜欢爬山。"),
        ("z4", "小明", "下次叫上小红的妹妹一起吧。"),
        ("z5", "小明", "我昨天买了一辆新自行车。"),
    ]
    turns = [
        common_pb2.Turn(
            id=turn_id,
            session_id="zh",
            role=common_pb2.ROLE_USER,
            speaker=speaker,
            text=text,
            meta=common_pb2.RecordMeta(
                source_turn_ids=[turn_id], time=to_timestamp(START + timedelta(hours=i))
            ),
        )
        for i, (turn_id, speaker, text) in enumerate(lines)
    ]
    await memory.Retain(memory_pb2.RetainRequest(bank_id="pages-zh", turns=turns), timeout=TIMEOUT)
    listed = await memory.ListEntities(memory_pb2.ListEntitiesRequest(bank_id="pages-zh"), timeout=TIMEOUT)
    counts = {e.name: (e.mention_count, e.spoken_count) for e in listed.entities}
    assert counts["小红"] == (3, 2) and counts["小明"] == (3, 3)  # 我 is the speaker; z4 names 小红
    assert counts["王芳"] == (2, 0) and counts["小红的妹妹"] == (1, 0) and counts["小红的同事"] == (1, 0)
    reply = await semantic.MatchEntities(
        semantic_pb2.MatchEntitiesRequest(bank_id="pages-zh", query="王芳喜欢做什么？"), timeout=TIMEOUT
    )
    assert [(m.entity.name, sorted(m.named_turn_ids)) for m in reply.matches] == [("王芳", ["z2", "z3"])]
    await memory.Purge(memory_pb2.PurgeRequest(bank_id="pages-zh", whole_bank=True), timeout=TIMEOUT)
    gone = await memory.ListEntities(memory_pb2.ListEntitiesRequest(bank_id="pages-zh"), timeout=TIMEOUT)
    assert list(gone.entities) == []  # a purged bank keeps no page
    after = await semantic.MatchEntities(
        semantic_pb2.MatchEntitiesRequest(bank_id="pages-zh", query="王芳喜欢做什么？"), timeout=TIMEOUT
    )
    assert list(after.matches) == []


async def test_the_entity_channel_lifts_what_the_named_person_said(
    mesh_layers: LayerAddresses, memory: memory_pb2_grpc.MemoryServiceStub
) -> None:
    async def ranked(weight: float) -> list[str]:
        settings = mesh_layers.edge_settings(entity_weight=weight, record_access=False)
        async with (
            open_engine(settings) as engine,
            serving(lambda: _served(engine)) as server,
            channel_to(server) as channel,
        ):
            reply = await memory_pb2_grpc.MemoryServiceStub(channel).Recall(
                memory_pb2.RecallRequest(bank_id="pages", query="What did Melanie paint?", top_k=8),
                timeout=TIMEOUT,
            )
        assert not reply.partial
        return [m.id for m in reply.memories]

    with_channel, without = await ranked(1.0), await ranked(0.0)
    assert with_channel.index("m1") < with_channel.index("c3")  # Melanie's painting above Caroline's
    spoken = {"m1", "m2", "m3", "m4"}
    assert sum(i in spoken for i in with_channel[:4]) >= sum(i in spoken for i in without[:4])


async def test_the_mcp_tools_list_and_read_pages(
    engine: MemoryEngine, memory: memory_pb2_grpc.MemoryServiceStub
) -> None:
    async with Client(build_mcp_server(engine, Grants.off(), default_bank="pages")) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert tools["list_entities"].annotations.read_only_hint  # type: ignore[union-attr]
        assert tools["entity_page"].input_schema["required"] == ["entity"]
        listed = await _call(client, "list_entities", {"type": "person", "limit": "2"})
        assert [e["name"] for e in listed["entities"]] == ["Caroline", "Caroline's grandmother"]
        page = await _call(client, "entity_page", {"entity": "Melanie's kids"})
        assert [m["id"] for m in page["mentions"]] == ["m2", "m1"]
        assert page["mentions"][0]["source_turn_ids"] == ["m2"] and page["entity"]["type"] == "person"
        assert page["entity"]["first_seen"].startswith("2023-05-09")
        missing = await client.call_tool("entity_page", {"entity": "Zed"})
        assert missing.is_error and "NOT_FOUND: no entity" in str(missing.content[0].text)  # type: ignore[union-attr]
        empty = await client.call_tool("list_entities", {"bank": "elsewhere"})
        assert not empty.is_error and empty.structured_content == {"entities": [], "next_page_token": ""}


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content
