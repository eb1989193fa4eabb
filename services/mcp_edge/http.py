"""MCP over streamable HTTP, served by uvicorn next to the gRPC server in the same process.

Stateless mode: any replica can answer any request, so the edge scales horizontally. When tokens
are configured, a request without a token that the server knows is refused with 401 before it
reaches MCP; each tool then checks that the token grants the bank it names.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer

from hindsight.runtime.auth import Grants, bearer
from hindsight.runtime.errors import HindsightError

log = logging.getLogger(__name__)

Scope = dict[str, Any]


class BearerGate:
    """ASGI middleware: refuses HTTP requests whose bearer token is missing or unknown."""

    def __init__(self, app: Any, grants: Grants) -> None:
        self.app = app
        self.grants = grants

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self.grants.open:
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            try:
                self.grants.authenticate(bearer(headers.get("authorization")))
            except HindsightError as exc:
                body = json.dumps({"error": "unauthorized", "detail": str(exc)}).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


@contextlib.asynccontextmanager
async def serving_http(
    server: MCPServer, grants: Grants, host: str, port: int, path: str
) -> AsyncIterator[str]:
    """Serve MCP streamable HTTP at ``http://host:port{path}`` for the duration of the block."""
    app = BearerGate(
        server.streamable_http_app(
            streamable_http_path=path, stateless_http=True, json_response=True, host=host
        ),
        grants,
    )
    config = uvicorn.Config(app, host=host, port=port, log_config=None, lifespan="on", access_log=False)
    http = uvicorn.Server(config)
    task = asyncio.create_task(http.serve())
    while not http.started:
        if task.done():  # failed to bind or to start: surface the error
            await task
            raise OSError(f"MCP HTTP server on {host}:{port} stopped during start-up")
        await asyncio.sleep(0.01)
    url = f"http://{host}:{port}{path}"
    log.info("mcp http listening", extra={"url": url})
    try:
        yield url
    finally:
        http.should_exit = True
        await task
