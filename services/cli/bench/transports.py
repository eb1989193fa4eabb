"""How the benchmark talks to the mesh: the gRPC ``MemoryService`` (default) or MCP over streamable HTTP.

Both retain turns whose id is the message id, and turn a recall's memories back into source message
ids: a memory cites ``meta.source_turn_ids`` (a derived record may cite several), in rank order,
deduplicated.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import grpc

from hindsight.cli.bench.datasets import Message
from hindsight.cli.bench.metrics import dedupe
from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.runtime.records import to_timestamp

RETAIN_TIMEOUT = 300.0
RECALL_TIMEOUT = 30.0
_MAX_MESSAGE = 64 * 1024 * 1024


@dataclass(frozen=True)
class Recalled:
    """A recall's source message ids, best first, each once, and whether a layer failed or was late."""

    ids: list[str]
    partial: bool = False
    layer_ms: dict[str, float] = field(default_factory=dict)
    """Each layer's time inside the edge (from the reply's per-layer report)."""


class Transport(Protocol):
    """Retain and recall against one mesh."""

    async def retain(self, bank_id: str, messages: Sequence[Message]) -> None:
        """Store messages as turns (id, speaker, time and session from the message)."""
        ...

    async def recall(self, bank_id: str, query: str, top_k: int, layers: Sequence[str] = ()) -> Recalled:
        """Source message ids of the recalled memories (asking only ``layers``, if given)."""
        ...


def source_ids(memory_id: str, cited: Sequence[str]) -> list[str]:
    """The source turns a memory stands for: the ones it cites, else itself."""
    return list(cited) or [memory_id]


def _turn(message: Message) -> common_pb2.Turn:
    meta = common_pb2.RecordMeta(source=common_pb2.SOURCE_USER)
    if message.time is not None:
        meta.time.CopyFrom(to_timestamp(message.time))
    return common_pb2.Turn(
        id=message.id,
        session_id=message.session or "default",
        role=common_pb2.ROLE_USER,
        speaker=message.speaker,
        text=message.text,
        meta=meta,
    )


class GrpcTransport:
    """The gRPC ``MemoryService`` of the edge."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self._stub = memory_pb2_grpc.MemoryServiceStub(channel)

    async def retain(self, bank_id: str, messages: Sequence[Message]) -> None:
        request = memory_pb2.RetainRequest(bank_id=bank_id, turns=[_turn(m) for m in messages])
        reply = await self._stub.Retain(request, timeout=RETAIN_TIMEOUT)
        if not reply.indexed:
            raise RuntimeError(f"bank {bank_id}: the edge stored turns without indexing them")

    async def recall(self, bank_id: str, query: str, top_k: int, layers: Sequence[str] = ()) -> Recalled:
        request = memory_pb2.RecallRequest(
            bank_id=bank_id,
            query=query,
            top_k=top_k,
            layers=[memory_pb2.Layer.Value(f"LAYER_{name.upper()}") for name in layers],
        )
        reply = await self._stub.Recall(request, timeout=RECALL_TIMEOUT)
        ids = dedupe(rid for m in reply.memories for rid in source_ids(m.id, m.meta.source_turn_ids))
        layer_ms = {
            memory_pb2.Layer.Name(report.layer).removeprefix("LAYER_").lower(): report.elapsed_ms
            for report in reply.layer_reports
        }
        return Recalled(ids, reply.partial, layer_ms)


class McpTransport:
    """The edge's MCP tools, through the official client over streamable HTTP."""

    def __init__(self, client: Any) -> None:
        self._client = client

    async def _call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self._client.call_tool(tool, arguments)
        if result.is_error:
            raise RuntimeError(f"MCP {tool} failed: {result.content}")
        return dict(result.structured_content or {})

    async def retain(self, bank_id: str, messages: Sequence[Message]) -> None:
        # The MCP tool takes one session per call: split a batch where the session changes.
        runs: list[list[Message]] = []
        for message in messages:
            if runs and runs[-1][0].session == message.session:
                runs[-1].append(message)
            else:
                runs.append([message])
        for run in runs:
            turns = [
                {
                    "id": m.id,
                    "text": m.text,
                    "speaker": m.speaker,
                    "role": "user",
                    "source": "user",
                    **({"time": m.time.isoformat()} if m.time else {}),
                }
                for m in run
            ]
            stored = await self._call(
                "retain", {"bank": bank_id, "session_id": run[0].session or "default", "turns": turns}
            )
            if not stored.get("indexed"):
                raise RuntimeError(f"bank {bank_id}: the edge stored turns without indexing them")

    async def recall(self, bank_id: str, query: str, top_k: int, layers: Sequence[str] = ()) -> Recalled:
        arguments: dict[str, Any] = {"bank": bank_id, "query": query, "top_k": top_k}
        if layers:
            arguments["layers"] = list(layers)
        reply = await self._call("recall", arguments)
        cited = [(m["id"], m.get("source_turn_ids", [])) for m in reply.get("memories", [])]
        ids = dedupe(rid for memory_id, turn_ids in cited for rid in source_ids(memory_id, turn_ids))
        layer_ms = {str(item["layer"]): float(item["elapsed_ms"]) for item in reply.get("layers", [])}
        return Recalled(ids, bool(reply.get("partial")), layer_ms)


@contextlib.asynccontextmanager
async def open_transport(kind: str, grpc_address: str, mcp_url: str) -> AsyncIterator[Transport]:
    """A connected transport of ``kind`` ("grpc" or "mcp")."""
    if kind == "grpc":
        options = [
            ("grpc.max_send_message_length", _MAX_MESSAGE),
            ("grpc.max_receive_message_length", _MAX_MESSAGE),
        ]
        async with grpc.aio.insecure_channel(grpc_address, options=options) as channel:
            yield GrpcTransport(channel)
        return
    if kind == "mcp":
        if not mcp_url:
            raise ValueError("the MCP transport needs the mesh's MCP URL")
        from mcp import Client

        async with Client(mcp_url) as client:
            yield McpTransport(client)
        return
    raise ValueError(f"unknown transport {kind!r}")
