"""Keyword search over a bank's turns: Okapi BM25 from postings and statistics kept as the turns change.

The keyword tables (``keyword_banks``, ``keyword_terms``, ``keyword_postings``) hold, for the live turns
only: per bank the number of turns, their total length and the newest time; per term its document
frequency and highest term frequency; a posting per (turn, term) with the term's frequency over the
turn's length ("impact"). Every write that makes turns live or takes them out calls :meth:`index` or
:meth:`unindex` inside its own transaction, so the statistics are exact and a search never counts
the bank.

Lock order, the same in every transaction: rows of ``turns`` first, then the bank's ``keyword_banks``
row (the first statistics statement takes it: one writer of a bank's statistics at a time, until it
commits), then the bank's term rows, then anything else (sessions, outbox). No writer ever waits the
other way round, so writers queue and never deadlock.

A search reads, per query term, only its best postings by impact (newest first among equals), scores
those turns exactly, and bounds what any turn not read could score; when the k-th hit beats the bound
the ranking is proven exact. Otherwise, when the terms that can still lift a turn to the top hold few
postings, it reads them whole (exact as well); else the budget grows up to :data:`MAX_BUDGET` (past that
the hits are the best of what was read). A small session or time window is scored whole. Its cost
depends on the query's terms, not on the bank's size.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from psycopg import AsyncConnection, sql
from psycopg.rows import DictRow

from hindsight.episodic.cpu import MIN_CHARS
from hindsight.episodic.models import TurnFilter
from hindsight.episodic.rows import (
    TURN_COLUMNS_OF_T,
    Decay,
    ScoredTurn,
    and_,
    decay_factor,
    turn_conditions,
    turn_from_row,
)
from hindsight.runtime.offload import off_loop
from hindsight.runtime.text import search_terms
from hindsight.runtime.tsearch import query_terms, tsquery_literal, tsvector_literal

log = logging.getLogger(__name__)

BM25_K1 = 1.2
"""BM25 term-frequency saturation: a word said twice counts for more than once, ten times not ten-fold."""
BM25_B = 0.75
"""BM25 length normalisation: a match in a short turn weighs more than the same match in a long one."""
ANALYZER = 2
"""Version of the turn analysis in ``search_terms``: 1 = plain terms, 2 = English words stemmed."""
REANALYSE_BATCH = 500
"""Turns re-analysed per transaction."""
FIRST_BUDGET = 256
"""Postings a search reads in its first round, shared among its terms."""
ANALYSE_DELAY_S = 0.5
"""How long after the write that passed a mark the statistics are refreshed (its transaction commits
within a few milliseconds)."""
FIRST_MARK = 256
"""The first bank size at which the planner's statistics are refreshed; then at each doubling."""
MAX_BUDGET = 1024
"""Most postings one round reads: the cap on a search's cost, whatever the bank's size."""
MIN_DEPTH = 8
"""Fewest postings read per term in a round, however many terms the query has."""
ESSENTIAL_MAX_POSTINGS = 2048
"""Most postings the terms that can still lift a turn to the top may hold for a search to read them all
(and so rank exactly) when rounds have not proven the ranking."""
WINDOW_MAX_TURNS = 2000
"""A session or time window with at most this many turns is scored whole (exact, and cheaper than
reading postings of common words that mostly fall outside it)."""
_K1 = sql.SQL("{}::float8").format(sql.Literal(BM25_K1))
_B = sql.SQL("{}::float8").format(sql.Literal(BM25_B))
_BOUND_SLACK = 1e-9
"""Relative margin by which the k-th score must beat the bound (float rounding)."""

Connect = Callable[[], contextlib.AbstractAsyncContextManager[AsyncConnection[DictRow]]]


@dataclass(frozen=True)
class TurnTerms:
    """A turn's analysis as stored: the ``tsvector`` literal and the number of terms (its BM25 length)."""

    search_terms: str
    term_count: int

    def params(self) -> dict[str, Any]:
        return {"search_terms": self.search_terms, "term_count": self.term_count, "analyzer": ANALYZER}


def turn_terms(speaker: str, text: str) -> TurnTerms:
    """The indexed terms of a turn (speaker and text, English words stemmed), analysed once."""
    joined = " ".join(part for part in (speaker, text) if part)
    analysed = search_terms(joined)
    return TurnTerms(tsvector_literal((joined,), lambda _: analysed), len(analysed))


async def analyse_turns(texts: Sequence[tuple[str, str]]) -> list[TurnTerms]:
    """:func:`turn_terms` of each (speaker, text), in a thread when there is enough text to be worth it."""
    size = sum(len(speaker) + len(text) for speaker, text in texts)
    return await off_loop(lambda: [turn_terms(speaker, text) for speaker, text in texts], size, MIN_CHARS)


