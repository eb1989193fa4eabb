"""The InferenceService servicer: checks requests, converts protobuf to and from the engine's types."""

from __future__ import annotations

import grpc

from hindsight.contracts.inference.v1 import inference_pb2, inference_pb2_grpc
from hindsight.inference.engine import InferenceEngine, Purpose
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.vectors import PACKED_DTYPES, pack_vectors

_PURPOSES = {
    inference_pb2.EMBED_PURPOSE_UNSPECIFIED: Purpose.NONE,
    inference_pb2.EMBED_PURPOSE_QUERY: Purpose.QUERY,
    inference_pb2.EMBED_PURPOSE_PASSAGE: Purpose.PASSAGE,
}


class InferenceServicer(inference_pb2_grpc.InferenceServiceServicer):
    """Thin edge over :class:`InferenceEngine`."""

    def __init__(self, engine: InferenceEngine, max_texts: int, max_documents: int = 256) -> None:
        self.engine = engine
        self.max_texts = max_texts
        self.max_documents = max_documents

    async def Embed(
        self, request: inference_pb2.EmbedRequest, context: grpc.aio.ServicerContext
    ) -> inference_pb2.EmbedResponse:
        """Vectors for the texts in order; any text (empty, blank, emoji, very long) gets a vector."""
        texts = list(request.texts)
        if len(texts) > self.max_texts:
            raise InvalidArgument("texts", f"at most {self.max_texts} texts per request, got {len(texts)}")
        if request.purpose not in _PURPOSES:
            raise InvalidArgument("purpose", f"unknown purpose {request.purpose}")
        packed = request.encoding != inference_pb2.VECTOR_ENCODING_UNSPECIFIED
        if packed and request.encoding not in PACKED_DTYPES:
            raise InvalidArgument("encoding", f"unknown vector encoding {request.encoding}")
        result = await self.engine.embed(texts, request.model, _PURPOSES[request.purpose])
        reply = inference_pb2.EmbedResponse(
            model=result.model, dimension=result.dimension, truncated_indices=result.truncated
        )
        if packed:
            reply.vectors = pack_vectors(result.vectors, request.encoding)
            reply.encoding = request.encoding
        else:
            for row in result.vectors:
                reply.embeddings.add(values=row.tolist())
        return reply

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
            models=info.models,
            rerankers=info.rerankers,
        )

    async def Rerank(
        self, request: inference_pb2.RerankRequest, context: grpc.aio.ServicerContext
    ) -> inference_pb2.RerankResponse:
        """One score per document, in the documents' order."""
        documents = list(request.documents)
        if len(documents) > self.max_documents:
            raise InvalidArgument(
                "documents", f"at most {self.max_documents} documents per request, got {len(documents)}"
            )
        result = await self.engine.rerank(request.query, documents, request.model)
        return inference_pb2.RerankResponse(
            scores=result.scores.tolist(), model=result.model, truncated_indices=result.truncated
        )
