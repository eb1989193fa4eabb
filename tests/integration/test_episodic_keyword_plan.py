"""Keyword search on a 100k-turn bank reads only what it needs, before the planner has statistics and after.

The bank is written straight into ``turns`` with ``generate_series`` at schema version 3 (before the
keyword tables), so opening the store runs the migration that carries it over. Then the statements the
store issues for a search are run under ``EXPLAIN (ANALYZE, FORMAT JSON)``: no sequential scan of the
bank's turns or postings, and the rows read stay a small, fixed share of the bank whatever its size.
Autovacuum is off for these tables, so the first pass sees what a search sees right after a bulk write.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.rows import dict_row

from hindsight.episodic.engine import EpisodicMemory
from hindsight.episodic.keyword import FIRST_BUDGET, MAX_BUDGET, WINDOW_MAX_TURNS, KeywordQuery
from hindsight.episodic.models import TurnFilter
from hindsight.episodic.rows import Decay
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.store import PostgresEpisodicStore
from hindsight.runtime.migrations import load_migrations, migrate
from hindsight.runtime.records import TimeRange
from tests.integration.mesh import drop_schemas

TURNS = 100_000
BANK = "big"
T0 = datetime(2024, 1, 1, tzinfo=UTC)
NOW = T0 + timedelta(minutes=TURNS + 60)
LIMIT = 30
KEYWORD_TABLES = ("keyword_banks", "keyword_terms", "keyword_postings")
BANK_TABLES = {"turns", "keyword_postings", "keyword_terms"}
# Each turn: 4 to 23 words drawn log-uniformly from 20,000 ("w1" is in 59% of the turns, most words in a
# handful); every 50th turn archived, every 10th tagged; 40 turns a session, a minute apart.
BUILD = """
INSERT INTO {turns} (bank_id, id, session_id, role, speaker, text, source, trust, occurred_at, tags,
    schema_version, search_terms, term_count, analyzer, archived_at)
SELECT %(bank)s, 't' || i, 's' || (i / 40), 'user', '', txt, 'user', 2, %(t0)s + i * interval '1 minute',
    CASE WHEN mod(i, 10) = 0 THEN '{{x}}'::text[] ELSE '{{}}' END, 1, to_tsvector('simple', txt), n, 2,
    CASE WHEN mod(i, 50) = 0 THEN %(t0)s END
FROM (SELECT i, n, (SELECT string_agg('w' || floor(exp(random() * ln(20000)))::int, ' ')
                    FROM generate_series(1, n) WHERE i >= 0) AS txt
      FROM (SELECT i, 4 + floor(random() * 20)::int AS n FROM generate_series(1, %(count)s) i) g) x
"""


@dataclass(frozen=True)
class Big:
    """The big bank's store and the terms it is searched for."""

    store: PostgresEpisodicStore
    settings: EpisodicSettings
    common: str
    rare: str


@pytest.fixture(scope="module")
async def big(database_url: str) -> AsyncIterator[Big]:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    settings = EpisodicSettings(database_url=database_url, schema=schema, pool_min_size=1, pool_max_size=2)
    try:
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
            assert await migrate(conn, schema, load_migrations("hindsight.episodic")[:3]) == [1, 2, 3]
            turns = sql.Identifier(schema, "turns")
            await conn.execute(sql.SQL("ALTER TABLE {} SET (autovacuum_enabled = off)").format(turns))
            async with conn.transaction():
                await conn.execute("SELECT setseed(0.42)")  # the same bank every run
                await conn.execute(
                    sql.SQL(BUILD).format(turns=turns), {"bank": BANK, "t0": T0, "count": TURNS}
                )
                await conn.execute(
                    sql.SQL("INSERT INTO {} (bank_id) VALUES (%s)").format(sql.Identifier(schema, "banks")),
                    (BANK,),
                )
        store = await PostgresEpisodicStore.open(settings)  # migration 0004 carries the bank over
        try:
            async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
                for name in KEYWORD_TABLES:
                    await conn.execute(
                        sql.SQL("ALTER TABLE {} SET (autovacuum_enabled = off)").format(
                            sql.Identifier(schema, name)
                        )
                    )
                row = await (
                    await conn.execute(
                        sql.SQL(
                            "SELECT term FROM {} WHERE bank_id = %s AND turns BETWEEN 3 AND 10 ORDER BY term "
                            "LIMIT 1"
                        ).format(sql.Identifier(schema, "keyword_terms")),
                        (BANK,),
                    )
                ).fetchone()
            assert row is not None
            yield Big(store, settings, "w1", row[0])
        finally:
            await store.close()
    finally:
        await drop_schemas(database_url, schema)


async def test_the_migration_carries_an_existing_bank_over_exactly(big: Big) -> None:
    schema = big.settings.schema

    def table(name: str) -> sql.Identifier:
        return sql.Identifier(schema, name)

    async with await psycopg.AsyncConnection.connect(big.settings.database_url, autocommit=True) as conn:
        counted = await (
            await conn.execute(
                sql.SQL(
                    "SELECT count(*), sum(term_count), max(occurred_at) FROM {} "
                    "WHERE bank_id = %s AND archived_at IS NULL"
                ).format(table("turns")),
                (BANK,),
            )
        ).fetchone()
        kept = await (
            await conn.execute(
                sql.SQL("SELECT turns, terms, newest FROM {} WHERE bank_id = %s").format(
                    table("keyword_banks")
                ),
                (BANK,),
            )
        ).fetchone()
        assert counted == kept and counted is not None and counted[0] == TURNS - TURNS // 50
        differ = await (
            await conn.execute(
                sql.SQL(
                    "WITH truth AS (SELECT u.lexeme AS term, count(*) AS turns, "
                    "  max(cardinality(u.positions)) AS max_tf "
                    "  FROM {turns} t CROSS JOIN LATERAL unnest(t.search_terms) u "
                    "  WHERE t.bank_id = %(bank)s AND t.archived_at IS NULL GROUP BY u.lexeme), "
                    "kept AS (SELECT term, turns, max_tf FROM {terms} WHERE bank_id = %(bank)s) "
                    "SELECT (SELECT count(*) FROM (TABLE truth EXCEPT TABLE kept) a) "
                    "  + (SELECT count(*) FROM (TABLE kept EXCEPT TABLE truth) b), "
                    "  (SELECT sum(turns) FROM truth), "
                    "  (SELECT count(*) FROM {postings} WHERE bank_id = %(bank)s)"
                ).format(
                    turns=table("turns"), terms=table("keyword_terms"), postings=table("keyword_postings")
                ),
                {"bank": BANK},
            )
        ).fetchone()
    assert differ is not None and differ[0] == 0 and differ[1] == differ[2]


