"""The reflect layer against the real episodic service, both on a real PostgreSQL, over real gRPC."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import grpc
import psycopg
import pytest
from psycopg import sql

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.contracts.reflect.v1 import reflect_pb2, reflect_pb2_grpc
from hindsight.reflect.service import open_service
from hindsight.reflect.settings import ReflectSettings
from hindsight.runtime.migrations import load_migrations
from hindsight.runtime.records import to_timestamp
from hindsight.runtime.testing import channel_to, serving
from tests.integration.mesh import drop_schemas
from tests.integration.rpcs import assert_rejected_naming

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
TIMEOUT = 10
SUCCESS, FAILURE, UNKNOWN = (
    episodic_pb2.OUTCOME_SUCCESS,
    episodic_pb2.OUTCOME_FAILURE,
    episodic_pb2.OUTCOME_UNSPECIFIED,
)


@dataclass
class Layers:
    episodic: episodic_pb2_grpc.EpisodicServiceStub
    reflect: reflect_pb2_grpc.ReflectServiceStub
    settings: ReflectSettings


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
            settings,
        )
    await drop_schemas(database_url, unique_name)


async def write(
    layers: Layers,
    bank: str,
    minute: int,
    result: int,
    *,
    action: str = "",
    outcome: str = "",
    task_type: str = "deploy",
    situation: str = "shipping the web app",
    lesson: str = "",
    session: str = "s1",
) -> str:
    episode = episodic_pb2.Episode(
        session_id=session,
        situation=situation,
        action=action,
        outcome=outcome,
        lesson=lesson,
        task_type=task_type,
        result=result,
        meta=common_pb2.RecordMeta(
            time=to_timestamp(T0 + timedelta(minutes=minute)), source_turn_ids=[f"t{minute}"]
        ),
    )
    reply = await layers.episodic.WriteEpisode(
        episodic_pb2.WriteEpisodeRequest(bank_id=bank, episode=episode), timeout=TIMEOUT
    )
    return reply.episode.id


async def reflect(layers: Layers, bank: str, session: str = "") -> reflect_pb2.ReflectResponse:
    return await layers.reflect.Reflect(
        reflect_pb2.ReflectRequest(bank_id=bank, session_id=session), timeout=TIMEOUT
    )


async def all_lessons(layers: Layers, bank: str, page_size: int = 0) -> list[reflect_pb2.Lesson]:
    lessons: list[reflect_pb2.Lesson] = []
    token = ""
    while True:
        reply = await layers.reflect.ListLessons(
            reflect_pb2.ListLessonsRequest(bank_id=bank, page_size=page_size, page_token=token),
            timeout=TIMEOUT,
        )
        lessons.extend(reply.lessons)
        token = reply.next_page_token
        if not token:
            return lessons


async def search(layers: Layers, bank: str, query: str) -> list[reflect_pb2.ScoredLesson]:
    reply = await layers.reflect.SearchLessons(
        reflect_pb2.SearchLessonsRequest(bank_id=bank, query=query), timeout=TIMEOUT
    )
    return list(reply.hits)


async def test_reflecting_on_written_episodes_writes_the_lessons_they_teach(layers, unique_name) -> None:
    bank = unique_name
    failed = await write(
        layers,
        bank,
        0,
        FAILURE,
        action="deployed straight to production",
        outcome="the database schema was out of date",
    )
    worked = await write(
        layers, bank, 5, SUCCESS, action="ran the migrations before deploying", outcome="deployed cleanly"
    )
    await write(
        layers,
        bank,
        7,
        FAILURE,
        action="retried the card charge at once",
        outcome="the card was blocked",
        task_type="billing",
        situation="a declined payment",
    )
    stated = await write(layers, bank, 9, UNKNOWN, lesson="Tag every release in git.", task_type="release")

    reply = await reflect(layers, bank)
    assert reply.episodes_read == 4
    texts = [(lesson.lesson, round(lesson.confidence, 3)) for lesson in reply.lessons]
    assert texts == [
        ("Tag every release in git.", 0.7),
        (
            "For deploy: ran the migrations before deploying worked where deployed straight to production "
            "failed (the database schema was out of date)",
            0.6,
        ),
        ("Avoid: retried the card charge at once in a declined payment led to the card was blocked", 0.4),
    ]
    recovery = reply.lessons[1]
    assert list(recovery.source_episode_ids) == [failed, worked]
    assert list(recovery.meta.source_turn_ids) == ["t0", "t5"]
    assert recovery.meta.time.ToDatetime(tzinfo=UTC) == T0 + timedelta(minutes=5)
    assert "deploy" in recovery.meta.tags
    assert list(reply.lessons[0].source_episode_ids) == [stated]
    assert [lesson.id for lesson in await all_lessons(layers, bank)] == [
        lesson.id for lesson in reply.lessons
    ]


async def test_reflecting_twice_merges_into_the_same_lessons_instead_of_duplicating(
    layers, unique_name
) -> None:
    bank = unique_name
    failed = await write(layers, bank, 0, FAILURE, action="deployed directly", outcome="crash")
    first_ok = await write(layers, bank, 1, SUCCESS, action="ran the migrations first", outcome="ok")
    first = await reflect(layers, bank)
    second = await reflect(layers, bank)
    assert [lesson.id for lesson in second.lessons] == [lesson.id for lesson in first.lessons]
    assert len(await all_lessons(layers, bank)) == 1

    second_ok = await write(layers, bank, 2, SUCCESS, action="Ran the migrations first", outcome="ok again")
    third = await reflect(layers, bank)
    lessons = {lesson.lesson: lesson for lesson in await all_lessons(layers, bank)}
    assert len(lessons) == 2 and len(third.lessons) == 2
    recovery = lessons["For deploy: ran the migrations first worked where deployed directly failed (crash)"]
    assert recovery.confidence == pytest.approx(0.7)
    assert list(recovery.source_episode_ids) == [failed, first_ok]
    repeated = lessons["For deploy: ran the migrations first has worked repeatedly"]
    assert list(repeated.source_episode_ids) == [first_ok, second_ok]


async def test_reflecting_on_one_session_reads_only_its_episodes(layers, unique_name) -> None:
    await write(layers, unique_name, 0, FAILURE, action="a", outcome="x", session="s1")
    await write(layers, unique_name, 1, FAILURE, action="b", outcome="y", session="s2")
    await write(layers, unique_name, 2, FAILURE, action="c", outcome="z", session="s2")
    reply = await reflect(layers, unique_name, session="s2")
    assert reply.episodes_read == 2
    assert sorted(lesson.action for lesson in reply.lessons) == ["b", "c"]


async def test_searching_lessons_finds_them_by_keyword_and_counts_each_hit(layers, unique_name) -> None:
    bank = unique_name
    await write(layers, bank, 0, UNKNOWN, lesson="Back up the database before every migration.")
    await write(layers, bank, 1, UNKNOWN, lesson="部署之前先备份数据库。", task_type="部署")
    await write(layers, bank, 2, FAILURE, action="skipped the backup", outcome="lost data", task_type="ops")
    await reflect(layers, bank)

    hits = await search(layers, bank, "database backups before a migration")
    assert hits[0].lesson.lesson == "Back up the database before every migration."
    assert hits[0].score > 0
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
    assert hits[0].lesson.hit_count == 1 and hits[0].lesson.HasField("last_hit_at")
    again = await search(layers, bank, "migration")
    assert [hit.lesson.hit_count for hit in again] == [2]

    [chinese] = await search(layers, bank, "备份数据")
    assert chinese.lesson.lesson == "部署之前先备份数据库。"
    assert await search(layers, bank, "the and of") == []
    untouched = {lesson.lesson: lesson.hit_count for lesson in await all_lessons(layers, bank)}
    assert untouched["Avoid: skipped the backup in shipping the web app led to lost data"] == 0


async def test_one_bank_never_sees_another_banks_lessons(layers, unique_name) -> None:
    mine, theirs = f"{unique_name}-a", f"{unique_name}-b"
    await write(layers, mine, 0, UNKNOWN, lesson="Rotate the API keys monthly.")
    assert len((await reflect(layers, mine)).lessons) == 1
    assert await all_lessons(layers, theirs) == []
    assert await search(layers, theirs, "API keys") == []
    reply = await reflect(layers, theirs)
    assert (reply.episodes_read, list(reply.lessons)) == (0, [])
    assert [lesson.lesson for lesson in await all_lessons(layers, mine)] == ["Rotate the API keys monthly."]


async def test_lessons_are_listed_most_confident_first_one_page_at_a_time(layers, unique_name) -> None:
    for minute, task in enumerate(["a", "b", "c"]):
        await write(layers, unique_name, minute, FAILURE, action=f"act {task}", outcome="bad", task_type=task)
        await write(layers, unique_name, 10 + minute, UNKNOWN, lesson=f"Remember {task}.", task_type=task)
    await reflect(layers, unique_name)
    paged = await all_lessons(layers, unique_name, page_size=2)
    assert len(paged) == 6 and len({lesson.id for lesson in paged}) == 6
    assert [round(lesson.confidence, 2) for lesson in paged] == [0.7, 0.7, 0.7, 0.4, 0.4, 0.4]
    assert [lesson.id for lesson in paged] == [lesson.id for lesson in await all_lessons(layers, unique_name)]


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (reflect_pb2.SearchLessonsRequest(bank_id="b", query=" "), "query"),
        (reflect_pb2.SearchLessonsRequest(bank_id="b", query="q", limit=101), "limit"),
        (reflect_pb2.ListLessonsRequest(bank_id="b", page_token="garbage!"), "page_token"),
        (reflect_pb2.ListLessonsRequest(bank_id="b", page_size=501), "page_size"),
        (reflect_pb2.ReflectRequest(bank_id="b", session_id="s" * 300), "session_id"),
    ],
)
async def test_invalid_requests_are_rejected_naming_the_field(layers, request_, field) -> None:
    method = {
        reflect_pb2.SearchLessonsRequest: layers.reflect.SearchLessons,
        reflect_pb2.ListLessonsRequest: layers.reflect.ListLessons,
        reflect_pb2.ReflectRequest: layers.reflect.Reflect,
    }[type(request_)]
    await assert_rejected_naming(method(request_, timeout=TIMEOUT), field)


async def test_starting_again_on_a_migrated_schema_keeps_the_lessons(layers, unique_name) -> None:
    await write(layers, unique_name, 0, UNKNOWN, lesson="Keep this one.")
    await reflect(layers, unique_name)
    async with serving(lambda: open_service(layers.settings)) as server, channel_to(server) as channel:
        stub = reflect_pb2_grpc.ReflectServiceStub(channel)
        reply = await stub.ListLessons(reflect_pb2.ListLessonsRequest(bank_id=unique_name), timeout=TIMEOUT)
        assert [lesson.lesson for lesson in reply.lessons] == ["Keep this one."]
    async with await psycopg.AsyncConnection.connect(layers.settings.database_url) as conn:
        cursor = await conn.execute(
            sql.SQL("SELECT version FROM {}").format(sql.Identifier(unique_name, "schema_migrations"))
        )
        every = [(migration.version,) for migration in load_migrations("hindsight.reflect")]
        assert await cursor.fetchall() == every and every[:4] == [(1,), (2,), (3,), (4,)]
