"""MCP over streamable HTTP, served by uvicorn next to the gRPC server in the same process.

Stateless mode: any replica can answer any request, so the edge scales horizontally. Authorization
follows the MCP spec through the SDK's own machinery (:mod:`.mcp_auth`): a request without a good bearer
token gets 401 and a pointer to the protected resource metadata, and each tool checks that the caller
grants the bank it names. DNS rebinding protection (Host and Origin, :mod:`.endpoint`) is on whatever the
bind address. The web console (:mod:`.console`) is served beside MCP at ``/console``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence

import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.routing import BaseRoute

from hindsight.mcp_edge.console.app import console_routes
from hindsight.mcp_edge.console.guard import ConsoleGuard
from hindsight.mcp_edge.endpoint import HttpEndpoint
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.mcp_edge.mcp_auth import http_auth_for
from hindsight.mcp_edge.mcp_server import build_mcp_server
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.runtime.auth import Grants
from hindsight.runtime.metrics import HttpMetrics
from hindsight.runtime.settings import SettingsError
from hindsight.runtime.tracing import HttpTracing

log = logging.getLogger(__name__)

SHUTDOWN_GRACE_SECONDS = 5
"""How long open requests and connections get to finish when the edge stops; then they are closed."""
KEEP_ALIVE_SECONDS = 75
"""How long an idle connection is kept open. Longer than clients keep theirs (httpx: 5 s), so the client
is the side that closes an idle one: a server that closes first races the client's next request on that
connection, which then fails with a reset (under load, when the edge reads requests late, many did)."""


@contextlib.asynccontextmanager
async def serving_http(
    server: MCPServer, endpoint: HttpEndpoint, extra_routes: Sequence[BaseRoute] = ()
) -> AsyncIterator[str]:
    """Serve ``server`` over MCP streamable HTTP at ``endpoint`` (with ``extra_routes`` beside it) for the
    duration of the block; yields the URL to reach it from this machine."""
    app = server.streamable_http_app(
        streamable_http_path=endpoint.path,
        stateless_http=True,
        json_response=True,
        transport_security=endpoint.transport_security(),
        host=endpoint.host,
    )
    app.router.routes.extend(extra_routes)
    config = uvicorn.Config(
        HttpTracing(HttpMetrics(app)),  # a span and a latency sample for every request
        host=endpoint.host,
        port=endpoint.port,
        log_config=None,
        lifespan="on",
        access_log=False,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        # A client that keeps its connection (or a request that never ends) must not hold the stop forever.
        timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
    )
    http = uvicorn.Server(config)
    task = asyncio.create_task(http.serve())
    while not http.started:
        if task.done():  # failed to bind or to start: surface the error
            await task
            raise OSError(f"MCP HTTP server on {endpoint.host}:{endpoint.port} stopped during start-up")
        await asyncio.sleep(0.01)
    log.info(
        "mcp http listening",
        extra={
            "url": endpoint.local_url,
            "public_url": endpoint.public_url,
            "auth": server.settings.auth is not None,
            "allowed_hosts": list(endpoint.allowed_hosts),
        },
    )
    try:
        yield endpoint.local_url
    finally:
        http.should_exit = True
        await task


@contextlib.asynccontextmanager
async def serving_mcp_http(
    engine: MemoryEngine, settings: EdgeSettings, grants: Grants
) -> AsyncIterator[str]:
    """The edge's MCP tools on ``engine`` over HTTP as ``settings`` say, admitting the callers ``grants``
    know (and JWTs, when keys are configured); yields the URL to reach it from this machine.

    Refuses (SettingsError) to serve without authentication anywhere but on loopback.
    """
    endpoint = HttpEndpoint.of(settings)
    if not grants.open:  # managed tokens, after the static ones, as on the gRPC port
        await engine.tokens.start()
        grants.with_source(engine.tokens)
    auth = http_auth_for(settings, grants, endpoint)
    if auth is None and not endpoint.loopback:
        raise SettingsError(
            f"MCP HTTP on {endpoint.host} without authentication is refused: authentication may be off only "
            "on loopback (set HINDSIGHT_TOKENS or HINDSIGHT_MCP_JWKS)"
        )
    server = build_mcp_server(engine, grants, settings.default_bank, http_auth=auth)
    console = console_routes(engine, ConsoleGuard(endpoint, auth.verifier if auth else None))
    async with serving_http(server, endpoint, console) as url:
        yield url
