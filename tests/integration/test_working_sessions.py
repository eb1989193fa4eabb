"""Session budgets, compression, expiry, close and restarts of working memory, on real Redis."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import grpc
import pytest
import redis.asyncio as aioredis

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.contracts.working.v1 import working_pb2
from hindsight.contracts.working.v1.working_pb2_grpc import WorkingMemoryServiceStub as Stub
from hindsight.episodic.service import open_service as open_episodic
from hindsight.episodic.settings import EpisodicSettings
from hindsight.runtime.embedded import EmbeddedServer, start_valkey
from hindsight.runtime.records import Turn
from hindsight.runtime.testing import channel_to, serving
from hindsight.runtime.token_counts import ScriptEstimate
from hindsight.working.engine import WorkingMemory
from hindsight.working.service import open_service
from hindsight.working.settings import WorkingSettings
from hindsight.working.store import Keys, RedisWindowStore
from hindsight.working.summarise import names, numbers

FACTS = [
    "Alice decided the launch moves to March 14 because the Berlin team needs 2 more weeks.",
    "Please keep the total budget under 12,500 euros and never email Bob about pricing.",
    "The venue in Kreuzberg holds 80 guests; the deposit of 1,200 euros is due on Friday.",
    "Still need to confirm the caterer, Mario, and the 3 speakers from Lisbon.",
    "Carol will ship version 4.2 after the security review by Dana.",
    "Remember that the Oslo office works 9 to 5 and the Tokyo team answers after 18:00.",
]


def turn(turn_id: str, text: str, session: str = "s1", role: int = common_pb2.ROLE_USER) -> common_pb2.Turn:
    return common_pb2.Turn(id=turn_id, session_id=session, text=text, role=role)


@contextlib.asynccontextmanager
async def cleaned(redis_url: str, prefix: str) -> AsyncIterator[None]:
    try:
        yield
    finally:
        client = aioredis.from_url(redis_url)
        try:
            keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
            if keys:
                await client.delete(*keys)
        finally:
            await client.aclose()


@contextlib.asynccontextmanager
async def working(settings: WorkingSettings) -> AsyncIterator[Stub]:
    async with (
        cleaned(settings.redis_url, settings.prefix),
        serving(lambda: open_service(settings)) as server,
        channel_to(server) as channel,
    ):
        yield Stub(channel)


def small_context(redis_url: str, prefix: str, **overrides: object) -> WorkingSettings:
    """A 2,000-token context: compression at 1,000 session tokens, down to 750."""
    values: dict[str, object] = {
        "redis_url": redis_url,
        "prefix": f"test:{prefix}",
        "ttl_seconds": 600,
        "context_tokens": 2000,
        "compress_at": 0.5,
        "compress_to": 0.75,
        "keep_recent": 4,
    }
    values.update(overrides)
    return WorkingSettings(**values)  # type: ignore[arg-type]


async def context(stub: Stub, session: str, budget: int) -> working_pb2.GetContextResponse:
    return await stub.GetContext(
        working_pb2.GetContextRequest(bank_id="bank", session_id=session, token_budget=budget), timeout=10
    )


async def test_each_turn_is_stored_with_tokens_importance_and_provenance(
    redis_url: str, unique_name: str
) -> None:
    async with working(small_context(redis_url, unique_name)) as stub:
        await stub.AppendTurns(
            working_pb2.AppendTurnsRequest(
                bank_id="bank",
                turns=[
                    turn("a", "Deploy the build to staging before 5pm."),
                    turn("b", "Thanks!"),
                    turn("c", '{"rows": 42}', role=common_pb2.ROLE_TOOL),
                    turn("d", "The migration finished.", role=common_pb2.ROLE_ASSISTANT),
                ],
            )
        )
        reply = await context(stub, "s1", 1000)
        entries = {entry.turn.id: entry for entry in reply.turns}
        assert [round(entries[i].turn.meta.importance, 2) for i in "abcd"] == [0.9, 0.2, 0.8, 0.6]
        assert entries["a"].token_count == ScriptEstimate().count("Deploy the build to staging before 5pm.")
        assert entries["a"].kind == working_pb2.ENTRY_KIND_TURN
        assert list(entries["a"].turn.meta.source_turn_ids) == ["a"]
        assert abs(entries["a"].timestamp_ms - time.time() * 1000) < 60_000
        assert reply.session_token_count == sum(entry.token_count for entry in reply.turns)


async def test_the_window_respects_the_token_budget_exactly(redis_url: str, unique_name: str) -> None:
    async with working(small_context(redis_url, unique_name, context_tokens=100_000)) as stub:
        texts = [f"message {i} " + "word " * (i % 7) for i in range(40)]
        await stub.AppendTurns(
            working_pb2.AppendTurnsRequest(
                bank_id="bank", turns=[turn(f"t{i}", t) for i, t in enumerate(texts)]
            )
        )
        sizes = [ScriptEstimate().count(text) for text in texts]
        for budget in (1, 5, 17, 50, 99, 200, 10_000):
            reply = await context(stub, "s1", budget)
            used = sum(entry.token_count for entry in reply.turns)
            assert reply.token_count == used <= budget
            kept = len(reply.turns)
            assert [entry.turn.id for entry in reply.turns] == [f"t{i}" for i in range(40 - kept, 40)]
            if kept < 40:  # exactly: the next older turn would have broken the budget
                assert used + sizes[39 - kept] > budget
            assert reply.omitted_count == 40 - kept and reply.token_budget == budget


async def test_compression_triggers_at_the_threshold_and_brings_the_session_below_it(
    redis_url: str, unique_name: str
) -> None:
    settings = small_context(redis_url, unique_name)
    async with working(settings) as stub:
        appended = 0
        compressed = 0
        tokens_seen: list[int] = []
        while not compressed:
            text = FACTS[appended % len(FACTS)] + f" Item {appended}."
            reply = await stub.AppendTurns(
                working_pb2.AppendTurnsRequest(bank_id="bank", turns=[turn(f"t{appended}", text)])
            )
            appended += 1
            compressed = reply.compressed_group_count
            if not compressed:
                tokens_seen.append((await context(stub, "s1", 100_000)).session_token_count)
                assert tokens_seen[-1] <= settings.threshold_tokens  # nothing compressed below the threshold
            assert appended < 500
        state = await context(stub, "s1", 100_000)
        assert state.session_token_count <= settings.target_tokens < settings.threshold_tokens
        assert state.summaries and all(s.kind == working_pb2.ENTRY_KIND_SUMMARY for s in state.summaries)
        assert len(state.turns) >= settings.keep_recent
        # provenance: every appended turn is either still a turn or named by exactly one summary
        covered = [i for s in state.summaries for i in s.turn.meta.source_turn_ids]
        covered += [entry.turn.id for entry in state.turns]
        assert sorted(covered) == sorted(f"t{i}" for i in range(appended))
        for summary in state.summaries:
            assert 5 <= len(summary.turn.meta.source_turn_ids) <= 8


async def test_summaries_keep_every_number_and_name_of_their_turns(redis_url: str, unique_name: str) -> None:
    async with working(small_context(redis_url, unique_name, context_tokens=100_000)) as stub:
        turns = [turn(f"t{i}", text) for i, text in enumerate(FACTS * 2)]
        await stub.AppendTurns(working_pb2.AppendTurnsRequest(bank_id="bank", turns=turns))
        reply = await stub.Compress(working_pb2.CompressRequest(bank_id="bank", session_id="s1"), timeout=10)
        assert reply.group_count == 1 and reply.summarised_turn_count == 8  # 12 turns, 4 kept: one group of 8
        assert reply.tokens_after < reply.tokens_before and reply.summariser == "extractive"
        state = await context(stub, "s1", 100_000)
        (summary,) = state.summaries
        text = summary.turn.text
        sources = {t.id: t.text for t in turns}
        replaced = [sources[i] for i in summary.turn.meta.source_turn_ids]
        assert len(text) <= sum(len(t) for t in replaced)
        for source in replaced:
            for item in numbers(source) + names(source):
                assert item in text, item


async def test_a_session_expires_when_its_ttl_runs_out(redis_url: str, unique_name: str) -> None:
    settings = small_context(redis_url, unique_name, ttl_seconds=30)
    keys = Keys(settings.prefix)
    client = aioredis.from_url(redis_url)
    try:
        async with working(settings) as stub:
            await stub.AppendTurns(
                working_pb2.AppendTurnsRequest(bank_id="bank", turns=[turn("a", "hello there")])
            )
            session_keys = [keys.turns("bank", "s1"), keys.ids("bank", "s1"), keys.meta("bank", "s1")]
            for key in session_keys:
                assert 0 < await client.ttl(key) <= 30
            # Let the TTL run out now: an expiry time in the past is what Redis sees when the TTL has passed.
            for key in session_keys:
                await client.pexpireat(key, 1)
            assert not (await context(stub, "s1", 1000)).turns
            reply = await stub.SearchRecent(working_pb2.SearchRecentRequest(bank_id="bank", query="hello"))
            assert not reply.hits
            # a new turn starts a fresh session with exact counters
            await stub.AppendTurns(working_pb2.AppendTurnsRequest(bank_id="bank", turns=[turn("b", "again")]))
            assert (await context(stub, "s1", 1000)).session_token_count == 1
    finally:
        await client.aclose()


async def test_a_session_whose_list_was_evicted_starts_over_with_exact_counters(
    redis_url: str, unique_name: str
) -> None:
    settings = small_context(redis_url, unique_name)
    client = aioredis.from_url(redis_url)
    try:
        async with working(settings) as stub:
            await stub.AppendTurns(
                working_pb2.AppendTurnsRequest(
                    bank_id="bank", turns=[turn(f"t{i}", "one two three") for i in range(5)]
                )
            )
            assert (await context(stub, "s1", 1000)).session_token_count == 15
            await client.delete(Keys(settings.prefix).turns("bank", "s1"))  # what volatile-lru may do
            await stub.AppendTurns(
                working_pb2.AppendTurnsRequest(bank_id="bank", turns=[turn("n", "four five")])
            )
            state = await context(stub, "s1", 1000)
            assert [entry.turn.id for entry in state.turns] == ["n"]
            assert state.session_token_count == 2
            await client.delete(Keys(settings.prefix).meta("bank", "s1"))  # the counters alone evicted
            await stub.AppendTurns(working_pb2.AppendTurnsRequest(bank_id="bank", turns=[turn("m", "six")]))
            closed = await stub.CloseSession(working_pb2.CloseSessionRequest(bank_id="bank", session_id="s1"))
            assert (closed.turn_count, closed.token_count) == (2, 3)  # recounted from the list
    finally:
        await client.aclose()


async def test_closing_a_session_drops_its_state_and_reports_what_it_held(
    redis_url: str, unique_name: str
) -> None:
    settings = small_context(redis_url, unique_name)
    async with working(settings) as stub:
        await stub.AppendTurns(
            working_pb2.AppendTurnsRequest(
                bank_id="bank",
                turns=[turn(f"t{i}", FACTS[i % 6]) for i in range(10)] + [turn("other", "keep me", "s2")],
            )
        )
        await stub.Compress(working_pb2.CompressRequest(bank_id="bank", session_id="s1"))
        closed = await stub.CloseSession(working_pb2.CloseSessionRequest(bank_id="bank", session_id="s1"))
        assert (
            closed.closed and closed.summary_count == 1 and closed.turn_count == 4 and closed.token_count > 0
        )
        assert not (await context(stub, "s1", 1000)).turns
        hits = await stub.SearchRecent(working_pb2.SearchRecentRequest(bank_id="bank", query="keep budget"))
        assert [hit.turn.id for hit in hits.hits] == ["other"]
        again = await stub.CloseSession(working_pb2.CloseSessionRequest(bank_id="bank", session_id="s1"))
        assert not again.closed
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await stub.CloseSession(working_pb2.CloseSessionRequest(bank_id="bank"))
        assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_search_sees_appends_compressions_and_forgets_made_after_it_cached_a_session(
    redis_url: str, unique_name: str
) -> None:
    settings = small_context(redis_url, unique_name, context_tokens=100_000, keep_recent=0)
    async with working(settings) as stub:

        async def hits(query: str) -> list[str]:
            reply = await stub.SearchRecent(
                working_pb2.SearchRecentRequest(bank_id="bank", query=query, limit=20)
            )
            return [hit.turn.id for hit in reply.hits]

        await stub.AppendTurns(
            working_pb2.AppendTurnsRequest(
                bank_id="bank", turns=[turn(f"t{i}", f"deploy number {i}") for i in range(5)]
            )
        )
        assert sorted(await hits("deploy")) == [f"t{i}" for i in range(5)]
        await stub.AppendTurns(
            working_pb2.AppendTurnsRequest(bank_id="bank", turns=[turn("t5", "deploy again")])
        )
        assert "t5" in await hits("deploy")
        await stub.Compress(working_pb2.CompressRequest(bank_id="bank", session_id="s1"))
        found = await hits("deploy")
        assert len(found) == 1 and found[0].startswith("summary:")
        await stub.ForgetTurns(working_pb2.ForgetTurnsRequest(bank_id="bank", turn_ids=["t2"]))
        assert await hits("deploy") == []  # the summary held the forgotten turn: it goes with it


@pytest.fixture
def own_valkey(tmp_path: Path) -> Iterator[EmbeddedServer]:
    """A Valkey of this test's own (append-only file, fsync every second), so it can be restarted."""
    server = start_valkey(tmp_path / "valkey")
    try:
        yield server
    finally:
        server.stop()


