"""The lesson store: PostgreSQL, in this layer's own schema. All SQL of the layer lives here."""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import logging
import math
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import psycopg
from psycopg import AsyncConnection, sql
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from hindsight.reflect.domain import Lesson, LessonPage, Method, ScoredLesson
from hindsight.reflect.settings import ReflectSettings
from hindsight.runtime.errors import InvalidArgument, Unavailable
from hindsight.runtime.migrations import load_migrations, migrate
from hindsight.runtime.records import RecordMeta
from hindsight.runtime.tsearch import query_terms, tsquery_literal, tsvector_literal

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Upserted:
    """Lessons as stored, and the older lessons they superseded (contradicted) in the same transaction."""

    lessons: list[Lesson]
    superseded_ids: list[str]


@dataclass(frozen=True)
class Merge:
    """Near-duplicates folded into one kept lesson."""

    keep_id: str
    confidence: float
    """The kept lesson's new confidence."""
    merged_ids: list[str]


def _lesson_columns(bank_id: str, lesson: Lesson) -> tuple[Any, ...]:
    """A lesson's stored columns up to ``stance``, in the order both the upsert and the import write them."""
    return (
        bank_id,
        lesson.id,
        lesson.situation,
        lesson.action,
        lesson.outcome,
        lesson.lesson,
        lesson.confidence,
        list(lesson.source_episode_ids),
        list(lesson.meta.source_turn_ids),
        list(lesson.meta.tags),
        lesson.meta.source.value,
        int(lesson.meta.trust),
        lesson.meta.importance,
        lesson.meta.time,
        lesson.meta.schema_version,
        tsvector_literal((lesson.situation, lesson.action, lesson.outcome, lesson.lesson)),
        lesson.method.value,
        lesson.topic,
        lesson.action_key,
        lesson.stance,
    )


class LessonStore(Protocol):
    """Where a bank's lessons are kept."""

    async def upsert(self, bank_id: str, lessons: Sequence[Lesson], now: datetime) -> Upserted:
        """Insert or merge lessons and supersede the ones they contradict, in one transaction."""
        ...

    async def insert(self, bank_id: str, lessons: Sequence[Lesson], now: datetime) -> int:
        """Insert lessons whole (statistics and life cycle included); stored ids are left unchanged."""
        ...

    async def current(self, bank_id: str, after_id: str, limit: int) -> list[Lesson]:
        """Lessons not archived, by id, after ``after_id``: maintenance walks them in batches."""
        ...

    async def set_weights(self, bank_id: str, weights: dict[str, float]) -> None:
        """New freshness weights."""
        ...

    async def archive(self, bank_id: str, ids: Sequence[str], now: datetime) -> list[str]:
        """Archive these (current) lessons; returns the ids that were current."""
        ...

    async def merge(self, bank_id: str, merge: Merge, now: datetime) -> list[str]:
        """Fold duplicates into the kept lesson (provenance united, duplicates archived with a link)."""
        ...

    async def spend_llm(self, bank_id: str, now: datetime, per_hour: int) -> bool:
        """Take one LLM reflection from the bank's budget for this clock hour; False when spent."""
        ...

    async def session_marks(self, bank_id: str) -> dict[str, datetime]:
        """Newest episode time each reflected session had when it was last reflected on."""
        ...

    async def mark_session(self, bank_id: str, session_id: str, now: datetime, newest_seen: datetime) -> None:
        """Record a reflection on a session."""
        ...

    async def note_bank(self, bank_id: str) -> None:
        """Remember a bank, so that scheduled maintenance visits it."""
        ...

    async def banks(self) -> list[str]:
        """Every bank remembered, sorted."""
        ...

    async def page(self, bank_id: str, page_size: int, page_token: str) -> LessonPage:
        """Lessons most confident first, a page at a time."""
        ...

    async def search(
        self, bank_id: str, queries: Sequence[str], limit: int, now: datetime
    ) -> list[list[ScoredLesson]]:
        """Keyword search over current lessons for each query, one list per query (best first, at most
        ``limit`` each), counting one hit on every lesson returned, however many queries found it."""
        ...

    async def purge(self, bank_id: str, source_ids: Sequence[str], session_id: str, whole_bank: bool) -> int:
        """Delete lessons citing any of the source ids (and the session's mark), or the whole bank's."""
        ...

    async def ready(self) -> bool:
        """Whether PostgreSQL answers; never raises."""
        ...


