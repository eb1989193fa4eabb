"""A reflection that read its episodes before a purge writes nothing drawn from them after it: on the real
lesson store, reading real episodes from a real episodic service, with the purge landing between the read
and the write."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import grpc

from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.reflect.engine import ReflectEngine
from hindsight.reflect.episodes import EpisodeBatch, EpisodicClient
from hindsight.reflect.settings import ReflectSettings
from hindsight.reflect.store import open_lesson_store
from hindsight.runtime.channels import LayerClient
from tests.integration.mesh import drop_schemas

TIMEOUT = 10


class PurgedWhileReading(EpisodicClient):
    """The real episode source; the purge given lands right after the episodes are read."""

    def __init__(self, client: LayerClient[episodic_pb2_grpc.EpisodicServiceStub]) -> None:
        super().__init__(client)
        self.after_read: Callable[[], Awaitable[object]] | None = None

    async def read(self, bank_id: str, session_id: str, limit: int) -> EpisodeBatch:
        batch = await super().read(bank_id, session_id, limit)
        if self.after_read is not None:
            await self.after_read()
        return batch


async def _write(stub: episodic_pb2_grpc.EpisodicServiceStub, bank: str, episode_id: str) -> None:
    await stub.WriteEpisode(
        episodic_pb2.WriteEpisodeRequest(
            bank_id=bank,
            episode=episodic_pb2.Episode(
                id=episode_id,
                session_id="s1",
                situation="Deploying the walrus service",
                action="ran the migrations first",
                lesson="Run the walrus migrations before deploying.",
                task_type="deploy walrus",
                result=episodic_pb2.OUTCOME_SUCCESS,
            ),
        ),
        timeout=TIMEOUT,
    )


async def test_a_reflection_under_way_writes_nothing_after_its_episodes_are_purged(
    database_url: str, episodic_addr: str, unique_name: str
) -> None:
    settings = ReflectSettings(database_url=database_url, schema=unique_name, episodic_addr=episodic_addr)
    client = LayerClient(episodic_addr, episodic_pb2_grpc.EpisodicServiceStub)
    try:
        async with open_lesson_store(settings) as store, grpc.aio.insecure_channel(episodic_addr) as channel:
            stub = episodic_pb2_grpc.EpisodicServiceStub(channel)
            source = PurgedWhileReading(client)
            engine = ReflectEngine(store, source, settings)
            kept, gone = f"{unique_name}-kept", f"{unique_name}-gone"
            for bank in (kept, gone):
                await _write(stub, bank, f"{bank}-e1")
            assert [x.lesson for x in (await engine.reflect(kept, "")).lessons]  # no purge: a lesson
            # the whole bank is purged while the reflection is between reading and writing
            source.after_read = lambda: engine.purge(gone, [], "", True)
            await engine.reflect(gone, "")
            assert (await engine.list_lessons(gone, 50, "")).lessons == []
            # so is one episode, by id: its tombstone keeps the lesson drawn from it out
            other = f"{unique_name}-other"
            await _write(stub, other, f"{other}-e1")
            source.after_read = lambda: engine.purge(other, [f"{other}-e1"], "", False)
            await engine.reflect(other, "")
            assert (await engine.list_lessons(other, 50, "")).lessons == []
    finally:
        await client.close()
    await drop_schemas(database_url, unique_name)
