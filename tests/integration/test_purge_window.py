"""A purge's delete that reaches working memory late (through episodic memory's outbox) removes what was
purged and nothing retained since: real PostgreSQL store and outbox, a real working service on Redis."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
import redis.asyncio as aioredis

from hindsight.contracts.working.v1 import working_pb2, working_pb2_grpc
from hindsight.episodic.models import PurgeScope
from hindsight.episodic.outbox import OutboxDeliverer, Targets
from hindsight.episodic.outbox_entries import DELETE, WORKING
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.store import PostgresEpisodicStore
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.records import RecordMeta, Turn
from hindsight.runtime.testing import channel_to, serving
from hindsight.working.service import open_service as open_working
from hindsight.working.settings import WorkingSettings
from tests.integration.mesh import drop_schemas

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
BANK = "b"


@dataclass
class Layers:
    store: PostgresEpisodicStore
    deliverer: OutboxDeliverer
    working: working_pb2_grpc.WorkingMemoryServiceStub
    prefix: str


@pytest.fixture
async def layers(database_url: str, redis_url: str, unique_name: str) -> AsyncIterator[Layers]:
    prefix = f"t:{uuid.uuid4().hex[:10]}"
    async with (
        serving(lambda: open_working(WorkingSettings(redis_url=redis_url, prefix=prefix))) as working,
        channel_to(working) as channel,
    ):
        address = f"127.0.0.1:{working.port}"
        settings = EpisodicSettings(database_url=database_url, schema=unique_name, working_addr=address)
        store = await PostgresEpisodicStore.open(settings)
        targets = Targets(working=LayerClient(address, working_pb2_grpc.WorkingMemoryServiceStub))
        try:
            # No background deliverer runs: the test delivers the outbox when it chooses (late, on purpose).
            yield Layers(
                store,
                OutboxDeliverer(store, targets, settings),
                working_pb2_grpc.WorkingMemoryServiceStub(channel),
                prefix,
            )
        finally:
            await targets.close()
            await store.close()
            await drop_schemas(database_url, unique_name)


def turn(turn_id: str, session: str, minute: int) -> Turn:
    return Turn(
        id=turn_id,
        session_id=session,
        text=f"Step {minute} of the migration plan: {turn_id}.",
        meta=RecordMeta(time=T0 + timedelta(minutes=minute)),
    )


async def retain(layers: Layers, *turns: Turn) -> None:
    """What the edge does: episodic memory first, then the windows directly."""
    await layers.store.record_turns(BANK, list(turns), None)
    await layers.working.AppendTurns(
        working_pb2.AppendTurnsRequest(bank_id=BANK, turns=[t.to_pb() for t in turns]), timeout=10
    )


async def window(layers: Layers, session: str) -> list[str]:
    reply = await layers.working.GetWindow(
        working_pb2.GetWindowRequest(bank_id=BANK, session_id=session), timeout=10
    )
    return [entry.id for entry in reply.turns]


async def deliver_late(layers: Layers) -> None:
    """Deliver the whole outbox now (bounded), after the writes that followed the purge."""
    delivered = 0
    for _ in range(20):
        now = datetime.now(UTC)
        entries = await layers.store.claim_due(now, now + timedelta(minutes=5), 100)
        if not entries:
            break
        delivered += len([e for e in entries if (e.target, e.operation) == (WORKING, DELETE)])
        assert len(await layers.deliverer.deliver(entries)) == len(entries)
    assert delivered == 1  # the purge's delete for working memory went through


async def bank_keys(layers: Layers, redis_url: str, session: str) -> list[str]:
    client = aioredis.from_url(redis_url)
    try:
        pattern = f"{layers.prefix}:{{{BANK}}}:*:{session}"
        return [key.decode() async for key in client.scan_iter(match=pattern)]
    finally:
        await client.aclose()


async def test_a_late_session_purge_keeps_the_turns_retained_after_it(layers: Layers) -> None:
    await retain(layers, turn("t1", "s1", 1), turn("u1", "s2", 1))
    await layers.store.purge(BANK, PurgeScope(session_id="s1"))
    await retain(layers, turn("t2", "s1", 2))  # the session takes a new turn before the delete arrives
    await deliver_late(layers)
    assert await window(layers, "s1") == ["t2"]
    assert await window(layers, "s2") == ["u1"]


async def test_a_late_bank_purge_keeps_the_turns_retained_after_it_and_leaves_no_other_key(
    layers: Layers, redis_url: str
) -> None:
    await retain(layers, turn("t1", "s1", 1), turn("u1", "s2", 1))
    await layers.store.purge(BANK, PurgeScope(whole_bank=True))
    await retain(layers, turn("t2", "s1", 2))
    await deliver_late(layers)
    assert await window(layers, "s1") == ["t2"]
    assert await window(layers, "s2") == []
    assert await bank_keys(layers, redis_url, "s2") == []  # not even the purged session's name is left
