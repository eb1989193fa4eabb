"""The MCP server agents talk to: tools over the same engine as the gRPC MemoryService.

This module only assembles the server; the tools live in :mod:`.tools`, one module a group. Tool arguments
are typed, so the SDK publishes strict JSON schemas with limits and descriptions; near-miss types (``"3"``
for 3, ``"a, b"`` for a list) are coerced and logged (:mod:`.coerce`). Errors the caller can fix come back
as tool errors naming the field; the server never crashes on bad input. Every call's caller (the local user
on stdio, the bearer token's owner over HTTP) must grant the bank it names.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.mcp_edge.mcp_auth import HttpAuth
from hindsight.mcp_edge.mcp_resources import register_resources
from hindsight.mcp_edge.mcp_share import register_share_tool
from hindsight.mcp_edge.mcp_tokens import register_token_tools
from hindsight.mcp_edge.tools import entities, episodes, lifecycle, memory, recall, review
from hindsight.mcp_edge.tools.access import ToolContext
from hindsight.runtime.auth import Caller, Grants


def build_mcp_server(
    engine: MemoryEngine,
    grants: Grants,
    default_bank: str,
    *,
    http_auth: HttpAuth | None = None,
    local_caller: Caller | None = None,
) -> MCPServer:
    """An MCP server whose tools run on ``engine``. The caller owns the engine's lifetime.

    ``http_auth``: how MCP HTTP authenticates (the SDK then answers 401 and serves the resource metadata);
    ``local_caller``: the caller of every call, for transports that carry no credential (stdio, in-process).
    With neither, a call is served only when ``grants`` are open (authentication off).
    """
    server: MCPServer = MCPServer(
        "hindsight",
        title="Hindsight memory",
        instructions=(
            "Layered memory. Call `recall` before answering anything that may depend on earlier "
            "conversations, corrections or past work (its `context` is ready to read, lessons first); call "
            "`retain` with what the user said and what you did; call `write_episode` when a task ends and "
            "`reflect` to learn from it."
        ),
        token_verifier=http_auth.verifier if http_auth else None,
        auth=http_auth.settings if http_auth else None,
    )
    access = ToolContext(
        default_bank, local_caller=local_caller, open=grants.open and http_auth is None, audit=engine.audit
    )
    register_resources(server, engine, access)
    for group in (memory, recall, entities, episodes, lifecycle, review):
        group.register(server, engine, access)
    register_token_tools(server, engine, access)
    register_share_tool(server, engine, access)
    return server