def encode_page_token(confidence: float, lesson_id: str) -> str:
    """An opaque token for the page after the lesson (``confidence``, ``lesson_id``)."""
    payload = json.dumps({"k": "lessons", "c": confidence, "i": lesson_id}, separators=(",", ":"))
    return base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")


def decode_page_token(token: str, field: str = "page_token") -> tuple[float, str] | None:
    """The position a token encodes (None for an empty token); a malformed one is INVALID_ARGUMENT."""
    if not token:
        return None
    try:
        data = json.loads(base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_", validate=True))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidArgument(field, "is not a valid page token") from None
    if (
        not isinstance(data, dict)
        or data.get("k") != "lessons"
        or not isinstance(data.get("i"), str)
        or not isinstance(data.get("c"), int | float)
        or isinstance(data.get("c"), bool)
        or not math.isfinite(data["c"])
    ):
        raise InvalidArgument(field, "is not a valid page token for this list")
    return float(data["c"]), data["i"]


def _lesson(row: dict[str, Any]) -> Lesson:
    return Lesson(
        id=row["id"],
        situation=row["situation"],
        action=row["action"],
        outcome=row["outcome"],
        lesson=row["lesson"],
        confidence=row["confidence"],
        source_episode_ids=tuple(row["source_episode_ids"]),
        meta=RecordMeta.from_fields(row, time=row["happened_at"]),
        hit_count=row["hit_count"],
        last_hit_at=row["last_hit_at"],
        method=Method(row["method"]),
        topic=row["topic"],
        action_key=row["action_key"],
        stance=row["stance"],
        weight=row["weight"],
        archived_at=row["archived_at"],
        superseded_by=row["superseded_by"] or "",
        merged_into=row["merged_into"] or "",
        created_at=row["created_at"],
    )


class PostgresLessonStore:
    """The real store. Build it with :func:`open_lesson_store`, which migrates the schema first."""

    def __init__(self, pool: AsyncConnectionPool, schema: str) -> None:
        self._pool = pool
        self._schema = schema
        table = sql.Identifier(schema, "lessons")
        merge = sql.Identifier(schema, "merge_ids")
        self._upsert = sql.SQL(
            """
            INSERT INTO {table} AS l (bank_id, id, situation, action, outcome, lesson, confidence,
                source_episode_ids, source_turn_ids, tags, source, trust, importance, happened_at,
                schema_version, search_terms, method, topic, action_key, stance, created_at, updated_at)
            VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::tsvector, %s, %s, %s, %s,
                %s, %s)
            ON CONFLICT (bank_id, id) DO UPDATE SET
                confidence = greatest(l.confidence, excluded.confidence),
                source_episode_ids = {merge}(l.source_episode_ids, excluded.source_episode_ids),
                source_turn_ids = {merge}(l.source_turn_ids, excluded.source_turn_ids),
                tags = {merge}(l.tags, excluded.tags),
                trust = least(l.trust, excluded.trust),
                importance = greatest(l.importance, excluded.importance),
                happened_at = greatest(l.happened_at, excluded.happened_at),
                topic = excluded.topic,
                action_key = excluded.action_key,
                stance = excluded.stance,
                updated_at = excluded.updated_at
            RETURNING *
            """
        ).format(table=table, merge=merge)
        # Among current lessons on the same topic and action, the newest decides: every current lesson
        # taking the opposite stance is superseded by it (archived, with a link).
        self._supersede = sql.SQL(
            """
            WITH touched AS (
                SELECT DISTINCT topic, action_key FROM {table}
                WHERE bank_id = %(bank)s AND id = ANY(%(ids)s) AND stance <> 0 AND action_key <> ''
            ), newest AS (
                SELECT DISTINCT ON (l.topic, l.action_key) l.topic, l.action_key, l.id, l.stance
                FROM {table} AS l JOIN touched USING (topic, action_key)
                WHERE l.bank_id = %(bank)s AND l.archived_at IS NULL AND l.stance <> 0
                ORDER BY l.topic, l.action_key, l.happened_at DESC NULLS LAST, l.created_at DESC, l.id
            )
            UPDATE {table} AS l SET superseded_by = newest.id, archived_at = %(now)s, updated_at = %(now)s
            FROM newest
            WHERE l.bank_id = %(bank)s AND l.archived_at IS NULL AND l.topic = newest.topic
                AND l.action_key = newest.action_key AND l.stance = -newest.stance
            RETURNING l.id
            """
        ).format(table=table)
        self._current = sql.SQL(
            "SELECT * FROM {table} WHERE bank_id = %s AND archived_at IS NULL AND id > %s "
            "ORDER BY id LIMIT %s"
        ).format(table=table)
        self._set_weight = sql.SQL("UPDATE {table} SET weight = %s WHERE bank_id = %s AND id = %s").format(
            table=table
        )
        self._archive = sql.SQL(
            "UPDATE {table} SET archived_at = %s, updated_at = %s "
            "WHERE bank_id = %s AND id = ANY(%s) AND archived_at IS NULL RETURNING id"
        ).format(table=table)
        self._merge_into = sql.SQL(
            """
            WITH dup AS (
                SELECT coalesce(array_agg(e ORDER BY e), '{{}}') AS episodes FROM (
                    SELECT unnest(source_episode_ids) AS e FROM {table}
                    WHERE bank_id = %(bank)s AND id = ANY(%(ids)s)
                ) AS x
            ), turns AS (
                SELECT coalesce(array_agg(t ORDER BY t), '{{}}') AS turns FROM (
                    SELECT unnest(source_turn_ids) AS t FROM {table}
                    WHERE bank_id = %(bank)s AND id = ANY(%(ids)s)
                ) AS y
            )
            UPDATE {table} AS l SET confidence = %(confidence)s,
                source_episode_ids = {merge}(l.source_episode_ids, dup.episodes),
                source_turn_ids = {merge}(l.source_turn_ids, turns.turns),
                updated_at = %(now)s
            FROM dup, turns WHERE l.bank_id = %(bank)s AND l.id = %(keep)s AND l.archived_at IS NULL
            RETURNING l.id
            """
        ).format(table=table, merge=merge)
        self._mark_merged = sql.SQL(
            "UPDATE {table} SET merged_into = %s, archived_at = %s, updated_at = %s "
            "WHERE bank_id = %s AND id = ANY(%s) AND archived_at IS NULL RETURNING id"
        ).format(table=table)
        self._spend = sql.SQL(
            """
            INSERT INTO {budget} AS b (bank_id, hour_start, used) VALUES (%s, %s, 1)
            ON CONFLICT (bank_id, hour_start) DO UPDATE SET used = b.used + 1 WHERE b.used < %s
            RETURNING used
            """
        ).format(budget=sql.Identifier(schema, "llm_budget"))
        marks = sql.Identifier(schema, "session_marks")
        self._marks = sql.SQL("SELECT session_id, newest_seen FROM {marks} WHERE bank_id = %s").format(
            marks=marks
        )
        self._mark = sql.SQL(
            """
            INSERT INTO {marks} AS m (bank_id, session_id, reflected_at, newest_seen) VALUES (%s, %s, %s, %s)
            ON CONFLICT (bank_id, session_id) DO UPDATE SET reflected_at = excluded.reflected_at,
                newest_seen = greatest(m.newest_seen, excluded.newest_seen)
            """
        ).format(marks=marks)
        banks = sql.Identifier(schema, "banks")
        self._note_bank = sql.SQL("INSERT INTO {banks} (bank_id) VALUES (%s) ON CONFLICT DO NOTHING").format(
            banks=banks
        )
        self._banks = sql.SQL("SELECT bank_id FROM {banks} ORDER BY bank_id").format(banks=banks)
        self._known_banks: set[str] = set()
        self._page_first = sql.SQL(
            "SELECT * FROM {table} WHERE bank_id = %s AND archived_at IS NULL "
            "ORDER BY confidence DESC, id LIMIT %s"
        ).format(table=table)
        self._page_after = sql.SQL(
            "SELECT * FROM {table} WHERE bank_id = %s AND archived_at IS NULL "
            "AND (confidence < %s OR (confidence = %s AND id > %s)) ORDER BY confidence DESC, id LIMIT %s"
        ).format(table=table)
        self._search = sql.SQL(
            """
            WITH queries AS (
                SELECT q, phrasing FROM unnest(CAST(%s AS tsquery[])) WITH ORDINALITY AS given(q, phrasing)
            ),
            hits AS (
                SELECT queries.phrasing, found.id, found.score
                FROM queries CROSS JOIN LATERAL (
                    SELECT id, ts_rank(search_terms, queries.q) * (0.5 + 0.5 * confidence) * weight AS score
                    FROM {table}
                    WHERE bank_id = %s AND archived_at IS NULL AND search_terms @@ queries.q
                    ORDER BY score DESC, id
                    LIMIT %s
                ) AS found
            ),
            counted AS (
                UPDATE {table} AS l SET hit_count = l.hit_count + 1, last_hit_at = %s, weight = 1
                FROM (SELECT DISTINCT id FROM hits) AS hit
                WHERE l.bank_id = %s AND l.id = hit.id
                RETURNING l.*
            )
            SELECT counted.*, hits.phrasing, hits.score FROM hits JOIN counted ON counted.id = hits.id
            """
        ).format(table=table)

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection]:
        """A pooled connection; PostgreSQL being unreachable or saturated is UNAVAILABLE, not INTERNAL."""
        try:
            async with self._pool.connection() as conn:
                yield conn
        except PoolTimeout as exc:
            raise Unavailable("no PostgreSQL connection free in time") from exc
        except psycopg.OperationalError as exc:
            raise Unavailable(f"PostgreSQL: {exc}") from exc

    async def upsert(self, bank_id: str, lessons: Sequence[Lesson], now: datetime) -> Upserted:
        """Merge with what is stored: provenance is united, confidence and importance only rise; an
        archived lesson stays archived. Then the contradictions the new lessons bring are resolved."""
        if not lessons:
            return Upserted([], [])
        params = [
            (
                *_lesson_columns(bank_id, lesson),
                now,
                now,
            )
            for lesson in lessons
        ]
        rows: list[dict[str, Any]] = []
        async with self._connection() as conn, conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
            await cur.executemany(self._upsert, params, returning=True)
            while True:
                rows.extend(await cur.fetchall())
                if not cur.nextset():
                    break
            ids = [row["id"] for row in rows]
            await cur.execute(self._supersede, {"bank": bank_id, "ids": ids, "now": now})
            superseded = sorted(row["id"] for row in await cur.fetchall())
            await cur.execute(self._note_bank, (bank_id,))
            if superseded:
                await cur.execute(
                    sql.SQL("SELECT * FROM {} WHERE bank_id = %s AND id = ANY(%s)").format(
                        sql.Identifier(self._schema, "lessons")
                    ),
                    (bank_id, ids),
                )
                rows = await cur.fetchall()
        return Upserted([_lesson(row) for row in rows], superseded)

    async def insert(self, bank_id: str, lessons: Sequence[Lesson], now: datetime) -> int:
        """Insert lessons whole (statistics and life cycle included); stored ids are left unchanged."""
        unique = list({lesson.id: lesson for lesson in lessons}.values())
        if not unique:
            return 0
        insert = sql.SQL(
            """
            INSERT INTO {table} (bank_id, id, situation, action, outcome, lesson, confidence,
                source_episode_ids, source_turn_ids, tags, source, trust, importance, happened_at,
                schema_version, search_terms, method, topic, action_key, stance, hit_count, last_hit_at,
                weight, archived_at, superseded_by, merged_into, created_at, updated_at)
            VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::tsvector, %s, %s, %s, %s,
                %s, %s, %s, %s, %s, %s, %s, %s)
            ON CONFLICT (bank_id, id) DO NOTHING
            RETURNING id
            """
        ).format(table=sql.Identifier(self._schema, "lessons"))
        params = [
            (
                *_lesson_columns(bank_id, lesson),
                lesson.hit_count,
                lesson.last_hit_at,
                lesson.weight,
                lesson.archived_at,
                lesson.superseded_by or None,
                lesson.merged_into or None,
                lesson.created_at or now,
                now,
            )
            for lesson in unique
        ]
        written = 0
        async with self._connection() as conn, conn.transaction(), conn.cursor() as cur:
            await cur.executemany(insert, params, returning=True)
            while True:
                written += len(await cur.fetchall())
                if not cur.nextset():
                    break
            await cur.execute(self._note_bank, (bank_id,))
        return written

    async def current(self, bank_id: str, after_id: str, limit: int) -> list[Lesson]:
        """Keyset by id, so a maintenance run can resume after any batch."""
        async with self._connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(self._current, (bank_id, after_id, limit))
            return [_lesson(row) for row in await cur.fetchall()]

    async def set_weights(self, bank_id: str, weights: dict[str, float]) -> None:
        """One transaction for the batch."""
        if not weights:
            return
        async with self._connection() as conn, conn.transaction(), conn.cursor() as cur:
            await cur.executemany(self._set_weight, [(w, bank_id, i) for i, w in sorted(weights.items())])

    async def archive(self, bank_id: str, ids: Sequence[str], now: datetime) -> list[str]:
        """Only current lessons change: archiving twice changes nothing."""
        if not ids:
            return []
        async with self._connection() as conn, conn.cursor() as cur:
            await cur.execute(self._archive, (now, now, bank_id, list(ids)))
            return sorted(row[0] for row in await cur.fetchall())

    async def merge(self, bank_id: str, merge: Merge, now: datetime) -> list[str]:
        """The kept lesson takes the duplicates' provenance and the raised confidence; they are archived."""
        args = {
            "bank": bank_id,
            "ids": merge.merged_ids,
            "keep": merge.keep_id,
            "confidence": merge.confidence,
            "now": now,
        }
        async with self._connection() as conn, conn.transaction(), conn.cursor() as cur:
            await cur.execute(self._merge_into, args)
            if await cur.fetchone() is None:
                return []  # the kept lesson was archived meanwhile: leave the duplicates for the next run
            await cur.execute(self._mark_merged, (merge.keep_id, now, now, bank_id, merge.merged_ids))
            return sorted(row[0] for row in await cur.fetchall())

    async def spend_llm(self, bank_id: str, now: datetime, per_hour: int) -> bool:
        """Atomic across replicas: the row for (bank, hour) counts up only while under the budget."""
        if per_hour <= 0:
            return False
        hour = now.replace(minute=0, second=0, microsecond=0)
        async with self._connection() as conn, conn.cursor() as cur:
            await cur.execute(self._spend, (bank_id, hour, per_hour))
            return await cur.fetchone() is not None

    async def session_marks(self, bank_id: str) -> dict[str, datetime]:
        """All of a bank's marks."""
        async with self._connection() as conn, conn.cursor() as cur:
            await cur.execute(self._marks, (bank_id,))
            return {row[0]: row[1] for row in await cur.fetchall()}

    async def mark_session(self, bank_id: str, session_id: str, now: datetime, newest_seen: datetime) -> None:
        """The newest episode seen only moves forward."""
        async with self._connection() as conn:
            await conn.execute(self._mark, (bank_id, session_id, now, newest_seen))

    async def note_bank(self, bank_id: str) -> None:
        """Written once per bank per process: recall calls this on every search."""
        if bank_id in self._known_banks:
            return
        async with self._connection() as conn:
            await conn.execute(self._note_bank, (bank_id,))
        self._known_banks.add(bank_id)

    async def banks(self) -> list[str]:
        """Sorted."""
        async with self._connection() as conn, conn.cursor() as cur:
            await cur.execute(self._banks)
            return [row[0] for row in await cur.fetchall()]

    async def page(self, bank_id: str, page_size: int, page_token: str) -> LessonPage:
        """Keyset pagination on (confidence desc, id): stable while lessons are added."""
        after = decode_page_token(page_token)
        async with self._connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            if after is None:
                await cur.execute(self._page_first, (bank_id, page_size + 1))
            else:
                await cur.execute(self._page_after, (bank_id, after[0], after[0], after[1], page_size + 1))
            rows = await cur.fetchall()
        lessons = [_lesson(row) for row in rows[:page_size]]
        token = encode_page_token(lessons[-1].confidence, lessons[-1].id) if len(rows) > page_size else ""
        return LessonPage(lessons, token)

    async def search(
        self, bank_id: str, queries: Sequence[str], limit: int, now: datetime
    ) -> list[list[ScoredLesson]]:
        """Score = ts_rank * (0.5 + 0.5 * confidence) * weight over current lessons, every query in one
        statement; the hits' counters move (once per lesson), and their weight is restored, in it too."""
        tsqueries = [tsquery_literal(query_terms(query)) for query in queries]
        usable = [index for index, tsquery in enumerate(tsqueries) if tsquery is not None]
        found: list[list[ScoredLesson]] = [[] for _ in queries]
        if not usable:
            return found
        params = ([tsqueries[index] for index in usable], bank_id, limit, now, bank_id)
        async with self._connection() as conn, conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(self._search, params)
            rows = await cur.fetchall()
        for row in rows:
            found[usable[row["phrasing"] - 1]].append(ScoredLesson(_lesson(row), float(row["score"])))
        return [sorted(hits, key=lambda hit: (-hit.score, hit.lesson.id)) for hits in found]

    async def purge(self, bank_id: str, source_ids: Sequence[str], session_id: str, whole_bank: bool) -> int:
        """Hard delete, archived lessons included (their provenance holds the purged ids too); a whole
        bank also loses its session marks, LLM budget and its place in the list of banks."""
        schema = self._schema
        lessons = sql.Identifier(schema, "lessons")
        async with self._connection() as conn, conn.transaction(), conn.cursor() as cur:
            if whole_bank:
                await cur.execute(sql.SQL("DELETE FROM {} WHERE bank_id = %s").format(lessons), (bank_id,))
                deleted = max(cur.rowcount, 0)
                for table in ("session_marks", "llm_budget", "banks"):
                    await cur.execute(
                        sql.SQL("DELETE FROM {} WHERE bank_id = %s").format(sql.Identifier(schema, table)),
                        (bank_id,),
                    )
                self._known_banks.discard(bank_id)
                return deleted
            await cur.execute(
                sql.SQL(
                    "DELETE FROM {} WHERE bank_id = %s AND (source_episode_ids && %s::text[] "
                    "OR source_turn_ids && %s::text[])"
                ).format(lessons),
                (bank_id, list(source_ids), list(source_ids)),
            )
            deleted = max(cur.rowcount, 0)
            if session_id:
                await cur.execute(
                    sql.SQL("DELETE FROM {} WHERE bank_id = %s AND session_id = %s").format(
                        sql.Identifier(schema, "session_marks")
                    ),
                    (bank_id, session_id),
                )
        log.info("purged lessons", extra={"bank_id": bank_id, "deleted": deleted})
        return deleted

    async def ready(self) -> bool:
        """``SELECT 1`` answers."""
        try:
            async with self._pool.connection(timeout=2.0) as conn:
                await conn.execute("SELECT 1")
            return True
        except Exception:
            log.warning("postgres readiness check failed", exc_info=True)
            return False


@contextlib.asynccontextmanager
async def open_lesson_store(settings: ReflectSettings) -> AsyncIterator[PostgresLessonStore]:
    """Open the pool, migrate the schema (safe to run twice, or from two replicas at once), then serve."""
    pool = AsyncConnectionPool(
        settings.database_url,
        min_size=settings.pool_min_size,
        max_size=settings.pool_max_size,
        timeout=settings.acquire_timeout_seconds,
        kwargs={"autocommit": True},
        open=False,
        name="reflect",
    )
    try:
        await pool.open(wait=True, timeout=settings.connect_timeout_seconds)
        async with pool.connection() as conn:
            applied = await migrate(conn, settings.schema, load_migrations("hindsight.reflect"))
        log.info("lesson store open", extra={"schema": settings.schema, "migrations_applied": applied})
        yield PostgresLessonStore(pool, settings.schema)
    finally:
        await pool.close()