def query_lexemes(query: str) -> list[str]:
    """The stemmed terms of a query that can be searched for, in order, a repeated one repeated."""
    analysed = search_terms(query)
    usable = set(query_terms(query, lambda _: analysed))
    return [term for term in analysed if term in usable]


async def analyse_query(query: str) -> list[str]:
    """:func:`query_lexemes`, in a thread when the query is long."""
    return await off_loop(lambda: query_lexemes(query), len(query), MIN_CHARS)


@dataclass(frozen=True)
class KeywordQuery:
    """One search statement and its parameters: what :meth:`KeywordStore.search` runs (and tests EXPLAIN)."""

    statement: sql.Composed
    params: dict[str, Any]
    planner: tuple[tuple[str, str], ...] = ()
    """Planner settings the statement runs under (``SET LOCAL``), when its plan must not be left to
    statistics that may be stale."""

    async def run(self, conn: AsyncConnection[DictRow]) -> list[DictRow]:
        """The statement's rows, under its planner settings."""
        if not self.planner:
            return await (await conn.execute(self.statement, self.params)).fetchall()
        async with conn.transaction():
            for name, value in self.planner:
                await conn.execute("SELECT set_config(%s, %s, true)", (name, value))
            return await (await conn.execute(self.statement, self.params)).fetchall()


def _windowed(where: TurnFilter) -> bool:
    """Whether a filter names a session or a time range, which an index on turns narrows."""
    return bool(where.session_id or where.time_range.start or where.time_range.end)


def _window_conditions(where: TurnFilter, params: dict[str, Any]) -> sql.Composable:
    """The filter's session and time conditions: all of them index conditions of one index on turns
    (bank, session, time, or bank, time), which makes it the cheapest scan under any statistics."""
    narrowed = TurnFilter(session_id=where.session_id, time_range=where.time_range, include_archived=True)
    return and_([sql.SQL("t.bank_id = %(bank_id)s"), *turn_conditions("t", narrowed, params)])


