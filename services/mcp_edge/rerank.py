"""Reranking the fused head: the inference layer's reranker reorders the best fused candidates.

Rank fusion knows only ranks; a reranker reads the query against each candidate's text. Only the head
(``HINDSIGHT_RERANK_HEAD`` candidates) is reranked, within what is left of the recall deadline; when the
inference layer is slow, down or refuses, recall keeps the fused order (the answer is never an error).
The fused score stays on each memory; only the order changes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import grpc

from hindsight.contracts.inference.v1 import inference_pb2, inference_pb2_grpc
from hindsight.mcp_edge.domain import RecalledMemory
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.errors import HindsightError

log = logging.getLogger(__name__)

MIN_SECONDS = 0.02
"""Below this much time left, reranking is skipped rather than started."""
RANK_K = 60
"""The k of the rank blend, as in reciprocal rank fusion."""


def reorder(
    memories: Sequence[RecalledMemory], head: int, scores: Sequence[float], blend: float = 1.0
) -> list[RecalledMemory]:
    """The first ``head`` memories reordered, then the rest as they were.

    ``blend`` 1 orders the head by the reranker's scores alone (ties in fused order); below 1 the
    fused rank and the reranker's rank are mixed as in rank fusion: ``(1 - blend) / (k + fused rank)
    + blend / (k + reranker rank)``.
    """
    top = list(memories[:head])
    if len(scores) != len(top):
        raise ValueError(f"{len(scores)} scores for {len(top)} memories")
    by_reranker = sorted(range(len(top)), key=lambda i: (-scores[i], i))
    rerank_rank = {index: rank for rank, index in enumerate(by_reranker, start=1)}
    mixed = {i: (1 - blend) / (RANK_K + i + 1) + blend / (RANK_K + rerank_rank[i]) for i in range(len(top))}
    order = sorted(range(len(top)), key=lambda i: (-mixed[i], i))
    return [top[i] for i in order] + list(memories[head:])


class HeadReranker:
    """Calls the inference layer's ``Rerank`` for the head of a fused list."""

    def __init__(
        self,
        client: LayerClient[inference_pb2_grpc.InferenceServiceStub],
        head: int,
        model: str = "",
        blend: float = 1.0,
    ) -> None:
        self.client = client
        self.head = head
        self.model = model
        self.blend = blend

    async def rerank(
        self, bank_id: str, query: str, memories: Sequence[RecalledMemory], deadline: float
    ) -> list[RecalledMemory]:
        """``memories`` with the head reordered; unchanged when ``deadline`` (monotonic) is too close."""
        head = min(self.head, len(memories))
        remaining = deadline - time.monotonic()
        if head < 2 or remaining < MIN_SECONDS:
            return list(memories)
        request = inference_pb2.RerankRequest(
            bank_id=bank_id,
            query=query,
            documents=[m.spoken for m in memories[:head]],  # the speaker matters
            model=self.model,
        )
        try:
            reply = await self.client.call("Rerank", request, remaining)
            return reorder(memories, head, list(reply.scores), self.blend)
        except (TimeoutError, HindsightError, grpc.aio.AioRpcError, ValueError) as exc:
            log.warning("rerank skipped: keeping the fused order", extra={"error": str(exc) or repr(exc)})
            return list(memories)

    async def close(self) -> None:
        """Close the channel."""
        await self.client.close()
