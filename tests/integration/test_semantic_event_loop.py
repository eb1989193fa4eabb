"""The semantic layer keeps answering while it extracts facts from long turns (the rules run off its loop)
and while searches of a large bank run back to back (each engine call runs in a worker thread)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from grpc_health.v1 import health_pb2, health_pb2_grpc

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.inference.v1 import inference_pb2_grpc
from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.testing import channel_to, serving
from hindsight.semantic.backend import open_vector_store
from hindsight.semantic.embedder import describe_model
from hindsight.semantic.records import EmbeddedRecord, SemanticRecord
from hindsight.semantic.service import SERVICE_NAME, open_service
from hindsight.semantic.settings import SemanticSettings

STATEMENTS = (
    "My sister Melanie is moving to Lisbon for a job at a robotics startup. I love hiking in the hills. "
    "I work as a nurse at the city hospital. My friend Tom lives in Porto and plans to visit in June. "
)
TURN_CHARS = 100_000
TURNS = 8
"""Eight turns of 100,000 characters: over a second of rule extraction (about 1.5 us a character)."""


class _ExtractionEvents(logging.Handler):
    """Sets ``started`` and ``finished`` when the engine logs the start and the end of a rule extraction."""

    def __init__(self, started: asyncio.Event, finished: asyncio.Event) -> None:
        super().__init__(logging.DEBUG)
        self._loop = asyncio.get_running_loop()
        self._events = {"extracting facts by rules": started, "facts extracted by rules": finished}

    def emit(self, record: logging.LogRecord) -> None:
        event = self._events.get(record.getMessage())
        if event is not None:
            self._loop.call_soon_threadsafe(event.set)


@contextlib.contextmanager
def _watching_extraction(started: asyncio.Event, finished: asyncio.Event) -> Iterator[None]:
    logger = logging.getLogger("hindsight.semantic.engine")
    handler = _ExtractionEvents(started, finished)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _long_turn(index: int) -> semantic_pb2.SemanticRecord:
    text = (STATEMENTS * (TURN_CHARS // len(STATEMENTS) + 1))[:TURN_CHARS]
    return semantic_pb2.SemanticRecord(
        id=f"long-{index}",
        kind=semantic_pb2.RECORD_KIND_TURN,
        text=text,
        speaker="Caroline",
        session_id="s1",
        meta=common_pb2.RecordMeta(source=common_pb2.SOURCE_USER),
    )


async def _ready(health: health_pb2_grpc.HealthStub) -> None:
    """Returns once the service reports itself ready (its store answered)."""
    async for reply in health.Watch(health_pb2.HealthCheckRequest(service=SERVICE_NAME)):
        if reply.status == health_pb2.HealthCheckResponse.SERVING:
            return


async def test_health_answers_within_half_a_second_while_a_long_rule_extraction_runs(
    inference_addr: str,
) -> None:
    started, finished = asyncio.Event(), asyncio.Event()
    with _watching_extraction(started, finished):
        async with (
            serving(lambda: open_service(SemanticSettings(inference_addr=inference_addr))) as server,
            channel_to(server) as channel,
        ):
            health = health_pb2_grpc.HealthStub(channel)
            stub = semantic_pb2_grpc.SemanticServiceStub(channel)
            await asyncio.wait_for(_ready(health), timeout=30)
            request = semantic_pb2.UpsertRequest(
                bank_id="loop-bank", records=[_long_turn(i) for i in range(TURNS)]
            )
            upsert = asyncio.ensure_future(stub.Upsert(request, timeout=120))
            await asyncio.wait_for(started.wait(), timeout=60)
            for name in ("", SERVICE_NAME):  # liveness, then readiness
                reply = await health.Check(health_pb2.HealthCheckRequest(service=name), timeout=0.5)
                assert reply.status == health_pb2.HealthCheckResponse.SERVING, name
            assert not finished.is_set(), "the extraction ended before the health checks were answered"
            assert (await upsert).upserted_count == TURNS
            assert finished.is_set()
            facts = await stub.Search(
                semantic_pb2.SearchRequest(
                    bank_id="loop-bank",
                    query="Where does Caroline work?",
                    kinds=[semantic_pb2.RECORD_KIND_FACT],
                ),
                timeout=30,
            )
            assert any("nurse" in hit.record.text for hit in facts.hits)


FLOOD_POINTS = 20_000
"""A bank this size takes about 6-10 ms a search on Qdrant Edge (an exact scan of the bank's points)."""


async def test_health_answers_within_half_a_second_while_searches_of_a_large_bank_run_back_to_back(
    inference_addr: str, tmp_path: Path
) -> None:
    settings = SemanticSettings(inference_addr=inference_addr, qdrant_path=str(tmp_path / "qdrant"))
    client = LayerClient(inference_addr, inference_pb2_grpc.InferenceServiceStub)
    try:
        model = await describe_model(client, "", wait_seconds=5)
    finally:
        await client.close()
    rng = np.random.default_rng(7)
    async with open_vector_store(settings, model) as store:  # filled directly: embedding 20k texts is slow
        for first in range(0, FLOOD_POINTS, 2_000):
            vectors = rng.standard_normal((2_000, model.dimension)).astype(np.float32)
            await store.upsert(
                "flood-bank",
                [
                    EmbeddedRecord(SemanticRecord(id=f"p{n}", text=f"point {n}"), row.tolist())
                    for n, row in enumerate(vectors, start=first)
                ],
            )
    async with serving(lambda: open_service(settings)) as server, channel_to(server) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        stub = semantic_pb2_grpc.SemanticServiceStub(channel)
        await asyncio.wait_for(_ready(health), timeout=30)
        answered = asyncio.Event()

        async def searcher() -> int:
            for _ in range(25):
                reply = await stub.Search(
                    semantic_pb2.SearchRequest(bank_id="flood-bank", query="a point", limit=30), timeout=60
                )
                assert len(reply.hits) == 30
                answered.set()
            return 25

        flood = asyncio.gather(*(searcher() for _ in range(8)))
        await asyncio.wait_for(answered.wait(), timeout=60)
        for name in ("", SERVICE_NAME):  # liveness, then readiness, while the searches go on
            reply = await health.Check(health_pb2.HealthCheckRequest(service=name), timeout=0.5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING, name
        assert not flood.done(), "the searches ended before the health checks were answered"
        assert sum(await flood) == 200
