"""A write to a layer that has only just started listening is sent, not refused; a read still fails fast.

The mesh starts every service at once, so a layer's client may try its peer before the peer listens; gRPC
then fails every call at once until its reconnect back-off ends. These tests use real loopback servers.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from hindsight.runtime.channels import LayerClient
from hindsight.runtime.errors import Unavailable

WRITE = "/test.Layer/RecordThing"
READ = "/test.Layer/GetThing"


def _identity(data: bytes) -> bytes:
    return data


class LayerStub:
    """One write and one read method, made from a channel as generated stubs are."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.RecordThing = channel.unary_unary(WRITE)
        self.GetThing = channel.unary_unary(READ)


async def _echo(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    return request


class _Handler(grpc.GenericRpcHandler):
    def service(self, details: grpc.HandlerCallDetails) -> Any:
        if details.method in (WRITE, READ):
            return grpc.unary_unary_rpc_method_handler(_echo, _identity, _identity)
        return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
async def late_layer() -> AsyncIterator[tuple[int, LayerClient[LayerStub]]]:
    port = _free_port()
    client = LayerClient(f"127.0.0.1:{port}", LayerStub)
    try:
        yield port, client
    finally:
        await client.close()


async def _serve(port: int) -> grpc.aio.Server:
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((_Handler(),))
    assert server.add_insecure_port(f"127.0.0.1:{port}") == port
    await server.start()
    return server


async def test_a_write_sent_just_after_its_layer_came_up_is_delivered(
    late_layer: tuple[int, LayerClient[LayerStub]],
) -> None:
    port, client = late_layer
    with pytest.raises(Unavailable):  # nothing listens yet: the channel fails and backs off
        await client.call("GetThing", b"probe", timeout=2)
    server = await _serve(port)
    try:
        assert await client.call("RecordThing", b"kept", timeout=5) == b"kept"
    finally:
        await server.stop(None)


async def test_a_write_to_a_layer_that_stays_down_is_refused_after_the_grace(
    late_layer: tuple[int, LayerClient[LayerStub]],
) -> None:
    _, client = late_layer
    with pytest.raises(Unavailable) as refused:
        await asyncio.wait_for(client.call("RecordThing", b"lost?", timeout=30), timeout=20)
    assert refused.type is Unavailable  # refused, not left to run into its deadline


async def test_a_read_of_a_layer_that_is_down_fails_at_once_rather_than_waiting(
    late_layer: tuple[int, LayerClient[LayerStub]],
) -> None:
    _, client = late_layer
    with pytest.raises(Unavailable):
        await client.call("GetThing", b"probe", timeout=2)
    with pytest.raises(Unavailable) as refused:
        await client.call("GetThing", b"again", timeout=30)
    assert refused.type is Unavailable  # failed fast, not left to run into its deadline
