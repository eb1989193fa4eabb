"""A recall's time words are read in a time zone: the request's, else the edge's setting (gRPC and MCP)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import grpc
import pytest
from mcp import Client

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.mcp_edge.engine import open_engine
from hindsight.mcp_edge.mcp_server import build_mcp_server
from hindsight.mcp_edge.service import open_service
from hindsight.runtime.auth import Grants
from hindsight.runtime.records import to_timestamp
from hindsight.runtime.settings import SettingsError
from hindsight.runtime.testing import channel_to, serving
from tests.integration.mesh import LayerAddresses

TIMEOUT = 20
BANK = "time-zone-bank"
# 20:00 UTC on 8 May is 04:00 on 9 May in Shanghai: "yesterday" is 7 May in UTC, 8 May in Shanghai.
NOW = datetime(2025, 5, 8, 20, tzinfo=UTC)
QUARTERLY = (
    "tz-quarterly",
    "We reviewed the quarterly budget with finance.",
    datetime(2025, 5, 7, 10, tzinfo=UTC),
)
HIRING = (
    "tz-hiring",
    "We reviewed the hiring budget with the team leads.",
    datetime(2025, 5, 8, 2, tzinfo=UTC),
)
QUERY = "which budget did we review yesterday?"


def _turn(turn_id: str, text: str, moment: datetime) -> common_pb2.Turn:
    return common_pb2.Turn(
        id=turn_id,
        session_id=turn_id,
        role=common_pb2.ROLE_USER,
        text=text,
        meta=common_pb2.RecordMeta(time=to_timestamp(moment)),
    )


async def _stub(mesh_layers: LayerAddresses, zone: str) -> AsyncIterator[memory_pb2_grpc.MemoryServiceStub]:
    async with (
        serving(lambda: open_service(mesh_layers.edge_settings(time_zone=zone))) as server,
        channel_to(server) as channel,
    ):
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        turns = [_turn(*QUARTERLY), _turn(*HIRING)]
        reply = await stub.Retain(memory_pb2.RetainRequest(bank_id=BANK, turns=turns), timeout=TIMEOUT)
        assert reply.indexed
        yield stub


@pytest.fixture(scope="module")
async def utc_edge(mesh_layers: LayerAddresses) -> AsyncIterator[memory_pb2_grpc.MemoryServiceStub]:
    async for stub in _stub(mesh_layers, "UTC"):
        yield stub


@pytest.fixture(scope="module")
async def shanghai_edge(mesh_layers: LayerAddresses) -> AsyncIterator[memory_pb2_grpc.MemoryServiceStub]:
    async for stub in _stub(mesh_layers, "Asia/Shanghai"):
        yield stub


async def _recall(stub: memory_pb2_grpc.MemoryServiceStub, **fields: Any) -> memory_pb2.RecallResponse:
    request = memory_pb2.RecallRequest(bank_id=BANK, query=QUERY, reference_time=to_timestamp(NOW), **fields)
    reply = await stub.Recall(request, timeout=TIMEOUT)
    assert not reply.partial
    return reply


async def test_the_request_time_zone_decides_which_day_yesterday_is(
    utc_edge: memory_pb2_grpc.MemoryServiceStub,
) -> None:
    in_utc = await _recall(utc_edge)
    assert in_utc.analysis.time_range.start.ToDatetime(UTC) == datetime(2025, 5, 7, tzinfo=UTC)
    assert in_utc.memories[0].id == "tz-quarterly"
    in_shanghai = await _recall(utc_edge, time_zone="Asia/Shanghai")
    assert in_shanghai.analysis.time_expression == "yesterday"
    assert in_shanghai.analysis.time_range.start.ToDatetime(UTC) == datetime(2025, 5, 7, 16, tzinfo=UTC)
    assert in_shanghai.memories[0].id == "tz-hiring"


async def test_the_edge_setting_is_the_default_zone_and_a_request_overrides_it(
    shanghai_edge: memory_pb2_grpc.MemoryServiceStub,
) -> None:
    assert (await _recall(shanghai_edge)).memories[0].id == "tz-hiring"
    assert (await _recall(shanghai_edge, time_zone="UTC")).memories[0].id == "tz-quarterly"


async def test_an_unknown_time_zone_is_an_invalid_argument_naming_the_field(
    utc_edge: memory_pb2_grpc.MemoryServiceStub,
) -> None:
    for name in ("Mars/Olympus_Mons", "../etc/passwd"):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await _recall(utc_edge, time_zone=name)
        assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert "time_zone" in (caught.value.details() or "")


def test_an_unknown_time_zone_setting_is_refused_at_start(mesh_layers: LayerAddresses) -> None:
    with pytest.raises(SettingsError, match="HINDSIGHT_TIME_ZONE"):
        mesh_layers.edge_settings(time_zone="Nowhere/Special")


async def test_the_mcp_recall_tool_takes_now_and_a_time_zone(
    mesh_layers: LayerAddresses, utc_edge: memory_pb2_grpc.MemoryServiceStub
) -> None:
    async with open_engine(mesh_layers.edge_settings()) as engine:
        server = build_mcp_server(engine, Grants.off(), default_bank=BANK)
        async with Client(server) as client:
            arguments = {"query": QUERY, "now": NOW.isoformat(), "time_zone": "Asia/Shanghai"}
            result = await client.call_tool("recall", arguments)
            assert not result.is_error, result.content
            assert result.structured_content is not None
            assert result.structured_content["memories"][0]["id"] == "tz-hiring"
            refused = await client.call_tool("recall", {**arguments, "time_zone": "Mars/Olympus_Mons"})
            assert refused.is_error
            assert "time_zone" in str(refused.content[0].text)  # type: ignore[union-attr]
