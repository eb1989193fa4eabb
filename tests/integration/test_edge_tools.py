"""Every MCP tool through the official MCP client on a real mesh: near-miss types, filters, life cycle."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.mcp_edge.engine import MemoryEngine, open_engine
from hindsight.mcp_edge.mcp_server import build_mcp_server
from hindsight.mcp_edge.service import memory_service_spec
from hindsight.runtime.auth import Grants
from hindsight.runtime.server import ServiceSpec
from hindsight.runtime.testing import channel_to, serving
from tests.integration.mesh import LayerAddresses

ADMIN = "admin-secret"


@pytest.fixture(scope="module")
async def engine(mesh_layers: LayerAddresses) -> AsyncIterator[MemoryEngine]:
    async with open_engine(mesh_layers.edge_settings(admin_token=ADMIN)) as opened:
        yield opened


@pytest.fixture
def server(engine: MemoryEngine, unique_name: str) -> MCPServer:
    """The tools over the shared engine, on a bank of the test's own."""
    return build_mcp_server(engine, Grants.off(), default_bank=unique_name)


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def _error(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    return str(result.content[0].text)  # type: ignore[union-attr]


async def test_every_tool_is_published_with_limits_and_the_right_annotations(server: MCPServer) -> None:
    async with Client(server) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {
            "retain", "recall", "reflect", "list_recent", "update", "forget", "purge", "compress",
            "write_episode", "close_session", "list_entities", "entity_page",
            "list_quarantine", "review_quarantine", "audit_log", "invalidate",
            "token_create", "token_list", "token_revoke", "share",
        }  # fmt: skip
        hints = {name: tool.annotations for name, tool in tools.items()}
        assert all(h is not None and h.open_world_hint is False for h in hints.values())
        assert hints["recall"].read_only_hint and hints["list_recent"].read_only_hint  # type: ignore[union-attr]
        assert hints["purge"].destructive_hint and hints["forget"].destructive_hint  # type: ignore[union-attr]
        assert not hints["retain"].destructive_hint and not hints["retain"].idempotent_hint  # type: ignore[union-attr]
        recall = tools["recall"].input_schema["properties"]
        assert recall["top_k"]["type"] == "integer" and recall["top_k"]["maximum"] == 100
        assert recall["min_score"]["maximum"] == 1
        assert recall["order"]["anyOf"][0]["enum"] == ["score", "importance", "time_asc", "time_desc", "mix"]
        assert all(prop.get("description") for prop in recall.values())


async def test_near_miss_types_are_coerced_and_logged_and_other_mismatches_name_the_field(
    server: MCPServer, caplog: pytest.LogCaptureFixture
) -> None:
    async with Client(server) as client:
        with caplog.at_level(logging.INFO, logger="hindsight.mcp_edge.coerce"):
            stored = await _call(
                client,
                "retain",
                {
                    "text": "The staging deploy needs the --force flag.",
                    "tags": "deploy, staging",
                    "importance": "0.8",
                },
            )
            recalled = await _call(
                client,
                "recall",
                {"query": "staging deploy flag", "top_k": "3", "layers": "episodic, semantic"},
            )
        coerced = {record.field for record in caplog.records if record.message == "coerced a tool argument"}  # type: ignore[attr-defined]
        assert {"tags", "importance", "top_k", "layers"} <= coerced
        assert recalled["memories"][0]["id"] == stored["turn_ids"][0]
        assert recalled["memories"][0]["tags"] == ["deploy", "staging"]
        assert recalled["memories"][0]["importance"] == pytest.approx(0.8)
        assert {report["layer"] for report in recalled["layers"]} == {"episodic", "semantic"}

        assert "top_k" in await _error(client, "recall", {"query": "x", "top_k": "three"})
        assert "top_k" in await _error(client, "recall", {"query": "x", "top_k": 2.5})
        assert "layers" in await _error(client, "recall", {"query": "x", "layers": "episodic, nowhere"})
        assert "importance" in await _error(client, "retain", {"text": "x", "importance": 2})
        assert "success" in await _error(
            client, "write_episode", {"situation": "s", "action": "a", "success": "maybe"}
        )
        assert "`since` must be before `until`" in await _error(
            client, "recall", {"query": "x", "since": "2025-05-02T00:00:00Z", "until": "2025-05-01T00:00:00Z"}
        )


async def test_recall_reads_time_words_against_the_given_now_and_boosts_that_day(server: MCPServer) -> None:
    async with Client(server) as client:
        await _call(
            client,
            "retain",
            {
                "turns": [
                    {
                        "text": "We reviewed the quarterly budget with finance.",
                        "time": "2025-05-05T10:00:00Z",
                    },
                    {
                        "text": "We reviewed the hiring budget with the team leads.",
                        "time": "2025-05-07T10:00:00Z",
                    },
                    {"text": "我们讨论了预算和招聘计划。", "time": "2025-05-07T11:00:00Z"},
                ]
            },
        )
        now = "2025-05-08T09:00:00Z"  # a Thursday: yesterday is 7 May, 上周三 is 30 April
        recalled = await _call(
            client, "recall", {"query": "which budget did we review yesterday?", "now": now}
        )
        assert recalled["analysis"]["time_expression"] == "yesterday"
        assert recalled["analysis"]["time_use"] == "boost"
        assert recalled["analysis"]["time_start"].startswith("2025-05-07")
        assert "hiring" in recalled["memories"][0]["text"]
        assert "budget" in recalled["analysis"]["keywords"]
        assert len(recalled["analysis"]["rewrites"]) >= 2
        chinese = await _call(client, "recall", {"query": "昨天讨论了什么预算", "now": now})
        assert chinese["analysis"]["time_expression"] == "昨天"
        assert chinese["memories"][0]["text"].startswith("我们讨论了预算")


async def test_recall_filters_by_tags_cuts_at_min_score_and_fills_the_token_budget(server: MCPServer) -> None:
    async with Client(server) as client:
        await _call(
            client,
            "retain",
            {
                "turns": [
                    {"text": "Release 4.2 ships on Friday after the smoke tests.", "tags": ["release"]},
                    {"text": "Release notes for 4.2 are drafted in the wiki.", "tags": ["release", "docs"]},
                    {"text": "Release parties are fun, said nobody on the ops team.", "tags": ["social"]},
                ]
            },
        )
        tagged = await _call(client, "recall", {"query": "release 4.2", "tags": ["release"]})
        assert len(tagged["memories"]) == 2 and all("release" in m["tags"] for m in tagged["memories"])
        everything = await _call(client, "recall", {"query": "release 4.2"})
        scores = [m["score"] for m in everything["memories"]]
        assert scores == sorted(scores, reverse=True) and all(0 < s <= 1 for s in scores)
        assert scores[0] > scores[1]
        threshold = (scores[0] + scores[1]) / 2
        cut = await _call(client, "recall", {"query": "release 4.2", "min_score": threshold})
        assert [m["id"] for m in cut["memories"]] == [everything["memories"][0]["id"]]
        budget = everything["context_tokens"] - 1
        small = await _call(client, "recall", {"query": "release 4.2", "token_budget": budget})
        assert 0 < small["context_tokens"] <= budget and len(small["context_ids"]) < len(
            everything["context_ids"]
        )
        assert small["context"].startswith("## ") and "[id=" in small["context"]
        for memory_id in everything["context_ids"]:
            assert f"[id={memory_id} " in everything["context"]


async def test_list_update_forget_by_filter_and_purge_a_session(server: MCPServer) -> None:
    async with Client(server) as client:
        first = await _call(
            client,
            "retain",
            {
                "turns": [
                    {"id": "old-1", "text": "My phone number is 555-0100.", "time": "2025-01-01T00:00:00Z"},
                    {"id": "mid-1", "text": "I moved to Porto in March.", "time": "2025-03-01T00:00:00Z"},
                    {
                        "id": "new-1",
                        "text": "Remind me to renew the passport.",
                        "time": "2025-06-01T00:00:00Z",
                        "tags": ["todo"],
                    },
                ],
                "session_id": "life",
            },
        )
        assert first["turn_ids"] == ["old-1", "mid-1", "new-1"]
        recent = await _call(client, "list_recent", {"limit": "2"})
        assert [t["id"] for t in recent["turns"]] == ["new-1", "mid-1"] and recent["next_page_token"]

        updated = await _call(client, "update", {"turn_id": "old-1", "text": "My phone number is 555-0199."})
        new_id = updated["superseded_id"] and updated["turn"]["id"]
        assert updated["superseded_id"] == "old-1" and new_id != "old-1"
        recalled = await _call(client, "recall", {"query": "phone number", "layers": ["episodic"]})
        assert [m["id"] for m in recalled["memories"]] == [new_id]
        retagged = await _call(client, "update", {"turn_id": new_id, "tags": "contact", "importance": 0.9})
        assert retagged["turn"]["tags"] == ["contact"] and retagged["turn"]["time"].startswith("2025-01-01")
        assert "turn_id" in await _error(client, "update", {"turn_id": "nope", "tags": ["x"]})

        forgotten = await _call(client, "forget", {"tags": ["todo"]})
        assert forgotten["forgotten_count"] == 1
        live = await _call(client, "list_recent", {"session_id": "life"})
        assert "new-1" not in {t["id"] for t in live["turns"]}
        archived = await _call(client, "list_recent", {"session_id": "life", "include_archived": "true"})
        assert {"new-1", "old-1"} <= {t["id"] for t in archived["turns"]}
        assert "INVALID_ARGUMENT" in await _error(client, "forget", {})

        assert "exactly one" in await _error(client, "purge", {"ids": ["mid-1"], "whole_bank": True})
        purged = await _call(client, "purge", {"session_id": "life"})
        assert purged["turn_count"] >= 3
        gone = await _call(client, "list_recent", {"session_id": "life", "include_archived": True})
        assert gone["turns"] == []
        for layer in ("episodic", "semantic", "working"):
            after = await _call(client, "recall", {"query": "Porto passport phone", "layers": [layer]})
            assert after["memories"] == [], layer


async def test_a_lesson_from_a_failed_then_successful_task_comes_first_for_a_similar_task(
    server: MCPServer,
) -> None:
    async with Client(server) as client:
        await _call(client, "retain", {"text": "The production database runs PostgreSQL 15 on the big host."})
        for success, action, outcome in (
            (False, "ran the schema migration before taking a backup", "a failed migration lost rows"),
            (True, "took a backup, then ran the schema migration", "a clean upgrade"),
        ):
            episode = await _call(
                client,
                "write_episode",
                {
                    "situation": "upgrading the production database schema",
                    "action": action,
                    "outcome": outcome,
                    "success": success,
                    "task_type": "db-migration",
                    "tags": "database, migration",
                    "session_id": "task-1",
                },
            )
            assert episode["episode_id"]
        reflected = await _call(client, "reflect", {"session_id": "task-1"})
        assert reflected["episodes_read"] == 2 and reflected["lessons"]

        recalled = await _call(
            client, "recall", {"query": "I need to run a schema migration on the production database"}
        )
        assert recalled["memories"][0]["kind"] == "lesson"
        assert recalled["memories"][0]["layer"] == "reflect"
        assert any(m["kind"] == "turn" for m in recalled["memories"])
        assert recalled["context"].startswith("## Lessons from past work\n- [id=")
        assert recalled["context_ids"][0] == recalled["memories"][0]["id"]


async def test_compress_and_close_session_run_on_working_memory(server: MCPServer) -> None:
    async with Client(server) as client:
        turns = [{"text": f"Step {n}: configured service {n} with port {8000 + n}."} for n in range(12)]
        await _call(client, "retain", {"turns": turns, "session_id": "long"})
        compressed = await _call(client, "compress", {"session_id": "long"})
        assert compressed["tokens_after"] <= compressed["tokens_before"]
        closed = await _call(client, "close_session", {"session_id": "long"})
        assert closed["closed"] is True


async def test_the_debug_listing_needs_the_admin_token(mesh_layers: LayerAddresses, unique_name: str) -> None:
    async with (
        open_engine(mesh_layers.edge_settings(admin_token=ADMIN)) as engine,
        serving(lambda: _served(engine)) as server,
        channel_to(server) as channel,
    ):
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        async with Client(build_mcp_server(engine, Grants.off(), default_bank=unique_name)) as client:
            await _call(client, "retain", {"text": "a note only an admin may list"})
        request = memory_pb2.DebugListRequest(bank_id=unique_name)
        for metadata in ((), (("x-hindsight-admin-token", "wrong"),)):
            with pytest.raises(grpc.aio.AioRpcError) as denied:
                await stub.DebugList(request, metadata=metadata)
            assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
        listing = await stub.DebugList(request, metadata=(("x-hindsight-admin-token", ADMIN),))
        assert [t.text for t in listing.turns] == ["a note only an admin may list"]


@contextlib.asynccontextmanager
async def _served(engine: MemoryEngine) -> AsyncIterator[ServiceSpec]:
    """The gRPC MemoryService over an engine the test already holds."""
    yield memory_service_spec(engine)
