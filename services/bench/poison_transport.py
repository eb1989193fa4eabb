"""The poisoning bench's line to the edge: retain with what screening did, recall with each memory's flags.

The client library's results leave out screening and security flags, which are all this bench measures,
so it speaks the gRPC ``MemoryService`` itself (requests built with the client's converters) and keeps
only what it scores, as plain dataclasses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType

import grpc

from hindsight.bench.transports import source_ids
from hindsight.client import convert
from hindsight.client.types import RecordMeta, Role, Source, Turn
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc

RETAIN_TIMEOUT = 300.0
RECALL_TIMEOUT = 60.0
_ROLES = {"user": Role.USER, "agent": Role.ASSISTANT, "tool": Role.TOOL, "external": Role.TOOL}
"""The turn role of a planted record's source (outside content arrives as a tool's result)."""


@dataclass(frozen=True)
class Screened:
    """What write-time screening did to one retained turn."""

    turn_id: str
    kind: str
    reason: str
    action: str


@dataclass(frozen=True)
class RecalledMemory:
    """One recalled memory: the turns it stands for and the cautions it carries."""

    id: str
    text: str
    source_ids: tuple[str, ...]
    flags: tuple[str, ...]
    """"kind: reason" of each security flag; empty when the memory is unflagged."""


@dataclass(frozen=True)
class Recall:
    """A recall's memories, best first, the ids its context holds, and its warnings' kinds."""

    memories: tuple[RecalledMemory, ...]
    context_ids: tuple[str, ...]
    warnings: tuple[str, ...]


def make_turn(
    turn_id: str, text: str, source: str, speaker: str, time: datetime | None, session: str
) -> Turn:
    """A turn with the given provenance (``source`` one of user, agent, tool, external)."""
    return Turn(
        id=turn_id,
        text=text,
        session_id=session or "default",
        role=_ROLES[source],
        speaker=speaker,
        meta=RecordMeta(source=Source(source), time=time),
    )


class PoisonClient:
    """Retain and recall on one edge, with a bearer token; use as ``async with``."""

    def __init__(self, address: str, token: str) -> None:
        self._channel = grpc.aio.insecure_channel(
            address, options=[("grpc.max_receive_message_length", 64 * 1024 * 1024)]
        )
        self._stub = memory_pb2_grpc.MemoryServiceStub(self._channel)
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()

    async def __aenter__(self) -> PoisonClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self._channel.close()

    async def retain(self, bank_id: str, turns: Sequence[Turn]) -> list[Screened]:
        """Store turns; what screening did to any of them."""
        request = memory_pb2.RetainRequest(bank_id=bank_id, turns=[convert.turn_to_pb(t) for t in turns])
        reply = await self._stub.Retain(
            request, timeout=RETAIN_TIMEOUT, metadata=self._metadata, wait_for_ready=True
        )
        return [
            Screened(item.turn_id, item.screening.kind, item.screening.reason, item.screening.action)
            for item in reply.screened
        ]

    async def recall(self, bank_id: str, query: str, top_k: int, now: datetime | None) -> Recall:
        """The memories for ``query`` as of ``now`` (None: the edge's clock)."""
        request = memory_pb2.RecallRequest(
            bank_id=bank_id, query=query, top_k=top_k, reference_time=convert.moment_to_pb(now)
        )
        reply = await self._stub.Recall(
            request, timeout=RECALL_TIMEOUT, metadata=self._metadata, wait_for_ready=True
        )
        memories = tuple(
            RecalledMemory(
                id=m.id,
                text=m.text,
                source_ids=tuple(source_ids(m.id, m.meta.source_turn_ids)),
                flags=tuple(f"{flag.kind}: {flag.reason}" for flag in m.flags),
            )
            for m in reply.memories
        )
        return Recall(memories, tuple(reply.context_ids), tuple(w.kind for w in reply.warnings))