class KeywordStore:
    """The keyword tables of one schema: kept by the layer's writes, read by keyword search."""

    def __init__(self, schema: str, connection: Connect) -> None:
        self._connection = connection
        self._turns = sql.Identifier(schema, "turns")
        self._banks = sql.Identifier(schema, "keyword_banks")
        self._terms = sql.Identifier(schema, "keyword_terms")
        self._postings = sql.Identifier(schema, "keyword_postings")
        self._refreshing: asyncio.Task[None] | None = None
        self._refresh_again = False
        self._tables = {
            "turns": self._turns,
            "banks": self._banks,
            "terms": self._terms,
            "postings": self._postings,
        }

    # ----- upkeep, inside the writer's transaction -----------------------------------------------------
    async def index(self, conn: AsyncConnection[DictRow], bank_id: str, turn_ids: Sequence[str]) -> None:
        """Count in turns that just became live (recorded, restored, a new version): their postings and
        statistics, in one statement; the bank row is upserted before any term row (the lock order).

        A bank that grows past a mark (256 turns, then each doubling) has the planner's statistics
        refreshed soon after: see :meth:`_refresh_statistics`."""
        if not turn_ids:
            return
        statement = sql.SQL(
            "WITH t AS MATERIALIZED (SELECT id, search_terms, term_count, occurred_at FROM {turns} "
            "  WHERE bank_id = %(bank_id)s AND id = ANY(%(ids)s) AND archived_at IS NULL), "
            "b AS (INSERT INTO {banks} AS s (bank_id, turns, terms, newest) "
            "  SELECT %(bank_id)s, count(*), coalesce(sum(term_count), 0), max(occurred_at) FROM t "
            "  HAVING count(*) > 0 "
            "  ON CONFLICT (bank_id) DO UPDATE SET turns = s.turns + excluded.turns, "
            "  terms = s.terms + excluded.terms, newest = greatest(s.newest, excluded.newest) "
            "  RETURNING s.turns), "
            "u AS MATERIALIZED (SELECT t.id, t.occurred_at, t.term_count, e.lexeme, "
            "  coalesce(cardinality(e.positions), 1) AS tf FROM t, unnest(t.search_terms) e), "
            "d AS (INSERT INTO {terms} AS s (bank_id, term, turns, max_tf) "
            "  SELECT %(bank_id)s, u.lexeme, count(*), max(u.tf) FROM u, b "
            "  GROUP BY u.lexeme ORDER BY u.lexeme "
            "  ON CONFLICT (bank_id, term) DO UPDATE SET turns = s.turns + excluded.turns, "
            "  max_tf = greatest(s.max_tf, excluded.max_tf)), "
            "p AS (INSERT INTO {postings} (bank_id, turn_id, term, tf, length, impact, occurred_at) "
            "  SELECT %(bank_id)s, u.id, u.lexeme, u.tf, u.term_count, "
            "  u.tf::float8 / greatest(u.term_count, 1), u.occurred_at FROM u) "
            "SELECT b.turns, (SELECT count(*) FROM t) AS added FROM b"
        ).format(**self._tables)
        row = await (await conn.execute(statement, {"bank_id": bank_id, "ids": list(turn_ids)})).fetchone()
        if row is not None and passed_mark(int(row["turns"]) - int(row["added"]), int(row["turns"])):
            self._refresh_statistics()

    def _refresh_statistics(self) -> None:
        """ANALYZE the keyword tables and the turns in the background, once the writer has committed.

        The plans of a search depend on how many postings the planner believes a bank has. Right after a
        bank grows from nothing, its statistics say "almost none" until autovacuum samples the table again
        (about a minute, longer in a big table), and a plan built on that belief was measured 30 times
        slower (1.1 s against 37 ms for a 1k-turn bank beside 100k others). One refresh runs at a time; a
        mark passed while one runs asks for another after it."""
        if self._refreshing is not None and not self._refreshing.done():
            self._refresh_again = True
            return
        self._refresh_again = False
        self._refreshing = asyncio.get_running_loop().create_task(self._analyse())

    async def _analyse(self) -> None:
        while True:
            await asyncio.sleep(ANALYSE_DELAY_S)  # the writer's transaction commits first
            try:
                async with self._connection() as conn:
                    for table in (self._postings, self._terms, self._turns):
                        await conn.execute(sql.SQL("ANALYZE {}").format(table))
                log.info("keyword statistics refreshed")
            except Exception:
                log.warning("keyword statistics not refreshed", exc_info=True)
            if not self._refresh_again:
                return
            self._refresh_again = False

    async def statistics_refreshed(self) -> None:
        """Returns once no refresh of the planner's statistics is running (tests, shutdown)."""
        while self._refreshing is not None and not self._refreshing.done():
            await asyncio.shield(self._refreshing)

    async def unindex(
        self, conn: AsyncConnection[DictRow], bank_id: str, turn_ids: Sequence[str], total_terms: int
    ) -> None:
        """Count out turns that just stopped being live (archived or deleted), ``total_terms`` their
        summed lengths; statistics that reach zero are deleted (a purged bank leaves no words behind)."""
        if not turn_ids:
            return
        statement = sql.SQL(
            "WITH b AS (UPDATE {banks} SET turns = turns - %(turns)s, terms = terms - %(total)s "
            "  WHERE bank_id = %(bank_id)s RETURNING turns), "
            "p AS (DELETE FROM {postings} WHERE bank_id = %(bank_id)s AND turn_id = ANY(%(ids)s) "
            "  RETURNING term), "
            "d AS (SELECT term, count(*) AS n FROM p GROUP BY term), "
            "s AS (UPDATE {terms} s SET turns = s.turns - d.n FROM d, b "
            "  WHERE s.bank_id = %(bank_id)s AND s.term = d.term RETURNING s.term, s.turns) "
            "SELECT (SELECT turns FROM b) AS bank_turns, "
            "  (SELECT array_agg(term) FROM s WHERE turns <= 0) AS empty_terms"
        ).format(**self._tables)
        params = {"bank_id": bank_id, "ids": list(turn_ids), "turns": len(turn_ids), "total": total_terms}
        row = await (await conn.execute(statement, params)).fetchone()
        if row is None or row["bank_turns"] is None:
            raise RuntimeError(f"bank {bank_id!r} lost turns it has no keyword statistics for")
        if row["empty_terms"] or row["bank_turns"] <= 0:
            cleanup = sql.SQL(
                "WITH x AS (DELETE FROM {terms} WHERE bank_id = %(bank_id)s AND term = ANY(%(terms)s) "
                "  AND turns <= 0) "
                "DELETE FROM {banks} WHERE bank_id = %(bank_id)s AND turns <= 0"
            ).format(**self._tables)
            await conn.execute(cleanup, {"bank_id": bank_id, "terms": row["empty_terms"] or []})

    async def reanalyse(self) -> int:
        """Re-index turns written by an older analysis (see :data:`ANALYZER`), in batches; returns how many.

        Safe to run from several replicas at once: each batch locks its rows and skips locked ones.
        """
        select = sql.SQL(
            "SELECT bank_id, id, speaker, text, term_count, archived_at IS NULL AS live FROM {turns} "
            "WHERE analyzer < %s ORDER BY bank_id, id LIMIT %s FOR UPDATE SKIP LOCKED"
        ).format(turns=self._turns)
        update = sql.SQL(
            "UPDATE {turns} SET search_terms = %(search_terms)s::tsvector, term_count = %(term_count)s, "
            "analyzer = %(analyzer)s WHERE bank_id = %(bank_id)s AND id = %(id)s"
        ).format(turns=self._turns)
        total = 0
        while True:
            async with self._connection() as conn, conn.transaction(), conn.cursor() as cursor:
                rows = await (await cursor.execute(select, (ANALYZER, REANALYSE_BATCH))).fetchall()
                if not rows:
                    break
                analysed = await analyse_turns([(row["speaker"], row["text"]) for row in rows])
                await cursor.executemany(
                    update,
                    [
                        {"bank_id": row["bank_id"], "id": row["id"], **terms.params()}
                        for row, terms in zip(rows, analysed, strict=True)
                    ],
                )
                for bank_id, group in groupby(rows, key=lambda row: row["bank_id"]):
                    live = [row for row in group if row["live"]]
                    ids = [row["id"] for row in live]
                    await self.unindex(conn, bank_id, ids, sum(row["term_count"] for row in live))
                    await self.index(conn, bank_id, ids)
            total += len(rows)
        if total:
            log.info("re-analysed turns for keyword search", extra={"turns": total, "analyzer": ANALYZER})
        return total

    # ----- search --------------------------------------------------------------------------------------
    async def search(
        self, bank_id: str, lexemes: Sequence[str], where: TurnFilter, decay: Decay, limit: int
    ) -> list[ScoredTurn]:
        """Okapi BM25 over the bank's live turns, times the time decay; a lexeme given twice weighs twice.

        IDF is Lucene's ``ln(1 + (N - df + 0.5) / (df + 0.5))``, never negative; N, df and the mean
        length are the bank's (filters apply after scoring). A small session or time window is scored
        whole; otherwise rounds read more postings until the ranking is proven or the budget is spent.
        """
        weights = Counter(lexemes)
        if tsquery_literal(weights) is None:
            return []
        async with self._connection() as conn:
            if where.include_archived:
                rows = await self.archived_query(bank_id, weights, where, decay, limit).run(conn)
                return [ScoredTurn(turn_from_row(row), float(row["score"])) for row in rows]
            if _windowed(where):
                rows = await self.window_query(bank_id, weights, where, decay, limit).run(conn)
                if not rows[0]["overflow"]:
                    return _hits(rows)
            budget = max(FIRST_BUDGET, 2 * limit)
            while True:
                rows = await self.ranked_query(bank_id, weights, where, decay, limit, budget).run(conn)
                hits = _hits(rows)
                first = rows[0]
                if first["exhausted"] or (
                    len(hits) >= limit and hits[-1].score > first["bound"] * (1 + _BOUND_SLACK)
                ):
                    return hits
                needed = _essential(first, hits[-1].score if len(hits) >= limit else 0.0)
                if needed is not None:
                    query = self.essential_query(bank_id, weights, where, decay, limit, needed)
                    return _hits(await query.run(conn))
                if budget >= MAX_BUDGET:
                    log.debug(
                        "keyword ranking not proven within the budget",
                        extra={"bank_id": bank_id, "terms": len(weights), "budget": budget},
                    )
                    return hits
                budget = min(MAX_BUDGET, budget * 4)

    def _common(
        self, bank_id: str, weights: Counter[str], limit: int, params: dict[str, Any]
    ) -> dict[str, sql.Composable]:
        """Parameters and SQL shared by the search statements: the query terms with their weights
        (``qtf * idf``, from the bank's statistics) and the BM25 constants."""
        params.update(
            bank_id=bank_id,
            terms=list(weights),
            qtf=[float(count) for count in weights.values()],
            limit=limit,
        )
        return {
            "head": sql.SQL(
                "WITH q AS (SELECT * FROM unnest(%(terms)s::text[], %(qtf)s::float8[]) AS q(term, qtf)), "
                "bank AS MATERIALIZED (SELECT s.turns AS n, greatest(s.terms::float8 / s.turns, 1) AS avgdl, "
                "  s.newest FROM {banks} s WHERE s.bank_id = %(bank_id)s AND s.turns > 0), "
                "terms AS MATERIALIZED (SELECT q.term, "
                "  q.qtf * ln(1 + (greatest(bk.n, k.turns) - k.turns + 0.5) / (k.turns + 0.5)) AS w, "
                "  k.turns AS df, k.max_tf FROM q "
                "  JOIN {terms} k ON k.bank_id = %(bank_id)s AND k.term = q.term CROSS JOIN bank bk)"
            ).format(banks=self._banks, terms=self._terms),
            "turns": self._turns,
            "postings": self._postings,
            "columns": TURN_COLUMNS_OF_T,
        }

    def ranked_query(
        self, bank_id: str, weights: Counter[str], where: TurnFilter, decay: Decay, limit: int, budget: int
    ) -> KeywordQuery:
        """One round. Each term's best postings per tf stream are read (``budget`` shared among the
        terms: a rare term is read whole, the rest split among the others); the turns read are the
        candidates, scored in part from what was read. A candidate that cannot reach the k-th best
        partial score even with the most its unread terms allow is dropped; the rest get their other
        terms' postings by key and exact scores. ``bound`` is the most a turn not read at all can score
        (``exhausted`` when every term was read whole).

        Within a stream tf is known (at most the term's highest in the last), so an unread posting
        scores at most what the stream's last impact allows; one not read at all also has, per term,
        either that impact and a time no later than the last read, or at most the next lower impact
        and at most the bank's newest time."""
        params: dict[str, Any] = {"budget": budget, "min_depth": MIN_DEPTH, "slack": _BOUND_SLACK}
        parts = self._common(bank_id, weights, limit, params)
        statement = sql.SQL("{head}, {read}{bound}{candidates}{exact}").format(
            head=parts["head"],
            read=self._read_ctes(),
            bound=self._bound_ctes(decay, params),
            candidates=self._candidate_ctes(where, decay, params),
            exact=self._exact_ctes(parts),
        )
        return KeywordQuery(statement, params)

    def _read_ctes(self) -> sql.Composable:
        """Step 1 of a round: each term's depth, and its best postings per tf stream up to it."""
        return sql.SQL(
            "streams (cls) AS (VALUES (1), (2), (3), (4)), "
            # depth per term: half the budget water-filled (a term with fewer postings than its share
            # is read whole, the rest split evenly), the other half to the rarest terms read whole
            "fill AS (SELECT term, df, row_number() OVER w - 1 AS i, count(*) OVER () AS nt, "
            "  coalesce(sum(df) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before "
            "  FROM terms WINDOW w AS (ORDER BY df, term)), "
            "level AS (SELECT coalesce((array_agg(floor((%(budget)s / 2 - before) / (nt - i)) ORDER BY i) "
            "  FILTER (WHERE df * (nt - i) + before >= %(budget)s / 2))[1], max(df), 0) AS n FROM fill), "
            "depth AS MATERIALIZED (SELECT f.term, greatest(%(min_depth)s, l.n, "
            "  CASE WHEN f.before + f.df <= %(budget)s / 2 THEN f.df ELSE 0 END)::bigint AS n "
            "  FROM fill f CROSS JOIN level l), "
            "read AS MATERIALIZED (SELECT m.term, c.cls, p.* FROM terms m JOIN depth d USING (term) "
            "  CROSS JOIN streams c CROSS JOIN LATERAL (SELECT x.turn_id, x.tf, x.length, x.impact, "
            "    x.occurred_at FROM {postings} x "
            "    WHERE x.bank_id = %(bank_id)s AND x.term = m.term AND least(x.tf, 4) = c.cls "
            "    ORDER BY x.impact DESC, x.occurred_at DESC, x.turn_id LIMIT d.n) p), "
        ).format(postings=self._postings)

    def _bound_ctes(self, decay: Decay, params: dict[str, Any]) -> sql.Composable:
        """Step 2: per term and stream, where reading stopped; from it ``bound``, the most a turn not read
        at all can score, and each term's cap on what its unread postings add."""

        def most(impact: str) -> sql.Composable:
            """The most (before ``w``) a posting of the stream with impact at most ``impact`` scores."""
            return sql.SQL(
                "({k1} + 1) / (1 + {k1} * (1 - {b}) / e.top_tf + {k1} * {b} / (bk.avgdl * {impact}))"
            ).format(k1=_K1, b=_B, impact=sql.SQL(impact))

        return sql.SQL(
            "got AS (SELECT term, cls, count(*) AS got, min(impact) AS kappa, max(impact) AS head, "
            "  (array_agg(occurred_at ORDER BY impact, occurred_at))[1] AS tau FROM read "
            "  GROUP BY term, cls), "
            "edge AS (SELECT m.term, m.w, m.df, c.cls, g.kappa, g.tau, g.head, "
            "  CASE WHEN c.cls = 4 THEN greatest(m.max_tf, 4) ELSE c.cls END AS top_tf, "
            "  coalesce(g.got, 0) < d.n OR sum(coalesce(g.got, 0)) OVER (PARTITION BY m.term) >= m.df "
            "    AS exhausted "
            "  FROM terms m JOIN depth d USING (term) CROSS JOIN streams c "
            "  LEFT JOIN got g USING (term, cls)), "
            "per_term AS MATERIALIZED (SELECT e.term, max(e.df) AS df, bool_and(e.exhausted) AS exhausted, "
            "  coalesce(max(e.w * {at_kappa}) FILTER (WHERE NOT e.exhausted), 0) AS cap, "
            "  coalesce(max(e.w * {at_head}), 0) AS top, "
            "  max(e.w * greatest({at_kappa} * {decay_tau}, coalesce({below} * {decay_newest}, 0))) "
            "    FILTER (WHERE NOT e.exhausted) AS most "
            "  FROM (SELECT e.*, CASE WHEN NOT e.exhausted THEN (SELECT x.impact FROM {postings} x "
            "    WHERE x.bank_id = %(bank_id)s AND x.term = e.term AND least(x.tf, 4) = e.cls "
            "    AND x.impact < e.kappa ORDER BY x.impact DESC LIMIT 1) END AS below FROM edge e) e "
            "  CROSS JOIN bank bk GROUP BY e.term), "
            "bound AS (SELECT coalesce(bool_and(exhausted), true) AS exhausted, "
            "  coalesce(sum(most), 0) AS bound, coalesce(sum(cap), 0) AS cap, "
            "  array_agg(term) AS terms, array_agg(top) AS tops, array_agg(df) AS dfs, "
            "  (SELECT {decay_newest} FROM bank bk) AS newest_decay FROM per_term), "
        ).format(
            at_kappa=most("e.kappa"),
            at_head=most("e.head"),
            below=most("e.below"),
            decay_tau=decay_factor(sql.SQL("e.tau"), decay, params),
            decay_newest=decay_factor(sql.SQL("bk.newest"), decay, params),
            postings=self._postings,
        )

    def _candidate_ctes(self, where: TurnFilter, decay: Decay, params: dict[str, Any]) -> sql.Composable:
        """Step 3: the turns read are the candidates, scored in part from what was read; those that cannot
        reach the k-th best partial score even with the most their unread terms allow are dropped."""
        conditions = _posting_conditions(where, params)
        passing = (
            sql.SQL(
                "JOIN LATERAL (SELECT 1 FROM {turns} t WHERE t.bank_id = %(bank_id)s AND t.id = c.turn_id "
                "  AND {where} OFFSET 0) f ON true"
            ).format(turns=self._turns, where=and_(conditions))
            if conditions
            else sql.SQL("")
        )
        return sql.SQL(
            # candidates: what was read of each (a lower bound), and the caps of its terms read
            "cand AS MATERIALIZED (SELECT r.turn_id, max(r.occurred_at) AS occurred_at, "
            "  sum({bm25_read}) AS known, "
            "  sum(pt.cap) AS seen_cap FROM read r JOIN terms m USING (term) JOIN per_term pt USING (term) "
            "  CROSS JOIN bank bk GROUP BY r.turn_id), "
            "lower AS MATERIALIZED (SELECT c.*, {decay_c} AS d FROM cand c {passing}), "
            "theta AS MATERIALIZED (SELECT coalesce((SELECT known * d FROM lower ORDER BY known * d DESC "
            "  OFFSET %(limit)s - 1 LIMIT 1), -1) AS v), "
            "survivors AS MATERIALIZED (SELECT l.* FROM lower l CROSS JOIN bound bd CROSS JOIN theta th "
            "  WHERE (l.known + greatest(bd.cap - l.seen_cap, 0)) * l.d >= th.v * (1 - %(slack)s)), "
        ).format(
            bm25_read=_bm25("r.tf", "r.length"),
            decay_c=decay_factor(sql.SQL("c.occurred_at"), decay, params),
            passing=passing,
        )

    def _exact_ctes(self, parts: dict[str, sql.Composable]) -> sql.Composable:
        """Step 4: exact scores of the survivors, the best ``limit`` of them as turns, with the bound."""
        return sql.SQL(
            # exact scores of the survivors from their own postings (one key range each), summed in
            # term order so that equal turns get equal scores, bit for bit (ties then go by time)
            "best AS (SELECT s.turn_id, sum({bm25_more} ORDER BY p.term) * max(s.d) AS score, "
            "  max(s.occurred_at) AS occurred_at FROM survivors s "
            "  CROSS JOIN LATERAL (SELECT x.term, x.tf, x.length FROM {postings} x "
            "    WHERE x.bank_id = %(bank_id)s AND x.turn_id = s.turn_id OFFSET 0) p "
            "  JOIN terms m ON m.term = p.term CROSS JOIN bank bk "
            "  GROUP BY s.turn_id ORDER BY score DESC, occurred_at DESC, s.turn_id LIMIT %(limit)s), "
            "ranked AS (SELECT {columns}, b.score FROM best b CROSS JOIN LATERAL (SELECT * FROM {turns} t "
            "  WHERE t.bank_id = %(bank_id)s AND t.id = b.turn_id OFFSET 0) t) "
            "SELECT r.*, bd.exhausted, bd.bound, bd.terms, bd.tops, bd.dfs, bd.newest_decay "
            "FROM bound bd LEFT JOIN ranked r ON true "
            "ORDER BY r.score DESC, r.occurred_at DESC, r.id"
        ).format(
            bm25_more=_bm25("p.tf", "p.length"),
            postings=parts["postings"],
            columns=parts["columns"],
            turns=parts["turns"],
        )

    def essential_query(
        self,
        bank_id: str,
        weights: Counter[str],
        where: TurnFilter,
        decay: Decay,
        limit: int,
        essential: Sequence[str],
    ) -> KeywordQuery:
        """Every turn holding one of the ``essential`` terms, scored exactly from its own postings.

        Exact when the other terms together cannot lift a turn holding only them to the k-th score
        already found (see :func:`_essential`): every turn that can reach the top holds an essential
        term, and those are few."""
        params: dict[str, Any] = {"essential": list(essential)}
        parts = self._common(bank_id, weights, limit, params)
        conditions = _posting_conditions(where, params)
        statement = sql.SQL(
            "{head}, "
            "cand AS MATERIALIZED (SELECT DISTINCT x.turn_id FROM unnest(%(essential)s::text[]) e(term) "
            "  CROSS JOIN LATERAL (SELECT x.turn_id FROM {postings} x "
            "    WHERE x.bank_id = %(bank_id)s AND x.term = e.term OFFSET 0) x), "
            "scores AS (SELECT c.turn_id, max(p.occurred_at) AS occurred_at, "
            "  sum({bm25} ORDER BY p.term) AS bm25 FROM cand c "
            "  CROSS JOIN LATERAL (SELECT x.term, x.tf, x.length, x.occurred_at FROM {postings} x "
            "    WHERE x.bank_id = %(bank_id)s AND x.turn_id = c.turn_id OFFSET 0) p "
            "  JOIN terms m ON m.term = p.term CROSS JOIN bank bk GROUP BY c.turn_id), "
            "ranked AS (SELECT {columns}, s.bm25 * {decay} AS score FROM scores s "
            "  CROSS JOIN LATERAL (SELECT * FROM {turns} t "
            "    WHERE t.bank_id = %(bank_id)s AND t.id = s.turn_id AND {where} OFFSET 0) t "
            "  ORDER BY score DESC, t.occurred_at DESC, t.id LIMIT %(limit)s) "
            "SELECT * FROM ranked ORDER BY score DESC, occurred_at DESC, id"
        ).format(
            bm25=_bm25("p.tf", "p.length"),
            decay=decay_factor(sql.Identifier("s", "occurred_at"), decay, params),
            where=and_(conditions),
            **parts,
        )
        return KeywordQuery(statement, params)

    def window_query(
        self, bank_id: str, weights: Counter[str], where: TurnFilter, decay: Decay, limit: int
    ) -> KeywordQuery:
        """Every turn of a session or time window scored from its own terms (exact); ``overflow`` (and no
        hits) when the window holds more than :data:`WINDOW_MAX_TURNS` turns."""
        if not _windowed(where):
            raise ValueError("a window query needs a session or a time range")
        params: dict[str, Any] = {"window_cap": WINDOW_MAX_TURNS, "query": tsquery_literal(weights)}
        parts = self._common(bank_id, weights, limit, params)
        statement = sql.SQL(
            "{head}, "
            "win AS MATERIALIZED (SELECT t.id AS turn_id FROM {turns} t WHERE {window} "
            "  LIMIT %(window_cap)s + 1), "
            "over AS MATERIALIZED (SELECT count(*) > %(window_cap)s AS overflow FROM win), "
            "ranked AS (SELECT {columns}, s.bm25 * {decay} AS score FROM win c CROSS JOIN bank bk "
            "  CROSS JOIN LATERAL (SELECT * FROM {turns} t "
            "    WHERE t.bank_id = %(bank_id)s AND t.id = c.turn_id AND {where} "
            "    AND t.search_terms @@ %(query)s::tsquery OFFSET 0) t "
            "  CROSS JOIN LATERAL (SELECT sum({bm25} ORDER BY p.term) AS bm25 FROM (SELECT u.lexeme AS term, "
            "    coalesce(cardinality(u.positions), 1) AS tf FROM unnest(t.search_terms) u) p "
            "    JOIN terms m USING (term)) s "
            "  WHERE NOT (SELECT overflow FROM over) AND s.bm25 IS NOT NULL "
            "  ORDER BY score DESC, t.occurred_at DESC, t.id LIMIT %(limit)s) "
            "SELECT r.*, o.overflow FROM over o LEFT JOIN ranked r ON true "
            "ORDER BY r.score DESC, r.occurred_at DESC, r.id"
        ).format(
            window=_window_conditions(where, params),
            where=and_(turn_conditions("t", where, params)),
            decay=decay_factor(sql.Identifier("t", "occurred_at"), decay, params),
            bm25=_bm25("p.tf", "t.term_count"),
            **parts,
        )
        # The window is read without ORDER BY (a sort would let a planner short of statistics walk any
        # index of the bank and sort it all); what a LIMIT then leaves is a scan in heap order, which a
        # planner that believes the window wide picks and which reads other banks' rows: so no seqscan.
        return KeywordQuery(statement, params, (("enable_seqscan", "off"),))

    def archived_query(
        self, bank_id: str, weights: Counter[str], where: TurnFilter, decay: Decay, limit: int
    ) -> KeywordQuery:
        """Live and archived turns (rarely asked): every matching turn is scored, found through the
        ``search_terms`` GIN index; df is counted among them, N and the mean length are the live ones'."""
        params: dict[str, Any] = {
            "bank_id": bank_id,
            "query": tsquery_literal(weights),
            "lexemes": list(weights),
            "weights": [float(count) for count in weights.values()],
            "limit": limit,
        }
        conditions = turn_conditions("t", where, params)
        statement = sql.SQL(
            "WITH q AS (SELECT * FROM unnest(%(lexemes)s::text[], %(weights)s::float8[]) AS q(lexeme, qtf)), "
            "matched AS (SELECT id, search_terms, term_count FROM {turns} "
            "  WHERE bank_id = %(bank_id)s AND search_terms @@ %(query)s::tsquery), "
            "hits AS (SELECT m.id, q.lexeme, q.qtf, coalesce(cardinality(u.positions), 1) AS tf, "
            "  m.term_count FROM matched m CROSS JOIN LATERAL unnest(m.search_terms) AS u "
            "  JOIN q ON q.lexeme = u.lexeme), "
            "df AS (SELECT lexeme, count(*) AS df FROM hits GROUP BY lexeme), "
            "stats AS (SELECT coalesce(max(turns), 0) AS n, "
            "  greatest(max(terms)::float8 / nullif(max(turns), 0), 1) AS avgdl FROM {banks} "
            "  WHERE bank_id = %(bank_id)s), "
            "scored AS (SELECT h.id, sum(h.qtf * ln(1 + (greatest(s.n, d.df) - d.df + 0.5) / (d.df + 0.5)) "
            "  * h.tf * ({k1} + 1) / (h.tf + {k1} * (1 - {b} + {b} * h.term_count / s.avgdl))) AS score "
            "  FROM hits h JOIN df d USING (lexeme) CROSS JOIN stats s GROUP BY h.id) "
            "SELECT {columns}, scored.score * {factor} AS score FROM scored JOIN {turns} t "
            "  ON t.bank_id = %(bank_id)s AND t.id = scored.id WHERE {where} "
            "ORDER BY score DESC, t.occurred_at DESC, t.id LIMIT %(limit)s"
        ).format(
            columns=TURN_COLUMNS_OF_T,
            turns=self._turns,
            banks=self._banks,
            k1=_K1,
            b=_B,
            factor=decay_factor(sql.Identifier("t", "occurred_at"), decay, params),
            where=and_(conditions),
        )
        return KeywordQuery(statement, params)


