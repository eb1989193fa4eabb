"""Vectors come from the inference layer over gRPC; this module is the only place that asks for them."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Protocol

from hindsight.contracts.inference.v1 import inference_pb2, inference_pb2_grpc
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.errors import FailedPrecondition, Unavailable
from hindsight.runtime.vectors import embed_texts
from hindsight.semantic.records import ModelIdentity

log = logging.getLogger(__name__)

EMBED_BATCH = 64
"""Texts per Embed call: small enough for a short deadline, large enough to keep the model busy."""


class Embedder(Protocol):
    """Turns texts into vectors of one fixed model."""

    @property
    def model(self) -> ModelIdentity:
        """The model every vector comes from."""
        ...

    async def embed(self, bank_id: str, texts: Sequence[str], query: bool = False) -> list[list[float]]:
        """One L2-normalised vector per text, in order; ``query``: search queries, not stored passages."""
        ...


async def describe_model(
    client: LayerClient[inference_pb2_grpc.InferenceServiceStub], model: str, wait_seconds: float
) -> ModelIdentity:
    """Ask the inference layer which model it serves, waiting up to ``wait_seconds`` for it to come up.

    Layers start side by side, so the inference layer may still be loading its model when this one starts.
    """
    give_up = time.monotonic() + wait_seconds
    pause = 0.05
    while True:
        try:
            reply = await client.call("ModelInfo", inference_pb2.ModelInfoRequest(model=model))
            break
        except Unavailable:
            if time.monotonic() + pause > give_up:
                raise
            log.info("inference layer not answering yet", extra={"target": client.target})
            await asyncio.sleep(pause)
            pause = min(pause * 2, 1.0)
    if not reply.name or reply.dimension <= 0:
        raise FailedPrecondition(
            f"inference layer at {client.target} describes model {model!r} without a name or dimension"
        )
    return ModelIdentity(name=reply.name, dimension=reply.dimension, content_hash=reply.content_hash)


class InferenceEmbedder:
    """The real embedder: the inference layer's Embed RPC, in batches of at most :data:`EMBED_BATCH`."""

    def __init__(
        self,
        client: LayerClient[inference_pb2_grpc.InferenceServiceStub],
        model: ModelIdentity,
        batch_size: int = EMBED_BATCH,
    ) -> None:
        self._client = client
        self._model = model
        self._batch_size = max(1, min(batch_size, EMBED_BATCH))

    @property
    def model(self) -> ModelIdentity:
        """The model every vector comes from."""
        return self._model

    async def embed(self, bank_id: str, texts: Sequence[str], query: bool = False) -> list[list[float]]:
        """Embed ``texts``; a reply from another model or of another shape is refused, never stored."""
        purpose = inference_pb2.EMBED_PURPOSE_QUERY if query else inference_pb2.EMBED_PURPOSE_PASSAGE
        embedded = await embed_texts(
            self._client,
            bank_id,
            texts,
            model=self._model.name,
            purpose=purpose,
            batch_size=self._batch_size,
        )
        if not texts:
            return []
        if embedded.model and embedded.model != self._model.name:
            raise FailedPrecondition(
                f"inference layer now serves model {embedded.model!r}, but this "
                f"collection holds vectors of {self._model.name!r}; restart to reindex"
            )
        if embedded.vectors.shape[1] != self._model.dimension:
            raise FailedPrecondition(
                f"inference layer returned a {embedded.vectors.shape[1]}-d vector; "
                f"the collection holds {self._model.dimension}-d vectors"
            )
        vectors: list[list[float]] = embedded.vectors.tolist()
        return vectors
