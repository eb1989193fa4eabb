"""Reflection paths and the lesson life cycle on real services: episodic and inference over gRPC, a real
PostgreSQL, the LLM path against the protocol-faithful test server, and a clock the tests move."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import grpc
import pytest

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.contracts.inference.v1 import inference_pb2_grpc
from hindsight.contracts.reflect.v1 import reflect_pb2, reflect_pb2_grpc
from hindsight.inference.service import open_service as open_inference
from hindsight.inference.settings import InferenceSettings
from hindsight.reflect.domain import Method
from hindsight.reflect.engine import InferenceEmbedder, ReflectEngine
from hindsight.reflect.episodes import EpisodicClient
from hindsight.reflect.llm_reflect import LLMReflector
from hindsight.reflect.service import open_service
from hindsight.reflect.settings import ReflectSettings
from hindsight.reflect.store import open_lesson_store
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.llm import LLMClient, LLMSettings
from hindsight.runtime.records import to_timestamp
from hindsight.runtime.testing import channel_to, serving
from tests.integration.mesh import drop_schemas
from tests.llm_test_server import OpenAITestServer, Reply, openai_test_server

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
TIMEOUT = 10
SUCCESS, FAILURE = episodic_pb2.OUTCOME_SUCCESS, episodic_pb2.OUTCOME_FAILURE


@pytest.fixture(scope="module")
async def inference_addr() -> AsyncIterator[str]:
    async with serving(lambda: open_inference(InferenceSettings())) as server:
        yield f"127.0.0.1:{server.port}"


@dataclass
class Clock:
    """The time the engine sees; tests move it instead of sleeping."""

    now: datetime = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@dataclass
class World:
    engine: ReflectEngine
    episodic: episodic_pb2_grpc.EpisodicServiceStub
    clock: Clock
    bank: str
    llm_server: OpenAITestServer | None = None
    closers: list[LayerClient] = field(default_factory=list)  # type: ignore[type-arg]


def _settings(database_url: str, schema: str, episodic_addr: str, **extra: object) -> ReflectSettings:
    return ReflectSettings(
        database_url=database_url,
        schema=schema,
        episodic_addr=episodic_addr,
        idle_after_seconds=600,
        **extra,  # type: ignore[arg-type]
    )


@pytest.fixture
async def world(
    database_url: str, episodic_addr: str, inference_addr: str, unique_name: str
) -> AsyncIterator[World]:
    """An engine on the real store, reading real episodes, embedding with the real inference service."""
    settings = _settings(database_url, unique_name, episodic_addr)
    episodic = LayerClient(episodic_addr, episodic_pb2_grpc.EpisodicServiceStub)
    inference = LayerClient(inference_addr, inference_pb2_grpc.InferenceServiceStub)
    clock = Clock()
    async with (
        open_lesson_store(settings) as store,
        grpc.aio.insecure_channel(episodic_addr) as channel,
        openai_test_server() as llm_server,
    ):
        engine = ReflectEngine(
            store, EpisodicClient(episodic), settings, embedder=InferenceEmbedder(inference), clock=clock
        )
        yield World(engine, episodic_pb2_grpc.EpisodicServiceStub(channel), clock, unique_name, llm_server)
    await episodic.close()
    await inference.close()
    await drop_schemas(database_url, unique_name)


def _with_llm(world: World, **overrides: object) -> None:
    assert world.llm_server is not None
    llm = LLMClient(
        LLMSettings(api_base=world.llm_server.base_url, model="test", timeout_seconds=2, backoff_seconds=0)
    )
    world.engine.settings = dataclasses.replace(world.engine.settings, **overrides)  # type: ignore[arg-type]
    world.engine.reflector = LLMReflector(llm, world.engine.settings.llm_max_episodes, 4, 800, 2)


async def write(
    world: World,
    minute: float,
    result: int,
    *,
    action: str,
    outcome: str = "",
    task_type: str = "deploy",
    situation: str = "deploying the web app",
    session: str = "s1",
    importance: float = 0.1,
    tools: tuple[str, ...] = (),
    lesson: str = "",
) -> str:
    """Write one episode at T0 + minute."""
    meta = common_pb2.RecordMeta(time=to_timestamp(T0 + timedelta(minutes=minute)), importance=importance)
    reply = await world.episodic.WriteEpisode(
        episodic_pb2.WriteEpisodeRequest(
            bank_id=world.bank,
            episode=episodic_pb2.Episode(
                session_id=session,
                situation=situation,
                action=action,
                outcome=outcome,
                task_type=task_type,
                result=result,
                tools=list(tools),
                lesson=lesson,
                meta=meta,
            ),
        ),
        timeout=TIMEOUT,
    )
    return str(reply.episode.id)


async def failed_then_fixed(world: World) -> tuple[str, str]:
    failed = await write(
        world, 0, FAILURE, action="ran pip install during the deploy", outcome="timed out fetching packages"
    )
    fixed = await write(world, 5, SUCCESS, action="installed from the local wheel cache", outcome="deployed")
    return failed, fixed


async def test_a_failed_then_successful_attempt_teaches_offline_the_failing_action_and_the_fix(world) -> None:
    await failed_then_fixed(world)
    reflection = await world.engine.reflect(world.bank, "s1")
    assert reflection.method is Method.RULES
    texts = [lesson.lesson for lesson in reflection.lessons]
    recovery = next(t for t in texts if "worked where" in t)
    assert "installed from the local wheel cache" in recovery
    assert "ran pip install during the deploy" in recovery
    assert "timed out fetching packages" in recovery


async def test_the_llm_path_writes_the_lesson_it_answers_citing_the_episodes(world) -> None:
    failed, fixed = await failed_then_fixed(world)
    _with_llm(world)
    answer = {
        "lessons": [
            {
                "situation": "deploying the web app",
                "action": "installed from the local wheel cache",
                "outcome": "the deploy succeeded",
                "went_well": "the wheel cache avoided the network",
                "to_improve": "pip install during the deploy timed out",
                "next_time": "Install from the local wheel cache, not with pip install in the deploy",
                "stance": "do",
                "confidence": 0.85,
                "tags": ["pip"],
                "episodes": ["E1", "E2"],
            }
        ]
    }
    world.llm_server.script(Reply(answer))
    reflection = await world.engine.reflect(world.bank, "s1")
    assert reflection.method is Method.LLM
    [lesson] = reflection.lessons
    assert "local wheel cache" in lesson.lesson and "pip install" in lesson.lesson
    assert lesson.confidence == pytest.approx(0.85)
    assert set(lesson.source_episode_ids) == {failed, fixed}
    assert "pip" in lesson.meta.tags
    sent = world.llm_server.requests[0].body
    system, user = (m["content"] for m in sent["messages"])
    for question in ("what went well", "what should be improved", "what to do next time"):
        assert question in system
    assert "E1 [failure]" in user and "ran pip install during the deploy" in user
    assert sent["response_format"]["json_schema"]["schema"]["properties"]["lessons"]["maxItems"] == 4


async def test_an_llm_answer_without_a_usable_lesson_is_asked_again(world) -> None:
    await failed_then_fixed(world)
    _with_llm(world)
    breaks_schema = {"lessons": [{**_item("Check the cache"), "episodes": ["E9"]}]}  # only E1, E2 exist
    says_nothing = {"lessons": [_item("  ")]}  # valid JSON, but no next step: asked again
    world.llm_server.script(
        Reply(breaks_schema), Reply(says_nothing), Reply({"lessons": [_item("Use the wheel cache")]})
    )
    reflection = await world.engine.reflect(world.bank, "s1")
    assert [lesson.lesson for lesson in reflection.lessons] == ["Use the wheel cache"]
    assert len(world.llm_server.requests) == 3
    assert world.llm_server.requests[0].body["response_format"]["json_schema"]["schema"]["properties"][
        "lessons"
    ]["items"]["properties"]["episodes"]["items"]["enum"] == ["E1", "E2"]


async def test_the_hourly_llm_budget_and_llm_failures_fall_back_to_rules(world) -> None:
    await failed_then_fixed(world)
    _with_llm(world, llm_budget_per_hour=1)
    world.llm_server.script(Reply({"lessons": [_item("Use the wheel cache")]}))
    assert (await world.engine.reflect(world.bank, "s1")).method is Method.LLM
    assert (await world.engine.reflect(world.bank, "s1")).method is Method.RULES  # budget spent
    world.clock.advance(hours=1)
    world.llm_server.script(*[Reply(status=503)] * 8)
    assert (await world.engine.reflect(world.bank, "s1")).method is Method.RULES  # LLM down
    assert len(world.llm_server.requests) > 1


def _item(text: str) -> dict[str, object]:
    return {
        "situation": "deploying",
        "action": "used the wheel cache",
        "outcome": "ok",
        "went_well": "",
        "to_improve": "",
        "next_time": text,
        "stance": "do",
        "confidence": 0.7,
        "tags": [],
        "episodes": ["E2"],
    }


async def test_hit_counts_move_on_recall_and_a_hit_restores_the_weight(world) -> None:
    await failed_then_fixed(world)
    await world.engine.reflect(world.bank, "s1")
    world.clock.advance(days=65)
    await world.engine.maintain(world.bank)
    [hit] = await world.engine.search(world.bank, "wheel cache deploy", 1)
    assert hit.lesson.hit_count == 1 and hit.lesson.last_hit_at == world.clock.now
    [again] = await world.engine.search(world.bank, "wheel cache deploy", 1)
    assert again.lesson.hit_count == 2 and again.lesson.weight == 1.0


async def test_decay_and_archive_follow_the_settings(world) -> None:
    await write(world, 0, FAILURE, action="force-pushed to main", outcome="broke the build")  # avoid: 0.4
    await world.engine.reflect(world.bank, "s1")
    [lesson] = [x for x in (await world.engine.list_lessons(world.bank, 10, "")).lessons]
    world.clock.advance(days=29)
    assert (await world.engine.maintain(world.bank)).decayed_ids == []
    world.clock.advance(days=2)  # 31 days unused: one period
    report = await world.engine.maintain(world.bank)
    assert report.decayed_ids == [lesson.id] and report.archived_ids == []
    [decayed] = (await world.engine.list_lessons(world.bank, 10, "")).lessons
    assert decayed.weight == pytest.approx(0.9)
    world.clock.advance(days=60)  # 91 days: weight 0.729, 0.4 * 0.729 < 0.3
    report = await world.engine.maintain(world.bank)
    assert report.archived_ids == [lesson.id]
    assert (await world.engine.list_lessons(world.bank, 10, "")).lessons == []
    assert await world.engine.search(world.bank, "force-pushed main", 5) == []


async def test_a_confident_lesson_outlives_the_archive_age(world) -> None:
    await failed_then_fixed(world)  # recovery lesson, confidence 0.6
    await world.engine.reflect(world.bank, "s1")
    world.clock.advance(days=91)
    report = await world.engine.maintain(world.bank)
    recovery = [
        x for x in (await world.engine.list_lessons(world.bank, 10, "")).lessons if "worked" in x.lesson
    ]
    assert recovery and recovery[0].id not in report.archived_ids


async def _twin_lessons(world: World, session: str = "s1") -> None:
    """The same stated lesson under two task types: two lesson ids, one meaning."""
    for minute, task in ((0, "deploy"), (1, "release")):
        await write(world, minute, UNKNOWN, action="shipped", task_type=task, session=session, lesson=TWIN)


TWIN = "Run the whole test suite before shipping, not only the tests of the changed module."
UNKNOWN = episodic_pb2.OUTCOME_UNSPECIFIED


async def test_near_duplicate_lessons_merge_raising_confidence_and_linking(world) -> None:
    await _twin_lessons(world)
    before = {x.id: x for x in (await world.engine.reflect(world.bank, "s1")).lessons}
    assert len(before) == 2
    report = await world.engine.maintain(world.bank)
    [merged_id] = report.merged_ids
    [kept] = (await world.engine.list_lessons(world.bank, 10, "")).lessons
    assert kept.lesson == TWIN and kept.id != merged_id
    assert kept.confidence == pytest.approx(1 - 0.3 * 0.3)  # two 0.7 lessons corroborate each other
    assert set(kept.source_episode_ids) == {e for x in before.values() for e in x.source_episode_ids}
    [archived] = await world.engine.store.current(world.bank, "", 10)
    assert archived.id == kept.id  # the twin is archived (kept, linked), never deleted


async def test_maintenance_run_twice_changes_nothing_the_second_time(world) -> None:
    await _twin_lessons(world, "s1")
    await write(world, 3, FAILURE, action="force-pushed to main", outcome="broke the build", session="s2")
    await world.engine.reflect(world.bank, "s1")
    await world.engine.reflect(world.bank, "s2")
    await write(world, 4, FAILURE, action="guessed the API version", outcome="404", session="s3")
    world.clock.advance(days=95)
    first = await world.engine.maintain(world.bank)
    assert first.reflected_session_ids == ["s3"]
    assert first.decayed_ids and first.archived_ids and first.merged_ids
    second = await world.engine.maintain(world.bank)
    assert (second.reflected_session_ids, second.decayed_ids, second.archived_ids, second.merged_ids) == (
        [],
        [],
        [],
        [],
    )
    assert second.lessons_checked == first.lessons_checked - len(first.archived_ids) - len(first.merged_ids)


async def test_a_newer_contradicting_lesson_supersedes_the_old_one_with_a_link(world) -> None:
    await write(world, 0, FAILURE, action="used the staging database", outcome="data was stale", session="a")
    old = await world.engine.reflect(world.bank, "a")
    [avoid] = [x for x in old.lessons if x.lesson.startswith("Avoid")]
    for minute in (10, 20):
        await write(world, minute, SUCCESS, action="used the staging database", session="b")
    new = await world.engine.reflect(world.bank, "b")
    assert new.superseded_ids == (avoid.id,)
    current = {x.id for x in (await world.engine.list_lessons(world.bank, 10, "")).lessons}
    assert avoid.id not in current
    stored = await world.engine.store.archive(world.bank, [avoid.id], world.clock.now)
    assert stored == []  # already archived, by the supersede


async def test_idle_and_important_sessions_are_reflected_on_once(world) -> None:
    await write(world, 0, FAILURE, action="guessed the API version", outcome="404", session="quiet")
    await write(
        world, 1, FAILURE, action="dropped the table", outcome="data loss", session="hot", importance=0.9
    )
    world.clock.now = T0 + timedelta(minutes=5)  # "quiet" is not idle yet; "hot" is important
    assert await world.engine.reflect_due_sessions(world.bank) == ["hot"]
    world.clock.advance(minutes=10)
    assert await world.engine.reflect_due_sessions(world.bank) == ["quiet"]
    assert await world.engine.reflect_due_sessions(world.bank) == []


async def test_a_recall_for_a_similar_new_task_returns_the_lesson_first(world) -> None:
    await failed_then_fixed(world)
    await write(world, 7, SUCCESS, action="wrote the changelog", task_type="docs", situation="release notes")
    await world.engine.reflect(world.bank, "s1")
    hits = await world.engine.search(world.bank, "deploy the web app: pip install keeps timing out", 5)
    assert "local wheel cache" in hits[0].lesson.lesson


async def test_maintain_and_list_banks_over_grpc(
    database_url, episodic_addr, inference_addr, unique_name
) -> None:
    settings = _settings(database_url, unique_name, episodic_addr, inference_addr=inference_addr)
    try:
        async with (
            serving(lambda: open_service(settings, LLMSettings())) as server,
            channel_to(server) as channel,
        ):
            stub = reflect_pb2_grpc.ReflectServiceStub(channel)
            await stub.SearchLessons(
                reflect_pb2.SearchLessonsRequest(bank_id=unique_name, query="x"), timeout=5
            )
            banks = await stub.ListBanks(reflect_pb2.ListBanksRequest(), timeout=TIMEOUT)
            assert unique_name in banks.bank_ids
            reply = await stub.Maintain(reflect_pb2.MaintainRequest(bank_id=unique_name), timeout=TIMEOUT)
            assert reply.lessons_checked == 0 and list(reply.skipped) == []
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.Reflect(
                    reflect_pb2.ReflectRequest(bank_id=unique_name, trigger=99), timeout=TIMEOUT
                )
            assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    finally:
        await drop_schemas(database_url, unique_name)


async def test_hindsight_maintain_says_what_changed_and_a_second_run_changes_nothing(
    database_url, episodic_addr, inference_addr, unique_name
) -> None:
    settings = _settings(database_url, unique_name, episodic_addr, inference_addr=inference_addr)
    try:
        async with serving(lambda: open_service(settings, LLMSettings())) as server:
            async with grpc.aio.insecure_channel(episodic_addr) as channel:
                stub = episodic_pb2_grpc.EpisodicServiceStub(channel)
                world = World(None, stub, Clock(), unique_name)  # type: ignore[arg-type]
                await _twin_lessons(world, "old-session")  # long idle: reflected, then the twins merge

            async def maintain() -> list[dict[str, object]]:
                process = await asyncio.create_subprocess_exec(
                    sys.executable, "-m", "hindsight.cli.main", "maintain", "--json",
                    "--address", f"127.0.0.1:{server.port}", "--bank", unique_name,
                    stdout=asyncio.subprocess.PIPE,
                )  # fmt: skip
                out, _ = await asyncio.wait_for(process.communicate(), 60)
                assert process.returncode == 0
                return [json.loads(line) for line in out.decode().splitlines()]

            def changes(report: dict[str, object]) -> list[object]:
                return [report[key] for key in ("reflected_sessions", "decayed", "archived", "merged")]

            [first] = await maintain()
            assert changes(first)[0] == ["old-session"] and len(changes(first)[3]) == 1  # type: ignore[arg-type]
            [second] = await maintain()
            assert changes(second) == [[], [], [], []]
    finally:
        await drop_schemas(database_url, unique_name)


async def test_a_slow_llm_never_makes_an_explicit_reflect_miss_its_deadline(
    database_url, episodic_addr, unique_name
) -> None:
    settings = _settings(database_url, unique_name, episodic_addr)
    try:
        async with openai_test_server() as llm_server:
            llm_server.script(Reply(hang=True))
            llm = LLMSettings(api_base=llm_server.base_url, model="slow", timeout_seconds=30)
            async with serving(lambda: open_service(settings, llm)) as server, channel_to(server) as channel:
                async with grpc.aio.insecure_channel(episodic_addr) as episodic_channel:
                    stub = episodic_pb2_grpc.EpisodicServiceStub(episodic_channel)
                    await failed_then_fixed(World(None, stub, Clock(), unique_name))  # type: ignore[arg-type]
                reflect = reflect_pb2_grpc.ReflectServiceStub(channel)
                reply = await reflect.Reflect(reflect_pb2.ReflectRequest(bank_id=unique_name), timeout=3)
        assert reply.method == reflect_pb2.REFLECTION_METHOD_RULES
        assert any("worked where" in lesson.lesson for lesson in reply.lessons)
    finally:
        await drop_schemas(database_url, unique_name)
