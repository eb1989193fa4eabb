"""With tracing off (no provider), the interceptors build no span but still pass a caller's trace on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from hindsight.runtime import tracing
from hindsight.runtime.channels import LayerClient

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN = "00f067aa0ba902b7"
FRONT = "/test.Front/Ask"
BACK = "/test.Back/Ask"


def _identity(data: bytes) -> bytes:
    return data


class BackStub:
    """A stub for the ``Back`` method, as generated stubs are made: from a channel."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.Ask = channel.unary_unary(BACK)


class _Mesh:
    """Two methods on one loopback server: ``Front`` calls ``Back``, which records the metadata it got."""

    def __init__(self) -> None:
        self.seen: list[dict[str, str]] = []
        self.client: LayerClient[BackStub] | None = None

    async def front(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        assert self.client is not None
        return await self.client.call("Ask", request, timeout=5)  # type: ignore[no-any-return]

    async def back(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        self.seen.append({item.key: str(item.value) for item in context.invocation_metadata() or ()})
        return request

    def handler(self) -> grpc.GenericRpcHandler:
        handlers = {
            FRONT: grpc.unary_unary_rpc_method_handler(self.front, _identity, _identity),
            BACK: grpc.unary_unary_rpc_method_handler(self.back, _identity, _identity),
        }

        class Handler(grpc.GenericRpcHandler):
            def service(self, details: grpc.HandlerCallDetails) -> Any:
                return handlers.get(details.method)

        return Handler()


@pytest.fixture
async def mesh() -> AsyncIterator[tuple[_Mesh, grpc.aio.Channel]]:
    previous = tracing.install(None)
    state = _Mesh()
    server = grpc.aio.server(interceptors=[tracing.ServerTracing()])
    server.add_generic_rpc_handlers((state.handler(),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    target = f"127.0.0.1:{port}"
    state.client = LayerClient(target, BackStub)
    caller = grpc.aio.insecure_channel(target)
    try:
        yield state, caller
    finally:
        await caller.close()
        await state.client.close()
        await server.stop(None)
        tracing.install(previous)


async def test_a_callers_traceparent_reaches_the_next_layer_with_tracing_off(
    mesh: tuple[_Mesh, grpc.aio.Channel],
) -> None:
    state, caller = mesh
    traceparent = f"00-{TRACE}-{SPAN}-01"
    reply = await caller.unary_unary(FRONT)(b"x", timeout=5, metadata=(("traceparent", traceparent),))
    assert reply == b"x"
    [seen] = state.seen
    assert seen["traceparent"] == traceparent  # the non-recording span is the caller's, unchanged


async def test_no_traceparent_is_made_up_when_the_caller_sent_none(
    mesh: tuple[_Mesh, grpc.aio.Channel],
) -> None:
    state, caller = mesh
    assert await caller.unary_unary(FRONT)(b"y", timeout=5) == b"y"
    [seen] = state.seen
    assert "traceparent" not in seen


async def test_the_http_middleware_passes_a_traceparent_header_on_with_tracing_off() -> None:
    previous = tracing.install(None)
    carried: list[dict[str, str]] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        carrier: dict[str, str] = {}
        tracing.PROPAGATOR.inject(carrier)
        carried.append(carrier)

    traceparent = f"00-{TRACE}-{SPAN}-01"
    try:
        middleware = tracing.HttpTracing(app)
        await middleware({"type": "http", "headers": [(b"traceparent", traceparent.encode())]}, None, None)
        await middleware({"type": "http", "headers": [(b"host", b"x")]}, None, None)
    finally:
        tracing.install(previous)
    assert carried == [{"traceparent": traceparent}, {}]
