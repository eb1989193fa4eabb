"""Lessons drawn from episodes with very long fields are written, found and contradicted like any other;
a statement over a PostgreSQL limit is a non-retryable error naming the cause, not UNAVAILABLE."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import grpc
import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.contracts.reflect.v1 import reflect_pb2, reflect_pb2_grpc
from hindsight.reflect.domain import Lesson
from hindsight.reflect.engine import ReflectEngine
from hindsight.reflect.episodes import EpisodicClient
from hindsight.reflect.service import open_service
from hindsight.reflect.settings import ReflectSettings
from hindsight.reflect.store import PostgresLessonStore
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.database import database_error
from hindsight.runtime.errors import FailedPrecondition, Unavailable
from hindsight.runtime.migrations import load_migrations, migrate, migrate_down
from hindsight.runtime.records import RecordMeta, to_timestamp
from hindsight.runtime.testing import channel_to, serving
from tests.integration.mesh import drop_schemas

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
TIMEOUT = 30
LONG = 100_000
"""Characters in each long field: far over a btree entry's limit (about 2.7 kB)."""


def long_text(word: str) -> str:
    """``word`` first, then distinct filler words: :data:`LONG` characters (the episodic limit) at most."""
    text = word
    index = 0
    while len(text) < LONG:
        text += f" {word}{index}"
        index += 1
    return text[:LONG].rstrip()


@dataclass
class Layers:
    episodic: episodic_pb2_grpc.EpisodicServiceStub
    reflect: reflect_pb2_grpc.ReflectServiceStub


@pytest.fixture
async def layers(database_url: str, episodic_addr: str, unique_name: str) -> AsyncIterator[Layers]:
    settings = ReflectSettings(database_url=database_url, schema=unique_name, episodic_addr=episodic_addr)
    async with (
        serving(lambda: open_service(settings)) as server,
        channel_to(server) as channel,
        grpc.aio.insecure_channel(episodic_addr) as episodic_channel,
    ):
        yield Layers(
            episodic_pb2_grpc.EpisodicServiceStub(episodic_channel),
            reflect_pb2_grpc.ReflectServiceStub(channel),
        )
    await drop_schemas(database_url, unique_name)


async def write(layers: Layers, bank: str, minute: int, result: int, session: str) -> None:
    episode = episodic_pb2.Episode(
        session_id=session,
        situation=long_text("kiln"),
        action=long_text("glaze"),
        outcome=long_text("crackle"),
        lesson=long_text("bisque"),
        # No task type: the topic is the (long) situation.
        result=result,
        meta=common_pb2.RecordMeta(
            time=to_timestamp(T0 + timedelta(minutes=minute)), source_turn_ids=[f"t{minute}"]
        ),
    )
    await layers.episodic.WriteEpisode(
        episodic_pb2.WriteEpisodeRequest(bank_id=bank, episode=episode), timeout=TIMEOUT
    )


async def reflect(layers: Layers, bank: str, session: str) -> reflect_pb2.ReflectResponse:
    return await layers.reflect.Reflect(
        reflect_pb2.ReflectRequest(bank_id=bank, session_id=session), timeout=TIMEOUT
    )


async def test_a_lesson_from_an_episode_with_very_long_fields_is_written_and_found(
    layers: Layers, unique_name: str
) -> None:
    bank = unique_name
    await write(layers, bank, 0, episodic_pb2.OUTCOME_FAILURE, "a")
    reply = await reflect(layers, bank, "a")
    assert reply.lessons, "no lesson drawn from the long episode"
    assert any(
        len(lesson.topic) >= LONG - 1 and len(lesson.action_key) >= LONG - 1 for lesson in reply.lessons
    ), [(len(lesson.topic), len(lesson.action_key)) for lesson in reply.lessons]
    found = await layers.reflect.SearchLessons(
        reflect_pb2.SearchLessonsRequest(bank_id=bank, query="glaze kiln"), timeout=TIMEOUT
    )
    assert {hit.lesson.id for hit in found.hits} & {lesson.id for lesson in reply.lessons}


async def test_a_contradicting_lesson_on_a_very_long_topic_supersedes_the_old_one(
    layers: Layers, unique_name: str
) -> None:
    bank = unique_name
    await write(layers, bank, 0, episodic_pb2.OUTCOME_FAILURE, "a")
    old = await reflect(layers, bank, "a")
    [avoid] = [lesson for lesson in old.lessons if lesson.lesson.startswith("Avoid")]
    assert avoid.stance == -1 and len(avoid.topic) >= LONG - 1
    for minute in (10, 20):
        await write(layers, bank, minute, episodic_pb2.OUTCOME_SUCCESS, "b")
    new = await reflect(layers, bank, "b")
    assert list(new.superseded_ids) == [avoid.id]


