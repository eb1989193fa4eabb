"""An outbox that never wedges: an entry the semantic layer refuses for good goes to the dead-letter list
after a bounded number of attempts, and the bank's later entries are indexed meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.episodic.service import open_service as open_episodic
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.store import PostgresEpisodicStore
from hindsight.runtime.channels import message_limits
from hindsight.runtime.embedded import free_ports
from hindsight.runtime.records import Turn, to_timestamp
from hindsight.runtime.testing import channel_to, serving
from hindsight.semantic.service import open_service as open_semantic
from hindsight.semantic.settings import SemanticSettings
from tests.integration.mesh import drop_schemas
from tests.integration.outbox_wait import drained

TIMEOUT = 20
WAIT_SECONDS = 30.0
"""Bound on waiting for the outbox (a healthy delivery takes well under a second)."""
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
FIELD = 100_000
"""Characters of one episode field: accepted by episodic, but the four together are more text than the
semantic layer takes in one record."""


@dataclass
class Layers:
    episodic: episodic_pb2_grpc.EpisodicServiceStub
    semantic: semantic_pb2_grpc.SemanticServiceStub
    settings: EpisodicSettings


@contextlib.asynccontextmanager
async def running(
    database_url: str, schema: str, qdrant: Path, inference_addr: str, semantic_port: int = 0
) -> AsyncIterator[Layers]:
    """Semantic and episodic layers, the outbox quick to retry and to give up on a refused entry."""
    async with (
        serving(
            lambda: open_semantic(SemanticSettings(qdrant_path=str(qdrant), inference_addr=inference_addr)),
            port=semantic_port,
        ) as semantic_server,
        channel_to(semantic_server) as semantic_channel,
    ):
        settings = episodic_settings(database_url, schema, semantic_server.port)
        try:
            async with serving(lambda: open_episodic(settings)) as server, channel_to(server) as channel:
                yield Layers(
                    episodic_pb2_grpc.EpisodicServiceStub(channel),
                    semantic_pb2_grpc.SemanticServiceStub(semantic_channel),
                    settings,
                )
        finally:
            await drop_schemas(database_url, schema)


def episodic_settings(database_url: str, schema: str, semantic_port: int) -> EpisodicSettings:
    return EpisodicSettings(
        database_url=database_url,
        schema=schema,
        semantic_addr=f"127.0.0.1:{semantic_port}",
        outbox_backoff_seconds=0.05,
        outbox_max_backoff_seconds=0.2,
        outbox_poll_seconds=0.1,
        outbox_timeout_seconds=5.0,
        outbox_max_attempts=3,
        outbox_lease_seconds=2.0,  # a claim left by a stopped service is taken again this soon
    )


@pytest.fixture
async def layers(
    database_url: str, unique_name: str, tmp_path: Path, inference_addr: str
) -> AsyncIterator[Layers]:
    async with running(database_url, unique_name, tmp_path / "qdrant", inference_addr) as running_layers:
        yield running_layers


def turn(turn_id: str, text: str, minute: int = 0) -> common_pb2.Turn:
    stamp = to_timestamp(T0.replace(minute=minute))
    return common_pb2.Turn(id=turn_id, session_id="s1", text=text, meta=common_pb2.RecordMeta(time=stamp))


def oversized_episode() -> episodic_pb2.Episode:
    return episodic_pb2.Episode(
        session_id="s1",
        situation="s" * FIELD,
        action="a" * FIELD,
        outcome="o" * FIELD,
        lesson="l" * FIELD,
        meta=common_pb2.RecordMeta(time=to_timestamp(T0)),
    )


async def searchable(
    semantic: semantic_pb2_grpc.SemanticServiceStub, bank: str, query: str, wanted: str
) -> None:
    """Wait (bounded) until ``wanted`` is among the bank's hits for ``query``."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        reply = await semantic.Search(
            semantic_pb2.SearchRequest(bank_id=bank, query=query, limit=20), timeout=TIMEOUT
        )
        if wanted in [hit.record.id for hit in reply.hits]:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{wanted} never became searchable in bank {bank}")
        await asyncio.sleep(0.05)


