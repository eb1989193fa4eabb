"""MCP resources and the ``recall_context`` prompt on a real engine over every real layer, through the
official MCP client: in process with a fixed caller (as stdio serves) and over streamable HTTP with bearer
tokens, where a token for another bank is refused."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.mcp_edge.http import serving_mcp_http
from hindsight.mcp_edge.mcp_server import build_mcp_server
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.runtime.auth import Caller, Grants
from hindsight.runtime.embedded import free_port

TEMPLATES = {
    "hindsight://banks/{bank}/recent",
    "hindsight://banks/{bank}/lessons",
    "hindsight://banks/{bank}/entities",
}


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def _read(client: Client, uri: str) -> tuple[str, str]:
    """The text and MIME type of a resource."""
    result = await client.read_resource(uri)
    assert len(result.contents) == 1
    content = result.contents[0]
    return str(getattr(content, "text", "")), str(content.mime_type)


async def _fill(client: Client) -> list[str]:
    """Two turns and a lesson from a failed then a successful task; returns the turn ids."""
    retained = await _call(
        client,
        "retain",
        {
            "turns": [
                {"text": "Maria Keller leads the payments team in Zurich.", "speaker": "Sam"},
                {"text": "The payments service deploys every Thursday.", "role": "assistant"},
            ]
        },
    )
    for success, action in ((False, "deployed without a canary"), (True, "deployed behind a canary")):
        await _call(
            client,
            "write_episode",
            {
                "situation": "deploying the payments service",
                "action": action,
                "outcome": "ok" if success else "an outage",
                "success": success,
                "session_id": "deploy",
            },
        )
    reflected = await _call(client, "reflect", {"session_id": "deploy"})
    assert reflected["lessons"]
    return list(retained["turn_ids"])


async def test_resources_and_the_prompt_are_listed_read_and_checked_against_the_callers_banks(
    engine: MemoryEngine, unique_name: str
) -> None:
    caller = Caller(name="stdio-test", banks=frozenset({unique_name}))
    server = build_mcp_server(engine, Grants(), unique_name, local_caller=caller)
    async with Client(server) as client:
        turn_ids = await _fill(client)

        templates = (await client.list_resource_templates()).resource_templates
        assert {t.uri_template for t in templates} == TEMPLATES
        assert all(t.description and t.mime_type for t in templates)
        assert (await client.list_resources()).resources == []

        recent, mime = await _read(client, f"hindsight://banks/{unique_name}/recent")
        assert mime == "text/markdown"
        assert recent.startswith(f"# Recent turns in bank `{unique_name}`")
        assert "Maria Keller leads the payments team" in recent and "(Sam)" in recent
        assert all(f"id `{turn_id}`" in recent for turn_id in turn_ids)
        assert recent.index("deploys every Thursday") < recent.index("Maria Keller")  # newest first

        lessons, _ = await _read(client, f"hindsight://banks/{unique_name}/lessons")
        assert lessons.startswith(f"# Lessons in bank `{unique_name}`")
        assert "confidence 0." in lessons or "confidence 1.00" in lessons
        assert "when: deploying the payments service" in lessons

        entities, mime = await _read(client, f"hindsight://banks/{unique_name}/entities")
        assert mime == "application/json"
        assert "entities" in json.loads(entities)

        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        assert set(prompts) == {"recall_context"}
        arguments = {a.name: a.required for a in prompts["recall_context"].arguments or []}
        assert arguments == {"query": True, "bank": False}

        question = "Who leads the payments team?"
        prompt = await client.get_prompt("recall_context", {"query": question})
        assert [m.role for m in prompt.messages] == ["user", "user"]
        context, asked = (str(getattr(m.content, "text", "")) for m in prompt.messages)
        assert "Maria Keller" in context and "cite ids" in context
        assert asked == question

        other = f"{unique_name}_other"
        for uri in (f"hindsight://banks/{other}/recent", f"hindsight://banks/{other}/lessons"):
            with pytest.raises(MCPError, match="PERMISSION_DENIED: credential 'stdio-test'"):
                await client.read_resource(uri)
        with pytest.raises(MCPError, match="PERMISSION_DENIED"):
            await client.get_prompt("recall_context", {"query": question, "bank": other})
        with pytest.raises(MCPError, match="INVALID_ARGUMENT: bank"):
            await client.read_resource("hindsight://banks/-bad-/recent")


async def test_over_http_a_token_reads_its_own_banks_resources_and_prompt_and_no_other(
    engine: MemoryEngine, unique_name: str
) -> None:
    mine, theirs = f"{unique_name}_a", f"{unique_name}_b"
    grants = Grants.parse(f"mine-token={mine};theirs-token={theirs}")
    settings = EdgeSettings(mcp_port=free_port(), default_bank=mine)
    async with serving_mcp_http(engine, settings, grants) as url:

        def client(token: str) -> Client:
            http = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"})
            return Client(streamable_http_client(url, http_client=http))

        async with client("mine-token") as owner:
            await _call(owner, "retain", {"text": "The staging cluster lives in Frankfurt."})
            recent, _ = await _read(owner, f"hindsight://banks/{mine}/recent")
            assert "staging cluster lives in Frankfurt" in recent
            lessons, _ = await _read(owner, f"hindsight://banks/{mine}/lessons")
            assert "No lessons yet" in lessons
            prompt = await owner.get_prompt("recall_context", {"query": "Where is the staging cluster?"})
            assert "Frankfurt" in str(getattr(prompt.messages[0].content, "text", ""))

        async with client("theirs-token") as stranger:
            listed = (await stranger.list_resource_templates()).resource_templates
            assert {t.uri_template for t in listed} == TEMPLATES
            for uri in (f"hindsight://banks/{mine}/{view}" for view in ("recent", "lessons", "entities")):
                with pytest.raises(MCPError, match="PERMISSION_DENIED"):
                    await stranger.read_resource(uri)
            with pytest.raises(MCPError, match="PERMISSION_DENIED"):
                await stranger.get_prompt("recall_context", {"query": "Where is the staging cluster?"})
            own, _ = await _read(stranger, f"hindsight://banks/{theirs}/recent")
            assert "No turns yet." in own
