"""Meaning measured at the edge when the semantic layer cannot say it.

Relevance (:mod:`.relevance`) reads a memory's cosine to the request and how much the bank holds near it
from the semantic layer's hits. When that layer is down, late, not asked, or has not indexed the bank yet,
every keyword hit used to be scored as if its meaning were unrelated (cosine 0, nothing near), and only a
memory holding about half of the question's words cleared the floor: recall without the semantic layer
found R@10 0.389 on LoCoMo, 0.008 on MADial and 0.144 on MemDaily, whose questions share few words with
their answers; with the cosines measured here, 0.663, 0.658 and 0.739 (docs/retrieval.md).

Here the head of the fused list is embedded by the inference layer with the semantic layer's model, the
query as a query and each memory as the semantic layer reads a turn (``"speaker: text"``), and their
cosines stand in for the semantic layer's. The calibration of relevance then holds as it is: an unrelated
request still finds nothing near it. When the inference layer is slow or down too, recall keeps the old
behaviour (never an error).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

import grpc
import numpy as np

from hindsight.contracts.inference.v1 import inference_pb2, inference_pb2_grpc
from hindsight.mcp_edge.domain import RecalledMemory
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.errors import HindsightError
from hindsight.runtime.vectors import embed_texts

log = logging.getLogger(__name__)

MIN_SECONDS = 0.02
"""Below this much time left before the recall's deadline, nothing is measured."""
SHARE = 0.25
"""Longest wait for the measure, as a share of the recall deadline: an inference layer that is down too
must not hold every recall to its deadline (the LLM rewrite gets the same share)."""


class MeaningProbe:
    """Cosines of a recall's best memories to its query, from the inference layer."""

    def __init__(
        self,
        client: LayerClient[inference_pb2_grpc.InferenceServiceStub],
        texts: int,
        model: str = "",
        timeout: float = 0.5,
    ) -> None:
        self.client = client
        self.timeout = timeout
        """Longest wait for the inference layer, in seconds."""
        self.texts = texts
        """How many memories of the head are measured; the rest count as the least related of them."""
        self.model = model

    async def cosines(
        self, bank_id: str, query: str, memories: Sequence[RecalledMemory], deadline: float
    ) -> dict[str, float]:
        """Per memory id, its cosine to ``query``: the first :attr:`texts` memories that are not lessons
        (a lesson is scored by the reflect layer). Empty when the deadline (monotonic) is too close or
        the inference layer fails: the caller then scores without meaning, as before."""
        chosen = [m for m in memories if m.kind != "lesson"][: self.texts]
        remaining = min(deadline - time.monotonic(), self.timeout)
        if not chosen or remaining < MIN_SECONDS:
            return {}
        try:
            asked, found = await asyncio.wait_for(
                asyncio.gather(
                    embed_texts(
                        self.client,
                        bank_id,
                        [query],
                        model=self.model,
                        purpose=inference_pb2.EMBED_PURPOSE_QUERY,
                    ),
                    embed_texts(
                        self.client,
                        bank_id,
                        [m.spoken for m in chosen],
                        model=self.model,
                        purpose=inference_pb2.EMBED_PURPOSE_PASSAGE,
                    ),
                ),
                remaining,
            )
        except (TimeoutError, HindsightError, grpc.aio.AioRpcError, ValueError) as exc:
            log.warning("meaning not measured: relevance without it", extra={"error": str(exc) or repr(exc)})
            return {}
        if asked.model != found.model or asked.vectors.shape[1:] != found.vectors.shape[1:]:
            log.warning("meaning not measured: the inference layer answered with two models")
            return {}
        scores = np.asarray(found.vectors @ asked.vectors[0], dtype=np.float64)
        return {memory.id: float(score) for memory, score in zip(chosen, scores, strict=True)}
