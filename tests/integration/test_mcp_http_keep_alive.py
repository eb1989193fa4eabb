"""MCP HTTP keeps an idle connection open longer than clients keep theirs (httpx: 5 s).

A server that closes idle connections first races the client's next request on them: under load, agents'
MCP sessions were reset that way. Over one raw socket: a request, a pause past the old 5 s limit, then a
second request on the same connection, which must be answered.
"""

from __future__ import annotations

import asyncio

from mcp.server.mcpserver import MCPServer

from hindsight.mcp_edge.endpoint import HttpEndpoint
from hindsight.mcp_edge.http import KEEP_ALIVE_SECONDS, serving_http
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.runtime.embedded import free_port

CLIENT_IDLE_SECONDS = 5.0
"""How long httpx keeps an idle connection (its default ``keepalive_expiry``)."""


async def _ask(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> bytes:
    """One GET on the open connection; the status line of the answer (b"" when the server closed it)."""
    writer.write(f"GET /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\n\r\n".encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n") if not reader.at_eof() else b""
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        ),
        0,
    )
    if length:
        await reader.readexactly(length)
    return head.split(b"\r\n", 1)[0]


async def test_an_idle_connection_outlives_the_clients_own_idle_limit() -> None:
    assert KEEP_ALIVE_SECONDS > CLIENT_IDLE_SECONDS
    port = free_port()
    endpoint = HttpEndpoint.of(EdgeSettings(mcp_host="127.0.0.1", mcp_port=port))
    async with serving_http(MCPServer("keep-alive"), endpoint):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            host = f"127.0.0.1:{port}"
            first = await _ask(reader, writer, host)
            assert first.startswith(b"HTTP/1.1 ")
            await asyncio.sleep(CLIENT_IDLE_SECONDS + 1.0)
            try:
                second = await _ask(reader, writer, host)
            except (asyncio.IncompleteReadError, ConnectionError):
                second = b""
            assert second.startswith(b"HTTP/1.1 "), "the server closed the idle connection"
        finally:
            writer.close()
