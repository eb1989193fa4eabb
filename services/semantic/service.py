"""Starts the semantic layer: ask inference which model it serves, open the matching collection, serve."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

import grpc

from hindsight.contracts.inference.v1 import inference_pb2_grpc
from hindsight.contracts.semantic.v1 import semantic_pb2_grpc
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.errors import FailedPrecondition
from hindsight.runtime.main import run_service
from hindsight.runtime.server import ServiceSpec
from hindsight.runtime.startup import open_with_retry
from hindsight.semantic.embedder import InferenceEmbedder, describe_model
from hindsight.semantic.engine import SemanticEngine
from hindsight.semantic.servicer import SemanticServicer
from hindsight.semantic.settings import SemanticSettings
from hindsight.semantic.store import open_vector_store

SERVICE_NAME = "hindsight.semantic.v1.SemanticService"

log = logging.getLogger(__name__)


@contextlib.asynccontextmanager
async def open_service(settings: SemanticSettings) -> AsyncIterator[ServiceSpec]:
    """Refuses to start (FailedPrecondition) when the collection was built by a different model."""
    if not settings.inference_addr:
        raise FailedPrecondition(
            "HINDSIGHT_INFERENCE_ADDR is not set: the semantic layer needs the inference layer to embed texts"
        )
    inference = LayerClient(
        settings.inference_addr,
        inference_pb2_grpc.InferenceServiceStub,
        token=settings.internal_token,
        default_timeout=settings.inference_timeout,
    )
    try:
        model = await describe_model(inference, settings.embedding_model, settings.startup_timeout)
        async with open_with_retry(lambda: open_vector_store(settings, model), what="qdrant") as store:
            log.info("semantic store open", extra={"collection": store.collection, "model": model.name})
            engine = SemanticEngine(store, InferenceEmbedder(inference, model))

            def register(server: grpc.aio.Server) -> None:
                semantic_pb2_grpc.add_SemanticServiceServicer_to_server(SemanticServicer(engine), server)

            yield ServiceSpec(SERVICE_NAME, register, store.ready)
    finally:
        await inference.close()


def main() -> None:
    """Entry point of the semantic layer process."""
    run_service("semantic", SemanticSettings, open_service)
