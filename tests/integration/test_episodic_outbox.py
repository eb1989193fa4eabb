"""The episodic outbox over real layers: no write is lost while the semantic layer is down, retain is
idempotent end to end, and a purge leaves no trace in any layer."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import grpc
import psycopg
import pytest
import redis.asyncio as aioredis
from psycopg import sql

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.contracts.reflect.v1 import reflect_pb2, reflect_pb2_grpc
from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.contracts.working.v1 import working_pb2, working_pb2_grpc
from hindsight.episodic.service import open_service as open_episodic
from hindsight.episodic.settings import EpisodicSettings
from hindsight.inference.service import open_service as open_inference
from hindsight.inference.settings import InferenceSettings
from hindsight.mcp_edge.service import open_service as open_edge
from hindsight.runtime.embedded import free_ports
from hindsight.runtime.records import to_timestamp
from hindsight.runtime.testing import channel_to, serving
from hindsight.semantic.service import open_service as open_semantic
from hindsight.semantic.settings import SemanticSettings
from tests.integration.mesh import LayerAddresses, drop_schemas
from tests.integration.outbox_wait import drained

TIMEOUT = 20
WAIT_SECONDS = 30.0
"""Bound on waiting for the outbox to drain (it normally takes well under a second)."""
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def turn(turn_id: str, text: str, session: str = "s1", minute: int = 0) -> common_pb2.Turn:
    stamp = to_timestamp(T0.replace(minute=minute))
    return common_pb2.Turn(id=turn_id, session_id=session, text=text, meta=common_pb2.RecordMeta(time=stamp))


async def failed_at_least(settings: EpisodicSettings, attempts: int) -> None:
    """Wait (bounded) until some outbox entry has failed ``attempts`` times."""
    deadline = time.monotonic() + WAIT_SECONDS
    query = sql.SQL("SELECT max(attempts) FROM {}").format(sql.Identifier(settings.schema, "outbox"))
    async with await psycopg.AsyncConnection.connect(settings.database_url, autocommit=True) as conn:
        while True:
            row = await (await conn.execute(query)).fetchone()
            if row is not None and row[0] is not None and row[0] >= attempts:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"no outbox entry failed {attempts} times")
            await asyncio.sleep(0.05)


async def semantic_ids(semantic: semantic_pb2_grpc.SemanticServiceStub, bank: str, query: str) -> list[str]:
    reply = await semantic.Search(
        semantic_pb2.SearchRequest(bank_id=bank, query=query, limit=50), timeout=TIMEOUT
    )
    return [hit.record.id for hit in reply.hits]


async def test_writes_made_while_the_semantic_layer_is_down_are_indexed_once_it_is_back(
    database_url: str, unique_name: str, tmp_path: Path
) -> None:
    semantic_port = free_ports(1)[0]
    qdrant = tmp_path / "qdrant"
    settings = EpisodicSettings(
        database_url=database_url,
        schema=unique_name,
        semantic_addr=f"127.0.0.1:{semantic_port}",
        outbox_backoff_seconds=0.05,
        outbox_max_backoff_seconds=0.5,
        outbox_poll_seconds=0.2,
        outbox_timeout_seconds=2.0,
    )
    try:
        async with (
            serving(lambda: open_inference(InferenceSettings())) as inference,
            serving(lambda: open_episodic(settings)) as episodic_server,
            channel_to(episodic_server) as episodic_channel,
        ):
            episodic = episodic_pb2_grpc.EpisodicServiceStub(episodic_channel)

            def semantic_service() -> contextlib.AbstractAsyncContextManager[object]:
                return serving(
                    lambda: open_semantic(
                        SemanticSettings(
                            qdrant_path=str(qdrant), inference_addr=f"127.0.0.1:{inference.port}"
                        )
                    ),
                    port=semantic_port,
                )

            async def record(*turns: common_pb2.Turn) -> episodic_pb2.RecordTurnsResponse:
                request = episodic_pb2.RecordTurnsRequest(bank_id="b", turns=turns, index_now=True)
                return await episodic.RecordTurns(request, timeout=TIMEOUT)

            async with semantic_service():
                up = await record(turn("t1", "Our team adopted a rescue greyhound called Pixel."))
            assert up.indexed
            # the semantic layer is stopped: the write still succeeds and is found by keyword at once
            down = await record(
                turn("t2", "The quarterly budget review moved to Thursday afternoon.", minute=1)
            )
            assert (down.recorded_count, down.indexed) == (1, False)
            hits = await episodic.SearchTurns(episodic_pb2.SearchTurnsRequest(bank_id="b", query="budget"))
            assert [hit.turn.id for hit in hits.hits] == ["t2"]
            status = await episodic.OutboxStatus(episodic_pb2.OutboxStatusRequest(bank_id="b"))
            assert dict(status.pending) == {"semantic": 1}
            # back up: the outbox delivers, and the turn is found by meaning
            async with semantic_service() as semantic_server, channel_to(semantic_server) as channel:
                status = await drained(episodic, "b")
                assert dict(status.delivered) == {"semantic": 2}
                semantic = semantic_pb2_grpc.SemanticServiceStub(channel)
                assert (await semantic_ids(semantic, "b", "when is the meeting about finances?"))[0] == "t2"
                assert (await semantic_ids(semantic, "b", "which dog did we get?"))[0] == "t1"
            # down again: a purge of the bank waits, failing and backing off; a later write must not
            # overtake it once the layer is back (it would be indexed, then deleted by the purge)
            await episodic.Purge(episodic_pb2.PurgeRequest(bank_id="b", whole_bank=True))
            await failed_at_least(settings, 3)
            later = await record(turn("t3", "The new office has a rooftop garden with beehives.", minute=2))
            assert (later.recorded_count, later.indexed) == (1, False)
            async with semantic_service() as semantic_server, channel_to(semantic_server) as channel:
                await drained(episodic, "b")
                found = await semantic_ids(
                    semantic_pb2_grpc.SemanticServiceStub(channel), "b", "bees on the roof of the office"
                )
                assert found == ["t3"]
    finally:
        await drop_schemas(database_url, unique_name)


@pytest.fixture(scope="module")
async def stubs(mesh_layers: LayerAddresses) -> AsyncIterator[dict[str, object]]:
    async with (
        serving(lambda: open_edge(mesh_layers.edge_settings())) as edge,
        channel_to(edge) as edge_channel,
        contextlib.AsyncExitStack() as stack,
    ):
        channels = {}
        for name in ("episodic", "semantic", "working", "reflect"):
            channels[name] = await stack.enter_async_context(
                grpc.aio.insecure_channel(getattr(mesh_layers, name))
            )
        yield {
            "memory": memory_pb2_grpc.MemoryServiceStub(edge_channel),
            "episodic": episodic_pb2_grpc.EpisodicServiceStub(channels["episodic"]),
            "semantic": semantic_pb2_grpc.SemanticServiceStub(channels["semantic"]),
            "working": working_pb2_grpc.WorkingMemoryServiceStub(channels["working"]),
            "reflect": reflect_pb2_grpc.ReflectServiceStub(channels["reflect"]),
        }


async def test_retaining_the_same_turn_twice_keeps_one_record_in_every_layer(
    stubs: dict[str, object], unique_name: str
) -> None:
    memory: memory_pb2_grpc.MemoryServiceStub = stubs["memory"]  # type: ignore[assignment]
    episodic: episodic_pb2_grpc.EpisodicServiceStub = stubs["episodic"]  # type: ignore[assignment]
    semantic: semantic_pb2_grpc.SemanticServiceStub = stubs["semantic"]  # type: ignore[assignment]
    working: working_pb2_grpc.WorkingMemoryServiceStub = stubs["working"]  # type: ignore[assignment]
    bank = unique_name
    request = memory_pb2.RetainRequest(
        bank_id=bank, turns=[turn("k1", "The spare key is under the blue flowerpot.")]
    )
    first = await memory.Retain(request, timeout=TIMEOUT)
    second = await memory.Retain(request, timeout=TIMEOUT)
    assert (first.duplicate_count, first.indexed, second.duplicate_count, second.indexed) == (
        0,
        True,
        1,
        True,
    )
    listed = await episodic.ListTurns(episodic_pb2.ListTurnsRequest(bank_id=bank), timeout=TIMEOUT)
    assert [t.id for t in listed.turns] == ["k1"]
    assert await semantic_ids(semantic, bank, "where is the key?") == ["k1"]
    context = await working.GetContext(
        working_pb2.GetContextRequest(bank_id=bank, session_id="s1"), timeout=TIMEOUT
    )
    assert [entry.turn.id for entry in context.turns] == ["k1"]


async def test_an_update_moves_the_semantic_index_through_the_outbox_before_it_answers(
    stubs: dict[str, object], unique_name: str
) -> None:
    memory: memory_pb2_grpc.MemoryServiceStub = stubs["memory"]  # type: ignore[assignment]
    semantic: semantic_pb2_grpc.SemanticServiceStub = stubs["semantic"]  # type: ignore[assignment]
    working: working_pb2_grpc.WorkingMemoryServiceStub = stubs["working"]  # type: ignore[assignment]
    bank = unique_name
    await memory.Retain(
        memory_pb2.RetainRequest(bank_id=bank, turns=[turn("u1", "The standup is at nine in room Ada.")]),
        timeout=TIMEOUT,
    )
    moved = "The standup moved to ten in room Babbage."
    updated = await memory.Update(
        memory_pb2.UpdateRequest(bank_id=bank, turn_id="u1", text=moved), timeout=TIMEOUT
    )
    assert updated.superseded_id == "u1" and updated.indexed
    # no waiting: the new version is searchable by meaning and the old one is gone from the index
    found = await semantic_ids(semantic, bank, "when and where is the standup?")
    assert updated.turn.id in found and "u1" not in found
    context = await working.GetContext(
        working_pb2.GetContextRequest(bank_id=bank, session_id="s1"), timeout=TIMEOUT
    )
    assert "u1" not in [entry.turn.id for entry in context.turns]


async def test_a_purge_leaves_no_trace_in_any_layer(
    stubs: dict[str, object], mesh_layers: LayerAddresses, database_url: str, redis_url: str, unique_name: str
) -> None:
    memory: memory_pb2_grpc.MemoryServiceStub = stubs["memory"]  # type: ignore[assignment]
    episodic: episodic_pb2_grpc.EpisodicServiceStub = stubs["episodic"]  # type: ignore[assignment]
    semantic: semantic_pb2_grpc.SemanticServiceStub = stubs["semantic"]  # type: ignore[assignment]
    working: working_pb2_grpc.WorkingMemoryServiceStub = stubs["working"]  # type: ignore[assignment]
    reflect: reflect_pb2_grpc.ReflectServiceStub = stubs["reflect"]  # type: ignore[assignment]
    bank = unique_name
    secret = [
        turn("p1", "The deploy to production failed because the database migrations were skipped.", "s1", 0),
        turn("p2", "Running the migrations first made the production deploy succeed.", "s1", 1),
    ]
    kept = [turn("q1", "The deploy of the staging site failed on a missing certificate.", "s2", 2)]
    await memory.Retain(memory_pb2.RetainRequest(bank_id=bank, turns=[*secret, *kept]), timeout=TIMEOUT)
    episodes = []
    for session, action, result in (
        ("s1", "deployed without running the migrations", episodic_pb2.OUTCOME_FAILURE),
        ("s1", "ran the migrations before deploying", episodic_pb2.OUTCOME_SUCCESS),
        ("s2", "deployed the staging site without a certificate", episodic_pb2.OUTCOME_FAILURE),
    ):
        source = ["p1", "p2"] if session == "s1" else ["q1"]
        written = await episodic.WriteEpisode(
            episodic_pb2.WriteEpisodeRequest(
                bank_id=bank,
                episode=episodic_pb2.Episode(
                    session_id=session,
                    situation=f"deploying the {'production' if session == 's1' else 'staging'} site",
                    action=action,
                    task_type="deploy",
                    result=result,
                    meta=common_pb2.RecordMeta(source_turn_ids=source, time=to_timestamp(T0)),
                ),
            ),
            timeout=TIMEOUT,
        )
        episodes.append(written.episode.id)
    for session in ("s1", "s2"):
        await reflect.Reflect(reflect_pb2.ReflectRequest(bank_id=bank, session_id=session), timeout=TIMEOUT)
    await episodic.RecordAccess(
        episodic_pb2.RecordAccessRequest(
            bank_id=bank, records=[episodic_pb2.AccessedRecord(id="p1", layer="semantic")]
        ),
        timeout=TIMEOUT,
    )
    await drained(episodic, bank)
    purged = {"p1", "p2", *episodes[:2]}
    assert purged <= set(await semantic_ids(semantic, bank, "production deploy migrations"))
    lessons = (
        await reflect.ListLessons(reflect_pb2.ListLessonsRequest(bank_id=bank), timeout=TIMEOUT)
    ).lessons
    assert {e for lesson in lessons for e in lesson.source_episode_ids} & set(episodes[:2])  # lessons of s1

    reply = await episodic.Purge(episodic_pb2.PurgeRequest(bank_id=bank, session_id="s1"), timeout=TIMEOUT)
    assert (reply.turn_count, reply.episode_count, reply.outbox_count) == (2, 2, 3)
    await drained(episodic, bank)
    # episodic: no row of the session in any table
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:

        async def episodic_rows(table: str, column: str = "id") -> set[str]:
            query = sql.SQL("SELECT {} FROM {} WHERE bank_id = %s").format(
                sql.Identifier(column), sql.Identifier(mesh_layers.episodic_schema, table)
            )
            return {row[0] for row in await (await conn.execute(query, (bank,))).fetchall()}

        assert await episodic_rows("turns") == {"q1"}
        assert await episodic_rows("episodes") == {episodes[2]}
        assert await episodic_rows("access_stats") == set()
        assert await episodic_rows("sessions", "session_id") == {"s2"}
        assert await episodic_rows("outbox", "record_id") == set()
        lesson_rows = await (
            await conn.execute(
                sql.SQL("SELECT source_episode_ids, source_turn_ids FROM {} WHERE bank_id = %s").format(
                    sql.Identifier(mesh_layers.reflect_schema, "lessons")
                ),
                (bank,),
            )
        ).fetchall()
        assert lesson_rows and not any(purged & {*row[0], *row[1]} for row in lesson_rows)
    # semantic: nothing of the session is found; the other session is
    found = await semantic_ids(semantic, bank, "production deploy migrations certificate staging")
    assert not purged & set(found) and "q1" in found

    # working: the session's window is gone, the other one stays
    async def window(session: str) -> list[str]:
        reply = await working.GetContext(
            working_pb2.GetContextRequest(bank_id=bank, session_id=session), timeout=TIMEOUT
        )
        return [entry.turn.id for entry in [*reply.summaries, *reply.turns]]

    assert await window("s1") == [] and await window("s2") == ["q1"]

    # the whole bank: nothing left anywhere
    await episodic.Purge(episodic_pb2.PurgeRequest(bank_id=bank, whole_bank=True), timeout=TIMEOUT)
    status = await drained(episodic, bank)
    assert dict(status.delivered) == {}  # even the delivery counts of the bank are gone
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        for schema, tables in (
            (
                mesh_layers.episodic_schema,
                ("turns", "episodes", "banks", "sessions", "access_stats", "outbox_delivered"),
            ),
            (mesh_layers.reflect_schema, ("lessons", "session_marks", "banks")),
        ):
            for table in tables:
                query = sql.SQL("SELECT count(*) FROM {} WHERE bank_id = %s").format(
                    sql.Identifier(schema, table)
                )
                assert (await (await conn.execute(query, (bank,))).fetchone()) == (0,), table
    assert await semantic_ids(semantic, bank, "production deploy migrations certificate staging") == []
    client = aioredis.from_url(redis_url)
    try:
        assert [
            key async for key in client.scan_iter(match=f"{mesh_layers.working_prefix}:{{{bank}}}:*")
        ] == []
    finally:
        await client.aclose()


async def test_a_semantic_layer_that_never_answers_does_not_fail_the_write(
    database_url: str, unique_name: str
) -> None:
    silent = socket.socket()  # accepts connections and never answers: a hung semantic layer
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    settings = EpisodicSettings(
        database_url=database_url,
        schema=unique_name,
        semantic_addr=f"127.0.0.1:{silent.getsockname()[1]}",
        outbox_timeout_seconds=30.0,
    )
    try:
        async with serving(lambda: open_episodic(settings)) as server, channel_to(server) as channel:
            episodic = episodic_pb2_grpc.EpisodicServiceStub(channel)
            request = episodic_pb2.RecordTurnsRequest(
                bank_id="b", turns=[turn("t1", "hello")], index_now=True
            )
            reply = await episodic.RecordTurns(request, timeout=2.0)  # less than the outbox timeout
            assert (reply.recorded_count, reply.indexed) == (1, False)
            status = await episodic.OutboxStatus(episodic_pb2.OutboxStatusRequest(bank_id="b"))
            assert dict(status.pending) == {"semantic": 1}  # kept for the background deliverer
    finally:
        silent.close()
        await drop_schemas(database_url, unique_name)