async def test_a_statement_over_a_postgresql_limit_fails_for_good_naming_the_cause(
    database_url: str, unique_name: str
) -> None:
    """With the stance index keyed on the full text again (the schema rolled back before its digests), a
    long topic exceeds the index limit: FAILED_PRECONDITION naming the cause, which a retry cannot fix."""
    migrations = load_migrations("hindsight.reflect")
    async with AsyncConnectionPool(database_url, min_size=1, max_size=2, kwargs={"autocommit": True}) as pool:
        async with pool.connection() as conn:
            await migrate(conn, unique_name, migrations)
            rolled_back = await migrate_down(conn, unique_name, migrations, 3)
            assert rolled_back[-1] == 4, rolled_back  # later migrations go first
        store = PostgresLessonStore(pool, unique_name)
        lesson = Lesson(
            id="l1",
            situation="kiln",
            action="glaze",
            outcome="crackle",
            lesson="Avoid glaze",
            confidence=0.4,
            source_episode_ids=("e1",),
            meta=RecordMeta(source_turn_ids=("t1",)),
            topic=long_text("pottery"),
            action_key=long_text("glaze"),
            stance=-1,
        )
        try:
            with pytest.raises(FailedPrecondition) as raised:
                await store.upsert("bank", [lesson], T0)
        finally:
            await drop_schemas(database_url, unique_name)
    assert raised.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert "PostgreSQL limit exceeded (SQLSTATE 54000): index row" in str(raised.value), str(raised.value)


async def test_a_database_that_cannot_be_reached_stays_retryable() -> None:
    """Only a limit is final: a refused connection is still UNAVAILABLE, which callers retry."""
    with pytest.raises(psycopg.OperationalError) as raised:
        await psycopg.AsyncConnection.connect("postgresql://postgres@127.0.0.1:1/test", connect_timeout=2)
    error = database_error("lesson store", raised.value)
    assert isinstance(error, Unavailable) and error.code == grpc.StatusCode.UNAVAILABLE, error


async def test_a_session_that_fails_for_good_does_not_stop_the_banks_other_sessions(
    database_url: str, episodic_addr: str, unique_name: str
) -> None:
    """Scheduled reflection walks sessions in order: one that hits a PostgreSQL limit (here the rolled-back
    text index) is skipped, and the sessions after it are still reflected on."""
    migrations = load_migrations("hindsight.reflect")
    settings = ReflectSettings(database_url=database_url, schema=unique_name, episodic_addr=episodic_addr)
    client = LayerClient(episodic_addr, episodic_pb2_grpc.EpisodicServiceStub)
    try:
        async with (
            AsyncConnectionPool(database_url, min_size=1, max_size=2, kwargs={"autocommit": True}) as pool,
            grpc.aio.insecure_channel(episodic_addr) as channel,
        ):
            async with pool.connection() as conn:
                await migrate(conn, unique_name, migrations)
                await migrate_down(conn, unique_name, migrations, 3)
            layers = Layers(
                episodic_pb2_grpc.EpisodicServiceStub(channel), reflect_pb2_grpc.ReflectServiceStub(channel)
            )
            await write(layers, unique_name, 0, episodic_pb2.OUTCOME_FAILURE, "a")
            short = episodic_pb2.Episode(
                session_id="b", situation="firing the kiln", action="opened the lid early",
                outcome="the pots cracked", task_type="pottery", result=episodic_pb2.OUTCOME_FAILURE,
                meta=common_pb2.RecordMeta(time=to_timestamp(T0), source_turn_ids=["tb"]),
            )  # fmt: skip
            await layers.episodic.WriteEpisode(
                episodic_pb2.WriteEpisodeRequest(bank_id=unique_name, episode=short), timeout=TIMEOUT
            )
            engine = ReflectEngine(
                PostgresLessonStore(pool, unique_name),
                EpisodicClient(client),
                settings,
                clock=lambda: T0 + timedelta(days=1),
            )
            assert await engine.reflect_due_sessions(unique_name) == ["b"]
            assert (await engine.list_lessons(unique_name, 10, "")).lessons
    finally:
        await client.close()
        await drop_schemas(database_url, unique_name)
