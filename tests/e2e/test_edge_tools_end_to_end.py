"""Every MCP tool, resource and prompt through the official MCP client against `hindsight up`, over streamable
HTTP and stdio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from hindsight.runtime.embedded import free_port
from tests.e2e.test_up_end_to_end import HINDSIGHT, _environment, _start, _stop, agent_client, home

__all__ = ["home"]  # the fixture, shared with the other end-to-end test


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, (tool, result.content)
    assert result.structured_content is not None
    return result.structured_content


async def _exercise_every_tool(client: Client, bank: str) -> None:
    """One pass over every tool on ``bank``, checking what each one changed."""
    names = {tool.name for tool in (await client.list_tools()).tools}
    assert names == {
        "retain", "recall", "reflect", "list_recent", "update", "forget", "purge", "compress",
        "write_episode", "close_session", "list_entities", "entity_page",
        "list_quarantine", "review_quarantine", "audit_log", "invalidate",
        "token_create", "token_list", "token_revoke", "share",
    }  # fmt: skip
    at = {"bank": bank, "session_id": "work"}
    one = await _call(client, "retain", {"text": "The VPN config lives in /etc/wireguard/wg0.conf.", **at})
    many = await _call(
        client,
        "retain",
        {
            "turns": [
                {"id": f"{bank}-t{n}", "text": f"Step {n}: rotated key {n} on host db-{n}.", "tags": ["ops"]}
                for n in range(10)
            ],
            **at,
        },
    )
    assert len(many["turn_ids"]) == 10
    recalled = await _call(
        client, "recall", {"query": "where is the VPN config?", "top_k": "3", "bank": bank}
    )
    assert recalled["memories"][0]["id"] == one["turn_ids"][0] and not recalled["partial"]
    assert "## " in recalled["context"] and f"[id={one['turn_ids'][0]} " in recalled["context"]

    recent = await _call(client, "list_recent", {"limit": 3, "bank": bank})
    assert [t["id"] for t in recent["turns"]] == [f"{bank}-t9", f"{bank}-t8", f"{bank}-t7"]
    updated = await _call(
        client,
        "update",
        {"turn_id": one["turn_ids"][0], "text": "The VPN config moved to /opt/vpn/wg0.conf.", "bank": bank},
    )
    again = await _call(client, "recall", {"query": "VPN config", "layers": ["episodic"], "bank": bank})
    assert again["memories"][0]["id"] == updated["turn"]["id"]
    forgotten = await _call(client, "forget", {"turn_ids": f"{bank}-t0, {bank}-t1", "bank": bank})
    assert forgotten["forgotten_count"] == 2
    ended = await _call(client, "invalidate", {"ids": f"{bank}-t2", "reason": "key retired", "bank": bank})
    assert ended["invalidated_ids"] == [f"{bank}-t2"] and not ended["unknown_ids"], ended

    for success, action in (
        (False, "restarted the node without draining it"),
        (True, "drained the node first"),
    ):
        await _call(
            client,
            "write_episode",
            {
                "situation": "rolling restart of the cache cluster",
                "action": action,
                "outcome": "errors for users" if not success else "no errors",
                "success": success,
                "task_type": "restart",
                "session_id": "restart-task",
                "bank": bank,
            },
        )
    reflected = await _call(client, "reflect", {"session_id": "restart-task", "bank": bank})
    assert reflected["episodes_read"] == 2 and reflected["lessons"]
    lesson = await _call(client, "recall", {"query": "restart the cache cluster nodes", "bank": bank})
    assert lesson["memories"][0]["kind"] == "lesson"
    assert lesson["context"].startswith("## Lessons from past work")
    await _read_resources_and_prompt(client, bank)

    compressed = await _call(client, "compress", {"session_id": "work", "bank": bank})
    assert compressed["tokens_after"] <= compressed["tokens_before"]
    closed = await _call(client, "close_session", {"session_id": "work", "bank": bank})
    assert closed["closed"]
    team = f"{bank}-team"
    shared = await _call(client, "share", {"bank": bank, "to_bank": team, "ids": [f"{bank}-t9"]})
    [copy] = shared["shared"]
    assert shared["to_bank"] == team and copy["source_id"] == f"{bank}-t9" and copy["kind"] == "turn"
    found = await _call(client, "recall", {"query": "rotated key 9 on host db-9", "bank": team})
    assert copy["id"] in [m["id"] for m in found["memories"]]
    purged = await _call(client, "purge", {"session_id": "work", "bank": bank})
    assert purged["turn_count"] >= 11 and purged["shared_copy_count"] == 1
    gone = await _call(client, "recall", {"query": "VPN config rotated key host", "bank": bank})
    assert not [m for m in gone["memories"] if "VPN" in m["text"] or "rotated key" in m["text"]]
    gone = await _call(client, "recall", {"query": "rotated key 9 on host db-9", "bank": team})
    assert not [m for m in gone["memories"] if "rotated key" in m["text"]]


async def _read_resources_and_prompt(client: Client, bank: str) -> None:
    """The bank's resources and the ``recall_context`` prompt, read after the tools filled the bank."""
    templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    assert templates == {f"hindsight://banks/{{bank}}/{view}" for view in ("recent", "lessons", "entities")}
    texts = {}
    for view in ("recent", "lessons", "entities"):
        read = await client.read_resource(f"hindsight://banks/{bank}/{view}")
        texts[view] = str(getattr(read.contents[0], "text", ""))
    assert f"id `{bank}-t9`" in texts["recent"] and "VPN config moved" in texts["recent"]
    assert "confidence " in texts["lessons"] and "rolling restart of the cache cluster" in texts["lessons"]
    assert '"entities"' in texts["entities"]
    assert {p.name for p in (await client.list_prompts()).prompts} == {"recall_context"}
    prompt = await client.get_prompt("recall_context", {"query": "where is the VPN config?", "bank": bank})
    context, asked = (str(getattr(m.content, "text", "")) for m in prompt.messages)
    assert "/opt/vpn/wg0.conf" in context and asked == "where is the VPN config?"


async def test_every_tool_runs_over_http_and_stdio_against_up(home: Path) -> None:
    mesh = await _start(home, free_port())
    try:
        async with agent_client(mesh, home) as client:
            await _exercise_every_tool(client, "e2e-http")
        stdio = StdioServerParameters(command=HINDSIGHT, args=["mcp"], env=_environment(home))
        async with Client(stdio) as client:
            await _exercise_every_tool(client, "e2e-stdio")
    finally:
        exit_code = await _stop(mesh)
    assert exit_code == 0, "".join(mesh.output)
