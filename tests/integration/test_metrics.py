"""Metrics of real services on loopback, scraped over HTTP and read with Prometheus' text parser: call
latency by method and status, layer errors seen by a caller, the outbox backlog and delivery lag, model
batch sizes and queue time, and the edge's MCP HTTP requests."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime

import grpc
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from prometheus_client import REGISTRY

from hindsight.cli.layers import LAYERS
from hindsight.cli.mesh import READY_LINE, read_mesh
from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.episodic import outbox
from hindsight.episodic.service import open_service as open_episodic
from hindsight.episodic.settings import EpisodicSettings
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.mcp_edge.http import serving_mcp_http
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.runtime import metrics
from hindsight.runtime.auth import Grants
from hindsight.runtime.embedded import free_port, free_ports
from hindsight.runtime.main import refuse_bad_telemetry
from hindsight.runtime.metrics import MetricsSettings, serving_metrics
from hindsight.runtime.records import to_timestamp
from hindsight.runtime.testing import channel_to, serving
from tests.integration.mesh import drop_schemas
from tests.integration.prometheus import Scrape, scrape
from tests.integration.test_mesh import (  # the mesh's own helpers and fixtures: the same way of starting it
    environment,  # noqa: F401  (a fixture shared_stores uses)
    interrupt_and_check_clean_exit,
    shared_stores,  # noqa: F401
    start_up,
    stop_for_sure,
)

EPISODIC = "hindsight.episodic.v1.EpisodicService"
SEMANTIC = "hindsight.semantic.v1.SemanticService"
SERVER = "hindsight_grpc_server_handling_seconds_count"
WAIT_SECONDS = 30.0
TOKEN = "metrics-token"


def _turn(turn_id: str, text: str) -> common_pb2.Turn:
    stamp = to_timestamp(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    return common_pb2.Turn(id=turn_id, session_id="s1", text=text, meta=common_pb2.RecordMeta(time=stamp))


async def _until(port: int, check: str, ok: object) -> Scrape:
    """Scrape until ``ok(scrape)`` holds (bounded): background work (the outbox) lands a little later."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        found = await scrape(port)
        if ok(found):  # type: ignore[operator]
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{check}: not seen within {WAIT_SECONDS}s")
        await asyncio.sleep(0.1)


