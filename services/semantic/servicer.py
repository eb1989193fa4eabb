"""The gRPC edge of the semantic layer: validates and converts protobuf, then calls the engine."""

from __future__ import annotations

import grpc

from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.records import RecordMeta, TimeRange
from hindsight.runtime.validation import check_limit, check_text
from hindsight.semantic.engine import DEFAULT_LIMIT, MAX_LIMIT, SemanticEngine
from hindsight.semantic.records import RecordKind, ScoredRecord, SemanticRecord

MAX_RECORDS = 1024
"""Records per Upsert: bounds one request's embedding time and memory."""
MAX_DELETE_KEYS = 10_000
MAX_ID_CHARS = 256

_KIND_FROM_PB = {
    semantic_pb2.RECORD_KIND_UNSPECIFIED: RecordKind.TURN,
    semantic_pb2.RECORD_KIND_TURN: RecordKind.TURN,
    semantic_pb2.RECORD_KIND_FACT: RecordKind.FACT,
    semantic_pb2.RECORD_KIND_PREFERENCE: RecordKind.PREFERENCE,
    semantic_pb2.RECORD_KIND_RULE: RecordKind.RULE,
    semantic_pb2.RECORD_KIND_EPISODE: RecordKind.EPISODE,
}
_KIND_TO_PB = {
    kind: value for value, kind in _KIND_FROM_PB.items() if value != semantic_pb2.RECORD_KIND_UNSPECIFIED
}


def record_from_pb(message: semantic_pb2.SemanticRecord, field_name: str) -> SemanticRecord:
    """Convert and validate one record, naming the offending field."""
    if not message.id:
        raise InvalidArgument(f"{field_name}.id", "is required")
    if len(message.id) > MAX_ID_CHARS:
        raise InvalidArgument(f"{field_name}.id", f"must be at most {MAX_ID_CHARS} characters")
    check_text(message.text, f"{field_name}.text")
    if message.kind not in _KIND_FROM_PB:
        raise InvalidArgument(f"{field_name}.kind", "is not a known record kind")
    return SemanticRecord(
        id=message.id,
        text=message.text,
        kind=_KIND_FROM_PB[message.kind],
        speaker=message.speaker,
        session_id=message.session_id,
        meta=RecordMeta.from_pb(message.meta, f"{field_name}.meta"),
    )


def record_to_pb(record: SemanticRecord) -> semantic_pb2.SemanticRecord:
    """Convert to protobuf."""
    return semantic_pb2.SemanticRecord(
        id=record.id,
        kind=_KIND_TO_PB[record.kind],
        text=record.text,
        speaker=record.speaker,
        session_id=record.session_id,
        meta=record.meta.to_pb(),
    )


def scored_to_pb(hit: ScoredRecord) -> semantic_pb2.ScoredRecord:
    """Convert to protobuf."""
    return semantic_pb2.ScoredRecord(record=record_to_pb(hit.record), score=hit.score)


def _keys(values: list[str], field_name: str) -> list[str]:
    if len(values) > MAX_DELETE_KEYS:
        raise InvalidArgument(field_name, f"must list at most {MAX_DELETE_KEYS} values")
    for index, value in enumerate(values):
        if not value:
            raise InvalidArgument(f"{field_name}[{index}]", "must not be empty")
    return values


class SemanticServicer(semantic_pb2_grpc.SemanticServiceServicer):
    """Thin: protobuf in, engine call, protobuf out."""

    def __init__(self, engine: SemanticEngine) -> None:
        self.engine = engine

    async def Upsert(
        self, request: semantic_pb2.UpsertRequest, context: grpc.aio.ServicerContext
    ) -> semantic_pb2.UpsertResponse:
        if not request.records:
            raise InvalidArgument("records", "must not be empty")
        if len(request.records) > MAX_RECORDS:
            raise InvalidArgument("records", f"must hold at most {MAX_RECORDS} records")
        records = [record_from_pb(record, f"records[{i}]") for i, record in enumerate(request.records)]
        return semantic_pb2.UpsertResponse(upserted_count=await self.engine.upsert(request.bank_id, records))

    async def Search(
        self, request: semantic_pb2.SearchRequest, context: grpc.aio.ServicerContext
    ) -> semantic_pb2.SearchResponse:
        query = check_text(request.query, "query", max_chars=10_000)
        limit = check_limit(request.limit, "limit", DEFAULT_LIMIT, MAX_LIMIT)
        window = TimeRange.from_pb(request.time_range if request.HasField("time_range") else None)
        hits = await self.engine.search(request.bank_id, query, limit, window)
        return semantic_pb2.SearchResponse(hits=[scored_to_pb(hit) for hit in hits])

    async def Delete(
        self, request: semantic_pb2.DeleteRequest, context: grpc.aio.ServicerContext
    ) -> semantic_pb2.DeleteResponse:
        ids = _keys(list(request.ids), "ids")
        turns = _keys(list(request.source_turn_ids), "source_turn_ids")
        if not ids and not turns:
            raise InvalidArgument("ids", "give record ids or source_turn_ids to delete")
        return semantic_pb2.DeleteResponse(
            deleted_count=await self.engine.delete(request.bank_id, ids, turns)
        )
