"""Request size limits agree on both ends, and an oversized retain is refused whole, naming the limit.

A layer accepts what a client may send (gRPC's own default would refuse anything over 4 MiB); a retain
larger than the request limit is refused before anything is written, with RESOURCE_EXHAUSTED over gRPC
and a tool error over MCP, and the bank is the same after as before.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import grpc
import pytest
from mcp import Client

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.contracts.working.v1 import working_pb2, working_pb2_grpc
from hindsight.mcp_edge.engine import MemoryEngine, open_engine
from hindsight.mcp_edge.mcp_server import build_mcp_server
from hindsight.mcp_edge.service import memory_service_spec
from hindsight.runtime.auth import Grants
from hindsight.runtime.channels import LayerClient, message_limits
from hindsight.runtime.server import ServiceSpec
from hindsight.runtime.testing import channel_to, serving
from tests.integration.bank_snapshot import snapshot
from tests.integration.mesh import LayerAddresses

ADMIN = "size-admin"
TURN_CHARS = 100_000
"""The longest turn the MCP schema admits."""


@pytest.fixture(scope="module")
async def engine(mesh_layers: LayerAddresses) -> AsyncIterator[MemoryEngine]:
    async with open_engine(mesh_layers.edge_settings(admin_token=ADMIN)) as opened:
        yield opened


def _too_many_turns() -> int:
    """Turns of the longest text that together pass the request limit."""
    return message_limits().max_request_bytes // TURN_CHARS + 2


async def test_a_layer_accepts_a_request_larger_than_grpcs_default_receive_limit(
    mesh_layers: LayerAddresses, unique_name: str
) -> None:
    assert message_limits().max_request_bytes > 6 * 1024 * 1024
    client = LayerClient(mesh_layers.working, working_pb2_grpc.WorkingMemoryServiceStub)
    try:
        request = working_pb2.SearchRecentRequest(bank_id=unique_name, query="boiler " * 900_000)
        try:
            await client.call("SearchRecent", request, timeout=30)
        except grpc.aio.AioRpcError as exc:  # the layer read it: any refusal is its own, never the size
            assert exc.code() != grpc.StatusCode.RESOURCE_EXHAUSTED, exc.details()
    finally:
        await client.close()


async def test_an_oversized_retain_over_mcp_is_a_tool_error_naming_the_limit_and_writes_nothing(
    engine: MemoryEngine, unique_name: str
) -> None:
    server = build_mcp_server(engine, Grants.off(), default_bank=unique_name)
    async with Client(server) as client:
        first = await client.call_tool("retain", {"text": "The boiler was serviced in May.", "id": "keep"})
        assert not first.is_error, first.content
        before = await snapshot(engine, unique_name, ADMIN)
        count = _too_many_turns()
        turns = [{"text": "x" * TURN_CHARS, "id": f"big-{n}"} for n in range(count)]
        result = await client.call_tool("retain", {"turns": turns})
        after = await snapshot(engine, unique_name, ADMIN)
    assert result.is_error
    message = str(result.content[0].text)  # type: ignore[union-attr]
    assert "turns: the request is" in message, message
    assert str(message_limits().max_request_bytes) in message and "HINDSIGHT_MAX_REQUEST_BYTES" in message
    assert after == before and before.turns == ("keep",)


async def test_an_oversized_retain_over_grpc_is_resource_exhausted_and_writes_nothing(
    engine: MemoryEngine, unique_name: str
) -> None:
    @contextlib.asynccontextmanager
    async def factory() -> AsyncIterator[ServiceSpec]:
        yield memory_service_spec(engine)

    async with serving(factory) as edge, channel_to(edge) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        before = await snapshot(engine, unique_name, ADMIN)
        turns = [
            common_pb2.Turn(id=f"big-{n}", session_id="default", text="y" * TURN_CHARS)
            for n in range(_too_many_turns())
        ]
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await stub.Retain(memory_pb2.RetainRequest(bank_id=unique_name, turns=turns), timeout=60)
        after = await snapshot(engine, unique_name, ADMIN)
    assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert str(message_limits().max_request_bytes) in (error.value.details() or "")
    assert after == before
