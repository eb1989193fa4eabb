"""What the fuzzer found, kept as plain tests: each answered INTERNAL (or an error naming nothing) before.

- bytes that are not a message of the method (gRPC itself answers INTERNAL "Exception deserializing");
- a Timestamp out of range (negative nanos, year 10000), which raised ValueError deep in a servicer;
- an MCP argument that passes the tool's schema but not the model built from it (`text` of "").
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from mcp import Client

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.working.v1 import working_pb2
from hindsight.mcp_edge.engine import open_engine
from hindsight.mcp_edge.mcp_server import build_mcp_server
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.runtime.auth import Grants
from hindsight.runtime.embedded import free_ports
from hindsight.runtime.server import RunningServer
from hindsight.runtime.testing import channel_to, serving
from hindsight.working.service import open_service as open_working
from hindsight.working.settings import WorkingSettings

APPEND = "/hindsight.working.v1.WorkingMemoryService/AppendTurns"


@pytest.fixture
async def working(redis_url: str, unique_name: str) -> AsyncIterator[RunningServer]:
    settings = WorkingSettings(redis_url=redis_url, prefix=f"t:{unique_name}")
    async with serving(lambda: open_working(settings)) as server:
        yield server


@pytest.mark.parametrize("payload", [b"\x0a\xff\xff\xff\xff\x0f", b"\x0f", b"\x0a\x02\xc3\x28"])
async def test_bytes_that_are_no_message_of_the_method_are_invalid_argument(
    working: RunningServer, payload: bytes
) -> None:
    async with channel_to(working) as channel:
        call = channel.unary_unary(APPEND, request_serializer=None, response_deserializer=None)
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await call(payload, timeout=10)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (error.value.details() or "").startswith("request: not a valid message")


@pytest.mark.parametrize(("seconds", "nanos"), [(5, -1), (253402300800, 0), (-(2**63), 0)])
async def test_a_time_out_of_range_is_invalid_argument_naming_the_field(
    working: RunningServer, unique_name: str, seconds: int, nanos: int
) -> None:
    meta = common_pb2.RecordMeta(time=Timestamp(seconds=seconds, nanos=nanos))
    request = working_pb2.AppendTurnsRequest(
        bank_id=unique_name, turns=[common_pb2.Turn(id="t1", session_id="s", text="hello", meta=meta)]
    )
    async with channel_to(working) as channel:
        call = channel.unary_unary(APPEND, request_serializer=None, response_deserializer=None)
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await call(request.SerializeToString(), timeout=10)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (error.value.details() or "").startswith("turns[0].meta.time: not a valid time")


async def test_an_argument_the_schema_admits_but_the_turn_refuses_is_a_tool_error_naming_it() -> None:
    nowhere = [f"127.0.0.1:{port}" for port in free_ports(4)]
    settings = EdgeSettings(
        working_addr=nowhere[0], episodic_addr=nowhere[1], semantic_addr=nowhere[2], reflect_addr=nowhere[3]
    )
    async with open_engine(settings) as engine, Client(build_mcp_server(engine, Grants.off(), "b")) as client:
        result = await client.call_tool("retain", {"text": ""})
    assert result.is_error
    text = str(getattr(result.content[0], "text", ""))
    assert "INVALID_ARGUMENT: text:" in text, text
