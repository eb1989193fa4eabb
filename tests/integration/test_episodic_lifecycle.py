"""Episodic memory on a real PostgreSQL, driven through the engine with a clock of the test's own:
migrations up and down, filters, time decay, Chinese keywords, supersede, forget, restore and purge."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from psycopg import sql

from hindsight.episodic.engine import EpisodicMemory
from hindsight.episodic.models import Episode, EpisodeFilter, Outcome, PurgeScope, TurnFilter
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.store import PostgresEpisodicStore
from hindsight.runtime.errors import FailedPrecondition, InvalidArgument, NotFound
from hindsight.runtime.migrations import load_migrations, migrate, migrate_down
from hindsight.runtime.records import RecordMeta, Role, Source, TimeRange, Trust, Turn

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
TABLES = (
    "turns",
    "episodes",
    "banks",
    "sessions",
    "outbox",
    "outbox_delivered",
    "access_stats",
    "keyword_banks",
    "keyword_terms",
    "keyword_postings",
)


@dataclass
class Clock:
    """A clock the test moves."""

    now: datetime = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def memory(
    episodic_store: PostgresEpisodicStore, episodic_settings: EpisodicSettings, clock: Clock
) -> EpisodicMemory:
    return EpisodicMemory(episodic_store, episodic_settings, clock=clock)


def turn(
    turn_id: str,
    text: str,
    minute: float = 0,
    session: str = "s1",
    role: Role = Role.USER,
    speaker: str = "",
    **meta: object,
) -> Turn:
    fields: dict[str, object] = {"time": T0 + timedelta(minutes=minute), "source_turn_ids": (turn_id,)}
    fields.update(meta)
    return Turn(turn_id, session, text, role=role, speaker=speaker, meta=RecordMeta(**fields))  # type: ignore[arg-type]


async def rows(episodic_settings: EpisodicSettings, table: str, bank: str) -> list[dict[str, object]]:
    async with await psycopg.AsyncConnection.connect(episodic_settings.database_url, autocommit=True) as conn:
        cursor = conn.cursor(row_factory=psycopg.rows.dict_row)
        await cursor.execute(
            sql.SQL("SELECT * FROM {} WHERE bank_id = %s").format(
                sql.Identifier(episodic_settings.schema, table)
            ),
            (bank,),
        )
        return list(await cursor.fetchall())


async def ids_found(
    memory: EpisodicMemory, query: str, where: TurnFilter | None = None, bank: str = "b"
) -> list[str]:
    return [hit.turn.id for hit in await memory.search_turns(bank, query, where or TurnFilter(), 20)]


async def test_migrations_roll_back_to_nothing_and_apply_again_from_the_first_version(
    episodic_settings: EpisodicSettings,
) -> None:
    migrations = load_migrations("hindsight.episodic")
    versions = [m.version for m in migrations]
    assert all(m.down for m in migrations), "every migration has a down script"
    async with await psycopg.AsyncConnection.connect(episodic_settings.database_url, autocommit=True) as conn:

        async def tables() -> set[str]:
            cursor = await conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (episodic_settings.schema,),
            )
            return {row[0] for row in await cursor.fetchall()} - {"schema_migrations"}

        assert await migrate(conn, episodic_settings.schema, migrations[:-1]) == versions[:-1]
        before_last = await tables()
        assert await migrate(conn, episodic_settings.schema, migrations) == versions[-1:]
        assert set(TABLES) <= await tables()
        # down one version, then all the way, then up again: each step leaves a working schema
        assert await migrate_down(conn, episodic_settings.schema, migrations, versions[-2]) == [versions[-1]]
        assert await tables() == before_last
        assert (
            await migrate_down(conn, episodic_settings.schema, migrations, versions[-2]) == []
        )  # twice: a no-op
        assert await migrate(conn, episodic_settings.schema, migrations) == [versions[-1]]
        assert await migrate_down(conn, episodic_settings.schema, migrations, 0) == versions[::-1]
        assert await tables() == set()
        assert await migrate(conn, episodic_settings.schema, migrations) == versions
        assert await migrate(conn, episodic_settings.schema, migrations) == []
        assert set(TABLES) <= await tables()
    opened = await PostgresEpisodicStore.open(episodic_settings)  # and the store works on the result
    try:
        assert (
            await EpisodicMemory(opened, episodic_settings).record_turns("b", [turn("t1", "hello")])
        ).recorded == 1
    finally:
        await opened.close()


async def test_a_chinese_turn_is_found_by_a_two_character_word(memory: EpisodicMemory) -> None:
    await memory.record_turns(
        "b",
        [
            turn("zh1", "我们下周去北京开会，记得订酒店。", 0),
            turn("zh2", "京都的红叶很漂亮。", 1),
            turn("zh3", "明天上海会下雨。", 2),
            turn("en1", "We fly to Beijing next week.", 3),
        ],
    )
    # the word's bigram and its characters are terms; the turn holding the word ranks first, one sharing
    # a single character (京都) after it, and one sharing neither is not found
    assert await ids_found(memory, "北京") == ["zh1", "zh2"]
    assert (await ids_found(memory, "去北京的会议订了酒店吗"))[0] == "zh1"
    assert await ids_found(memory, "上海") == ["zh3"]


async def test_newer_turns_outrank_older_equal_matches_by_the_half_life(
    memory: EpisodicMemory, clock: Clock, episodic_settings: EpisodicSettings
) -> None:
    await memory.record_turns(
        "b",
        [
            turn("old", "the invoice total was wrong", 0),
            turn("new", "the invoice total was wrong", 14 * 24 * 60),
        ],
    )
    clock.now = T0 + timedelta(days=14)
    hits = await memory.search_turns("b", "invoice total", TurnFilter(), 5)
    assert [hit.turn.id for hit in hits] == ["new", "old"]
    # two half-lives apart: the decaying half of the older score is a quarter
    floor = episodic_settings.decay_floor
    assert hits[1].score / hits[0].score == pytest.approx(floor + (1 - floor) * 0.25, rel=1e-6)


async def test_searches_and_lists_follow_the_filters(memory: EpisodicMemory) -> None:
    await memory.record_turns(
        "b",
        [
            turn("u1", "deploy the billing service", 0, tags=("ops",), source=Source.USER, trust=Trust.HIGH),
            turn("a1", "deploy started for billing", 1, role=Role.ASSISTANT, source=Source.AGENT),
            turn(
                "x1", "deploy notes from a web page", 2, session="s2", source=Source.EXTERNAL, trust=Trust.LOW
            ),
            turn("u2", "deploy finished", 3, session="s2", tags=("ops", "done"), source=Source.USER),
        ],
    )
    assert set(await ids_found(memory, "deploy")) == {"u1", "a1", "x1", "u2"}
    assert set(await ids_found(memory, "deploy", TurnFilter(session_id="s2"))) == {"x1", "u2"}
    assert set(await ids_found(memory, "deploy", TurnFilter(tags=("ops",)))) == {"u1", "u2"}
    assert await ids_found(memory, "deploy", TurnFilter(tags=("ops", "done"))) == ["u2"]
    assert set(await ids_found(memory, "deploy", TurnFilter(sources=(Source.EXTERNAL, Source.AGENT)))) == {
        "a1",
        "x1",
    }
    assert "x1" not in await ids_found(memory, "deploy", TurnFilter(min_trust=Trust.MEDIUM))
    window = TimeRange(T0 + timedelta(minutes=1), T0 + timedelta(minutes=3))
    assert set(await ids_found(memory, "deploy", TurnFilter(time_range=window))) == {"a1", "x1"}
    # list recent (newest first) and a session's timeline (time order), a page at a time
    recent, token = [], ""
    while True:
        page = await memory.list_turns("b", TurnFilter(), 3, token, newest_first=True)
        recent += [t.id for t in page.items]
        if not (token := page.next_page_token):
            break
    assert recent == ["u2", "x1", "a1", "u1"]
    timeline = await memory.list_turns("b", TurnFilter(session_id="s1"), 10, "")
    assert [t.id for t in timeline.items] == ["u1", "a1"]
    with pytest.raises(InvalidArgument):  # a token of one list is refused by the other
        await memory.list_turns(
            "b", TurnFilter(), 3, (await memory.list_turns("b", TurnFilter(), 1, "")).next_page_token, True
        )


async def test_an_update_supersedes_the_turn_and_keeps_the_old_version_linked(
    memory: EpisodicMemory, episodic_settings: EpisodicSettings
) -> None:
    await memory.record_turns("b", [turn("t1", "my office is in room 101", 0, tags=("office",))])
    updated = await memory.update_turn("b", "t1", "my office moved to room 202", None)
    assert updated.superseded_id == "t1" and updated.turn.id != "t1"
    assert updated.turn.meta.source_turn_ids[0] == "t1" and updated.turn.meta.tags == ("office",)
    assert await ids_found(memory, "office room") == [updated.turn.id]
    assert set(await ids_found(memory, "office room", TurnFilter(include_archived=True))) == {
        "t1",
        updated.turn.id,
    }
    (old,) = [row for row in await rows(episodic_settings, "turns", "b") if row["id"] == "t1"]
    assert old["superseded_by"] == updated.turn.id and old["archived_at"] is not None
    with pytest.raises(FailedPrecondition):  # an archived version is not updated again
        await memory.update_turn("b", "t1", "room 303", None)
    with pytest.raises(NotFound):
        await memory.update_turn("b", "nope", "room 303", None)
    with pytest.raises(NotFound):  # another bank's turn is not found either
        await memory.update_turn("other", updated.turn.id, "room 303", None)


async def test_forget_archives_by_id_or_filter_and_restore_brings_turns_back(memory: EpisodicMemory) -> None:
    await memory.record_turns(
        "b",
        [
            turn("a", "alpha project kickoff", 0),
            turn("b", "alpha budget", 1, session="s2"),
            turn("c", "alpha risks", 2),
        ],
    )
    assert await memory.forget_turns("b", ["a"], hard=False) == 1
    assert await memory.forget_turns("b", [], hard=False, where=TurnFilter(session_id="s2")) == 1
    assert await memory.forget_turns("b", ["a"], hard=False) == 0  # already archived
    assert await ids_found(memory, "alpha") == ["c"]
    with pytest.raises(InvalidArgument, match="filter"):  # a filter that matches everything is refused
        await memory.forget_turns("b", [], hard=False, where=TurnFilter())
    assert await memory.restore_turns("b", ["a", "b", "c"]) == 2
    assert set(await ids_found(memory, "alpha")) == {"a", "b", "c"}


async def test_purge_by_id_session_and_bank_leaves_no_row_behind(
    memory: EpisodicMemory, episodic_settings: EpisodicSettings
) -> None:
    await memory.record_turns(
        "b",
        [
            turn("p1", "secret plan one", 0),
            turn("p2", "secret plan two", 1),
            turn("q1", "other talk", 2, session="s2"),
        ],
    )
    await memory.record_turns("keep", [turn("k1", "secret plan elsewhere", 0)])
    episode = await memory.write_episode(
        "b",
        Episode(
            "", "s1", situation="a secret plan", action="wrote it", meta=RecordMeta(source_turn_ids=("p1",))
        ),
    )
    memory.record_access("b", [("p1", "episodic"), (episode.id, "semantic"), ("q1", "episodic")])
    await memory.access.flush()
    # by id: the turn and the episode made from it go, with its statistics
    result = await memory.purge("b", PurgeScope(ids=("p1",)))
    assert (result.turns, result.episodes) == (1, 1)
    assert {row["id"] for row in await rows(episodic_settings, "turns", "b")} == {"p2", "q1"}
    assert await rows(episodic_settings, "episodes", "b") == []
    assert {row["id"] for row in await rows(episodic_settings, "access_stats", "b")} == {"q1"}
    # by session
    assert (await memory.purge("b", PurgeScope(session_id="s1"))).turns == 1
    assert {row["session_id"] for row in await rows(episodic_settings, "sessions", "b")} == {"s2"}
    # the whole bank: nothing of it in any table; the other bank is untouched
    assert (await memory.purge("b", PurgeScope(whole_bank=True))).turns == 1
    for table in TABLES:
        assert await rows(episodic_settings, table, "b") == [], table
    assert await ids_found(memory, "secret plan", bank="keep") == ["k1"]


async def test_episodes_are_searched_after_a_task_type_and_tool_prefilter_with_decay(
    memory: EpisodicMemory, clock: Clock
) -> None:
    def episode(
        eid: str, situation: str, days: int, task: str, tools: tuple[str, ...], result: Outcome
    ) -> Episode:
        meta = RecordMeta(time=T0 + timedelta(days=days), tags=("prod",) if task == "deploy" else ())
        return Episode(
            eid,
            "s",
            situation=situation,
            action="acted",
            task_type=task,
            tools=tools,
            result=result,
            meta=meta,
        )

    for item in (
        episode("e1", "deploy of the api failed on migrations", 0, "deploy", ("kubectl",), Outcome.FAILURE),
        episode("e2", "deploy of the api went fine", 10, "deploy", ("helm",), Outcome.SUCCESS),
        episode("e3", "api billing bug fixed", 11, "debug", ("kubectl",), Outcome.SUCCESS),
        episode("e4", "部署接口失败，迁移没有执行", 12, "deploy", ("kubectl",), Outcome.FAILURE),
    ):
        await memory.write_episode("b", item)
    clock.now = T0 + timedelta(days=12)

    async def found(query: str, **where: object) -> list[str]:
        return [
            hit.episode.id for hit in await memory.search_episodes("b", query, EpisodeFilter(**where), 10)
        ]  # type: ignore[arg-type]

    assert (await found("api deploy"))[:2] == ["e2", "e1"]  # both words, the newer first; then one word
    assert await found("api", task_type="deploy", tools=("kubectl",)) == ["e1"]
    assert await found("api", tools=("kubectl", "helm")) == ["e3", "e2", "e1"]
    assert await found("", result=Outcome.SUCCESS) == ["e3", "e2"]  # no query: newest first
    assert await found("", tags=("prod",), time_range=TimeRange(T0, T0 + timedelta(days=5))) == ["e1"]
    assert await found("迁移") == ["e4"]
    assert await found("the") == []  # stop words only


async def test_access_is_counted_in_batches_and_freshness_rises_and_decays_per_day(
    memory: EpisodicMemory,
    episodic_store: PostgresEpisodicStore,
    clock: Clock,
    episodic_settings: EpisodicSettings,
) -> None:
    assert memory.record_access("b", [("x", "semantic"), ("x", "semantic"), ("y", "reflect")]) == 3
    assert (
        await episodic_store.access_stats("b", ["x", "y"]) == []
    )  # queued, not yet written: off the request path
    stats = {s.id: s for s in await memory.access_stats("b", ["x", "y", "z"])}
    assert set(stats) == {"x", "y"}
    gain, per_day = episodic_settings.freshness_gain, episodic_settings.freshness_decay_per_day
    assert (stats["x"].hit_count, stats["x"].layer, stats["x"].last_hit) == (2, "semantic", T0)
    assert stats["x"].freshness == pytest.approx(2 * gain) and stats["y"].freshness == pytest.approx(gain)
    clock.now = T0 + timedelta(days=5)
    later = {s.id: s for s in await memory.access_stats("b", ["x", "y"])}
    assert later["x"].freshness == pytest.approx(2 * gain - 5 * per_day)
    assert later["y"].stale and not later["x"].stale
    memory.record_access("b", [("y", "reflect")] * 5)
    again = {s.id: s for s in await memory.access_stats("b", ["y"])}
    assert again["y"].hit_count == 6 and again["y"].last_hit == clock.now
    assert again["y"].freshness == pytest.approx(min(1.0, gain - 5 * per_day + 5 * gain)) and again["y"].hot


async def test_recording_the_same_ids_twice_keeps_one_record_and_sessions_span_their_turns(
    memory: EpisodicMemory, episodic_settings: EpisodicSettings
) -> None:
    first = await memory.record_turns("b", [turn("t1", "one", 0), turn("t2", "two", 5)])
    again = await memory.record_turns("b", [turn("t1", "one changed", 0), turn("t3", "three", 9)])
    assert (first.recorded, first.duplicates, again.recorded, again.duplicates) == (2, 0, 1, 1)
    assert [row["text"] for row in await rows(episodic_settings, "turns", "b") if row["id"] == "t1"] == [
        "one"
    ]
    (session,) = await rows(episodic_settings, "sessions", "b")
    assert (session["first_at"], session["last_at"]) == (T0, T0 + timedelta(minutes=9))
    assert not first.indexed  # no semantic layer configured: nothing was indexed by meaning


async def test_restoring_a_superseded_turn_makes_it_live_again(memory: EpisodicMemory) -> None:
    await memory.record_turns("b", [turn("t1", "colour is blue", 0)])
    updated = await memory.update_turn("b", "t1", "", replace(RecordMeta(), tags=("colour",), time=T0))
    assert updated.turn.text == "colour is blue" and updated.turn.meta.tags == ("colour",)
    assert await memory.restore_turns("b", ["t1"]) == 1
    assert set(await ids_found(memory, "colour")) == {"t1", updated.turn.id}