async def test_a_redis_restart_keeps_saved_sessions_and_never_touches_episodic_memory(
    own_valkey: EmbeddedServer, database_url: str, unique_name: str, tmp_path: Path
) -> None:
    settings = small_context(own_valkey.url, unique_name)
    episodic = EpisodicSettings(database_url=database_url, schema=f"ep_{unique_name}")
    turns = [turn(f"t{i}", FACTS[i % 6]) for i in range(12)]
    async with (
        serving(lambda: open_service(settings)) as work_server,
        channel_to(work_server) as work_channel,
        serving(lambda: open_episodic(episodic)) as episodic_server,
        channel_to(episodic_server) as episodic_channel,
    ):
        stub = Stub(work_channel)
        record = episodic_pb2_grpc.EpisodicServiceStub(episodic_channel)
        # the edge's retain: episodic memory first (durable), then working memory
        await record.RecordTurns(episodic_pb2.RecordTurnsRequest(bank_id="bank", turns=turns[:8]), timeout=10)
        await stub.AppendTurns(working_pb2.AppendTurnsRequest(bank_id="bank", turns=turns[:8]), timeout=10)
        before = await context(stub, "s1", 100_000)

        # a clean restart (SIGTERM: Valkey writes its append-only file out) keeps every live session
        port = urlsplit(own_valkey.url).port
        assert port is not None
        own_valkey.stop()
        with pytest.raises(grpc.aio.AioRpcError) as down:
            await context(stub, "s1", 100_000)
        assert down.value.code() == grpc.StatusCode.UNAVAILABLE
        restarted = start_valkey(own_valkey.data_dir, port=port)
        try:
            after = await context(stub, "s1", 100_000)
            assert after == before
            # a crash (SIGKILL) loses at most the writes of the last second, never more, never corrupt
            await record.RecordTurns(
                episodic_pb2.RecordTurnsRequest(bank_id="bank", turns=turns[8:]), timeout=10
            )
            await stub.AppendTurns(
                working_pb2.AppendTurnsRequest(bank_id="bank", turns=turns[8:]), timeout=10
            )
            restarted.process.kill()
            restarted.process.wait()
            restarted.stop()
            restarted = start_valkey(own_valkey.data_dir, port=port)
            survived = [entry.turn.id for entry in (await context(stub, "s1", 100_000)).turns]
            assert survived == [f"t{i}" for i in range(len(survived))] and len(survived) >= 8
            # and the working layer goes on: a retried append restores what the crash lost
            await stub.AppendTurns(working_pb2.AppendTurnsRequest(bank_id="bank", turns=turns), timeout=10)
            final = await context(stub, "s1", 100_000)
            assert [entry.turn.id for entry in final.turns] == [f"t{i}" for i in range(12)]
            assert final.session_token_count == sum(entry.token_count for entry in final.turns)
        finally:
            restarted.stop()
        # episodic memory never depended on Redis: every retained turn is there
        stored = await record.ListTurns(
            episodic_pb2.ListTurnsRequest(bank_id="bank", page_size=100), timeout=10
        )
        assert sorted(t.id for t in stored.turns) == sorted(t.id for t in turns)


