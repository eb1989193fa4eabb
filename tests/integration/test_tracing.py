"""Traces across the fan-out: a recall through the real edge and every real layer on loopback, its spans
exported over OTLP/HTTP (the SDK's exporter, configured by ``HINDSIGHT_OTLP_ENDPOINT``) to a receiver on
loopback that decodes them with the OTLP protobuf messages. One trace id runs from the edge's span through
every layer's server span, each server span the child of the client span that called it."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.mcp_edge.engine import open_engine
from hindsight.mcp_edge.http import serving_mcp_http
from hindsight.mcp_edge.service import open_service as open_edge
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.runtime import tracing
from hindsight.runtime.auth import Grants
from hindsight.runtime.embedded import free_port
from hindsight.runtime.testing import channel_to, serving
from tests.integration.mesh import layer_mesh

TOKEN = "tracing-token"
BANK = "tracing"
WAIT_SECONDS = 30.0
LAYERS = {
    "hindsight.working.v1.WorkingMemoryService",
    "hindsight.episodic.v1.EpisodicService",
    "hindsight.semantic.v1.SemanticService",
    "hindsight.reflect.v1.ReflectService",
}
"""The layers a recall asks, each of which must answer inside the recall's trace (working memory too: these
edges ask a layer that weighs 0 in fusion, which a default edge leaves out)."""
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


@dataclass(frozen=True)
class Span:
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    kind: int
    attributes: dict[str, str]


class _Receiver(BaseHTTPRequestHandler):
    """OTLP/HTTP with protobuf bodies: what a collector's receiver accepts at /v1/traces."""

    spans: list[Span]
    lock: threading.Lock

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
        found = [
            Span(
                span.trace_id.hex(),
                span.span_id.hex(),
                span.parent_span_id.hex(),
                span.name,
                span.kind,
                {a.key: a.value.string_value or str(a.value.int_value) for a in span.attributes},
            )
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]
        with self.lock:
            self.spans.extend(found)
        reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200 if self.path == "/v1/traces" else 404)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: object) -> None:  # quiet: the test reads the spans
        return


@contextlib.contextmanager
def otlp_receiver() -> Iterator[tuple[str, list[Span], threading.Lock]]:
    spans: list[Span] = []
    lock = threading.Lock()
    handler = type("Receiver", (_Receiver,), {"spans": spans, "lock": lock})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/traces", spans, lock
    finally:
        server.shutdown()
        server.server_close()


async def _trace_of(spans: list[Span], lock: threading.Lock, trace_id: str, want: int) -> list[Span]:
    """The trace's spans, once at least ``want`` server spans of the layers have arrived (bounded)."""
    provider = tracing.installed()
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        if provider is not None:
            await asyncio.to_thread(provider.force_flush)
        with lock:
            trace = [span for span in spans if span.trace_id == trace_id]
        servers = {
            s.attributes.get("rpc.service") for s in trace if s.kind == trace_pb2.Span.SPAN_KIND_SERVER
        }
        if len(servers & LAYERS) >= want:
            return trace
        if time.monotonic() > deadline:
            raise AssertionError(
                f"trace {trace_id}: layer server spans seen: {sorted(filter(None, servers))}"
            )
        await asyncio.sleep(0.1)


def _check_tree(trace: list[Span], root: Span) -> None:
    """Each layer's server span hangs off a client span of its trace; every span leads up to ``root``."""
    by_id = {span.span_id: span for span in trace}
    for span in trace:
        if span.kind == trace_pb2.Span.SPAN_KIND_SERVER and span.attributes.get("rpc.service") in LAYERS:
            parent = by_id[span.parent_id]
            assert parent.kind == trace_pb2.Span.SPAN_KIND_CLIENT, (span.name, parent.name)
            assert parent.name == span.name  # the client span of that very method
        ancestor = span
        while ancestor is not root:
            assert ancestor.parent_id in by_id, f"{span.name}: parent {ancestor.parent_id} not in the trace"
            ancestor = by_id[ancestor.parent_id]