async def dead_letters(
    episodic: episodic_pb2_grpc.EpisodicServiceStub, bank: str
) -> list[episodic_pb2.DeadLetter]:
    """Wait (bounded) until the bank has a dead letter; returns them."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        reply = await episodic.ListDeadLetters(
            episodic_pb2.ListDeadLettersRequest(bank_id=bank), timeout=TIMEOUT
        )
        if reply.dead_letters:
            return list(reply.dead_letters)
        if time.monotonic() > deadline:
            raise AssertionError(f"no dead letter in bank {bank}")
        await asyncio.sleep(0.05)


async def test_a_refused_episode_goes_to_the_dead_letters_and_later_turns_are_indexed(layers: Layers) -> None:
    episodic, semantic = layers.episodic, layers.semantic
    buried_before = REGISTRY.get_sample_value("hindsight_outbox_dead_lettered_total", {"target": "semantic"})
    written = await episodic.WriteEpisode(
        episodic_pb2.WriteEpisodeRequest(bank_id="b", episode=oversized_episode()), timeout=TIMEOUT
    )
    bad = written.episode.id
    await episodic.RecordTurns(
        episodic_pb2.RecordTurnsRequest(
            bank_id="b", turns=[turn("t1", "The greenhouse tomatoes need watering every morning.", 1)]
        ),
        timeout=TIMEOUT,
    )
    await episodic.RecordTurns(
        episodic_pb2.RecordTurnsRequest(
            bank_id="b",
            turns=[turn("t2", "The quarterly budget review moved to Thursday afternoon.", 2)],
            index_now=True,
        ),
        timeout=TIMEOUT,
    )
    await searchable(semantic, "b", "when do the tomatoes get water?", "t1")
    await searchable(semantic, "b", "when is the meeting about finances?", "t2")
    letters = await dead_letters(episodic, "b")
    assert [(letter.record_id, letter.target, letter.record_kind) for letter in letters] == [
        (bad, "semantic", "episode")
    ]
    assert letters[0].attempts == 3 and "text" in letters[0].last_error
    status = await episodic.OutboxStatus(episodic_pb2.OutboxStatusRequest(bank_id="b"), timeout=TIMEOUT)
    assert not any(status.pending.values())
    assert dict(status.dead_letters) == {"semantic": 1}
    # metrics: the move is counted at once, and the gauge reads the list at its next report
    buried = REGISTRY.get_sample_value("hindsight_outbox_dead_lettered_total", {"target": "semantic"})
    assert buried == (buried_before or 0) + 1
    deadline = time.monotonic() + WAIT_SECONDS
    while REGISTRY.get_sample_value("hindsight_outbox_dead_letters", {"target": "semantic"}) != 1:
        assert time.monotonic() < deadline, "the dead-letter gauge never read 1"
        await asyncio.sleep(0.1)


async def test_entries_larger_together_than_a_request_may_be_are_delivered_in_several(
    database_url: str,
    unique_name: str,
    tmp_path: Path,
    inference_addr: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    limit = 256 * 1024
    monkeypatch.setenv("HINDSIGHT_MAX_REQUEST_BYTES", str(limit))
    message_limits.cache_clear()  # both ends read the limit once per process
    semantic_port = free_ports(1)[0]
    topics = ["greenhouse tomatoes", "quarterly budget", "rooftop beehives", "bicycle repair"]
    count = 10
    try:
        # Written before the layers run (one request each), so that they are all due together once they
        # do: 10 x 40 KB, more than one request may carry.
        store = await PostgresEpisodicStore.open(episodic_settings(database_url, unique_name, semantic_port))
        try:
            for index in range(count):
                text = f"Notes about the {topics[index % len(topics)]}. " + "detail " * 5_700
                written = await store.record_turns(
                    "b", [Turn.from_pb(turn(f"t{index}", text, index), "turns[0]")], None
                )
                assert written.outbox_ids
        finally:
            await store.close()
        qdrant = tmp_path / "qdrant"
        async with running(database_url, unique_name, qdrant, inference_addr, semantic_port) as layers:
            assert message_limits().max_request_bytes == limit
            with caplog.at_level(logging.WARNING, logger="hindsight.episodic.outbox"):
                status = await drained(layers.episodic, "b")
            # not one request refused for its size: the entries went in requests under the limit (a
            # delivery that timed out on a loaded machine is retried, and says so; that is not a refusal)
            failures = [
                (record.getMessage(), str(getattr(record, "error", "")))
                for record in caplog.records
                if record.name.endswith("outbox")
            ]
            refused = [
                failure
                for failure in failures
                if failure[0] == "outbox delivery refused" or "RESOURCE_EXHAUSTED" in failure[1]
            ]
            assert refused == [], failures
            assert dict(status.delivered) == {"semantic": count} and not dict(status.dead_letters)
            await searchable(layers.semantic, "b", "notes on the beehives on the roof", "t2")
    finally:
        monkeypatch.undo()
        message_limits.cache_clear()
