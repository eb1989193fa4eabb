"""Episodic service: opens PostgreSQL (migrating the schema), serves EpisodicService, and runs the outbox
deliverer and the access-statistics flusher beside it until shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence

import grpc
import psycopg

from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.contracts.inference.v1 import inference_pb2_grpc
from hindsight.episodic.engine import EpisodicMemory
from hindsight.episodic.outbox import OutboxDeliverer, Targets
from hindsight.episodic.segment import Embed
from hindsight.episodic.servicer import EpisodicServicer
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.store import PostgresEpisodicStore
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.llm import LLMClient, LLMSettings, llm_from_settings
from hindsight.runtime.main import run_service
from hindsight.runtime.server import ServiceSpec, stop_task
from hindsight.runtime.settings import load
from hindsight.runtime.startup import TRANSIENT, retry_until_open
from hindsight.runtime.vectors import embed_texts

SERVICE_NAME = episodic_pb2.DESCRIPTOR.services_by_name["EpisodicService"].full_name
log = logging.getLogger(__name__)


def inference_embed(client: LayerClient[inference_pb2_grpc.InferenceServiceStub]) -> Embed:
    """Turn a bank's texts into vectors with the inference layer, in batches."""

    async def embed(bank_id: str, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = (await embed_texts(client, bank_id, texts)).vectors.tolist()
        return vectors

    return embed


@contextlib.asynccontextmanager
async def open_service(
    settings: EpisodicSettings, llm_settings: LLMSettings | None = None
) -> AsyncIterator[ServiceSpec]:
    """The service on ``settings.database_url``; readiness is ``SELECT 1`` through the pool."""
    store = await retry_until_open(
        lambda: PostgresEpisodicStore.open(settings),
        what="postgresql",
        transient=(*TRANSIENT, psycopg.OperationalError),
    )
    targets = Targets.from_settings(settings)
    llm: LLMClient | None = llm_from_settings(llm_settings if llm_settings is not None else load(LLMSettings))
    inference = (
        LayerClient(
            settings.inference_addr, inference_pb2_grpc.InferenceServiceStub, token=settings.internal_token
        )
        if settings.inference_addr
        else None
    )
    background: asyncio.Task[None] | None = None
    try:
        memory = EpisodicMemory(
            store,
            settings,
            deliverer=OutboxDeliverer(store, targets, settings),
            llm=llm,
            embed=inference_embed(inference) if inference is not None else None,
        )
        servicer = EpisodicServicer(memory)
        background = asyncio.create_task(memory.run_background(), name="episodic-background")
        log.info(
            "episodic layer open",
            extra={
                "outbox_targets": sorted(store.targets),
                "llm": llm is not None,
                "embed": inference is not None,
            },
        )

        def register(server: grpc.aio.Server) -> None:
            episodic_pb2_grpc.add_EpisodicServiceServicer_to_server(servicer, server)

        yield ServiceSpec(SERVICE_NAME, register, store.ping)
    finally:
        if background is not None:
            await stop_task(background)
        await targets.close()
        if inference is not None:
            await inference.close()
        if llm is not None:
            await llm.close()
        await store.close()


def main() -> None:
    """Serve episodic memory until SIGTERM/SIGINT."""
    run_service("episodic", EpisodicSettings, open_service)
