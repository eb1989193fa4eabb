"""Starts the reflect layer: migrate its schema, connect to the episodic (and inference) layer, serve.

Besides answering calls, the service runs two schedules: a scan for sessions that went idle or hold an
important episode (every ``HINDSIGHT_REFLECT_SCAN_SECONDS``) and the maintenance of every bank (every
``HINDSIGHT_REFLECT_MAINTAIN_SECONDS``). Both are idempotent, so several replicas may run them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

import grpc
import psycopg

from hindsight.contracts.episodic.v1 import episodic_pb2_grpc
from hindsight.contracts.inference.v1 import inference_pb2_grpc
from hindsight.contracts.reflect.v1 import reflect_pb2_grpc
from hindsight.contracts.semantic.v1 import semantic_pb2_grpc
from hindsight.reflect.engine import InferenceEmbedder, ReflectEngine, SemanticColdTier
from hindsight.reflect.episodes import EpisodicClient
from hindsight.reflect.llm_reflect import LLMReflector
from hindsight.reflect.servicer import ReflectServicer
from hindsight.reflect.settings import ReflectSettings
from hindsight.reflect.store import open_lesson_store
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.errors import FailedPrecondition
from hindsight.runtime.llm import LLMSettings, llm_from_settings
from hindsight.runtime.main import run_service
from hindsight.runtime.server import ServiceSpec, being_cancelled, stop_task
from hindsight.runtime.settings import load
from hindsight.runtime.startup import TRANSIENT, open_with_retry

SERVICE_NAME = "hindsight.reflect.v1.ReflectService"
log = logging.getLogger(__name__)


async def _every(seconds: float, name: str, job: Callable[[], Awaitable[None]]) -> None:
    """Run ``job`` every ``seconds``; a failure is logged and the schedule goes on."""
    while True:
        await asyncio.sleep(seconds)
        try:
            await job()
        except Exception:
            if being_cancelled():  # the cancel of shutdown, turned into another error by a client
                raise asyncio.CancelledError from None
            log.exception("scheduled job failed", extra={"job": name})


@contextlib.asynccontextmanager
async def open_service(
    settings: ReflectSettings, llm_settings: LLMSettings | None = None
) -> AsyncIterator[ServiceSpec]:
    """Readiness is the lesson store; the episodic layer is only needed when a reflection runs."""
    if not settings.episodic_addr:
        raise FailedPrecondition("HINDSIGHT_EPISODIC_ADDR is not set: reflection reads episodes from it")
    llm = llm_from_settings(llm_settings if llm_settings is not None else load(LLMSettings))
    episodic = LayerClient(
        settings.episodic_addr,
        episodic_pb2_grpc.EpisodicServiceStub,
        token=settings.internal_token,
        default_timeout=settings.episodic_timeout,
    )
    inference = (
        LayerClient(
            settings.inference_addr,
            inference_pb2_grpc.InferenceServiceStub,
            token=settings.internal_token,
            default_timeout=settings.inference_timeout,
        )
        if settings.inference_addr
        else None
    )
    semantic = (
        LayerClient(
            settings.semantic_addr,
            semantic_pb2_grpc.SemanticServiceStub,
            token=settings.internal_token,
            default_timeout=settings.inference_timeout,
        )
        if settings.semantic_addr
        else None
    )
    reflector = (
        LLMReflector(
            llm,
            settings.llm_max_episodes,
            settings.llm_max_lessons,
            settings.llm_max_tokens,
            settings.llm_attempts,
        )
        if llm is not None
        else None
    )
    schedules: list[asyncio.Task[None]] = []
    try:
        async with open_with_retry(
            lambda: open_lesson_store(settings),
            what="postgresql",
            transient=(*TRANSIENT, psycopg.OperationalError),
        ) as store:
            engine = ReflectEngine(
                store,
                EpisodicClient(episodic, turn_sources=settings.defences),
                settings,
                reflector=reflector,
                embedder=InferenceEmbedder(inference) if inference is not None else None,
                cold_tier=SemanticColdTier(semantic) if semantic is not None else None,
            )
            log.info("reflect layer open", extra={"llm": llm is not None, "merge": inference is not None})

            async def scan() -> None:
                for bank in await engine.banks():
                    await engine.reflect_due_sessions(bank)

            async def maintain_all() -> None:
                for bank in await engine.banks():
                    await engine.maintain(bank)

            if settings.scan_interval_seconds > 0:
                schedules.append(asyncio.create_task(_every(settings.scan_interval_seconds, "scan", scan)))
            if settings.maintain_interval_seconds > 0:
                schedules.append(
                    asyncio.create_task(_every(settings.maintain_interval_seconds, "maintain", maintain_all))
                )

            def register(server: grpc.aio.Server) -> None:
                reflect_pb2_grpc.add_ReflectServiceServicer_to_server(ReflectServicer(engine), server)

            yield ServiceSpec(SERVICE_NAME, register, store.ready)
    finally:
        for task in schedules:
            await stop_task(task)
        await episodic.close()
        if semantic is not None:
            await semantic.close()
        if inference is not None:
            await inference.close()
        if llm is not None:
            await llm.close()


def main() -> None:
    """Entry point of the reflect layer process."""
    run_service("reflect", ReflectSettings, open_service)
