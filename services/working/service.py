"""Working-memory service: opens Redis, serves WorkingMemoryService, closes Redis."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import grpc

from hindsight.contracts.working.v1 import working_pb2, working_pb2_grpc
from hindsight.runtime.errors import Unavailable
from hindsight.runtime.llm import LLMSettings, llm_from_settings
from hindsight.runtime.main import run_service
from hindsight.runtime.server import ServiceSpec
from hindsight.runtime.settings import load
from hindsight.runtime.startup import retry_until_open
from hindsight.runtime.token_counts import token_counter
from hindsight.working.engine import WorkingMemory
from hindsight.working.servicer import WorkingServicer
from hindsight.working.settings import WorkingSettings
from hindsight.working.store import RedisWindowStore
from hindsight.working.summarise import ExtractiveSummariser, LlmSummariser, Summariser

SERVICE_NAME = working_pb2.DESCRIPTOR.services_by_name["WorkingMemoryService"].full_name


@contextlib.asynccontextmanager
async def open_service(settings: WorkingSettings) -> AsyncIterator[ServiceSpec]:
    """The service on ``settings.redis_url``; readiness is a PING.

    Summaries come from the LLM when ``LLM_API_BASE`` is set, otherwise from the extractive summariser.
    """
    counter = token_counter(settings.tokenizer, settings.cjk_chars_per_token)
    llm = llm_from_settings(load(LLMSettings))
    summariser: Summariser = LlmSummariser(llm) if llm is not None else ExtractiveSummariser()
    store = RedisWindowStore.from_settings(settings)
    memory = WorkingMemory(store, settings, counter=counter, summariser=summariser)
    try:

        async def answers() -> None:
            if not await store.ping():
                raise Unavailable("redis does not answer PING")

        await retry_until_open(answers, what="redis")
        servicer = WorkingServicer(memory)

        def register(server: grpc.aio.Server) -> None:
            working_pb2_grpc.add_WorkingMemoryServiceServicer_to_server(servicer, server)

        yield ServiceSpec(SERVICE_NAME, register, store.ping)
    finally:
        await memory.drain()
        await store.close()
        if llm is not None:
            await llm.close()


def main() -> None:
    """Serve working memory until SIGTERM/SIGINT."""
    run_service("working", WorkingSettings, open_service)
