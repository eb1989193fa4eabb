"""What every family of the memory engine shares: the layers' channels, the settings, the audit queue, the
write guard, the managed tokens, and the background tasks a close waits for.

The families (:mod:`~hindsight.mcp_edge.engine_writes`, :mod:`~hindsight.mcp_edge.engine_reads`,
:mod:`~hindsight.mcp_edge.engine_review`, :mod:`~hindsight.mcp_edge.engine_recall` with its parts,
:mod:`~hindsight.mcp_edge.engine_forget`, :mod:`~hindsight.mcp_edge.engine_sessions`) are mixins on this
base, assembled into the one :class:`~hindsight.mcp_edge.engine.MemoryEngine`. Mixins rather than composed
parts: both fronts, the console and the tests hold one engine and call its methods by name, so callers keep
one class with the same methods and no forwarding layer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import grpc

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.contracts.reflect.v1 import reflect_pb2_grpc
from hindsight.contracts.semantic.v1 import semantic_pb2_grpc
from hindsight.contracts.working.v1 import working_pb2_grpc
from hindsight.mcp_edge.audit import AuditQueue
from hindsight.mcp_edge.held import HeldBanks
from hindsight.mcp_edge.meaning import MeaningProbe
from hindsight.mcp_edge.rerank import HeadReranker
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.mcp_edge.token_registry import TokenRegistry
from hindsight.mcp_edge.write_guard import WriteGuard
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.errors import HindsightError
from hindsight.runtime.llm import LLMClient

log = logging.getLogger("hindsight.mcp_edge.engine")
"""One logger for every family of the engine, so its log lines keep the name they had as one module."""


def describe(exc: BaseException) -> str:
    """A short reason for a log line or a layer report, led by what happened ("deadline exceeded",
    "unavailable", ...) so a report tells a slow layer from one that is down."""
    if isinstance(exc, grpc.aio.AioRpcError):
        return f"{_status_words(exc.code())}: {exc.details() or ''}".rstrip(": ")
    if isinstance(exc, HindsightError):
        return f"{_status_words(exc.code)}: {exc}"
    if isinstance(exc, TimeoutError):
        return "deadline exceeded"
    return str(exc) or type(exc).__name__


def _status_words(code: grpc.StatusCode) -> str:
    return code.name.lower().replace("_", " ")


@dataclass
class LayerClients:
    """One channel per layer the edge talks to."""

    working: LayerClient[working_pb2_grpc.WorkingMemoryServiceStub]
    episodic: LayerClient[episodic_pb2_grpc.EpisodicServiceStub]
    semantic: LayerClient[semantic_pb2_grpc.SemanticServiceStub]
    reflect: LayerClient[reflect_pb2_grpc.ReflectServiceStub]

    async def close(self) -> None:
        """Close every channel."""
        await asyncio.gather(
            self.working.close(), self.episodic.close(), self.semantic.close(), self.reflect.close()
        )


class EngineBase:
    """The channels, the settings and the edge's own state, shared by every family of the engine."""

    def __init__(
        self,
        clients: LayerClients,
        settings: EdgeSettings,
        reranker: HeadReranker | None = None,
        llm: LLMClient | None = None,
        meaning: MeaningProbe | None = None,
    ) -> None:
        self.clients = clients
        self.settings = settings
        self.reranker = reranker
        self.llm = llm
        self.meaning = meaning
        """Measures meaning when the semantic layer gives no cosines (:mod:`.meaning`)."""
        self._background: set[asyncio.Task[None]] = set()
        self.audit = AuditQueue(self._send_audit)
        """Security decisions on their way to the audit log (episodic memory), off the request path."""
        self.guard = WriteGuard(settings, self.audit)
        """Write rate limits and screening of every retained turn."""
        self.access_notes_dropped = 0
        """Access notes not sent because too many were in flight (episodic memory slow or down)."""
        self._access_drops_logged_at = float("-inf")
        self.held_banks = HeldBanks()
        """Which banks' review queues have turns: a recall asks for warnings only where there can be some."""
        self.tokens = TokenRegistry(
            clients.episodic,
            self.audit,
            refresh_seconds=settings.token_refresh_seconds,
            stale_seconds=settings.token_stale_seconds,
            touch_seconds=settings.token_touch_seconds,
        )
        """The managed tokens, looked up after the static ones once a front attaches it (see ``start``)."""

    async def _send_audit(self, entries: Sequence[common_pb2.AuditEntry]) -> None:
        await self.clients.episodic.call(
            "AppendAudit", episodic_pb2.AppendAuditRequest(entries=list(entries)), self.settings.write_timeout
        )

    async def drain(self) -> None:
        """Wait for background work (access notes, audit entries) to finish; called on close and by tests."""
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        await self.audit.drain()
