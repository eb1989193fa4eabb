"""Starts the reflect layer: migrate its schema, connect to the episodic layer, serve."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import grpc

from hindsight.contracts.episodic.v1 import episodic_pb2_grpc
from hindsight.contracts.reflect.v1 import reflect_pb2_grpc
from hindsight.reflect.engine import ReflectEngine
from hindsight.reflect.episodes import EpisodicClient
from hindsight.reflect.servicer import ReflectServicer
from hindsight.reflect.settings import ReflectSettings
from hindsight.reflect.store import open_lesson_store
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.errors import FailedPrecondition
from hindsight.runtime.main import run_service
from hindsight.runtime.server import ServiceSpec

SERVICE_NAME = "hindsight.reflect.v1.ReflectService"


@contextlib.asynccontextmanager
async def open_service(settings: ReflectSettings) -> AsyncIterator[ServiceSpec]:
    """Readiness is the lesson store; the episodic layer is only needed when a reflection runs."""
    if not settings.episodic_addr:
        raise FailedPrecondition("HINDSIGHT_EPISODIC_ADDR is not set: reflection reads episodes from it")
    episodic = LayerClient(
        settings.episodic_addr,
        episodic_pb2_grpc.EpisodicServiceStub,
        token=settings.internal_token,
        default_timeout=settings.episodic_timeout,
    )
    try:
        async with open_lesson_store(settings) as store:
            engine = ReflectEngine(store, EpisodicClient(episodic), settings.max_episodes)

            def register(server: grpc.aio.Server) -> None:
                reflect_pb2_grpc.add_ReflectServiceServicer_to_server(ReflectServicer(engine), server)

            yield ServiceSpec(SERVICE_NAME, register, store.ready)
    finally:
        await episodic.close()


def main() -> None:
    """Entry point of the reflect layer process."""
    run_service("reflect", ReflectSettings, open_service)
