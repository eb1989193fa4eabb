"""Many writers on one bank at once: none deadlocks, and the keyword statistics stay exact.

Writers record (overlapping ids, in different orders), forget, restore, update and purge the same turns
concurrently on a pool of several connections; afterwards the keyword tables must equal what the live
turns' own terms say, counted afresh.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from psycopg import sql

from hindsight.episodic.engine import EpisodicMemory
from hindsight.episodic.models import PurgeScope
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.store import PostgresEpisodicStore
from hindsight.runtime.errors import FailedPrecondition, NotFound
from hindsight.runtime.records import RecordMeta, Turn
from tests.integration.mesh import drop_schemas

T0 = datetime(2026, 2, 1, tzinfo=UTC)
WORDS = "river stone garden candle window ladder pepper violin harbor meadow".split()


async def statistics_mismatches(settings: EpisodicSettings, bank_id: str) -> int:
    """Rows where the keyword tables differ from the live turns' terms counted afresh (0: exact)."""

    def table(name: str) -> sql.Identifier:
        return sql.Identifier(settings.schema, name)

    statement = sql.SQL(
        "WITH live AS (SELECT id, search_terms, term_count, occurred_at FROM {turns} "
        "  WHERE bank_id = %(bank)s AND archived_at IS NULL), "
        "terms AS (SELECT u.lexeme AS term, count(*) AS turns FROM live t "
        "  CROSS JOIN LATERAL unnest(t.search_terms) u GROUP BY u.lexeme), "
        "kept AS (SELECT term, turns FROM {terms} WHERE bank_id = %(bank)s), "
        "posted AS (SELECT t.id AS turn_id, u.lexeme AS term, coalesce(cardinality(u.positions), 1) AS tf, "
        "  t.term_count AS length FROM live t CROSS JOIN LATERAL unnest(t.search_terms) u), "
        "stored AS (SELECT turn_id, term, tf, length FROM {postings} WHERE bank_id = %(bank)s), "
        "bank AS (SELECT count(*) AS turns, coalesce(sum(term_count), 0) AS terms FROM live) "
        "SELECT (SELECT count(*) FROM (TABLE terms EXCEPT TABLE kept) a) "
        "  + (SELECT count(*) FROM (TABLE kept EXCEPT TABLE terms) b) "
        "  + (SELECT count(*) FROM (TABLE posted EXCEPT TABLE stored) c) "
        "  + (SELECT count(*) FROM (TABLE stored EXCEPT TABLE posted) d) "
        "  + (SELECT CASE WHEN (b.turns = 0 AND k.bank_id IS NULL) "
        "    OR (b.turns = k.turns AND b.terms = k.terms) THEN 0 ELSE 1 END "
        "    FROM bank b LEFT JOIN {banks} k ON k.bank_id = %(bank)s)"
    ).format(
        turns=table("turns"),
        terms=table("keyword_terms"),
        postings=table("keyword_postings"),
        banks=table("keyword_banks"),
    )
    async with await psycopg.AsyncConnection.connect(settings.database_url, autocommit=True) as conn:
        row = await (await conn.execute(statement, {"bank": bank_id})).fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
async def memory(database_url: str, unique_name: str) -> AsyncIterator[EpisodicMemory]:
    settings = EpisodicSettings(
        database_url=database_url, schema=unique_name, pool_min_size=2, pool_max_size=8
    )
    store = await PostgresEpisodicStore.open(settings)
    try:
        yield EpisodicMemory(store, settings, clock=lambda: T0 + timedelta(days=30))
    finally:
        await store.close()
        await drop_schemas(database_url, unique_name)


def turn(rng: random.Random, index: int) -> Turn:
    text = " ".join(rng.choices(WORDS, k=rng.randint(1, 12)))
    return Turn(f"t{index:03d}", f"s{index % 7}", text, meta=RecordMeta(time=T0 + timedelta(minutes=index)))


async def test_concurrent_writers_to_one_bank_never_deadlock_and_keep_the_statistics_exact(
    memory: EpisodicMemory,
) -> None:
    rng = random.Random(7)
    turns = [turn(rng, index) for index in range(300)]
    await memory.record_turns("b", turns[:100])

    async def writer(seed: int) -> None:
        pick = random.Random(seed)
        for _ in range(12):
            ids = [f"t{pick.randrange(300):03d}" for _ in range(pick.randint(1, 8))]
            action = pick.choice(("record", "record", "forget", "restore", "update", "purge"))
            if action == "record":  # overlapping ids, each writer in its own order
                with contextlib.suppress(FailedPrecondition):  # a purged id is never stored again
                    await memory.record_turns("b", pick.sample(turns, k=pick.randint(1, 40)))
            elif action == "forget":
                await memory.forget_turns("b", ids, hard=False)
            elif action == "restore":
                await memory.restore_turns("b", ids)
            elif action == "purge":
                await memory.purge("b", PurgeScope(ids=tuple(ids[:2])))
            else:  # the turn may be archived, superseded or purged by another writer meanwhile
                with contextlib.suppress(FailedPrecondition, NotFound):
                    await memory.update_turn("b", ids[0], " ".join(pick.choices(WORDS, k=5)), None)

    await asyncio.gather(*(writer(seed) for seed in range(16)))
    assert await statistics_mismatches(memory.settings, "b") == 0
    await memory.purge("b", PurgeScope(whole_bank=True))
    assert await statistics_mismatches(memory.settings, "b") == 0
