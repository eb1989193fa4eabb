"""Episodic service: opens PostgreSQL (migrating the schema), serves EpisodicService, closes the pool."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import grpc
import psycopg

from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.episodic.engine import EpisodicMemory
from hindsight.episodic.servicer import EpisodicServicer
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.store import PostgresEpisodicStore
from hindsight.runtime.main import run_service
from hindsight.runtime.server import ServiceSpec
from hindsight.runtime.startup import TRANSIENT, retry_until_open

SERVICE_NAME = episodic_pb2.DESCRIPTOR.services_by_name["EpisodicService"].full_name


@contextlib.asynccontextmanager
async def open_service(settings: EpisodicSettings) -> AsyncIterator[ServiceSpec]:
    """The service on ``settings.database_url``; readiness is ``SELECT 1`` through the pool."""
    store = await retry_until_open(
        lambda: PostgresEpisodicStore.open(settings),
        what="postgresql",
        transient=(*TRANSIENT, psycopg.OperationalError),
    )
    try:
        servicer = EpisodicServicer(EpisodicMemory(store))

        def register(server: grpc.aio.Server) -> None:
            episodic_pb2_grpc.add_EpisodicServiceServicer_to_server(servicer, server)

        yield ServiceSpec(SERVICE_NAME, register, store.ping)
    finally:
        await store.close()


def main() -> None:
    """Serve episodic memory until SIGTERM/SIGINT."""
    run_service("episodic", EpisodicSettings, open_service)
