"""Ranked keyword search in episodic memory: BM25 over stemmed terms, on a real PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from psycopg import sql

from hindsight.episodic.engine import EpisodicMemory
from hindsight.episodic.keyword import ANALYZER
from hindsight.episodic.models import TurnFilter
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.store import PostgresEpisodicStore
from hindsight.runtime.records import RecordMeta, TimeRange, Turn
from tests.integration.mesh import drop_schemas

T0 = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def _turn(turn_id: str, text: str, speaker: str = "", minutes: int = 0) -> Turn:
    return Turn(
        id=turn_id,
        session_id="s",
        text=text,
        speaker=speaker,
        meta=RecordMeta(time=T0 + timedelta(minutes=minutes)),
    )


@pytest.fixture
async def settings(database_url: str, unique_name: str) -> AsyncIterator[EpisodicSettings]:
    yield EpisodicSettings(database_url=database_url, schema=unique_name, pool_min_size=1, pool_max_size=2)
    await drop_schemas(database_url, unique_name)


@pytest.fixture
async def memory(settings: EpisodicSettings) -> AsyncIterator[EpisodicMemory]:
    store = await PostgresEpisodicStore.open(settings)
    try:
        yield EpisodicMemory(store)
    finally:
        await store.close()


async def _ids(memory: EpisodicMemory, query: str, bank: str = "b", **window: datetime) -> list[str]:
    hits = await memory.search_turns(bank, query, TurnFilter(time_range=TimeRange(**window)), 10)
    return [hit.turn.id for hit in hits]


async def test_a_rare_word_outweighs_a_common_one(memory: EpisodicMemory) -> None:
    await memory.record_turns(
        "b",
        [
            _turn("common-1", "We talked about the weather today."),
            _turn("common-2", "The weather was nice, we talked for hours."),
            _turn("common-3", "Talked to mum about the weather."),
            _turn("rare", "I bought a theremin at the market."),
        ],
    )
    assert (await _ids(memory, "talked about the theremin"))[0] == "rare"


async def test_a_question_finds_another_tense_or_number_of_the_same_word(memory: EpisodicMemory) -> None:
    await memory.record_turns(
        "b", [_turn("p", "Caroline painted a sunrise over the lake.", "Melanie"), _turn("o", "Nothing here.")]
    )
    assert await _ids(memory, "When does she paint sunrises?") == ["p"]
    assert await _ids(memory, "What did Melanie say?") == ["p"]


async def test_a_shorter_turn_with_the_same_match_ranks_higher(memory: EpisodicMemory) -> None:
    await memory.record_turns(
        "b",
        [
            _turn("long", "Biscuit " + " ".join(f"filler{i}" for i in range(40))),
            _turn("short", "Biscuit is asleep."),
        ],
    )
    assert await _ids(memory, "biscuit") == ["short", "long"]


async def test_the_time_window_filters_hits_without_changing_the_banks_statistics(
    memory: EpisodicMemory,
) -> None:
    await memory.record_turns(
        "b", [_turn("old", "cello lesson", minutes=0), _turn("new", "cello concert", minutes=60)]
    )
    assert await _ids(memory, "cello", start=T0 + timedelta(minutes=30)) == ["new"]
    assert await _ids(memory, "cello", end=T0 + timedelta(minutes=30)) == ["old"]
    assert await _ids(memory, "cello", bank="other") == []


async def test_turns_indexed_by_an_older_analysis_are_reanalysed_on_start(settings: EpisodicSettings) -> None:
    store = await PostgresEpisodicStore.open(settings)
    try:
        await EpisodicMemory(store).record_turns("b", [_turn("t", "She painted sunrises.")])
    finally:
        await store.close()
    table = sql.Identifier(settings.schema, "turns")
    async with await psycopg.AsyncConnection.connect(settings.database_url, autocommit=True) as conn:
        await conn.execute(
            sql.SQL("UPDATE {} SET search_terms = 'painted:2 sunrises:3'::tsvector, analyzer = 1").format(
                table
            )
        )
    store = await PostgresEpisodicStore.open(settings)
    try:
        assert [
            h.turn.id for h in await EpisodicMemory(store).search_turns("b", "paint", TurnFilter(), 5)
        ] == ["t"]
        assert await store.reanalyse() == 0
    finally:
        await store.close()
    async with await psycopg.AsyncConnection.connect(settings.database_url, autocommit=True) as conn:
        row = await (
            await conn.execute(sql.SQL("SELECT analyzer, term_count FROM {}").format(table))
        ).fetchone()
    assert row == (ANALYZER, 2)  # "she" is a stop word
