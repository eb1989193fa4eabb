"""Lessons are found by what a task is about: a request in other words and about another system finds the
lesson, with a calibrated relevance (0..1); an unrelated request finds none above 0.5."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest

from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.contracts.reflect.v1 import reflect_pb2, reflect_pb2_grpc
from hindsight.reflect.service import open_service
from hindsight.reflect.settings import ReflectSettings
from hindsight.runtime.testing import channel_to, serving
from tests.integration.mesh import drop_schemas

TIMEOUT = 20
BANK = "matching"
EPISODES = (
    ("certificate renewal", "The HTTPS certificate of the online shop expired",
     "the shop was offline for three hours", "Track certificate expiry in monitoring and renew weeks ahead"),
    ("hotel booking", "Booked a non-refundable hotel for a family trip",
     "the dates changed and the money was lost", "Book refundable rooms while plans may still change"),
    ("数据库迁移", "给生产环境的订单表加了一个非空字段",
     "表被锁了二十分钟，下单接口全部超时", "大表结构变更要分批执行、避开高峰"),
)  # fmt: skip


@pytest.fixture
async def reflect(
    database_url: str, episodic_addr: str, inference_addr: str, unique_name: str
) -> AsyncIterator[reflect_pb2_grpc.ReflectServiceStub]:
    settings = ReflectSettings(
        database_url=database_url,
        schema=unique_name,
        episodic_addr=episodic_addr,
        inference_addr=inference_addr,
    )
    async with (
        serving(lambda: open_service(settings)) as server,
        channel_to(server) as channel,
        grpc.aio.insecure_channel(episodic_addr) as episodic_channel,
    ):
        episodic = episodic_pb2_grpc.EpisodicServiceStub(episodic_channel)
        bank = f"{BANK}-{unique_name}"
        for index, (task, situation, outcome, lesson) in enumerate(EPISODES):
            episode = episodic_pb2.Episode(
                session_id=f"s{index}", situation=situation, action="did it the quick way", outcome=outcome,
                lesson=lesson, task_type=task, result=episodic_pb2.OUTCOME_FAILURE,
            )  # fmt: skip
            await episodic.WriteEpisode(episodic_pb2.WriteEpisodeRequest(bank_id=bank, episode=episode))
        stub = reflect_pb2_grpc.ReflectServiceStub(channel)
        assert (await stub.Reflect(reflect_pb2.ReflectRequest(bank_id=bank), timeout=TIMEOUT)).lessons
        yield stub
    await drop_schemas(database_url, unique_name)


async def _search(
    stub: reflect_pb2_grpc.ReflectServiceStub, bank: str, query: str
) -> list[tuple[str, float]]:
    found = await stub.SearchLessons(reflect_pb2.SearchLessonsRequest(bank_id=bank, query=query, limit=5))
    return [(hit.lesson.lesson, hit.score) for hit in found.hits]


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("renewing the TLS cert on the payments gateway", "certificate expiry"),
        ("下周要改一下会员表的结构", "分批执行"),
    ],
)
async def test_a_similar_task_in_other_words_finds_its_lesson_first(
    reflect: reflect_pb2_grpc.ReflectServiceStub, unique_name: str, query: str, words: str
) -> None:
    hits = await _search(reflect, f"{BANK}-{unique_name}", query)
    assert hits and words in hits[0][0] and 0.5 < hits[0][1] <= 1.0, hits


async def test_an_unrelated_request_finds_no_lesson_above_half(
    reflect: reflect_pb2_grpc.ReflectServiceStub, unique_name: str
) -> None:
    hits = await _search(reflect, f"{BANK}-{unique_name}", "Which films won best picture in the nineties?")
    assert all(0.0 <= score < 0.5 for _, score in hits), hits
