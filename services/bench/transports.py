"""How the benchmark talks to the mesh: the gRPC ``MemoryService`` (default) or MCP over streamable HTTP.

Both retain turns whose id is the message id, and turn a recall's memories back into source message
ids: a memory cites ``meta.source_turn_ids`` (a derived record may cite several), in rank order,
deduplicated.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from hindsight.bench.datasets import Message
from hindsight.bench.metrics import dedupe
from hindsight.client import AsyncMemoryClient, RecordMeta, Role, Source, Turn

RETAIN_TIMEOUT = 300.0
RECALL_TIMEOUT = 30.0


@dataclass(frozen=True)
class Recalled:
    """A recall's source message ids, best first, each once, and whether a layer failed or was late."""

    ids: list[str]
    partial: bool = False
    layer_ms: dict[str, float] = field(default_factory=dict)
    """Each layer's time inside the edge (from the reply's per-layer report)."""
    scored: list[tuple[float, list[str]]] = field(default_factory=list)
    """Each recalled memory's relevance and the source ids it stands for, in rank order (for studying
    the relevance floor: what a higher floor or support level would have cut)."""
    context: str = ""
    """The context the edge assembled from the recall, within the token budget asked for."""


class Transport(Protocol):
    """Retain and recall against one mesh."""

    async def retain(self, bank_id: str, messages: Sequence[Message]) -> None:
        """Store messages as turns (id, speaker, time and session from the message)."""
        ...

    async def recall(
        self,
        bank_id: str,
        query: str,
        top_k: int,
        layers: Sequence[str] = (),
        now: datetime | None = None,
        token_budget: int = 0,
    ) -> Recalled:
        """Source message ids of the recalled memories (asking only ``layers``, if given) as of ``now``, and
        the context assembled within ``token_budget`` tokens (0: the edge's default)."""
        ...


def source_ids(memory_id: str, cited: Sequence[str]) -> list[str]:
    """The source turns a memory stands for: the ones it cites, else itself."""
    return list(cited) or [memory_id]


def grpc_turn(message: Message, session: str | None = None) -> Turn:
    """A benchmark message as a user's turn for the MemoryService, in its own session or ``session``."""
    return Turn(
        id=message.id,
        session_id=session or message.session or "default",
        role=Role.USER,
        speaker=message.speaker,
        text=message.text,
        meta=RecordMeta(source=Source.USER, time=message.time),
    )


def mcp_turn(message: Message) -> dict[str, Any]:
    """A benchmark message as a user's turn in the MCP retain tool's arguments."""
    return {
        "id": message.id,
        "text": message.text,
        "speaker": message.speaker,
        "role": "user",
        "source": "user",
        **({"time": message.time.isoformat()} if message.time else {}),
    }


class GrpcTransport:
    """The gRPC ``MemoryService`` of the edge, through the client library."""

    def __init__(self, client: AsyncMemoryClient) -> None:
        self._client = client

    async def retain(self, bank_id: str, messages: Sequence[Message]) -> None:
        stored = await self._client.retain(bank_id, [grpc_turn(m) for m in messages], timeout=RETAIN_TIMEOUT)
        if not stored.indexed:
            raise RuntimeError(f"bank {bank_id}: the edge stored turns without indexing them")

    async def recall(
        self,
        bank_id: str,
        query: str,
        top_k: int,
        layers: Sequence[str] = (),
        now: datetime | None = None,
        token_budget: int = 0,
    ) -> Recalled:
        reply = await self._client.recall(
            bank_id,
            query,
            top_k=top_k,
            layers=layers,
            reference_time=now,
            token_budget=token_budget,
            timeout=RECALL_TIMEOUT,
        )
        ids = dedupe(rid for m in reply.memories for rid in source_ids(m.id, m.meta.source_turn_ids))
        layer_ms = {
            report.layer.value if report.layer else "unspecified": report.elapsed_ms
            for report in reply.layer_reports
        }
        scored = [(float(m.score), source_ids(m.id, m.meta.source_turn_ids)) for m in reply.memories]
        return Recalled(ids, reply.partial, layer_ms, scored, reply.context)


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
            turns = [mcp_turn(m) for m in run]
            stored = await self._call(
                "retain", {"bank": bank_id, "session_id": run[0].session or "default", "turns": turns}
            )
            if not stored.get("indexed"):
                raise RuntimeError(f"bank {bank_id}: the edge stored turns without indexing them")

    async def recall(
        self,
        bank_id: str,
        query: str,
        top_k: int,
        layers: Sequence[str] = (),
        now: datetime | None = None,
        token_budget: int = 0,
    ) -> Recalled:
        arguments: dict[str, Any] = {"bank": bank_id, "query": query, "top_k": top_k}
        if token_budget:
            arguments["token_budget"] = token_budget
        if layers:
            arguments["layers"] = list(layers)
        if now is not None:
            arguments["now"] = now.isoformat()
        reply = await self._call("recall", arguments)
        cited = [(m["id"], m.get("source_turn_ids", [])) for m in reply.get("memories", [])]
        ids = dedupe(rid for memory_id, turn_ids in cited for rid in source_ids(memory_id, turn_ids))
        layer_ms = {str(item["layer"]): float(item["elapsed_ms"]) for item in reply.get("layers", [])}
        scores = [float(m.get("score", 0.0)) for m in reply.get("memories", [])]
        scored = [(score, source_ids(*item)) for score, item in zip(scores, cited, strict=True)]
        context = str(reply.get("context", ""))
        return Recalled(ids, bool(reply.get("partial")), layer_ms, scored, context)


@contextlib.asynccontextmanager
async def open_transport(
    kind: str, grpc_address: str, mcp_url: str, token: str = ""
) -> AsyncIterator[Transport]:
    """A connected transport of ``kind`` ("grpc" or "mcp") that presents ``token`` on every call."""
    if kind == "grpc":
        async with AsyncMemoryClient(grpc_address, token=token, timeout=RECALL_TIMEOUT) as client:
            yield GrpcTransport(client)
        return
    if kind == "mcp":
        if not mcp_url:
            raise ValueError("the MCP transport needs the mesh's MCP URL")
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        headers = {"authorization": f"Bearer {token}"} if token else {}
        timeout = httpx2.Timeout(30.0, read=300.0)  # a response stream may stay open a while
        async with (
            httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
            Client(streamable_http_client(mcp_url, http_client=http)) as client,
        ):
            yield McpTransport(client)
        return
    raise ValueError(f"unknown transport {kind!r}")
