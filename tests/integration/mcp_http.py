"""The edge's MCP tools over streamable HTTP for integration tests: serve an engine, talk to it with the
official MCP client, and call tools that must succeed."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.mcp_edge.http import serving_mcp_http
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.runtime.auth import Grants
from hindsight.runtime.embedded import free_port


@contextlib.asynccontextmanager
async def mcp_url(engine: MemoryEngine, default_bank: str, token: str) -> AsyncIterator[str]:
    """The URL of ``engine``'s MCP tools over streamable HTTP, admitting ``token`` for every bank."""
    settings = EdgeSettings(mcp_port=free_port(), default_bank=default_bank)
    async with serving_mcp_http(engine, settings, Grants.parse(f"{token}=*")) as served:
        yield served


def mcp_client(url: str, token: str) -> Client:
    """The official MCP client over streamable HTTP, presenting ``token``."""
    http = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"})
    return Client(streamable_http_client(url, http_client=http))


async def call_tool(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool's structured result; fails the test when the tool answered an error."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content
