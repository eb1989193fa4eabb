"""The edge over every real layer: retain, recall by meaning and keyword, partial answers, forget, MCP."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import grpc
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.mcp_edge.domain import RecallQuery
from hindsight.mcp_edge.engine import open_engine
from hindsight.mcp_edge.http import serving_mcp_http
from hindsight.mcp_edge.mcp_server import build_mcp_server
from hindsight.mcp_edge.service import open_service
from hindsight.runtime.auth import Grants
from hindsight.runtime.embedded import free_port
from hindsight.runtime.records import to_timestamp
from hindsight.runtime.testing import channel_to, serving
from tests.integration.mesh import LayerAddresses

TIMEOUT = 20
CONVERSATION = [
    ("t1", "user", "Caroline", "I adopted a golden retriever puppy named Biscuit last weekend."),
    ("t2", "assistant", "", "Congratulations! How is Biscuit settling in?"),
    ("t3", "user", "Caroline", "My sister Melanie is moving to Lisbon for a job at a robotics startup."),
    ("t4", "user", "Caroline", "Please always answer me in British English, not American spelling."),
    ("t5", "user", "小王", "我昨天在北京大学见了王老师，讨论了论文的实验部分。"),
    ("t6", "user", "小王", "周末我们全家去杭州西湖划船了。"),
]


def _turn(turn_id: str, role: str, speaker: str, text: str, day: int = 1) -> common_pb2.Turn:
    roles = {"user": common_pb2.ROLE_USER, "assistant": common_pb2.ROLE_ASSISTANT}
    return common_pb2.Turn(
        id=turn_id,
        session_id="s1",
        role=roles[role],
        speaker=speaker,
        text=text,
        meta=common_pb2.RecordMeta(time=to_timestamp(datetime(2025, 5, day, 12, tzinfo=UTC))),
    )


@pytest.fixture(scope="module")
async def memory(mesh_layers: LayerAddresses) -> AsyncIterator[memory_pb2_grpc.MemoryServiceStub]:
    async with (
        serving(lambda: open_service(mesh_layers.edge_settings())) as server,
        channel_to(server) as channel,
    ):
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        turns = [_turn(*item, day=index + 1) for index, item in enumerate(CONVERSATION)]
        reply = await stub.Retain(memory_pb2.RetainRequest(bank_id="edge-bank", turns=turns), timeout=TIMEOUT)
        assert reply.indexed and list(reply.turn_ids) == [t.id for t in turns]
        yield stub


async def _recall_ids(
    stub: memory_pb2_grpc.MemoryServiceStub, query: str, bank: str = "edge-bank", **fields: object
) -> list[str]:
    reply = await stub.Recall(memory_pb2.RecallRequest(bank_id=bank, query=query, **fields), timeout=TIMEOUT)
    assert not reply.partial, [r for r in reply.layer_reports if not r.ok]
    return [m.id for m in reply.memories]


async def test_recall_finds_a_turn_by_meaning_without_shared_words(memory) -> None:
    assert (await _recall_ids(memory, "Which dog did she get recently?", top_k=3))[0] == "t1"


async def test_recall_finds_english_and_chinese_turns_by_keyword(memory) -> None:
    assert (await _recall_ids(memory, "Melanie Lisbon"))[0] == "t3"
    assert (await _recall_ids(memory, "北京大学"))[0] == "t5"
    assert (await _recall_ids(memory, "西湖"))[0] == "t6"


async def test_every_layer_reports_its_timing_and_turns_found_by_several_layers_say_so(memory) -> None:
    reply = await memory.Recall(
        memory_pb2.RecallRequest(bank_id="edge-bank", query="Biscuit puppy"), timeout=TIMEOUT
    )
    reports = {memory_pb2.Layer.Name(r.layer): r for r in reply.layer_reports}
    # working memory weighs 0 in fusion (the default): not asked, not reported
    assert set(reports) == {"LAYER_EPISODIC", "LAYER_SEMANTIC", "LAYER_REFLECT"}
    assert all(r.ok and r.elapsed_ms > 0 for r in reports.values())
    alone = await memory.Recall(
        memory_pb2.RecallRequest(
            bank_id="edge-bank", query="Biscuit puppy", layers=[memory_pb2.LAYER_WORKING]
        ),
        timeout=TIMEOUT,
    )
    assert [(r.layer, r.ok) for r in alone.layer_reports] == [(memory_pb2.LAYER_WORKING, True)]
    top = reply.memories[0]
    assert top.id == "t1"
    assert {memory_pb2.LAYER_EPISODIC, memory_pb2.LAYER_SEMANTIC} <= set(top.layers)
    assert list(top.meta.source_turn_ids) == ["t1"]


async def test_a_time_range_keeps_only_memories_from_that_window(memory) -> None:
    window = common_pb2.TimeRange(
        start=to_timestamp(datetime(2025, 5, 3, tzinfo=UTC)),
        end=to_timestamp(datetime(2025, 5, 4, tzinfo=UTC)),
    )
    reply = await memory.Recall(
        memory_pb2.RecallRequest(
            bank_id="edge-bank", query="Melanie Lisbon Biscuit puppy", time_range=window
        ),
        timeout=TIMEOUT,
    )
    assert reply.memories and not reply.partial
    # turns and any record derived from them (facts distilled from t3) cite only the turn in the window
    assert {source for m in reply.memories for source in m.meta.source_turn_ids} == {"t3"}


async def test_banks_never_see_each_others_memories(memory) -> None:
    assert await _recall_ids(memory, "Biscuit golden retriever", bank="other-bank") == []


async def test_retaining_the_same_turn_ids_again_stores_nothing_new(memory) -> None:
    reply = await memory.Retain(
        memory_pb2.RetainRequest(bank_id="edge-bank", turns=[_turn(*CONVERSATION[0])]), timeout=TIMEOUT
    )
    assert reply.duplicate_count == 1


async def test_a_bad_request_names_the_field_and_writes_nothing(memory) -> None:
    bad = [_turn("ok-1", "user", "A", "fine text"), _turn("bad-1", "user", "A", "   ")]
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await memory.Retain(memory_pb2.RetainRequest(bank_id="edge-bank", turns=bad), timeout=TIMEOUT)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "turns[1].text" in (error.value.details() or "")
    assert "ok-1" not in await _recall_ids(memory, "fine text")
    with pytest.raises(grpc.aio.AioRpcError) as top_k:
        await memory.Recall(
            memory_pb2.RecallRequest(bank_id="edge-bank", query="x", top_k=1000), timeout=TIMEOUT
        )
    assert "top_k" in (top_k.value.details() or "")
    for fields, name in (
        ({"min_score": 1.5}, "min_score"),
        ({"order": 99}, "order"),
        ({"tags": ["ok", " "]}, "tags[1]"),
        ({"token_budget": 10**6}, "token_budget"),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await memory.Recall(
                memory_pb2.RecallRequest(bank_id="edge-bank", query="x", **fields), timeout=TIMEOUT
            )
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert name in (refused.value.details() or ""), name


async def test_a_layer_that_is_down_makes_recall_partial_not_an_error(
    mesh_layers: LayerAddresses, memory
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{sock.getsockname()[1]}"  # bound but not listening: connections are refused
        async with open_engine(mesh_layers.edge_settings(semantic_addr=dead)) as engine:
            result = await engine.recall(RecallQuery(bank_id="edge-bank", query="Melanie Lisbon"))
    assert result.partial
    failed = [o for o in result.outcomes if not o.ok]
    assert [o.layer.value for o in failed] == ["semantic"] and failed[0].error
    assert result.memories[0].id == "t3"


SISTERS = [  # two turns share one word with the question, neither leads on words: only meaning tells
    ("m1", "user", "Caroline", "My sister is moving to Lisbon for a job at a robotics startup."),
    ("m2", "user", "Caroline", "My sister hates flying, so she takes the train everywhere."),
    ("m3", "user", "Caroline", "Work has been hectic since the merger was announced."),
]


async def test_with_the_semantic_layer_down_relevance_reads_meaning_from_the_inference_layer(
    mesh_layers: LayerAddresses, memory
) -> None:
    """Keyword hits that share a quarter of the question's words ("sister") fell under the relevance floor
    whenever the semantic layer gave no cosines; their meaning, measured at the edge, keeps the answer.
    The measure does not loosen the floor: an unrelated request finds no more than the whole mesh finds.
    With the inference layer down as well, recall still answers, promptly."""
    turns = [_turn(*item) for item in SISTERS]
    reply = await memory.Retain(
        memory_pb2.RetainRequest(bank_id="meaning-bank", turns=turns), timeout=TIMEOUT
    )
    assert reply.indexed
    question = "Which city is Caroline's sister relocating to?"
    unrelated = ["What time does the robotics museum open on Sundays?", "Suggest a board game for tonight"]
    async with open_engine(mesh_layers.edge_settings()) as whole:
        expected = {}
        for text in unrelated:
            expected[text] = {m.id for m in (await whole.recall(RecallQuery("meaning-bank", text))).memories}
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{sock.getsockname()[1]}"
        blind = mesh_layers.edge_settings(semantic_addr=dead, inference_addr=dead)
        measured = mesh_layers.edge_settings(semantic_addr=dead, inference_addr=mesh_layers.inference)
        async with open_engine(blind) as engine:
            without = await engine.recall(RecallQuery("meaning-bank", question))
        async with open_engine(measured) as engine:
            found = await engine.recall(RecallQuery("meaning-bank", question))
            for text in unrelated:
                result = await engine.recall(RecallQuery("meaning-bank", text))
                assert {m.id for m in result.memories} <= expected[text], text
    assert without.partial and without.memories == ()  # no error; and without meaning, no answer
    assert without.elapsed_ms < 0.5 * blind.recall_timeout * 1000  # a dead inference layer costs little
    assert found.partial and found.memories[0].id == "m1"


async def test_hard_forget_removes_a_turn_from_keyword_and_meaning_recall(
    mesh_layers: LayerAddresses,
) -> None:
    async with (
        serving(lambda: open_service(mesh_layers.edge_settings())) as server,
        channel_to(server) as channel,
    ):
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        turn = _turn("secret-1", "user", "Dana", "My bank PIN is hidden in the blue notebook on the shelf.")
        await stub.Retain(memory_pb2.RetainRequest(bank_id="forget-bank", turns=[turn]), timeout=TIMEOUT)
        assert await _recall_ids(
            stub, "blue notebook", bank="forget-bank", layers=[memory_pb2.LAYER_EPISODIC]
        )
        reply = await stub.Forget(
            memory_pb2.ForgetRequest(bank_id="forget-bank", turn_ids=["secret-1"], hard=True), timeout=TIMEOUT
        )
        assert (reply.forgotten_count, reply.unindexed_count, reply.working_removed_count) == (1, 1, 1)
        for layer in (memory_pb2.LAYER_EPISODIC, memory_pb2.LAYER_SEMANTIC, memory_pb2.LAYER_WORKING):
            assert (
                await _recall_ids(stub, "where is the PIN written down", bank="forget-bank", layers=[layer])
                == []
            )


async def test_mcp_tools_publish_schemas_and_annotations_and_run_on_the_engine(
    mesh_layers: LayerAddresses,
) -> None:
    async with open_engine(mesh_layers.edge_settings()) as engine:
        server = build_mcp_server(engine, Grants.off(), default_bank="mcp-bank")
        async with Client(server) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert {"retain", "recall", "write_episode", "reflect", "forget"} <= set(tools)
            assert tools["recall"].annotations.read_only_hint is True
            assert tools["forget"].annotations.destructive_hint is True
            assert tools["recall"].input_schema["properties"]["top_k"]["maximum"] == 100

            stored = await client.call_tool(
                "retain", {"text": "The deploy script needs the --force flag on staging.", "speaker": "Sam"}
            )
            assert not stored.is_error, stored.content
            recalled = await client.call_tool("recall", {"query": "how do I deploy to staging?", "top_k": 3})
            assert recalled.structured_content["memories"][0]["text"].startswith("The deploy script")

            bad = await client.call_tool("recall", {"query": "x", "top_k": 0})
            assert bad.is_error and "top_k" in bad.content[0].text
            neither = await client.call_tool("retain", {})
            assert neither.is_error and "`text` or `turns`" in neither.content[0].text

            for success, action in (
                (False, "ran migrations before the backup"),
                (True, "took a backup first"),
            ):
                episode = await client.call_tool(
                    "write_episode",
                    {
                        "situation": "upgrading the production database",
                        "action": action,
                        "success": success,
                        "outcome": "data loss" if not success else "clean upgrade",
                        "task_type": "db-upgrade",
                    },
                )
                assert not episode.is_error, episode.content
            lessons = await client.call_tool("reflect", {})
            assert lessons.structured_content["episodes_read"] == 2
            assert any(
                "took a backup first" in item["lesson"] for item in lessons.structured_content["lessons"]
            )
            recalled = await client.call_tool(
                "recall", {"query": "backup before the database upgrade", "layers": ["reflect"]}
            )
            assert recalled.structured_content["memories"][0]["kind"] == "lesson"


async def test_mcp_over_http_admits_only_tokens_that_grant_the_bank(
    mesh_layers: LayerAddresses, tmp_path: Path
) -> None:
    grants = Grants.parse("alpha-token=bank-a")
    settings = mesh_layers.edge_settings(mcp_port=free_port(), default_bank="bank-a")
    async with open_engine(settings) as engine, serving_mcp_http(engine, settings, grants) as url:
        async with httpx2.AsyncClient() as anonymous:
            refused = await anonymous.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert refused.status_code == 401

        headers = {"authorization": "Bearer alpha-token"}
        transport = streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers))
        async with Client(transport) as client:
            allowed = await client.call_tool("retain", {"text": "alpha note", "bank": "bank-a"})
            assert not allowed.is_error, allowed.content
            denied = await client.call_tool("recall", {"query": "alpha note", "bank": "bank-b"})
            assert denied.is_error and "bank-b" in denied.content[0].text
            assert "PERMISSION_DENIED" in denied.content[0].text
            for tool, arguments in (
                ("retain", {"text": "sneaky", "bank": "bank-b"}),
                ("list_recent", {"bank": "bank-b"}),
                ("purge", {"whole_bank": True, "bank": "bank-b"}),
            ):
                refused_tool = await client.call_tool(tool, arguments)
                assert refused_tool.is_error and "PERMISSION_DENIED" in refused_tool.content[0].text


async def test_grpc_admits_a_token_only_for_the_banks_it_grants(mesh_layers: LayerAddresses) -> None:
    async with (
        serving(lambda: open_service(mesh_layers.edge_settings()), tokens="alpha-token=bank-a") as server,
        channel_to(server) as channel,
    ):
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        alpha = (("authorization", "Bearer alpha-token"),)
        turn = _turn("iso-1", "user", "A", "alpha's private note")
        await stub.Retain(memory_pb2.RetainRequest(bank_id="bank-a", turns=[turn]), metadata=alpha)
        calls = (
            stub.Recall(memory_pb2.RecallRequest(bank_id="bank-b", query="note"), metadata=alpha),
            stub.Retain(memory_pb2.RetainRequest(bank_id="bank-b", turns=[turn]), metadata=alpha),
            stub.ListRecent(memory_pb2.ListRecentRequest(bank_id="bank-b"), metadata=alpha),
            stub.Purge(memory_pb2.PurgeRequest(bank_id="bank-b", whole_bank=True), metadata=alpha),
        )
        for call in calls:
            with pytest.raises(grpc.aio.AioRpcError) as denied:
                await call
            assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
        with pytest.raises(grpc.aio.AioRpcError) as anonymous:
            await stub.Recall(memory_pb2.RecallRequest(bank_id="bank-a", query="note"))
        assert anonymous.value.code() == grpc.StatusCode.UNAUTHENTICATED
        reply = await stub.Recall(
            memory_pb2.RecallRequest(bank_id="bank-a", query="private note"), metadata=alpha
        )
        assert reply.memories[0].id == "iso-1"


async def test_episodes_written_through_grpc_are_listed_for_reflection(memory) -> None:
    reply = await memory.WriteEpisode(
        memory_pb2.WriteEpisodeRequest(
            bank_id="edge-bank",
            episode=episodic_pb2.Episode(
                situation="a flaky test", action="re-ran it three times", result=episodic_pb2.OUTCOME_FAILURE
            ),
        ),
        timeout=TIMEOUT,
    )
    assert reply.episode.id
    lessons = await memory.Reflect(memory_pb2.ReflectRequest(bank_id="edge-bank"), timeout=TIMEOUT)
    assert lessons.episodes_read == 1 and lessons.lessons


async def test_grpc_lists_updates_forgets_by_filter_and_purges(mesh_layers: LayerAddresses) -> None:
    async with (
        serving(lambda: open_service(mesh_layers.edge_settings())) as server,
        channel_to(server) as channel,
    ):
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        bank = "grpc-life"
        turns = [
            _turn(f"g{day}", "user", "Eve", f"Diary entry number {day} about the garden.", day)
            for day in (1, 2, 3)
        ]
        turns[2].meta.tags.append("garden")
        await stub.Retain(memory_pb2.RetainRequest(bank_id=bank, turns=turns))
        recent = await stub.ListRecent(memory_pb2.ListRecentRequest(bank_id=bank, limit=2))
        assert [t.id for t in recent.turns] == ["g3", "g2"] and recent.next_page_token

        updated = await stub.Update(
            memory_pb2.UpdateRequest(bank_id=bank, turn_id="g1", text="Diary entry one, corrected.")
        )
        assert updated.superseded_id == "g1" and updated.turn.id != "g1" and updated.indexed
        forgotten = await stub.Forget(
            memory_pb2.ForgetRequest(bank_id=bank, filter=episodic_pb2.TurnFilter(tags=["garden"]))
        )
        assert forgotten.forgotten_count == 1
        live = await stub.ListRecent(memory_pb2.ListRecentRequest(bank_id=bank))
        assert [t.id for t in live.turns] == ["g2", updated.turn.id]
        with pytest.raises(grpc.aio.AioRpcError) as empty:
            await stub.Forget(memory_pb2.ForgetRequest(bank_id=bank))
        assert empty.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "turn_ids" in (
            empty.value.details() or ""
        )

        purged = await stub.Purge(memory_pb2.PurgeRequest(bank_id=bank, whole_bank=True))
        assert purged.turn_count == 4  # three turns and the corrected version
        archived = await stub.ListRecent(memory_pb2.ListRecentRequest(bank_id=bank, include_archived=True))
        assert list(archived.turns) == []
        assert await _recall_ids(stub, "diary garden", bank=bank) == []
