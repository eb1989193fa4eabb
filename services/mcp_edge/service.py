"""The edge process: gRPC MemoryService and MCP streamable HTTP over one engine."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncIterator

from hindsight.contracts.memory.v1 import memory_pb2_grpc
from hindsight.mcp_edge.audit import refusal_recorder
from hindsight.mcp_edge.engine import MemoryEngine, open_engine
from hindsight.mcp_edge.http import serving_mcp_http
from hindsight.mcp_edge.servicer import MemoryServicer
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.runtime.auth import server_grants
from hindsight.runtime.logs import configure_logging
from hindsight.runtime.main import refuse_without_credentials
from hindsight.runtime.server import ServiceSpec, running
from hindsight.runtime.settings import ServerSettings, load

SERVICE_NAME = "hindsight.memory.v1.MemoryService"
log = logging.getLogger(__name__)


def memory_service_spec(engine: MemoryEngine) -> ServiceSpec:
    """The gRPC MemoryService over ``engine``. The edge owns no store, so it is ready once it serves."""
    servicer = MemoryServicer(engine)
    return ServiceSpec(
        SERVICE_NAME,
        lambda server: memory_pb2_grpc.add_MemoryServiceServicer_to_server(servicer, server),
        on_refusal=refusal_recorder(engine.audit),  # every refused call audited, whatever the log level
        token_source=engine.tokens,  # managed tokens, after the static ones
    )


@contextlib.asynccontextmanager
async def open_service(settings: EdgeSettings) -> AsyncIterator[ServiceSpec]:
    """The gRPC side alone (tests and tools that need no MCP HTTP)."""
    async with open_engine(settings) as engine:
        yield memory_service_spec(engine)


async def serve(settings: EdgeSettings, server_settings: ServerSettings) -> None:
    """Serve gRPC and (unless its port is 0) MCP HTTP until SIGTERM or SIGINT."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    grants = server_grants(server_settings)
    async with open_engine(settings) as engine, contextlib.AsyncExitStack() as stack:
        if settings.mcp_port:
            await stack.enter_async_context(serving_mcp_http(engine, settings, grants))
        spec = memory_service_spec(engine)

        @contextlib.asynccontextmanager
        async def factory() -> AsyncIterator[ServiceSpec]:
            yield spec

        async with running(factory, server_settings):
            await stop.wait()
            log.info("shutting down")


def main() -> None:
    """Entry of ``hindsight serve mcp_edge``."""
    server_settings = load(ServerSettings)
    configure_logging("mcp_edge", server_settings.log_level)
    refuse_without_credentials("mcp_edge", server_settings)
    asyncio.run(serve(load(EdgeSettings), server_settings))
