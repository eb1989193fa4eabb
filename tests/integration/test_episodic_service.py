"""Episodic memory through a real gRPC server on a real PostgreSQL, in a schema of the test's own."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import grpc
import psycopg
import pytest
from psycopg import sql

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.episodic.service import SERVICE_NAME, open_service
from hindsight.episodic.settings import EpisodicSettings
from hindsight.runtime.migrations import load_migrations, migrate
from hindsight.runtime.records import to_timestamp
from hindsight.runtime.testing import channel_to, serving, wait_serving
from tests.integration.mesh import drop_schemas
from tests.integration.rpcs import assert_rejected_naming

T0 = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def turn(turn_id: str, text: str, at: datetime | None = None, session: str = "s1") -> common_pb2.Turn:
    meta = common_pb2.RecordMeta(time=to_timestamp(at)) if at else None
    return common_pb2.Turn(id=turn_id, session_id=session, text=text, meta=meta)


@pytest.fixture
async def settings(database_url: str, unique_name: str) -> AsyncIterator[EpisodicSettings]:
    """Settings with a schema of the test's own, dropped afterwards."""
    yield EpisodicSettings(database_url=database_url, schema=unique_name, pool_min_size=1, pool_max_size=4)
    await drop_schemas(database_url, unique_name)


@pytest.fixture
async def stub(settings: EpisodicSettings) -> AsyncIterator[episodic_pb2_grpc.EpisodicServiceStub]:
    async with serving(lambda: open_service(settings)) as server, channel_to(server) as channel:
        yield episodic_pb2_grpc.EpisodicServiceStub(channel)


async def record(
    stub: episodic_pb2_grpc.EpisodicServiceStub, bank: str, *turns: common_pb2.Turn
) -> episodic_pb2.RecordTurnsResponse:
    return await stub.RecordTurns(episodic_pb2.RecordTurnsRequest(bank_id=bank, turns=turns), timeout=10)


async def search(
    stub: episodic_pb2_grpc.EpisodicServiceStub, bank: str, query: str, **kwargs: object
) -> list[str]:
    reply = await stub.SearchTurns(
        episodic_pb2.SearchTurnsRequest(bank_id=bank, query=query, **kwargs), timeout=10
    )
    return [hit.turn.id for hit in reply.hits]


async def list_all_turns(
    stub: episodic_pb2_grpc.EpisodicServiceStub, bank: str, page_size: int
) -> list[list[str]]:
    pages: list[list[str]] = []
    token = ""
    while True:
        reply = await stub.ListTurns(
            episodic_pb2.ListTurnsRequest(bank_id=bank, page_size=page_size, page_token=token), timeout=10
        )
        pages.append([item.id for item in reply.turns])
        token = reply.next_page_token
        if not token:
            return pages


async def test_recording_the_same_turns_again_stores_them_once(
    stub: episodic_pb2_grpc.EpisodicServiceStub,
) -> None:
    first = await record(stub, "bank", turn("t1", "hello"), turn("t2", "world"), turn("t1", "hello again"))
    assert (first.recorded_count, first.duplicate_count) == (2, 1)
    again = await record(stub, "bank", turn("t1", "changed text"), turn("t3", "new"))
    assert (again.recorded_count, again.duplicate_count) == (1, 1)
    reply = await stub.ListTurns(episodic_pb2.ListTurnsRequest(bank_id="bank"))
    assert {item.id: item.text for item in reply.turns} == {"t1": "hello", "t2": "world", "t3": "new"}


async def test_english_keywords_find_the_best_matching_turn_first(
    stub: episodic_pb2_grpc.EpisodicServiceStub,
) -> None:
    await record(
        stub,
        "bank",
        turn("deploy", "The deploy failed because the database migration timed out", T0),
        turn("db", "We upgraded the database on Monday", T0),
        turn("lunch", "Lunch was great, thanks", T0),
        turn("name", "Melanie O'Neill said the migration scripts live in the ops repo", T0),
    )
    assert await search(stub, "bank", "database migration timeout") == ["deploy", "db", "name"]
    assert await search(stub, "bank", "O'Neill") == ["name"]
    assert await search(stub, "bank", "what was it?") == []  # only stop words: nothing to match
    assert await search(stub, "bank", "database migration timeout", limit=1) == ["deploy"]


