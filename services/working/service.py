"""Working-memory service: opens Redis, serves WorkingMemoryService, closes Redis."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import grpc

from hindsight.contracts.working.v1 import working_pb2, working_pb2_grpc
from hindsight.runtime.main import run_service
from hindsight.runtime.server import ServiceSpec
from hindsight.working.engine import WorkingMemory
from hindsight.working.servicer import WorkingServicer
from hindsight.working.settings import WorkingSettings
from hindsight.working.store import RedisWindowStore

SERVICE_NAME = working_pb2.DESCRIPTOR.services_by_name["WorkingMemoryService"].full_name


@contextlib.asynccontextmanager
async def open_service(settings: WorkingSettings) -> AsyncIterator[ServiceSpec]:
    """The service on ``settings.redis_url``; readiness is a PING."""
    store = RedisWindowStore.from_settings(settings)
    try:
        servicer = WorkingServicer(WorkingMemory(store, settings))

        def register(server: grpc.aio.Server) -> None:
            working_pb2_grpc.add_WorkingMemoryServiceServicer_to_server(servicer, server)

        yield ServiceSpec(SERVICE_NAME, register, store.ping)
    finally:
        await store.close()


def main() -> None:
    """Serve working memory until SIGTERM/SIGINT."""
    run_service("working", WorkingSettings, open_service)