async def test_a_scrape_shows_latency_by_method_and_status_layer_errors_and_the_outbox_backlog(
    database_url: str, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Episodic memory with its metrics port, its semantic layer's address dead: the calls show up by
    status, the outbox's failed deliveries as layer errors, and what waits as the backlog."""
    metrics_port, dead_port = free_ports(2)
    monkeypatch.setenv("HINDSIGHT_METRICS_PORT", str(metrics_port))
    monkeypatch.setattr(outbox, "BACKLOG_REPORT_SECONDS", 0.0)
    settings = EpisodicSettings(
        database_url=database_url,
        schema=unique_name,
        semantic_addr=f"127.0.0.1:{dead_port}",
        outbox_backoff_seconds=0.05,
        outbox_max_backoff_seconds=0.2,
        pool_min_size=1,
        pool_max_size=4,
    )
    try:
        async with serving(lambda: open_episodic(settings)) as server, channel_to(server) as channel:
            stub = episodic_pb2_grpc.EpisodicServiceStub(channel)
            before = await scrape(metrics_port)
            bank = f"b-{unique_name}"
            turns = [_turn("m1", "the boiler is serviced in May"), _turn("m2", "the cat is called Mo")]
            await stub.RecordTurns(episodic_pb2.RecordTurnsRequest(bank_id=bank, turns=turns))
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.RecordTurns(episodic_pb2.RecordTurnsRequest(bank_id="not a bank!", turns=turns))
            assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT

            after = await _until(
                metrics_port,
                "two entries waiting for the semantic layer",
                lambda s: s.value("hindsight_outbox_backlog", target="semantic") >= 2,
            )
            ok = {"grpc_service": EPISODIC, "grpc_method": "RecordTurns", "grpc_code": "OK"}
            bad = ok | {"grpc_code": "INVALID_ARGUMENT"}
            assert after.value(SERVER, **ok) == before.value(SERVER, **ok) + 1
            assert after.value(SERVER, **bad) == before.value(SERVER, **bad) + 1
            bucket = "hindsight_grpc_server_handling_seconds_bucket"
            assert after.value(bucket, **ok, le="+Inf") == after.value(SERVER, **ok)
            # the deliverer's calls to the dead layer, as the caller saw them
            errors = "hindsight_layer_errors_total"
            upsert = {"grpc_service": SEMANTIC, "grpc_method": "Upsert", "grpc_code": "UNAVAILABLE"}
            assert after.value(errors, **upsert) > before.value(errors, **upsert)
            assert after.value("hindsight_grpc_client_handling_seconds_count", **upsert) > 0
    finally:
        await drop_schemas(database_url, unique_name)


async def test_the_endpoint_is_gone_when_the_service_stops() -> None:
    """The port is served while the block runs and closed after (a restart can bind it again)."""
    port = free_port()
    async with serving_metrics("127.0.0.1", MetricsSettings(port=port)):
        assert "hindsight_outbox_backlog" in (await scrape(port)).families
    with pytest.raises(httpx2.ConnectError):
        await scrape(port)
    async with serving_metrics("127.0.0.1", MetricsSettings(port=port)):
        assert (await scrape(port)).families


async def test_a_metrics_port_taken_by_another_process_leaves_the_service_running(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The mesh chooses ports before its services bind them; one taken meanwhile must not stop a service."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with caplog.at_level(logging.WARNING, logger="hindsight.runtime.metrics"):
            async with serving_metrics("127.0.0.1", MetricsSettings(port=port)):
                ran = True
        assert ran
        assert any(record.getMessage() == "metrics endpoint not served" for record in caplog.records)
    # the port, free again, is served by the next block as usual
    async with serving_metrics("127.0.0.1", MetricsSettings(port=port)):
        assert (await scrape(port)).families


def test_a_malformed_metrics_port_is_refused_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_METRICS_PORT", "ninety")
    with pytest.raises(SystemExit, match="HINDSIGHT_METRICS_PORT"):
        refuse_bad_telemetry("episodic")


def test_restarts_are_a_gauge_per_service() -> None:
    """What the mesh's supervisor calls after each restart of a service."""
    metrics.set_restarts("semantic", 3)
    metrics.set_restarts("semantic", 4)
    assert REGISTRY.get_sample_value("hindsight_service_restarts", {"service": "semantic"}) == 4


async def test_mcp_requests_layer_calls_and_model_batches_show_in_the_scrape(engine: MemoryEngine) -> None:
    """Retain and recall over MCP HTTP through every real layer: the edge's HTTP requests, its calls to
    each layer, each layer's answers and the inference layer's model runs all move."""
    port = free_port()
    settings = EdgeSettings(mcp_port=free_port(), default_bank="metrics")
    async with (
        serving_metrics("127.0.0.1", MetricsSettings(port=port)),
        serving_mcp_http(engine, settings, Grants.parse(f"{TOKEN}=*")) as url,
    ):
        before = await scrape(port)
        http = httpx2.AsyncClient(headers={"authorization": f"Bearer {TOKEN}"})
        async with Client(streamable_http_client(url, http_client=http)) as client:
            stored = await client.call_tool("retain", {"text": "my sister lives in Lyon", "bank": "metrics"})
            assert not stored.is_error, stored.content
            found = await client.call_tool(
                "recall", {"query": "where does my sister live", "bank": "metrics"}
            )
            assert not found.is_error, found.content
        after = await scrape(port)

    requests = "hindsight_mcp_http_request_seconds_count"
    posted = {"route": "/mcp", "http_method": "POST", "status": "200"}
    assert after.value(requests, **posted) >= before.value(requests, **posted) + 2
    client_calls = "hindsight_grpc_client_handling_seconds_count"
    search = {"grpc_service": SEMANTIC, "grpc_method": "Search", "grpc_code": "OK"}
    assert after.value(client_calls, **search) > before.value(client_calls, **search)
    assert after.value(SERVER, **search) > before.value(SERVER, **search)
    lag = "hindsight_outbox_delivery_lag_seconds_count"
    assert after.value(lag, target="semantic") > before.value(lag, target="semantic")  # the retain's index
    batches = "hindsight_inference_batch_size_count"
    assert after.value(batches) > before.value(batches)
    assert after.value("hindsight_inference_batch_size_sum") > before.value(
        "hindsight_inference_batch_size_sum"
    )
    assert after.value("hindsight_inference_queue_seconds_count") > before.value(
        "hindsight_inference_queue_seconds_count"
    )


def test_up_gives_every_service_a_metrics_port_that_status_shows_and_a_scrape_answers(
    request: pytest.FixtureRequest,
) -> None:
    """The embedded mesh: one loopback metrics endpoint per service, in mesh.json and ``status --json``."""
    env: dict[str, str] = request.getfixturevalue("shared_stores")
    mesh = start_up(env)
    try:
        mesh.wait_for_line(READY_LINE)
        info = read_mesh(mesh.home)
        assert info is not None
        assert set(info.metrics) == {layer.name for layer in LAYERS}
        assert len(set(info.metrics.values())) == len(LAYERS)
        status = subprocess.run(
            [sys.executable, "-m", "hindsight.cli.main", "status", "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        services = json.loads(status.stdout)["services"]
        assert {name: service["metrics"] for name, service in services.items()} == info.metrics
        for name, address in info.metrics.items():
            host, _, port = address.rpartition(":")
            assert host == "127.0.0.1", name
            found = asyncio.run(scrape(int(port)))
            assert found.families["hindsight_grpc_server_handling_seconds"] == "histogram", name
            assert found.has("process_start_time_seconds"), name
        interrupt_and_check_clean_exit(mesh, mesh.family())
    finally:
        stop_for_sure(mesh)
