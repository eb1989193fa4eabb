"""The episodic store: turns and episodes in PostgreSQL (psycopg 3 async, one connection pool).

All SQL of the layer lives here. Tables sit in the layer's own schema (created by the migrations in
``migrations/``); every statement names them schema-qualified, so no connection state is assumed.
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import psycopg
from psycopg import AsyncConnection, sql
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from hindsight.episodic.models import Episode, Outcome
from hindsight.episodic.paging import PageKey
from hindsight.episodic.settings import EpisodicSettings
from hindsight.runtime.errors import Unavailable
from hindsight.runtime.migrations import load_migrations, migrate
from hindsight.runtime.records import RecordMeta, Role, TimeRange, Turn
from hindsight.runtime.text import search_terms
from hindsight.runtime.tsearch import tsquery_literal, tsvector_literal

log = logging.getLogger(__name__)

BM25_K1 = 1.2
"""BM25 term-frequency saturation: a word said twice counts for more than once, ten times not ten-fold."""
BM25_B = 0.75
"""BM25 length normalisation: a match in a short turn weighs more than the same match in a long one."""
ANALYZER = 2
"""Version of the turn analysis in ``search_terms``: 1 = plain terms, 2 = English words stemmed."""
REANALYSE_BATCH = 500

_TURN_COLUMN_NAMES = (
    "id, session_id, role, speaker, text, source, trust, occurred_at, tags, importance, "
    "source_turn_ids, schema_version"
).split(", ")
_TURN_COLUMNS = sql.SQL(", ").join(map(sql.Identifier, _TURN_COLUMN_NAMES))
_TURN_COLUMNS_OF_T = sql.SQL(", ").join(sql.Identifier("t", name) for name in _TURN_COLUMN_NAMES)
"""The same columns, qualified with the alias ``t``."""
_EPISODE_COLUMNS = sql.SQL(
    "id, session_id, situation, action, outcome, lesson, task_type, tools, result, source, trust, tags, "
    "importance, source_turn_ids, occurred_at, recorded_at, schema_version"
)


@dataclass(frozen=True)
class ScoredTurn:
    """A turn found by keyword search, with its rank (higher is better, comparable within one search)."""

    turn: Turn
    score: float


@dataclass(frozen=True)
class RecordResult:
    """How many turns of a request were new and how many were already stored."""

    recorded: int
    duplicates: int


class EpisodicStore(Protocol):
    """What episodic memory needs from its store."""

    async def record_turns(self, bank_id: str, turns: Sequence[Turn]) -> RecordResult:
        """Insert turns in one transaction; ids already stored in the bank are left unchanged."""
        ...

    async def search_turns(
        self, bank_id: str, lexemes: Sequence[str], time_range: TimeRange, limit: int
    ) -> list[ScoredTurn]:
        """Live turns matching any lexeme, best first by BM25; a lexeme given twice weighs twice."""
        ...

    async def list_turns(self, bank_id: str, after: PageKey | None, limit: int) -> list[Turn]:
        """Live turns in (time, id) order, starting after ``after``."""
        ...

    async def write_episode(self, bank_id: str, episode: Episode) -> Episode:
        """Store an episode (its id must be set); an id already stored returns the stored episode."""
        ...

    async def list_episodes(
        self, bank_id: str, session_id: str, before: PageKey | None, limit: int
    ) -> list[Episode]:
        """Episodes newest first, starting before ``before``; only ``session_id``'s when it is set."""
        ...

    async def forget_turns(self, bank_id: str, turn_ids: Sequence[str], hard: bool) -> int:
        """Archive the live turns named (or delete them for good when ``hard``); returns how many."""
        ...

    async def ping(self) -> bool:
        """Whether the database answers; never raises."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


def _turn_from_row(row: DictRow) -> Turn:
    meta = RecordMeta.from_fields(row, time=row["occurred_at"])
    return Turn(
        id=row["id"],
        session_id=row["session_id"],
        text=row["text"],
        role=Role(row["role"]),
        speaker=row["speaker"],
        meta=meta,
    )


def _episode_from_row(row: DictRow) -> Episode:
    meta = RecordMeta.from_fields(row, time=row["occurred_at"])
    return Episode(
        id=row["id"],
        session_id=row["session_id"],
        situation=row["situation"],
        action=row["action"],
        outcome=row["outcome"],
        lesson=row["lesson"],
        task_type=row["task_type"],
        tools=tuple(row["tools"]),
        result=Outcome(row["result"]),
        meta=meta,
        recorded_at=row["recorded_at"],
    )


def _turn_params(bank_id: str, turn: Turn) -> dict[str, Any]:
    meta = turn.meta
    return {
        "bank_id": bank_id,
        "id": turn.id,
        "session_id": turn.session_id,
        "role": turn.role.value,
        "speaker": turn.speaker,
        "text": turn.text,
        **meta.to_fields(),
        "occurred_at": meta.time,
        **_turn_terms(turn.speaker, turn.text),
    }


def _turn_terms(speaker: str, text: str) -> dict[str, Any]:
    """The indexed terms of a turn (speaker and text, English words stemmed) and how many there are."""
    analysed = search_terms(" ".join(part for part in (speaker, text) if part))
    return {
        "search_terms": tsvector_literal((speaker, text), search_terms),
        "term_count": len(analysed),
        "analyzer": ANALYZER,
    }


@contextlib.asynccontextmanager
async def _unavailable_on_connection_errors() -> AsyncIterator[None]:
    """A database that cannot be reached (or no free connection) is UNAVAILABLE, which callers may retry."""
    try:
        yield
    except PoolTimeout as exc:
        raise Unavailable("episodic store: no database connection available") from exc
    except psycopg.OperationalError as exc:
        raise Unavailable(f"episodic store unreachable: {exc}") from exc


class PostgresEpisodicStore:
    """:class:`EpisodicStore` on PostgreSQL."""

    def __init__(
        self, pool: AsyncConnectionPool[AsyncConnection[DictRow]], settings: EpisodicSettings
    ) -> None:
        self._pool = pool
        self._acquire_timeout = settings.acquire_timeout_seconds
        self._turns = sql.Identifier(settings.schema, "turns")
        self._episodes = sql.Identifier(settings.schema, "episodes")

    @classmethod
    async def open(cls, settings: EpisodicSettings) -> PostgresEpisodicStore:
        """Open the pool, wait for the database, and bring the schema up to date."""
        pool: AsyncConnectionPool[AsyncConnection[DictRow]] = AsyncConnectionPool(
            settings.database_url,
            min_size=settings.pool_min_size,
            max_size=settings.pool_max_size,
            kwargs={"autocommit": True, "row_factory": dict_row},
            open=False,
            name="episodic",
            connection_class=AsyncConnection[DictRow],
        )
        try:
            await pool.open(wait=True, timeout=settings.connect_timeout_seconds)
            async with pool.connection(timeout=settings.connect_timeout_seconds) as conn:
                applied = await migrate(conn, settings.schema, load_migrations("hindsight.episodic"))
            log.info("episodic schema ready", extra={"schema": settings.schema, "applied": applied})
            store = cls(pool, settings)
            await store.reanalyse()
        except BaseException:
            await pool.close()
            raise
        return store

    async def reanalyse(self) -> int:
        """Re-index turns written by an older analysis (see :data:`ANALYZER`), in batches; returns how many.

        Safe to run from several replicas at once: each batch locks its rows and skips locked ones.
        """
        select = sql.SQL(
            "SELECT bank_id, id, speaker, text FROM {turns} WHERE analyzer < %s "
            "LIMIT %s FOR UPDATE SKIP LOCKED"
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
                await cursor.executemany(
                    update,
                    [
                        {"bank_id": r["bank_id"], "id": r["id"], **_turn_terms(r["speaker"], r["text"])}
                        for r in rows
                    ],
                )
            total += len(rows)
        if total:
            log.info("re-analysed turns for keyword search", extra={"turns": total, "analyzer": ANALYZER})
        return total

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection[DictRow]]:
        async with (
            _unavailable_on_connection_errors(),
            self._pool.connection(timeout=self._acquire_timeout) as conn,
        ):
            yield conn

    async def record_turns(self, bank_id: str, turns: Sequence[Turn]) -> RecordResult:
        statement = sql.SQL(
            "INSERT INTO {turns} (bank_id, id, session_id, role, speaker, text, source, trust, occurred_at, "
            "tags, importance, source_turn_ids, schema_version, search_terms, term_count, analyzer) "
            "VALUES (%(bank_id)s, %(id)s, %(session_id)s, %(role)s, %(speaker)s, %(text)s, %(source)s, "
            "%(trust)s, coalesce(%(occurred_at)s::timestamptz, now()), %(tags)s, %(importance)s, "
            "%(source_turn_ids)s, %(schema_version)s, %(search_terms)s::tsvector, %(term_count)s, "
            "%(analyzer)s) "
            "ON CONFLICT (bank_id, id) DO NOTHING"
        ).format(turns=self._turns)
        async with self._connection() as conn, conn.transaction(), conn.cursor() as cursor:
            await cursor.executemany(statement, [_turn_params(bank_id, turn) for turn in turns])
            recorded = max(cursor.rowcount, 0)
        return RecordResult(recorded=recorded, duplicates=len(turns) - recorded)

    async def search_turns(
        self, bank_id: str, lexemes: Sequence[str], time_range: TimeRange, limit: int
    ) -> list[ScoredTurn]:
        """Okapi BM25 over the bank's live turns, in one statement.

        Every turn holding a query term is a candidate, so a term's document frequency is counted
        exactly among the candidates; the bank's size and mean length come from the same snapshot.
        IDF is Lucene's ``ln(1 + (N - df + 0.5) / (df + 0.5))``, never negative. A term repeated in
        the query counts once per repeat. The time range filters after scoring, so IDF is the bank's.
        """
        weights = Counter(lexemes)
        query = tsquery_literal(weights)
        if query is None:
            return []
        window = []
        if time_range.start is not None:
            window.append(sql.SQL("t.occurred_at >= %(start)s"))
        if time_range.end is not None:
            window.append(sql.SQL("t.occurred_at < %(end)s"))
        statement = sql.SQL(
            "WITH q AS (SELECT * FROM unnest(%(lexemes)s::text[], %(weights)s::float8[]) AS q(lexeme, qtf)), "
            "matched AS (SELECT id, search_terms, term_count FROM {turns} "
            "  WHERE bank_id = %(bank_id)s AND archived_at IS NULL AND search_terms @@ %(query)s::tsquery), "
            "hits AS (SELECT m.id, q.lexeme, q.qtf, cardinality(u.positions) AS tf, m.term_count "
            "  FROM matched m CROSS JOIN LATERAL unnest(m.search_terms) AS u JOIN q ON q.lexeme = u.lexeme), "
            "df AS (SELECT lexeme, count(*) AS df FROM hits GROUP BY lexeme), "
            "stats AS (SELECT count(*) AS n, greatest(avg(term_count), 1) AS avgdl FROM {turns} "
            "  WHERE bank_id = %(bank_id)s AND archived_at IS NULL), "
            "scored AS (SELECT h.id, sum(h.qtf * ln(1 + (s.n - d.df + 0.5) / (d.df + 0.5)) "
            "  * h.tf * ({k1} + 1) / (h.tf + {k1} * (1 - {b} + {b} * h.term_count / s.avgdl))) AS score "
            "  FROM hits h JOIN df d USING (lexeme) CROSS JOIN stats s GROUP BY h.id) "
            "SELECT {columns}, scored.score FROM scored JOIN {turns} t "
            "  ON t.bank_id = %(bank_id)s AND t.id = scored.id {where} "
            "ORDER BY scored.score DESC, t.occurred_at DESC, t.id LIMIT %(limit)s"
        ).format(
            columns=_TURN_COLUMNS_OF_T,
            turns=self._turns,
            k1=sql.Literal(BM25_K1),
            b=sql.Literal(BM25_B),
            where=sql.SQL("AND ") + sql.SQL(" AND ").join(window) if window else sql.SQL(""),
        )
        params = {
            "bank_id": bank_id,
            "query": query,
            "lexemes": list(weights),
            "weights": [float(count) for count in weights.values()],
            "start": time_range.start,
            "end": time_range.end,
            "limit": limit,
        }
        async with self._connection() as conn:
            rows = await (await conn.execute(statement, params)).fetchall()
        return [ScoredTurn(_turn_from_row(row), float(row["score"])) for row in rows]

    async def list_turns(self, bank_id: str, after: PageKey | None, limit: int) -> list[Turn]:
        keyset = sql.SQL("AND (occurred_at, id) > (%(at)s, %(id)s) ") if after else sql.SQL("")
        statement = sql.SQL(
            "SELECT {columns} FROM {turns} WHERE bank_id = %(bank_id)s AND archived_at IS NULL {keyset}"
            "ORDER BY occurred_at, id LIMIT %(limit)s"
        ).format(columns=_TURN_COLUMNS, turns=self._turns, keyset=keyset)
        params = {
            "bank_id": bank_id,
            "limit": limit,
            "at": after.occurred_at if after else None,
            "id": after.id if after else None,
        }
        async with self._connection() as conn:
            rows = await (await conn.execute(statement, params)).fetchall()
        return [_turn_from_row(row) for row in rows]

    async def write_episode(self, bank_id: str, episode: Episode) -> Episode:
        meta = episode.meta
        insert = sql.SQL(
            "INSERT INTO {episodes} (bank_id, id, session_id, situation, action, outcome, lesson, task_type, "
            "tools, result, source, trust, tags, importance, source_turn_ids, occurred_at, schema_version, "
            "search_terms) VALUES (%(bank_id)s, %(id)s, %(session_id)s, %(situation)s, %(action)s, "
            "%(outcome)s, %(lesson)s, %(task_type)s, %(tools)s, %(result)s, %(source)s, %(trust)s, %(tags)s, "
            "%(importance)s, %(source_turn_ids)s, coalesce(%(occurred_at)s::timestamptz, now()), "
            "%(schema_version)s, %(search_terms)s::tsvector) "
            "ON CONFLICT (bank_id, id) DO NOTHING RETURNING {columns}"
        ).format(episodes=self._episodes, columns=_EPISODE_COLUMNS)
        select = sql.SQL("SELECT {columns} FROM {episodes} WHERE bank_id = %s AND id = %s").format(
            columns=_EPISODE_COLUMNS, episodes=self._episodes
        )
        params = {
            "bank_id": bank_id,
            "id": episode.id,
            "session_id": episode.session_id,
            "situation": episode.situation,
            "action": episode.action,
            "outcome": episode.outcome,
            "lesson": episode.lesson,
            "task_type": episode.task_type,
            "tools": list(episode.tools),
            "result": episode.result.value,
            **meta.to_fields(),
            "occurred_at": meta.time,
            "search_terms": tsvector_literal(episode.text_parts()),
        }
        async with self._connection() as conn, conn.transaction():
            row = await (await conn.execute(insert, params)).fetchone()
            if row is None:  # the id is already stored: writing it again is a no-op
                row = await (await conn.execute(select, (bank_id, episode.id))).fetchone()
        if row is None:
            raise RuntimeError(f"episode {episode.id!r} neither inserted nor found")
        return _episode_from_row(row)

    async def list_episodes(
        self, bank_id: str, session_id: str, before: PageKey | None, limit: int
    ) -> list[Episode]:
        conditions = [sql.SQL("bank_id = %(bank_id)s")]
        if session_id:
            conditions.append(sql.SQL("session_id = %(session_id)s"))
        if before is not None:
            conditions.append(sql.SQL("(occurred_at, id) < (%(at)s, %(id)s)"))
        statement = sql.SQL(
            "SELECT {columns} FROM {episodes} WHERE {where} ORDER BY occurred_at DESC, id DESC "
            "LIMIT %(limit)s"
        ).format(columns=_EPISODE_COLUMNS, episodes=self._episodes, where=sql.SQL(" AND ").join(conditions))
        params = {
            "bank_id": bank_id,
            "session_id": session_id,
            "limit": limit,
            "at": before.occurred_at if before else None,
            "id": before.id if before else None,
        }
        async with self._connection() as conn:
            rows = await (await conn.execute(statement, params)).fetchall()
        return [_episode_from_row(row) for row in rows]

    async def forget_turns(self, bank_id: str, turn_ids: Sequence[str], hard: bool) -> int:
        if hard:
            statement = sql.SQL("DELETE FROM {turns} WHERE bank_id = %s AND id = ANY(%s)")
        else:
            statement = sql.SQL(
                "UPDATE {turns} SET archived_at = now() "
                "WHERE bank_id = %s AND id = ANY(%s) AND archived_at IS NULL"
            )
        async with self._connection() as conn:
            cursor = await conn.execute(statement.format(turns=self._turns), (bank_id, list(turn_ids)))
        return max(cursor.rowcount, 0)

    async def ping(self) -> bool:
        try:
            async with self._pool.connection(timeout=2.0) as conn:
                await conn.execute("SELECT 1")
            return True
        except Exception:
            log.warning("episodic store did not answer", exc_info=True)
            return False

    async def close(self) -> None:
        await self._pool.close()