async def test_a_recall_is_one_trace_from_the_edge_through_every_layer(
    database_url: str, redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    previous = tracing.install(None)
    with otlp_receiver() as (endpoint, spans, lock):
        monkeypatch.setenv("HINDSIGHT_OTLP_ENDPOINT", endpoint)
        try:
            async with layer_mesh(database_url, redis_url, tmp_path / "qdrant") as layers:
                provider = tracing.installed()
                assert provider is not None, "the first service did not configure the OTLP exporter"
                async with (
                    open_engine(layers.edge_settings(ask_unweighted=True)) as engine,
                    serving_mcp_http(
                        engine,
                        EdgeSettings(mcp_port=free_port(), default_bank=BANK),
                        Grants.parse(f"{TOKEN}=*"),
                    ) as url,
                ):
                    http = httpx2.AsyncClient(headers={"authorization": f"Bearer {TOKEN}"})
                    async with Client(streamable_http_client(url, http_client=http)) as client:
                        stored = await client.call_tool("retain", {"text": "the spare key is under the mat"})
                        assert not stored.is_error, stored.content
                        found = await client.call_tool("recall", {"query": "where is the spare key"})
                        assert not found.is_error, found.content
                    await asyncio.to_thread(provider.force_flush)
                    with lock:
                        recalls = [span for span in spans if span.name == "recall"]
                    assert len(recalls) == 1, [span.name for span in spans]
                    [recall] = recalls
                    trace = await _trace_of(spans, lock, recall.trace_id, len(LAYERS))
                    by_id = {span.span_id: span for span in trace}
                    http_span = by_id[recall.parent_id]
                    assert http_span.name == "POST /mcp" and http_span.kind == trace_pb2.Span.SPAN_KIND_SERVER
                    assert http_span.parent_id == ""  # the MCP client sent no traceparent: the edge began it
                    _check_tree(trace, http_span)

                # A caller's traceparent over gRPC: the edge's Recall continues it, and so does every layer.
                async with (
                    serving(lambda: open_edge(layers.edge_settings(ask_unweighted=True))) as edge,
                    channel_to(edge) as channel,
                ):
                    stub = memory_pb2_grpc.MemoryServiceStub(channel)
                    traceparent = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"
                    await stub.Recall(
                        memory_pb2.RecallRequest(bank_id=BANK, query="the spare key"),
                        metadata=(("traceparent", traceparent),),
                    )
                trace = await _trace_of(spans, lock, CALLER_TRACE, len(LAYERS))
                [edge_span] = [s for s in trace if s.name == "hindsight.memory.v1.MemoryService/Recall"]
                assert (
                    edge_span.parent_id == CALLER_SPAN and edge_span.kind == trace_pb2.Span.SPAN_KIND_SERVER
                )
                assert edge_span.attributes["rpc.grpc.status_code"] == "0"
                [recall] = [s for s in trace if s.name == "recall"]
                assert recall.parent_id == edge_span.span_id
                _check_tree(trace, edge_span)
        finally:
            provider = tracing.install(previous)
            if provider is not None:
                provider.shutdown()


def test_a_sample_ratio_outside_zero_to_one_is_refused_naming_the_variable() -> None:
    with pytest.raises(ValueError, match="HINDSIGHT_TRACE_SAMPLE_RATIO"):
        tracing.TracingSettings(sample_ratio=1.5)


def test_nothing_is_recorded_without_an_endpoint_but_a_callers_trace_passes_on() -> None:
    """Off by default: no provider, and a server span is the caller's own context, unchanged."""
    previous = tracing.install(None)
    try:
        assert tracing.configure("hindsight-test", tracing.TracingSettings()) is None
        parent = tracing.incoming_context((("traceparent", f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"),))
        with tracing.tracer().start_as_current_span("x", context=parent) as span:
            carrier: dict[str, str] = {}
            tracing.PROPAGATOR.inject(carrier)
            assert not span.is_recording()
        assert carrier["traceparent"] == f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"
    finally:
        tracing.install(previous)
