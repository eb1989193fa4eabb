"""Helpers for tests that run a real service on loopback and talk to it through a real channel."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from hindsight.runtime.server import RunningServer, ServiceFactory, running
from hindsight.runtime.settings import ServerSettings


@contextlib.asynccontextmanager
async def serving(
    factory: ServiceFactory,
    tokens: str = "",
    port: int = 0,
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
    *,
    internal_token: str = "",
    admin_token: str = "",
) -> AsyncIterator[RunningServer]:
    """Serve ``factory`` on 127.0.0.1 for the duration of the block, at ``port`` (0: a free one), with
    ``interceptors`` inside the service's own; with no credential at all (client ``tokens``, the mesh's
    ``internal_token``, the ``admin_token``) authentication is off (loopback only)."""
    closed = bool(tokens or internal_token or admin_token)
    settings = ServerSettings(
        host="127.0.0.1",
        port=port,
        tokens=tokens,
        internal_token=internal_token,
        admin_token=admin_token,
        auth="required" if closed else "off",
        grace_seconds=0.5,
        readiness_interval=0.1,
    )
    async with running(factory, settings, interceptors) as server:
        yield server


TEST_CALL_DEADLINE = 60.0
"""Seconds a test's unary call may take when it sets no timeout: a hang fails fast and names the call."""


class _DefaultDeadline(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Gives every unary call without a timeout the test deadline."""

    async def intercept_unary_unary(self, continuation, client_call_details, request):  # type: ignore[no-untyped-def]
        if client_call_details.timeout is None:
            client_call_details = client_call_details._replace(timeout=TEST_CALL_DEADLINE)
        return await continuation(client_call_details, request)


@contextlib.asynccontextmanager
async def channel_to(server: RunningServer) -> AsyncIterator[grpc.aio.Channel]:
    """A real channel to a test server; calls that set no timeout get :data:`TEST_CALL_DEADLINE`."""
    async with grpc.aio.insecure_channel(
        f"127.0.0.1:{server.port}", interceptors=[_DefaultDeadline()]
    ) as channel:
        yield channel


async def wait_serving(channel: grpc.aio.Channel, service: str) -> None:
    """Return once ``service`` reports SERVING on ``channel`` (readiness waits for its store); a service
    that does not within 5 seconds fails the test."""
    health = health_pb2_grpc.HealthStub(channel)
    async for reply in health.Watch(health_pb2.HealthCheckRequest(service=service), timeout=5):
        if reply.status == health_pb2.HealthCheckResponse.SERVING:
            return
    raise AssertionError("never became SERVING")
