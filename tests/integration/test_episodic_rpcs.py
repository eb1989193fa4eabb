"""The episodic life-cycle RPCs over real gRPC and PostgreSQL (shapes and bad input), and the receiving
side of purges in working memory (Redis) and reflection (PostgreSQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import grpc
import pytest
import redis.asyncio as aioredis

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.contracts.reflect.v1 import reflect_pb2, reflect_pb2_grpc
from hindsight.contracts.working.v1 import working_pb2, working_pb2_grpc
from hindsight.reflect.service import open_service as open_reflect
from hindsight.reflect.settings import ReflectSettings
from hindsight.runtime.records import to_timestamp
from hindsight.runtime.testing import channel_to, serving
from hindsight.working.service import open_service as open_working
from hindsight.working.settings import WorkingSettings
from tests.integration.mesh import drop_schemas
from tests.integration.rpcs import assert_rejected_naming

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
TIMEOUT = 10


def turn(turn_id: str, text: str, session: str = "s1", minute: int = 0, **meta: object) -> common_pb2.Turn:
    return common_pb2.Turn(
        id=turn_id,
        session_id=session,
        text=text,
        meta=common_pb2.RecordMeta(time=to_timestamp(T0 + timedelta(minutes=minute)), **meta),  # type: ignore[arg-type]
    )


@pytest.fixture
async def episodic(episodic_addr: str) -> AsyncIterator[episodic_pb2_grpc.EpisodicServiceStub]:
    async with grpc.aio.insecure_channel(episodic_addr) as channel:
        yield episodic_pb2_grpc.EpisodicServiceStub(channel)


async def test_the_life_cycle_rpcs_update_forget_restore_list_and_purge(
    episodic: episodic_pb2_grpc.EpisodicServiceStub, unique_name: str
) -> None:
    bank = unique_name
    await episodic.RecordTurns(
        episodic_pb2.RecordTurnsRequest(
            bank_id=bank,
            turns=[
                turn("a", "lunch at noon", minute=0, tags=["food"]),
                turn("b", "dinner at eight", "s2", 1),
            ],
        ),
        timeout=TIMEOUT,
    )
    updated = await episodic.UpdateTurn(
        episodic_pb2.UpdateTurnRequest(bank_id=bank, turn_id="a", text="lunch at one"), timeout=TIMEOUT
    )
    assert updated.superseded_id == "a" and updated.turn.text == "lunch at one"
    assert updated.turn.meta.source_turn_ids[0] == "a" and list(updated.turn.meta.tags) == ["food"]
    forgotten = await episodic.ForgetTurns(
        episodic_pb2.ForgetTurnsRequest(bank_id=bank, filter=episodic_pb2.TurnFilter(session_id="s2")),
        timeout=TIMEOUT,
    )
    assert forgotten.forgotten_count == 1

    async def listed(**kwargs: object) -> list[str]:
        reply = await episodic.ListTurns(
            episodic_pb2.ListTurnsRequest(bank_id=bank, **kwargs), timeout=TIMEOUT
        )  # type: ignore[arg-type]
        return [t.id for t in reply.turns]

    assert await listed() == [updated.turn.id]
    got = await episodic.GetTurns(
        episodic_pb2.GetTurnsRequest(bank_id=bank, turn_ids=[updated.turn.id, "zz", "a"]), timeout=TIMEOUT
    )
    assert [t.id for t in got.turns] == [updated.turn.id, "a"]  # asked order; archived too; unknown left out
    assert got.turns[1].text == "lunch at noon"
    other_bank = await episodic.GetTurns(
        episodic_pb2.GetTurnsRequest(bank_id=bank + "-other", turn_ids=["a"]), timeout=TIMEOUT
    )
    assert list(other_bank.turns) == []
    newest = await listed(filter=episodic_pb2.TurnFilter(include_archived=True), newest_first=True)
    assert newest[0] == "b" and set(newest[1:]) == {"a", updated.turn.id}  # the new version keeps the time
    restored = await episodic.RestoreTurns(
        episodic_pb2.RestoreTurnsRequest(bank_id=bank, turn_ids=["b", "zz"]), timeout=TIMEOUT
    )
    assert restored.restored_count == 1
    found = await episodic.SearchTurns(
        episodic_pb2.SearchTurnsRequest(
            bank_id=bank, query="dinner lunch", filter=episodic_pb2.TurnFilter(tags=["food"])
        ),
        timeout=TIMEOUT,
    )
    assert [hit.turn.id for hit in found.hits] == [updated.turn.id]
    purged = await episodic.Purge(episodic_pb2.PurgeRequest(bank_id=bank, ids=["a", "b"]), timeout=TIMEOUT)
    # "a" was updated: purging it purges every version of it (the new one repeats or corrects its text)
    assert (purged.turn_count, purged.episode_count, purged.outbox_count) == (3, 0, 0)  # no layer to tell
    assert set(purged.purged_ids) == {"a", "b", updated.turn.id}
    assert await listed(filter=episodic_pb2.TurnFilter(include_archived=True)) == []


async def test_segment_search_episodes_and_access_stats_over_grpc(
    episodic: episodic_pb2_grpc.EpisodicServiceStub, unique_name: str
) -> None:
    bank = unique_name
    turns = [
        turn("t1", "The nightly backup failed with a full disk.", minute=0),
        turn("t2", "Freed disk space and reran the backup; it worked.", minute=1),
    ]
    await episodic.RecordTurns(episodic_pb2.RecordTurnsRequest(bank_id=bank, turns=turns), timeout=TIMEOUT)
    segmented = await episodic.SegmentSession(
        episodic_pb2.SegmentSessionRequest(bank_id=bank, session_id="s1", final=True), timeout=TIMEOUT
    )
    assert segmented.method == "similarity" and len(segmented.episodes) == 1
    episode = segmented.episodes[0]
    assert (
        list(episode.meta.source_turn_ids) == ["t1", "t2"] and episode.result == episodic_pb2.OUTCOME_SUCCESS
    )
    hits = await episodic.SearchEpisodes(
        episodic_pb2.SearchEpisodesRequest(
            bank_id=bank, query="backup disk", result=episodic_pb2.OUTCOME_SUCCESS
        ),
        timeout=TIMEOUT,
    )
    assert [hit.episode.id for hit in hits.hits] == [episode.id] and hits.hits[0].score > 0
    accepted = await episodic.RecordAccess(
        episodic_pb2.RecordAccessRequest(
            bank_id=bank,
            records=[
                episodic_pb2.AccessedRecord(id=episode.id, layer="episodic"),
                episodic_pb2.AccessedRecord(id="t1", layer="semantic"),
            ],
        ),
        timeout=TIMEOUT,
    )
    assert accepted.accepted_count == 2
    stats = await episodic.GetAccessStats(
        episodic_pb2.GetAccessStatsRequest(bank_id=bank, ids=[episode.id, "t1", "t2"]), timeout=TIMEOUT
    )
    assert {(s.id, s.layer, s.hit_count) for s in stats.stats} == {
        (episode.id, "episodic", 1),
        ("t1", "semantic", 1),
    }
    assert all(s.freshness > 0 and s.HasField("last_hit") for s in stats.stats)


@pytest.mark.parametrize(
    ("method", "request_", "field"),
    [
        ("UpdateTurn", episodic_pb2.UpdateTurnRequest(bank_id="b", text="x"), "turn_id"),
        ("UpdateTurn", episodic_pb2.UpdateTurnRequest(bank_id="b", turn_id="t"), "text"),
        (
            "UpdateTurn",
            episodic_pb2.UpdateTurnRequest(bank_id="b", turn_id="t", text="a\x00b"),
            "request.text",
        ),
        (
            "UpdateTurn",
            episodic_pb2.UpdateTurnRequest(
                bank_id="b", turn_id="t", meta=common_pb2.RecordMeta(importance=2)
            ),
            "meta.importance",
        ),
        ("RestoreTurns", episodic_pb2.RestoreTurnsRequest(bank_id="b"), "turn_ids"),
        ("RestoreTurns", episodic_pb2.RestoreTurnsRequest(bank_id="b", turn_ids=["a", ""]), "turn_ids[1]"),
        ("Purge", episodic_pb2.PurgeRequest(bank_id="b"), "ids"),
        ("Purge", episodic_pb2.PurgeRequest(bank_id="b", ids=["a"], whole_bank=True), "ids"),
        ("ForgetTurns", episodic_pb2.ForgetTurnsRequest(bank_id="b"), "turn_ids"),
        (
            "ForgetTurns",
            episodic_pb2.ForgetTurnsRequest(bank_id="b", filter=episodic_pb2.TurnFilter()),
            "filter",
        ),
        (
            "ForgetTurns",
            episodic_pb2.ForgetTurnsRequest(
                bank_id="b", hard=True, filter=episodic_pb2.TurnFilter(session_id="s")
            ),
            "hard",
        ),
        (
            "SearchTurns",
            episodic_pb2.SearchTurnsRequest(
                bank_id="b",
                query="x",
                filter=episodic_pb2.TurnFilter(sources=[common_pb2.SOURCE_UNSPECIFIED]),
            ),
            "filter.sources[0]",
        ),
        (
            "ListTurns",
            episodic_pb2.ListTurnsRequest(bank_id="b", filter=episodic_pb2.TurnFilter(min_trust=99)),  # type: ignore[arg-type]
            "filter.min_trust",
        ),
        ("SearchEpisodes", episodic_pb2.SearchEpisodesRequest(bank_id="b", result=9), "result"),  # type: ignore[arg-type]
        ("SearchEpisodes", episodic_pb2.SearchEpisodesRequest(bank_id="b", tools=["x"] * 101), "tools"),
        ("SegmentSession", episodic_pb2.SegmentSessionRequest(bank_id="b"), "session_id"),
        (
            "RecordAccess",
            episodic_pb2.RecordAccessRequest(
                bank_id="b", records=[episodic_pb2.AccessedRecord(id="x", layer="disk")]
            ),
            "records[0].layer",
        ),
        (
            "RecordAccess",
            episodic_pb2.RecordAccessRequest(
                bank_id="b", records=[episodic_pb2.AccessedRecord(layer="semantic")]
            ),
            "records[0].id",
        ),
        ("GetAccessStats", episodic_pb2.GetAccessStatsRequest(bank_id="b"), "ids"),
    ],
)
async def test_bad_requests_are_rejected_naming_the_field(
    episodic: episodic_pb2_grpc.EpisodicServiceStub, method: str, request_: object, field: str
) -> None:
    await assert_rejected_naming(getattr(episodic, method)(request_, timeout=TIMEOUT), field)


async def test_updating_an_unknown_turn_is_not_found(
    episodic: episodic_pb2_grpc.EpisodicServiceStub, unique_name: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await episodic.UpdateTurn(
            episodic_pb2.UpdateTurnRequest(bank_id=unique_name, turn_id="nope", text="x"), timeout=TIMEOUT
        )
    assert error.value.code() == grpc.StatusCode.NOT_FOUND


async def test_working_memory_drops_a_session_or_a_whole_bank_on_request(
    redis_url: str, unique_name: str
) -> None:
    settings = WorkingSettings(redis_url=redis_url, prefix=f"test:{unique_name}")
    client = aioredis.from_url(redis_url)
    try:
        async with serving(lambda: open_working(settings)) as server, channel_to(server) as channel:
            working = working_pb2_grpc.WorkingMemoryServiceStub(channel)
            for bank in ("b", "other"):
                await working.AppendTurns(
                    working_pb2.AppendTurnsRequest(
                        bank_id=bank,
                        turns=[turn("1", "one"), turn("2", "two", "s2"), turn("3", "three", "s3")],
                    ),
                    timeout=TIMEOUT,
                )

            async def forget(**kwargs: object) -> int:
                reply = await working.ForgetTurns(
                    working_pb2.ForgetTurnsRequest(bank_id="b", **kwargs), timeout=TIMEOUT
                )  # type: ignore[arg-type]
                return reply.removed_count

            async def keys(bank: str) -> set[str]:
                return {k.decode() async for k in client.scan_iter(match=f"test:{unique_name}:{{{bank}}}:*")}

            assert await forget(session_id="s2", turn_ids=["3"]) == 2
            assert not any(key.endswith(":s2") for key in await keys("b"))
            assert await forget(whole_bank=True) == 1
            assert await keys("b") == set()
            assert len(await keys("other")) == 10  # the other bank keeps its 3 sessions' keys and its set
            with pytest.raises(grpc.aio.AioRpcError) as error:
                await forget()
            assert (error.value.details() or "").startswith("turn_ids:")
    finally:
        left = [key async for key in client.scan_iter(match=f"test:{unique_name}:*")]
        if left:
            await client.delete(*left)
        await client.aclose()


async def test_reflection_purges_the_lessons_of_purged_records(
    database_url: str, episodic_addr: str, episodic: episodic_pb2_grpc.EpisodicServiceStub, unique_name: str
) -> None:
    settings = ReflectSettings(database_url=database_url, schema=unique_name, episodic_addr=episodic_addr)
    bank = unique_name
    try:
        async with serving(lambda: open_reflect(settings)) as server, channel_to(server) as channel:
            reflect = reflect_pb2_grpc.ReflectServiceStub(channel)
            ids = []
            for session, action, result in (
                ("s1", "deployed without running migrations", episodic_pb2.OUTCOME_FAILURE),
                ("s2", "retried the card charge at once", episodic_pb2.OUTCOME_FAILURE),
            ):
                written = await episodic.WriteEpisode(
                    episodic_pb2.WriteEpisodeRequest(
                        bank_id=bank,
                        episode=episodic_pb2.Episode(
                            session_id=session,
                            situation=f"task of {session}",
                            action=action,
                            task_type=session,
                            result=result,
                            meta=common_pb2.RecordMeta(
                                source_turn_ids=[f"{session}-t"], time=to_timestamp(T0)
                            ),
                        ),
                    ),
                    timeout=TIMEOUT,
                )
                ids.append(written.episode.id)
                await reflect.Reflect(
                    reflect_pb2.ReflectRequest(bank_id=bank, session_id=session), timeout=TIMEOUT
                )

            async def cited() -> set[str]:
                reply = await reflect.ListLessons(
                    reflect_pb2.ListLessonsRequest(bank_id=bank), timeout=TIMEOUT
                )
                return {e for lesson in reply.lessons for e in lesson.source_episode_ids}

            assert cited_before == set(ids) if (cited_before := await cited()) else False
            purged = await reflect.PurgeLessons(
                reflect_pb2.PurgeLessonsRequest(bank_id=bank, source_ids=[ids[0]], session_id="s1"),
                timeout=TIMEOUT,
            )
            assert purged.deleted_count >= 1 and await cited() == {ids[1]}
            purged = await reflect.PurgeLessons(
                reflect_pb2.PurgeLessonsRequest(bank_id=bank, whole_bank=True), timeout=TIMEOUT
            )
            assert purged.deleted_count >= 1 and await cited() == set()
            assert (
                bank
                not in (await reflect.ListBanks(reflect_pb2.ListBanksRequest(), timeout=TIMEOUT)).bank_ids
            )
            with pytest.raises(grpc.aio.AioRpcError) as error:
                await reflect.PurgeLessons(reflect_pb2.PurgeLessonsRequest(bank_id=bank), timeout=TIMEOUT)
            assert (error.value.details() or "").startswith("source_ids:")
    finally:
        await drop_schemas(database_url, unique_name)