def _posting_conditions(where: TurnFilter, params: dict[str, Any]) -> list[sql.Composable]:
    """The filter's conditions on a posting's turn; the archive test is left out, since postings are of
    live turns only."""
    return turn_conditions("t", dataclasses.replace(where, include_archived=True), params)


def passed_mark(before: int, after: int) -> bool:
    """Whether a bank that went from ``before`` to ``after`` live turns passed 256, 512, 1024, ..."""
    mark = FIRST_MARK
    while mark <= after:
        if before < mark:
            return True
        mark *= 2
    return False


def _essential(first: DictRow, theta: float) -> list[str] | None:
    """The query terms every turn that can still reach the top holds one of (MaxScore's essential
    terms), when they hold at most :data:`ESSENTIAL_MAX_POSTINGS` postings in all; else None.

    ``tops`` is the most each term adds to a turn's BM25; a turn holding only the terms with the
    smallest tops, which sum (times the highest decay) to less than ``theta`` (a k-th score found),
    cannot reach the top."""
    terms = sorted(
        zip(first["terms"] or [], first["tops"] or [], first["dfs"] or [], strict=True), key=lambda t: t[1]
    )
    ceiling = float(first["newest_decay"] or 1.0) * (1 + _BOUND_SLACK)
    below = 0.0
    for index, (_, top, _) in enumerate(terms):
        if (below + float(top)) * ceiling >= theta:
            needed = terms[index:]
            if sum(int(df) for _, _, df in needed) > ESSENTIAL_MAX_POSTINGS:
                return None
            return [term for term, _, _ in needed]
        below += float(top)
    return None  # (float rounding only: the k-th hit's own terms reach theta)


def _bm25(tf: str, length: str) -> sql.Composable:
    """One term's BM25 in one turn, ``w`` (qtf times idf, CTE ``terms`` as ``m``) included; the same
    arithmetic, in the same order, as the scores searches have always had."""
    return sql.SQL("m.w * {tf} * ({k1} + 1) / ({tf} + {k1} * (1 - {b} + {b} * {length} / bk.avgdl))").format(
        tf=sql.SQL(tf), length=sql.SQL(length), k1=_K1, b=_B
    )


def _hits(rows: Sequence[DictRow]) -> list[ScoredTurn]:
    """The hits of a search statement's rows (its one row without a turn, when none scored, left out)."""
    return [ScoredTurn(turn_from_row(row), float(row["score"])) for row in rows if row["id"] is not None]
