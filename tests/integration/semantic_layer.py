"""The semantic layer served on its own for integration tests, and the turn records they write into it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from datetime import datetime

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.runtime.records import to_timestamp
from hindsight.runtime.testing import channel_to, serving
from hindsight.semantic.service import open_service
from hindsight.semantic.settings import SemanticSettings


@contextlib.asynccontextmanager
async def serve_semantic(settings: SemanticSettings) -> AsyncIterator[semantic_pb2_grpc.SemanticServiceStub]:
    """A semantic service with ``settings`` on loopback, and a stub to it."""
    async with serving(lambda: open_service(settings)) as server, channel_to(server) as channel:
        yield semantic_pb2_grpc.SemanticServiceStub(channel)


def turn_record(
    turn_id: str,
    text: str,
    when: datetime,
    speaker: str,
    session: str = "s1",
    *,
    cites: Sequence[str] = (),
    source: int = common_pb2.SOURCE_USER,
    trust: int = common_pb2.TRUST_UNSPECIFIED,
) -> semantic_pb2.SemanticRecord:
    """A turn as episodic memory hands it to the semantic layer: it stands on itself unless it ``cites``
    other turns."""
    return semantic_pb2.SemanticRecord(
        id=turn_id,
        kind=semantic_pb2.RECORD_KIND_TURN,
        text=text,
        speaker=speaker,
        session_id=session,
        meta=common_pb2.RecordMeta(
            source_turn_ids=[*cites] or [turn_id],
            source=source,  # type: ignore[arg-type]
            trust=trust,  # type: ignore[arg-type]
            time=to_timestamp(when),
        ),
    )