async def test_a_chinese_query_finds_the_chinese_turn_first(
    stub: episodic_pb2_grpc.EpisodicServiceStub,
) -> None:
    await record(
        stub,
        "bank",
        turn("target", "我昨天在北京大学见了王老师", T0),
        turn("weather", "北京的天气很好", T0),
        turn("study", "我在大学学习数学", T0),
        turn("english", "Peking University is in Beijing", T0),
    )
    hits = await search(stub, "bank", "北京大学")
    assert hits[0] == "target"
    assert set(hits) == {"target", "weather", "study"}
    assert await search(stub, "bank", "王老师") == ["target"]


async def test_the_time_range_keeps_only_turns_inside_it(stub: episodic_pb2_grpc.EpisodicServiceStub) -> None:
    await record(
        stub, "bank", *(turn(f"day{i}", f"standup notes day {i}", T0 + timedelta(days=i)) for i in range(5))
    )
    window = common_pb2.TimeRange(
        start=to_timestamp(T0 + timedelta(days=1)), end=to_timestamp(T0 + timedelta(days=3))
    )
    assert sorted(await search(stub, "bank", "standup notes", time_range=window)) == ["day1", "day2"]
    open_end = common_pb2.TimeRange(start=to_timestamp(T0 + timedelta(days=3)))
    assert sorted(await search(stub, "bank", "standup", time_range=open_end)) == ["day3", "day4"]
    with pytest.raises(grpc.aio.AioRpcError) as inverted:
        await search(
            stub, "bank", "standup", time_range=common_pb2.TimeRange(start=window.end, end=window.start)
        )
    assert (inverted.value.details() or "").startswith("time_range:")


async def test_a_bank_never_sees_another_banks_turns(stub: episodic_pb2_grpc.EpisodicServiceStub) -> None:
    await record(stub, "bank-a", turn("shared-id", "alpha secret project", T0))
    assert (await record(stub, "bank-b", turn("shared-id", "beta secret project", T0))).recorded_count == 1
    reply = await stub.SearchTurns(episodic_pb2.SearchTurnsRequest(bank_id="bank-b", query="secret project"))
    assert [hit.turn.text for hit in reply.hits] == ["beta secret project"]
    listed = await stub.ListTurns(episodic_pb2.ListTurnsRequest(bank_id="bank-a"))
    assert [item.text for item in listed.turns] == ["alpha secret project"]
    forgotten = await stub.ForgetTurns(
        episodic_pb2.ForgetTurnsRequest(bank_id="bank-b", turn_ids=["shared-id"], hard=True)
    )
    assert forgotten.forgotten_count == 1
    assert await search(stub, "bank-a", "secret") == ["shared-id"]


async def test_list_turns_pages_through_every_turn_in_time_order(
    stub: episodic_pb2_grpc.EpisodicServiceStub,
) -> None:
    await record(
        stub,
        "bank",
        turn("late", "c", T0 + timedelta(hours=2)),
        turn("early", "a", T0),
        turn("tie-b", "b", T0 + timedelta(hours=1)),
        turn("tie-a", "b", T0 + timedelta(hours=1)),
        turn("last", "d", T0 + timedelta(hours=3)),
    )
    assert await list_all_turns(stub, "bank", 2) == [["early", "tie-a"], ["tie-b", "late"], ["last"]]
    assert await list_all_turns(stub, "bank", 5) == [["early", "tie-a", "tie-b", "late", "last"]]
    with pytest.raises(grpc.aio.AioRpcError) as bad:
        await stub.ListTurns(episodic_pb2.ListTurnsRequest(bank_id="bank", page_token="garbage!"))
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (bad.value.details() or "").startswith("page_token:")


