"""The lesson store: PostgreSQL, in this layer's own schema. All SQL of the layer lives here."""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import logging
import math
from collections.abc import AsyncIterator, Sequence
from typing import Any, Protocol

import psycopg
from psycopg import AsyncConnection, sql
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from hindsight.reflect.domain import Lesson, LessonPage, ScoredLesson
from hindsight.reflect.settings import ReflectSettings
from hindsight.runtime.errors import InvalidArgument, Unavailable
from hindsight.runtime.migrations import load_migrations, migrate
from hindsight.runtime.records import RecordMeta
from hindsight.runtime.tsearch import query_terms, tsquery_literal, tsvector_literal

log = logging.getLogger(__name__)


class LessonStore(Protocol):
    """Where a bank's lessons are kept."""

    async def upsert(self, bank_id: str, lessons: Sequence[Lesson]) -> list[Lesson]:
        """Insert or merge lessons in one transaction; returns them as stored."""
        ...

    async def page(self, bank_id: str, page_size: int, page_token: str) -> LessonPage:
        """Lessons most confident first, a page at a time."""
        ...

    async def search(self, bank_id: str, query: str, limit: int) -> list[ScoredLesson]:
        """Keyword search, counting a hit on every lesson returned."""
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
    )


class PostgresLessonStore:
    """The real store. Build it with :func:`open_lesson_store`, which migrates the schema first."""

    def __init__(self, pool: AsyncConnectionPool, schema: str) -> None:
        self._pool = pool
        table = sql.Identifier(schema, "lessons")
        merge = sql.Identifier(schema, "merge_ids")
        self._upsert = sql.SQL(
            """
            INSERT INTO {table} AS l (bank_id, id, situation, action, outcome, lesson, confidence,
                source_episode_ids, source_turn_ids, tags, source, trust, importance, happened_at,
                schema_version, search_terms)
            VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::tsvector)
            ON CONFLICT (bank_id, id) DO UPDATE SET
                confidence = greatest(l.confidence, excluded.confidence),
                source_episode_ids = {merge}(l.source_episode_ids, excluded.source_episode_ids),
                source_turn_ids = {merge}(l.source_turn_ids, excluded.source_turn_ids),
                tags = {merge}(l.tags, excluded.tags),
                trust = least(l.trust, excluded.trust),
                importance = greatest(l.importance, excluded.importance),
                happened_at = greatest(l.happened_at, excluded.happened_at),
                updated_at = now()
            RETURNING *
            """
        ).format(table=table, merge=merge)
        self._page_first = sql.SQL(
            "SELECT * FROM {table} WHERE bank_id = %s ORDER BY confidence DESC, id LIMIT %s"
        ).format(table=table)
        self._page_after = sql.SQL(
            "SELECT * FROM {table} WHERE bank_id = %s AND (confidence < %s OR (confidence = %s AND id > %s)) "
            "ORDER BY confidence DESC, id LIMIT %s"
        ).format(table=table)
        self._search = sql.SQL(
            """
            WITH hits AS (
                SELECT id, ts_rank(search_terms, q) * (0.5 + 0.5 * confidence) AS score
                FROM {table}, CAST(%s AS tsquery) AS q
                WHERE bank_id = %s AND search_terms @@ q
                ORDER BY score DESC, id
                LIMIT %s
            )
            UPDATE {table} AS l SET hit_count = l.hit_count + 1, last_hit_at = now()
            FROM hits WHERE l.bank_id = %s AND l.id = hits.id
            RETURNING l.*, hits.score
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

    async def upsert(self, bank_id: str, lessons: Sequence[Lesson]) -> list[Lesson]:
        """Merge with what is stored: provenance is united, confidence and importance only rise."""
        if not lessons:
            return []
        params = [
            (
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
        return [_lesson(row) for row in rows]

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

    async def search(self, bank_id: str, query: str, limit: int) -> list[ScoredLesson]:
        """Score = ts_rank * (0.5 + 0.5 * confidence); the hits' counters move in the same statement."""
        tsquery = tsquery_literal(query_terms(query))
        if tsquery is None:
            return []
        async with self._connection() as conn, conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(self._search, (tsquery, bank_id, limit, bank_id))
            rows = await cur.fetchall()
        hits = [ScoredLesson(_lesson(row), float(row["score"])) for row in rows]
        return sorted(hits, key=lambda hit: (-hit.score, hit.lesson.id))

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
