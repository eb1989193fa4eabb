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
from hindsight.runtime.llm import LLMSettings, llm_from_settings
from hindsight.runtime.main import run_service
from hindsight.runtime.server import ServiceSpec
from hindsight.runtime.settings import load
from hindsight.runtime.startup import open_with_retry
from hindsight.semantic.backend import open_vector_store
from hindsight.semantic.embedder import InferenceEmbedder, describe_model
from hindsight.semantic.engine import SemanticEngine
from hindsight.semantic.extract import RuleExtractor
from hindsight.semantic.llm_adjudge import Adjudicator
from hindsight.semantic.llm_extract import LLMExtractor
from hindsight.semantic.servicer import SemanticServicer
from hindsight.semantic.settings import SemanticSettings
from hindsight.semantic.speakers import SpeakerPolicy

SERVICE_NAME = "hindsight.semantic.v1.SemanticService"

log = logging.getLogger(__name__)


@contextlib.asynccontextmanager
async def open_service(
    settings: SemanticSettings, llm_settings: LLMSettings | None = None
) -> AsyncIterator[ServiceSpec]:
    """Refuses to start (FailedPrecondition) when the collection was built by a different model.

    Facts are extracted from turns by rules, and also by the LLM when ``LLM_API_BASE`` is set.
    """
    if not 0 <= settings.expansion_hops <= 2:
        raise FailedPrecondition("HINDSIGHT_SEMANTIC_EXPANSION_HOPS must be 0, 1 or 2")
    speakers = SpeakerPolicy.parse(settings.speakers, settings.bank_speakers)  # refuses a bad mode first
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
    llm = (
        llm_from_settings(llm_settings if llm_settings is not None else load(LLMSettings))
        if settings.extract_facts
        else None
    )
    try:
        model = await describe_model(inference, settings.embedding_model, settings.startup_timeout)
        async with open_with_retry(lambda: open_vector_store(settings, model), what="qdrant") as store:
            log.info("semantic store open", extra={"collection": store.collection, "model": model.name})
            engine = SemanticEngine(
                store,
                InferenceEmbedder(inference, model),
                extractor=RuleExtractor() if settings.extract_facts else None,
                llm=LLMExtractor(llm, settings.llm_extract_timeout) if llm is not None else None,
                hops=settings.expansion_hops,
                dedup_threshold=settings.dedup_threshold,
                corrections=settings.corrections,
                speakers=speakers,
                corrections_by_meaning=settings.corrections_by_meaning,
                adjudicator=(
                    Adjudicator(llm, settings.llm_extract_timeout)
                    if llm is not None and settings.corrections_llm
                    else None
                ),
                pages=settings.entity_pages,
                defences=settings.defences,
            )

            def register(server: grpc.aio.Server) -> None:
                semantic_pb2_grpc.add_SemanticServiceServicer_to_server(SemanticServicer(engine), server)

            engine.resume()  # LLM fact passes a previous process left in the store
            try:
                yield ServiceSpec(SERVICE_NAME, register, store.ready)
            finally:
                engine.close()
                await engine.drain()
    finally:
        await inference.close()
        if llm is not None:
            await llm.close()


def main() -> None:
    """Entry point of the semantic layer process."""
    run_service("semantic", SemanticSettings, open_service)
