"""The InferenceService servicer: checks requests, converts protobuf to and from the engine's types."""

from __future__ import annotations

import grpc

from hindsight.contracts.inference.v1 import inference_pb2, inference_pb2_grpc
from hindsight.inference.engine import InferenceEngine
from hindsight.runtime.errors import InvalidArgument


class InferenceServicer(inference_pb2_grpc.InferenceServiceServicer):
    """Thin edge over :class:`InferenceEngine`."""

    def __init__(self, engine: InferenceEngine, max_texts: int) -> None:
        self.engine = engine
        self.max_texts = max_texts

    async def Embed(
        self, request: inference_pb2.EmbedRequest, context: grpc.aio.ServicerContext
    ) -> inference_pb2.EmbedResponse:
        """Vectors for the texts in order; no texts gives no vectors (and still names the model)."""
        texts = list(request.texts)
        if len(texts) > self.max_texts:
            raise InvalidArgument("texts", f"at most {self.max_texts} texts per request, got {len(texts)}")
        for index, text in enumerate(texts):
            if not text.strip():
                raise InvalidArgument(f"texts[{index}]", "must not be empty or blank")
        result = await self.engine.embed(texts, request.model)
        return inference_pb2.EmbedResponse(
            embeddings=[inference_pb2.Embedding(values=row.tolist()) for row in result.vectors],
            model=result.model,
            dimension=result.dimension,
        )

    async def ModelInfo(
        self, request: inference_pb2.ModelInfoRequest, context: grpc.aio.ServicerContext
    ) -> inference_pb2.ModelInfoResponse:
        """Name, dimension, token limit and file hash of the named (or default) model."""
        info = self.engine.describe(request.model)
        return inference_pb2.ModelInfoResponse(
            name=info.name,
            dimension=info.dimension,
            max_length=info.max_length,
            content_hash=info.content_hash,
        )
