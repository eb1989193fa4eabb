"""gRPC MemoryService: protobuf in and out, the engine does the work."""

from __future__ import annotations

import uuid

import grpc

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.mcp_edge.domain import ALL_LAYERS, LayerName, RecallQuery, RecallResult
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.records import TimeRange, Turn, to_timestamp, utcnow
from hindsight.runtime.validation import check_limit, check_text

DEFAULT_SESSION = "default"
MAX_TOP_K = 100

LAYER_TO_PB = {
    LayerName.WORKING: memory_pb2.LAYER_WORKING,
    LayerName.EPISODIC: memory_pb2.LAYER_EPISODIC,
    LayerName.SEMANTIC: memory_pb2.LAYER_SEMANTIC,
    LayerName.REFLECT: memory_pb2.LAYER_REFLECT,
}
LAYER_FROM_PB = {v: k for k, v in LAYER_TO_PB.items()}


def turns_from_request(turns: list[common_pb2.Turn]) -> list[Turn]:
    """Fill what a caller may leave out (id, session, time), then validate each turn naming its index."""
    result = []
    for index, message in enumerate(turns):
        filled = common_pb2.Turn()
        filled.CopyFrom(message)
        if not filled.id:
            filled.id = uuid.uuid4().hex
        if not filled.session_id:
            filled.session_id = DEFAULT_SESSION
        if not filled.meta.HasField("time"):
            filled.meta.time.CopyFrom(to_timestamp(utcnow()))
        result.append(Turn.from_pb(filled, f"turns[{index}]"))
    return result


def recall_query_from_request(request: memory_pb2.RecallRequest) -> RecallQuery:
    """Validate a RecallRequest."""
    layers = []
    for index, value in enumerate(request.layers):
        if value not in LAYER_FROM_PB:
            raise InvalidArgument(f"layers[{index}]", "is not a known layer")
        layers.append(LAYER_FROM_PB[value])
    return RecallQuery(
        bank_id=request.bank_id,
        query=check_text(request.query, "query", max_chars=10_000),
        top_k=check_limit(request.top_k, "top_k", default=10, maximum=MAX_TOP_K),
        layers=tuple(dict.fromkeys(layers)) or ALL_LAYERS,
        time_range=TimeRange.from_pb(request.time_range if request.HasField("time_range") else None),
        session_id=request.session_id,
    )


def recall_response(result: RecallResult) -> memory_pb2.RecallResponse:
    """Convert a RecallResult."""
    return memory_pb2.RecallResponse(
        memories=[
            memory_pb2.Memory(
                id=m.id,
                layer=LAYER_TO_PB[m.layer],
                text=m.text,
                speaker=m.speaker,
                score=m.score,
                meta=m.meta.to_pb(),
                layers=[LAYER_TO_PB[layer] for layer in m.layers],
            )
            for m in result.memories
        ],
        partial=result.partial,
        layer_reports=[
            memory_pb2.LayerReport(
                layer=LAYER_TO_PB[o.layer],
                ok=o.ok,
                error=o.error,
                elapsed_ms=o.elapsed_ms,
                candidate_count=len(o.candidates),
            )
            for o in result.outcomes
        ],
    )


class MemoryServicer(memory_pb2_grpc.MemoryServiceServicer):
    """The public gRPC API; auth and bank checks are done by the shared interceptor."""

    def __init__(self, engine: MemoryEngine) -> None:
        self.engine = engine

    async def Retain(
        self, request: memory_pb2.RetainRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.RetainResponse:
        result = await self.engine.retain(request.bank_id, turns_from_request(list(request.turns)))
        return memory_pb2.RetainResponse(
            turn_ids=list(result.turn_ids), duplicate_count=result.duplicate_count, indexed=result.indexed
        )

    async def Recall(
        self, request: memory_pb2.RecallRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.RecallResponse:
        return recall_response(await self.engine.recall(recall_query_from_request(request)))

    async def WriteEpisode(
        self, request: memory_pb2.WriteEpisodeRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.WriteEpisodeResponse:
        return memory_pb2.WriteEpisodeResponse(
            episode=await self.engine.write_episode(request.bank_id, request.episode)
        )

    async def Reflect(
        self, request: memory_pb2.ReflectRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.ReflectResponse:
        reply = await self.engine.reflect(request.bank_id, request.session_id)
        return memory_pb2.ReflectResponse(lessons=reply.lessons, episodes_read=reply.episodes_read)

    async def Forget(
        self, request: memory_pb2.ForgetRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.ForgetResponse:
        result = await self.engine.forget(request.bank_id, list(request.turn_ids), hard=request.hard)
        return memory_pb2.ForgetResponse(
            forgotten_count=result.forgotten_count,
            unindexed_count=result.unindexed_count,
            working_removed_count=result.working_removed_count,
        )

    async def Compress(
        self, request: memory_pb2.CompressRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.CompressResponse:
        reply = await self.engine.compress(request.bank_id, request.session_id)
        return memory_pb2.CompressResponse(
            group_count=reply.group_count,
            summarised_turn_count=reply.summarised_turn_count,
            tokens_before=reply.tokens_before,
            tokens_after=reply.tokens_after,
            summariser=reply.summariser,
        )

    async def CloseSession(
        self, request: memory_pb2.CloseSessionRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.CloseSessionResponse:
        result = await self.engine.close_session(request.bank_id, request.session_id)
        return memory_pb2.CloseSessionResponse(
            closed=result.closed,
            turn_count=result.turn_count,
            summary_count=result.summary_count,
            token_count=result.token_count,
            reflected=result.reflected,
            reflect_error=result.reflect_error,
            lessons=list(result.lessons),
            episodes_read=result.episodes_read,
        )