def plan_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from plan_nodes(child)


@dataclass(frozen=True)
class Reads:
    """What one statement read, from its EXPLAIN ANALYZE."""

    seq_scans: list[str]
    rows: Counter[str]


async def explain(big: Big, query: KeywordQuery) -> Reads:
    """EXPLAIN ANALYZE of the statement, run as the store runs it (under its planner settings)."""
    explained = KeywordQuery(
        sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) {}").format(query.statement), query.params, query.planner
    )
    async with await psycopg.AsyncConnection.connect(
        big.settings.database_url, autocommit=True, row_factory=dict_row
    ) as conn:
        (row,) = await explained.run(conn)
    seq_scans: list[str] = []
    rows: Counter[str] = Counter()
    for node in plan_nodes(row["QUERY PLAN"][0]["Plan"]):
        relation = node.get("Relation Name")
        if relation is None:
            continue
        if node["Node Type"] == "Seq Scan" and relation in BANK_TABLES:
            seq_scans.append(relation)
        rows[relation] += int(node["Actual Rows"]) * int(node["Actual Loops"])
    return Reads(seq_scans, rows)


def searches(big: Big) -> list[tuple[str, KeywordQuery, int, int]]:
    """(name, statement, most turns rows, most postings rows): each statement a search of the big bank
    issues, from the first round to the last, with what it may read at most."""
    keywords = big.store.keywords
    decay = Decay(NOW, 7.0, 0.5)
    queries = {
        "common": Counter([big.common]),
        "rare": Counter([big.rare]),
        "common and rare": Counter([big.common, "w2", big.rare]),
        "five common": Counter(["w1", "w2", "w3", "w4", "w5"]),
    }
    # read: up to four tf streams per term of the budget, the next posting below each, and the
    # postings of the turns kept for exact scores (about a dozen each)
    most_postings = 4 * MAX_BUDGET * 16
    found: list[tuple[str, KeywordQuery, int, int]] = []
    for name, weights in queries.items():
        for budget in (FIRST_BUDGET, MAX_BUDGET):
            query = keywords.ranked_query(BANK, weights, TurnFilter(), decay, LIMIT, budget)
            found.append((f"{name}, budget {budget}", query, LIMIT, most_postings))
    tagged = TurnFilter(tags=("x",))
    query = keywords.ranked_query(BANK, queries["five common"], tagged, decay, LIMIT, MAX_BUDGET)
    found.append(("five common, tagged", query, 4 * MAX_BUDGET + LIMIT, most_postings))
    session = TurnFilter(session_id="s1234")
    found.append(
        (
            "session window",
            keywords.window_query(BANK, queries["five common"], session, decay, LIMIT),
            3 * (WINDOW_MAX_TURNS + 1),
            0,
        )
    )
    late = TurnFilter(time_range=TimeRange(start=T0 + timedelta(minutes=TURNS // 2)))
    found.append(
        (
            "half the bank's time (overflows the window)",
            keywords.window_query(BANK, queries["common"], late, decay, LIMIT),
            WINDOW_MAX_TURNS + 1,
            0,
        )
    )
    return found


async def assert_reads_bounded(big: Big) -> None:
    for name, query, most_turns, most_postings in searches(big):
        reads = await explain(big, query)
        assert reads.seq_scans == [], name
        assert reads.rows["turns"] <= most_turns, (name, reads.rows)
        assert reads.rows["keyword_postings"] <= most_postings, (name, reads.rows)


async def test_no_search_plan_scans_the_bank_right_after_a_bulk_write_or_after_analyze(big: Big) -> None:
    await assert_reads_bounded(big)  # the tables have never been analysed
    async with await psycopg.AsyncConnection.connect(big.settings.database_url, autocommit=True) as conn:
        for name in ("turns", *KEYWORD_TABLES):
            await conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(big.settings.schema, name)))
    await assert_reads_bounded(big)


async def test_a_search_of_the_big_bank_finds_the_rare_words_turns_first(big: Big) -> None:
    memory = EpisodicMemory(big.store, big.settings, clock=lambda: NOW)
    hits = await memory.search_turns(BANK, f"{big.common} {big.rare}", TurnFilter(), 10)
    async with await psycopg.AsyncConnection.connect(big.settings.database_url, autocommit=True) as conn:
        rows = await (
            await conn.execute(
                sql.SQL(
                    "SELECT id FROM {} WHERE bank_id = %s AND archived_at IS NULL "
                    "AND search_terms @@ %s::tsquery"
                ).format(sql.Identifier(big.settings.schema, "turns")),
                (BANK, big.rare),
            )
        ).fetchall()
    rare = {row[0] for row in rows}
    assert len(hits) == 10 and {hit.turn.id for hit in hits[: len(rare)]} == rare
