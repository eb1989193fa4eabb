"""Status codes keep their meaning from a layer to the caller, and reads (only reads) are retried.

Real layers on loopback; a server interceptor inside the service's own makes one method slow or refuse
its first call, so the client side sees a real DEADLINE_EXCEEDED or UNAVAILABLE on the wire.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.contracts.working.v1 import working_pb2, working_pb2_grpc
from hindsight.episodic.service import open_service as open_episodic
from hindsight.episodic.settings import EpisodicSettings
from hindsight.mcp_edge.domain import LayerName, RecallQuery
from hindsight.mcp_edge.engine import open_engine
from hindsight.mcp_edge.service import open_service as open_edge
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.embedded import free_ports
from hindsight.runtime.errors import DeadlineExceeded, Unavailable
from hindsight.runtime.server import RunningServer
from hindsight.runtime.testing import channel_to, serving
from hindsight.working.service import open_service as open_working
from hindsight.working.settings import WorkingSettings
from tests.integration.mesh import drop_schemas
from tests.integration.misbehave import Misbehave


def _working(redis_url: str, prefix: str, watcher: Misbehave) -> Any:
    settings = WorkingSettings(redis_url=redis_url, prefix=f"t:{prefix}")
    return serving(lambda: open_working(settings), interceptors=[watcher])


def _search(bank: str) -> working_pb2.SearchRecentRequest:
    return working_pb2.SearchRecentRequest(bank_id=bank, query="boiler")


async def test_a_layer_past_the_deadline_is_deadline_exceeded_and_one_that_is_down_unavailable(
    redis_url: str, unique_name: str
) -> None:
    watcher = Misbehave(slow=("SearchRecent",), delay=2.0)
    async with _working(redis_url, unique_name, watcher) as server:
        client = LayerClient(f"127.0.0.1:{server.port}", working_pb2_grpc.WorkingMemoryServiceStub)
        try:
            with pytest.raises(DeadlineExceeded) as late:
                await client.call("SearchRecent", _search(unique_name), timeout=0.3)
        finally:
            await client.close()
    assert late.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert isinstance(late.value, Unavailable)  # partial recall and the outbox still treat it as a miss
    assert "DEADLINE_EXCEEDED" in str(late.value)

    down = LayerClient(f"127.0.0.1:{free_ports(1)[0]}", working_pb2_grpc.WorkingMemoryServiceStub)
    try:
        with pytest.raises(Unavailable) as refused:
            await down.call("SearchRecent", _search(unique_name), timeout=5)
    finally:
        await down.close()
    assert not isinstance(refused.value, DeadlineExceeded)
    assert refused.value.code == grpc.StatusCode.UNAVAILABLE


async def test_a_read_that_finds_its_layer_unavailable_is_sent_again_and_a_write_is_not(
    redis_url: str, unique_name: str
) -> None:
    watcher = Misbehave(refuse_first=1)
    async with _working(redis_url, unique_name, watcher) as server:
        client = LayerClient(f"127.0.0.1:{server.port}", working_pb2_grpc.WorkingMemoryServiceStub)
        try:
            reply = await client.call("SearchRecent", _search(unique_name), timeout=10)
            with pytest.raises(Unavailable):
                await client.call(
                    "AppendTurns",
                    working_pb2.AppendTurnsRequest(
                        bank_id=unique_name,
                        turns=[common_pb2.Turn(id="w1", session_id="s", text="The boiler was serviced.")],
                    ),
                    timeout=10,
                )
        finally:
            await client.close()
    assert list(reply.hits) == []
    assert watcher.counts == {"SearchRecent": 2, "AppendTurns": 1}


@pytest.fixture
async def slow_episodic(database_url: str, unique_name: str) -> AsyncIterator[RunningServer]:
    """A real episodic layer whose writes and searches take two seconds."""
    settings = EpisodicSettings(
        database_url=database_url, schema=unique_name, pool_min_size=1, pool_max_size=2
    )
    watcher = Misbehave(slow=("RecordTurns", "SearchTurns"), delay=2.0)
    async with serving(lambda: open_episodic(settings), interceptors=[watcher]) as server:
        yield server
    await drop_schemas(database_url, unique_name)


def _edge_settings(episodic: RunningServer, **overrides: Any) -> EdgeSettings:
    nowhere = [f"127.0.0.1:{port}" for port in free_ports(3)]
    values: dict[str, Any] = {
        "working_addr": nowhere[0],
        "episodic_addr": f"127.0.0.1:{episodic.port}",
        "semantic_addr": nowhere[1],
        "reflect_addr": nowhere[2],
        "mcp_port": 0,
    }
    values.update(overrides)
    return EdgeSettings(**values)


async def test_a_memory_service_caller_sees_deadline_exceeded_when_a_layer_is_late(
    slow_episodic: RunningServer, unique_name: str
) -> None:
    settings = _edge_settings(slow_episodic, write_timeout=0.3)
    async with serving(lambda: open_edge(settings)) as edge, channel_to(edge) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await stub.Retain(
                memory_pb2.RetainRequest(
                    bank_id=unique_name, turns=[common_pb2.Turn(id="r1", session_id="s", text="Hello there.")]
                ),
                timeout=10,
            )
    assert error.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED


async def test_partial_recall_reports_tell_a_late_layer_from_one_that_is_down(
    slow_episodic: RunningServer, unique_name: str
) -> None:
    # working memory weighs 0 in fusion by default, and is then not asked: ask it, to see it down
    settings = _edge_settings(slow_episodic, recall_timeout=0.5, ask_unweighted=True)
    async with open_engine(settings) as engine:
        result = await engine.recall(
            RecallQuery(bank_id=unique_name, query="boiler", layers=(LayerName.WORKING, LayerName.EPISODIC))
        )
    errors = {o.layer: o.error for o in result.outcomes}
    assert result.partial
    assert errors[LayerName.WORKING].startswith("unavailable"), errors
    assert errors[LayerName.EPISODIC].startswith("deadline exceeded"), errors