async def test_turns_sent_without_a_time_list_in_the_order_they_were_sent(
    stub: episodic_pb2_grpc.EpisodicServiceStub,
) -> None:
    await record(stub, "bank", turn("z", "first"), turn("a", "second"), turn("m", "third"))
    assert await list_all_turns(stub, "bank", 10) == [["z", "a", "m"]]
    reply = await stub.ListTurns(episodic_pb2.ListTurnsRequest(bank_id="bank", page_size=1))
    assert reply.turns[0].meta.time.seconds > 0


async def test_forgetting_archives_by_default_and_deletes_on_request(
    stub: episodic_pb2_grpc.EpisodicServiceStub,
) -> None:
    await record(stub, "bank", turn("keep", "coffee order", T0), turn("gone", "coffee secret", T0))
    archived = await stub.ForgetTurns(
        episodic_pb2.ForgetTurnsRequest(bank_id="bank", turn_ids=["gone", "nope"])
    )
    assert archived.forgotten_count == 1
    assert await search(stub, "bank", "coffee") == ["keep"]
    assert await list_all_turns(stub, "bank", 10) == [["keep"]]
    # archived, not deleted: the id is still taken, and archiving again changes nothing
    assert (await record(stub, "bank", turn("gone", "coffee secret", T0))).duplicate_count == 1
    again = await stub.ForgetTurns(episodic_pb2.ForgetTurnsRequest(bank_id="bank", turn_ids=["gone"]))
    assert again.forgotten_count == 0
    hard = await stub.ForgetTurns(
        episodic_pb2.ForgetTurnsRequest(bank_id="bank", turn_ids=["gone", "keep"], hard=True)
    )
    assert hard.forgotten_count == 2
    assert await list_all_turns(stub, "bank", 10) == [[]]
    # deleted for good: the id leaves a tombstone, so a retried write cannot bring the text back
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await record(stub, "bank", turn("gone", "coffee secret", T0))
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert await list_all_turns(stub, "bank", 10) == [[]]


async def test_episodes_get_an_id_and_list_newest_first_a_page_at_a_time(
    stub: episodic_pb2_grpc.EpisodicServiceStub,
) -> None:
    written = []
    for day in range(3):
        reply = await stub.WriteEpisode(
            episodic_pb2.WriteEpisodeRequest(
                bank_id="bank",
                episode=episodic_pb2.Episode(
                    session_id="s1" if day < 2 else "s2",
                    situation=f"deploy day {day}",
                    action="ran the pipeline",
                    result=episodic_pb2.OUTCOME_SUCCESS,
                    tools=["make"],
                    meta=common_pb2.RecordMeta(time=to_timestamp(T0 + timedelta(days=day)), importance=0.5),
                ),
            )
        )
        assert len(reply.episode.id) == 32 and reply.episode.recorded_at.seconds > 0
        written.append(reply.episode)
    pages, token = [], ""
    while True:
        page = await stub.ListEpisodes(
            episodic_pb2.ListEpisodesRequest(bank_id="bank", page_size=2, page_token=token)
        )
        pages.append([item.situation for item in page.episodes])
        token = page.next_page_token
        if not token:
            break
    assert pages == [["deploy day 2", "deploy day 1"], ["deploy day 0"]]
    only_s1 = await stub.ListEpisodes(episodic_pb2.ListEpisodesRequest(bank_id="bank", session_id="s1"))
    assert [item.situation for item in only_s1.episodes] == ["deploy day 1", "deploy day 0"]
    assert (
        only_s1.episodes[0].tools == ["make"] and only_s1.episodes[0].result == episodic_pb2.OUTCOME_SUCCESS
    )
    other_bank = await stub.ListEpisodes(episodic_pb2.ListEpisodesRequest(bank_id="elsewhere"))
    assert list(other_bank.episodes) == []


async def test_writing_an_episode_with_a_known_id_returns_the_stored_one(
    stub: episodic_pb2_grpc.EpisodicServiceStub,
) -> None:
    first = episodic_pb2.Episode(id="ep-1", situation="first version", action="a")
    stored = (
        await stub.WriteEpisode(episodic_pb2.WriteEpisodeRequest(bank_id="bank", episode=first))
    ).episode
    second = episodic_pb2.Episode(id="ep-1", situation="second version", action="b")
    again = (
        await stub.WriteEpisode(episodic_pb2.WriteEpisodeRequest(bank_id="bank", episode=second))
    ).episode
    assert again == stored and again.situation == "first version"