async def test_compression_through_the_engine_uses_the_store_atomically(
    redis_url: str, unique_name: str
) -> None:
    """Two compressions of one session racing each other summarise each turn once."""
    settings = small_context(redis_url, unique_name, context_tokens=100_000, keep_recent=0)
    store = RedisWindowStore.from_settings(settings)
    other_store = RedisWindowStore.from_settings(settings)
    async with cleaned(redis_url, settings.prefix):
        try:
            first = WorkingMemory(store, settings)
            second = WorkingMemory(other_store, settings)  # another replica: its own process lock
            await first.append(
                "bank", [Turn(id=f"t{i}", session_id="s", text=FACTS[i % 6]) for i in range(24)]
            )
            results = await asyncio.gather(
                first.compress("bank", "s", None), second.compress("bank", "s", None)
            )
            assert sum(result.summarised_turns for result in results) == 24
            headers = await store.headers("bank", "s")
            sources = [i for item in headers for i in item.decode().source_turn_ids]
            assert sorted(sources) == sorted(f"t{i}" for i in range(24))
            stats = await store.stats("bank", "s")
            assert stats.token_count == sum(item.token_count for item in headers)
            assert stats.turn_count == 0 and stats.summary_count == len(headers)
        finally:
            await store.close()
            await other_store.close()
