"""A bank that grows past a mark gets the planner's statistics refreshed, so a search right after a bulk
write does not run on the belief that the bank is empty."""

from __future__ import annotations

import psycopg
import pytest

from hindsight.episodic.keyword import passed_mark
from hindsight.episodic.store import PostgresEpisodicStore
from hindsight.runtime.records import Turn


@pytest.mark.parametrize(
    ("before", "after", "passed"),
    [
        (0, 255, False),
        (0, 256, True),
        (255, 300, True),
        (256, 511, False),
        (500, 1100, True),
        (1024, 2047, False),
    ],
)
def test_a_mark_is_passed_at_256_and_every_doubling(before: int, after: int, passed: bool) -> None:
    assert passed_mark(before, after) is passed


async def _planner_rows(database_url: str, schema: str) -> float:
    """What the planner believes ``keyword_postings`` holds: -1 until the table is first analysed."""
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        row = await (
            await conn.execute(
                "SELECT c.reltuples FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = %s AND c.relname = 'keyword_postings'",
                (schema,),
            )
        ).fetchone()
    assert row is not None
    return float(row[0])


async def test_a_bank_growing_past_256_turns_has_its_keyword_statistics_refreshed(
    episodic_store: PostgresEpisodicStore, episodic_settings, unique_name: str
) -> None:
    url, schema = episodic_settings.database_url, episodic_settings.schema
    turns = [Turn(id=f"t{i}", text=f"turn {i} about gardening and tea", session_id="s") for i in range(200)]
    await episodic_store.record_turns(unique_name, turns, None)
    await episodic_store.keywords.statistics_refreshed()
    assert await _planner_rows(url, schema) == -1  # below the first mark: left to autovacuum

    more = [Turn(id=f"u{i}", text=f"another turn {i} about hiking", session_id="s") for i in range(100)]
    await episodic_store.record_turns(unique_name, more, None)
    await episodic_store.keywords.statistics_refreshed()
    assert await _planner_rows(url, schema) > 1000  # 300 turns of several words each, sampled
