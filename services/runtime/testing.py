"""Helpers for tests that run a real service on loopback and talk to it through a real channel."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import grpc

from hindsight.runtime.server import RunningServer, ServiceFactory, running
from hindsight.runtime.settings import ServerSettings


@contextlib.asynccontextmanager
async def serving(factory: ServiceFactory, tokens: str = "") -> AsyncIterator[RunningServer]:
    """Serve ``factory`` on 127.0.0.1 at a free port for the duration of the block."""
    settings = ServerSettings(
        host="127.0.0.1", port=0, tokens=tokens, grace_seconds=0.5, readiness_interval=0.1
    )
    async with running(factory, settings) as server:
        yield server


@contextlib.asynccontextmanager
async def channel_to(server: RunningServer) -> AsyncIterator[grpc.aio.Channel]:
    """A real channel to a test server."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        yield channel