async def test_validation_errors_name_the_field(stub: episodic_pb2_grpc.EpisodicServiceStub) -> None:
    cases = [
        (stub.RecordTurns(episodic_pb2.RecordTurnsRequest(bank_id="bank")), "turns"),
        (
            stub.RecordTurns(
                episodic_pb2.RecordTurnsRequest(bank_id="bank", turns=[turn("a", "ok"), turn("", "x")])
            ),
            "turns[1].id",
        ),
        (
            stub.RecordTurns(
                episodic_pb2.RecordTurnsRequest(bank_id="bank", turns=[turn("a", "ok"), turn("b", "a\x00b")])
            ),
            "turns[1].text",
        ),
        (stub.SearchTurns(episodic_pb2.SearchTurnsRequest(bank_id="bank", query="  ")), "query"),
        (stub.SearchTurns(episodic_pb2.SearchTurnsRequest(bank_id="bank", query="x", limit=201)), "limit"),
        (stub.ListTurns(episodic_pb2.ListTurnsRequest(bank_id="bank", page_size=501)), "page_size"),
        (stub.WriteEpisode(episodic_pb2.WriteEpisodeRequest(bank_id="bank")), "episode"),
        (
            stub.WriteEpisode(
                episodic_pb2.WriteEpisodeRequest(
                    bank_id="bank", episode=episodic_pb2.Episode(outcome="only an outcome")
                )
            ),
            "episode.situation",
        ),
        (
            stub.WriteEpisode(
                episodic_pb2.WriteEpisodeRequest(
                    bank_id="bank",
                    episode=episodic_pb2.Episode(situation="x", meta=common_pb2.RecordMeta(importance=2.0)),
                )
            ),
            "episode.meta.importance",
        ),
        (stub.ForgetTurns(episodic_pb2.ForgetTurnsRequest(bank_id="bank")), "turn_ids"),
        (
            stub.ForgetTurns(episodic_pb2.ForgetTurnsRequest(bank_id="bank", turn_ids=["a", ""])),
            "turn_ids[1]",
        ),
        (stub.SearchTurns(episodic_pb2.SearchTurnsRequest(bank_id="", query="x")), "bank_id"),
    ]
    for call, field in cases:
        await assert_rejected_naming(call, field)
    # a rejected request left nothing behind
    assert await list_all_turns(stub, "bank", 10) == [[]]


async def test_running_the_migrations_again_is_a_no_op(settings: EpisodicSettings) -> None:
    migrations = load_migrations("hindsight.episodic")
    assert [m.version for m in migrations] == sorted({m.version for m in migrations})
    async with (
        await psycopg.AsyncConnection.connect(settings.database_url, autocommit=True) as one,
        await psycopg.AsyncConnection.connect(settings.database_url, autocommit=True) as two,
    ):
        applied = await asyncio.gather(
            migrate(one, settings.schema, migrations), migrate(two, settings.schema, migrations)
        )
        assert sorted(applied[0] + applied[1]) == [m.version for m in migrations]  # each ran exactly once
        assert await migrate(one, settings.schema, migrations) == []
        ledger = sql.Identifier(settings.schema, "schema_migrations")
        rows = await (await one.execute(sql.SQL("SELECT version FROM {}").format(ledger))).fetchall()
        assert sorted(row[0] for row in rows) == [m.version for m in migrations]
    # and a service starting on the migrated schema works as usual
    async with serving(lambda: open_service(settings)) as server, channel_to(server) as channel:
        assert (
            await record(episodic_pb2_grpc.EpisodicServiceStub(channel), "bank", turn("t", "hello"))
        ).recorded_count == 1


async def test_readiness_turns_serving_once_the_database_answers(settings: EpisodicSettings) -> None:
    async with serving(lambda: open_service(settings)) as server, channel_to(server) as channel:
        await wait_serving(channel, SERVICE_NAME)
