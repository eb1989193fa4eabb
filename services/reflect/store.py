"""The lesson store: PostgreSQL, in this layer's own schema. All SQL of the layer lives here."""

from __future__ import annotations

import contextlib
import json
import logging
import math
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

from psycopg import AsyncConnection, sql
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from hindsight.reflect.domain import Lesson, LessonPage, Method, ScoredLesson
from hindsight.reflect.settings import ReflectSettings
from hindsight.runtime.database import pool_answers, store_errors
from hindsight.runtime.migrations import load_migrations, migrate
from hindsight.runtime.paging import decode_position, encode_position, foreign_token
from hindsight.runtime.records import RecordMeta
from hindsight.runtime.tsearch import query_terms, tsquery_literal, tsvector_literal

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Upserted:
    """Lessons as stored, and the older lessons they superseded (contradicted) in the same transaction."""

    lessons: list[Lesson]
    superseded_ids: list[str]


@dataclass(frozen=True)
class PurgedLessons:
    """What a purge did to lessons: how many were deleted, and which of them still had a live source.

    A lesson that lost some of its sources is deleted too (its wording may come from the purged one) and
    returned in ``damaged``, provenance trimmed, for the engine to draw again from what it still stands on.
    """

    deleted: int
    damaged: list[Lesson]


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

    async def upsert(
        self, bank_id: str, lessons: Sequence[Lesson], now: datetime, generation: int | None = None
    ) -> Upserted:
        """Insert or merge lessons and supersede the ones they contradict, in one transaction; nothing when
        ``generation`` (read before the episodes were) is no longer the bank's purge generation."""
        ...

    async def purge_generation(self, bank_id: str) -> int:
        """How many times the bank was purged whole (0: never)."""
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

    async def by_ids(self, bank_id: str, ids: Sequence[str]) -> list[Lesson]:
        """The current lessons among ``ids`` (neither archived nor hidden), in the order asked."""
        ...

    async def search(
        self, bank_id: str, queries: Sequence[str], limit: int, now: datetime
    ) -> list[list[ScoredLesson]]:
        """Keyword search over current lessons for each query, one list per query (best first, at most
        ``limit`` each), counting one hit on every lesson returned, however many queries found it."""
        ...

    async def purge(
        self, bank_id: str, source_ids: Sequence[str], session_id: str, whole_bank: bool
    ) -> PurgedLessons:
        """Forget purged sources: every lesson citing one is deleted (the session's mark too), and the ids
        are remembered so later writes do not cite them; or the whole bank's lessons go."""
        ...

    async def lessons_taken(self, bank_id: str, source_ids: Sequence[str]) -> int:
        """How many lessons the purge of these sources took and that are not stored again, whichever call
        deleted them (the edge's or the outbox's)."""
        ...

    async def set_source_states(self, bank_id: str, archived: Sequence[str], live: Sequence[str]) -> int:
        """Note source turns archived or live again; returns how many changed."""
        ...

    async def ready(self) -> bool:
        """Whether PostgreSQL answers; never raises."""
        ...


def encode_page_token(confidence: float, lesson_id: str) -> str:
    """An opaque token for the page after the lesson (``confidence``, ``lesson_id``)."""
    return encode_position({"k": "lessons", "c": confidence, "i": lesson_id})


def decode_page_token(token: str, field: str = "page_token") -> tuple[float, str] | None:
    """The position a token encodes (None for an empty token); a malformed one is INVALID_ARGUMENT."""
    data = decode_position(token, field, "lessons")
    if data is None:
        return None
    if (
        not isinstance(data.get("i"), str)
        or not isinstance(data.get("c"), int | float)
        or isinstance(data.get("c"), bool)
        or not math.isfinite(data["c"])
    ):
        raise foreign_token(field)
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
        # taking the opposite stance is superseded by it (archived, with a link). Topic and action are
        # matched on their digests first, which is what the stance index keys on (the text can be too long
        # for a btree entry), then on the text.
        self._supersede = sql.SQL(
            """
            WITH touched AS (
                SELECT DISTINCT topic, action_key FROM {table}
                WHERE bank_id = %(bank)s AND id = ANY(%(ids)s) AND stance <> 0 AND action_key <> ''
            ), newest AS (
                SELECT DISTINCT ON (l.topic, l.action_key) l.topic, l.action_key, l.id, l.stance
                FROM {table} AS l JOIN touched AS t ON md5(l.topic) = md5(t.topic)
                    AND md5(l.action_key) = md5(t.action_key) AND l.topic = t.topic
                    AND l.action_key = t.action_key
                WHERE l.bank_id = %(bank)s AND l.archived_at IS NULL AND l.stance <> 0
                ORDER BY l.topic, l.action_key, l.happened_at DESC NULLS LAST, l.created_at DESC, l.id
            )
            UPDATE {table} AS l SET superseded_by = newest.id, archived_at = %(now)s, updated_at = %(now)s
            FROM newest
            WHERE l.bank_id = %(bank)s AND l.archived_at IS NULL AND l.stance <> 0
                AND md5(l.topic) = md5(newest.topic) AND md5(l.action_key) = md5(newest.action_key)
                AND l.topic = newest.topic AND l.action_key = newest.action_key AND l.stance = -newest.stance
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
        # A lesson whose every source turn is archived in episodic memory is kept but not shown.
        hidden = sql.SQL(
            "cardinality({table}.source_turn_ids) > 0 AND NOT EXISTS (SELECT 1 FROM "
            "unnest({table}.source_turn_ids) AS s(id) WHERE NOT EXISTS (SELECT 1 FROM {archived} a "
            "WHERE a.bank_id = {table}.bank_id AND a.source_id = s.id))"
        ).format(table=table, archived=sql.Identifier(schema, "archived_sources"))
        self._page_first = sql.SQL(
            "SELECT * FROM {table} WHERE bank_id = %s AND archived_at IS NULL AND NOT ({hidden}) "
            "ORDER BY confidence DESC, id LIMIT %s"
        ).format(table=table, hidden=hidden)
        self._by_ids = sql.SQL(
            "SELECT * FROM {table} WHERE bank_id = %s AND id = ANY(%s) AND archived_at IS NULL "
            "AND NOT ({hidden})"
        ).format(table=table, hidden=hidden)
        self._page_after = sql.SQL(
            "SELECT * FROM {table} WHERE bank_id = %s AND archived_at IS NULL AND NOT ({hidden}) "
            "AND (confidence < %s OR (confidence = %s AND id > %s)) ORDER BY confidence DESC, id LIMIT %s"
        ).format(table=table, hidden=hidden)
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
                        AND NOT ({hidden})
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
        ).format(table=table, hidden=hidden)

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection]:
        """A pooled connection; PostgreSQL being unreachable or saturated is UNAVAILABLE, not INTERNAL, and
        a statement over one of its limits is FAILED_PRECONDITION (retrying it would fail the same way)."""
        async with store_errors("lesson store"), self._pool.connection() as conn:
            yield conn

    async def upsert(
        self, bank_id: str, lessons: Sequence[Lesson], now: datetime, generation: int | None = None
    ) -> Upserted:
        """Merge with what is stored: provenance is united, confidence and importance only rise; an
        archived lesson stays archived. Then the contradictions the new lessons bring are resolved."""
        if not lessons:
            return Upserted([], [])
        rows: list[dict[str, Any]] = []
        async with self._connection() as conn, conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
            lessons = await self._without_purged(conn, bank_id, lessons)
            if generation is not None and generation != await self._generation(conn, bank_id):
                log.info("lessons drawn from a bank purged since not written", extra={"bank_id": bank_id})
                return Upserted([], [])
            if not lessons:
                return Upserted([], [])
            params = [(*_lesson_columns(bank_id, lesson), now, now) for lesson in lessons]
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
        async with self._connection() as conn, conn.transaction(), conn.cursor() as cur:
            unique = await self._without_purged(conn, bank_id, unique)
            written = await self._insert_whole(cur, bank_id, unique, now) if unique else 0
            await cur.execute(self._note_bank, (bank_id,))
        return written

    async def _insert_whole(self, cur: Any, bank_id: str, unique: Sequence[Lesson], now: datetime) -> int:
        """The import's insert, on the caller's cursor; how many rows were new."""
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
        await cur.executemany(insert, params, returning=True)
        while True:
            written += len(await cur.fetchall())
            if not cur.nextset():
                break
        return written

    async def purge_generation(self, bank_id: str) -> int:
        """Read before a reflection reads its episodes (see :meth:`upsert`)."""
        async with self._connection() as conn:
            return await self._generation(conn, bank_id)

    async def _generation(self, conn: AsyncConnection, bank_id: str) -> int:
        async with conn.cursor() as cur:
            await cur.execute(
                sql.SQL("SELECT generation FROM {} WHERE bank_id = %s").format(
                    sql.Identifier(self._schema, "bank_purges")
                ),
                (bank_id,),
            )
            row = await cur.fetchone()
        return 0 if row is None else int(row[0])

    async def _lock(self, conn: AsyncConnection, bank_id: str, exclusive: bool = False) -> None:
        """The bank's lineage lock until the transaction ends: shared for writers of lessons, exclusive for
        a purge, so no lesson citing a purged source is written between a purge's deletes and its
        tombstones."""
        function = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
        await conn.execute(
            sql.SQL("SELECT {}(hashtext(%s))").format(sql.Identifier(function)),
            (f"hindsight.reflect.lineage.{self._schema}\x1f{bank_id}",),
        )

    async def _without_purged(
        self, conn: AsyncConnection, bank_id: str, lessons: Sequence[Lesson]
    ) -> list[Lesson]:
        """Lessons as they may be written after the purges so far: purged sources left out of their
        provenance, and a lesson whose every source was purged left out (a late write of erased content)."""
        await self._lock(conn, bank_id)
        cited = sorted(
            {i for lesson in lessons for i in (*lesson.source_episode_ids, *lesson.meta.source_turn_ids)}
        )
        if not cited:
            return list(lessons)
        async with conn.cursor() as cur:
            await cur.execute(
                sql.SQL("SELECT source_id FROM {} WHERE bank_id = %s AND source_id = ANY(%s)").format(
                    sql.Identifier(self._schema, "purged_sources")
                ),
                (bank_id, cited),
            )
            purged = {row[0] for row in await cur.fetchall()}
        if not purged:
            return list(lessons)
        kept: list[Lesson] = []
        for lesson in lessons:
            episodes = tuple(i for i in lesson.source_episode_ids if i not in purged)
            turns = tuple(i for i in lesson.meta.source_turn_ids if i not in purged)
            if not episodes and not turns:
                log.info("lesson citing only purged sources not written", extra={"lesson_id": lesson.id})
                continue
            kept.append(
                replace(lesson, source_episode_ids=episodes, meta=replace(lesson.meta, source_turn_ids=turns))
            )
        return kept

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

    async def by_ids(self, bank_id: str, ids: Sequence[str]) -> list[Lesson]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        async with self._connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(self._by_ids, (bank_id, wanted))
            found = {row["id"]: _lesson(row) for row in await cur.fetchall()}
        return [found[lesson_id] for lesson_id in wanted if lesson_id in found]

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

    async def purge(
        self, bank_id: str, source_ids: Sequence[str], session_id: str, whole_bank: bool
    ) -> PurgedLessons:
        """Hard delete, archived lessons included (their provenance holds the purged ids too), with the
        ids remembered as tombstones; a whole bank also loses its session marks, LLM budget and its place in
        the list of banks."""
        schema = self._schema
        lessons = sql.Identifier(schema, "lessons")
        ids = sorted(set(source_ids))
        async with self._connection() as conn, conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
            await self._lock(conn, bank_id, exclusive=True)
            if whole_bank:
                await cur.execute(sql.SQL("DELETE FROM {} WHERE bank_id = %s").format(lessons), (bank_id,))
                deleted = max(cur.rowcount, 0)
                for table in ("session_marks", "llm_budget", "banks", "archived_sources"):
                    await cur.execute(
                        sql.SQL("DELETE FROM {} WHERE bank_id = %s").format(sql.Identifier(schema, table)),
                        (bank_id,),
                    )
                await cur.execute(
                    sql.SQL(
                        "INSERT INTO {} AS p (bank_id, generation) VALUES (%s, 1) "
                        "ON CONFLICT (bank_id) DO UPDATE SET generation = p.generation + 1"
                    ).format(sql.Identifier(schema, "bank_purges")),
                    (bank_id,),
                )
                self._known_banks.discard(bank_id)
                return PurgedLessons(deleted, [])
            damaged: list[Lesson] = []
            deleted = 0
            if ids:
                await cur.execute(
                    sql.SQL(
                        "INSERT INTO {} (bank_id, source_id) SELECT %s, u.id "
                        "FROM unnest(%s::text[]) AS u(id) ON CONFLICT DO NOTHING"
                    ).format(sql.Identifier(schema, "purged_sources")),
                    (bank_id, ids),
                )
                await cur.execute(
                    sql.SQL("DELETE FROM {} WHERE bank_id = %s AND source_id = ANY(%s)").format(
                        sql.Identifier(schema, "archived_sources")
                    ),
                    (bank_id, ids),
                )
                await cur.execute(
                    sql.SQL(
                        "DELETE FROM {} WHERE bank_id = %s AND (source_episode_ids && %s::text[] "
                        "OR source_turn_ids && %s::text[]) RETURNING *"
                    ).format(lessons),
                    (bank_id, ids, ids),
                )
                gone = set(ids)
                rows = await cur.fetchall()
                taken: dict[str, list[str]] = {}
                for row in rows:
                    deleted += 1
                    lesson = _lesson(row)
                    for source in {*lesson.source_episode_ids, *lesson.meta.source_turn_ids} & gone:
                        taken.setdefault(source, []).append(lesson.id)
                    episodes = tuple(i for i in lesson.source_episode_ids if i not in gone)
                    turns = tuple(i for i in lesson.meta.source_turn_ids if i not in gone)
                    if (episodes or turns) and lesson.archived_at is None:
                        damaged.append(
                            replace(
                                lesson,
                                source_episode_ids=episodes,
                                meta=replace(lesson.meta, source_turn_ids=turns),
                            )
                        )
                if taken:
                    await cur.execute(
                        sql.SQL(
                            "UPDATE {} AS p SET lesson_ids = ARRAY(SELECT DISTINCT x FROM unnest("
                            "p.lesson_ids || ARRAY(SELECT jsonb_array_elements_text(t.lessons))) AS x(x) "
                            "ORDER BY x) FROM jsonb_each(%s::jsonb) AS t(source_id, lessons) "
                            "WHERE p.bank_id = %s AND p.source_id = t.source_id"
                        ).format(sql.Identifier(schema, "purged_sources")),
                        (json.dumps(taken), bank_id),
                    )
            if session_id:
                await cur.execute(
                    sql.SQL("DELETE FROM {} WHERE bank_id = %s AND session_id = %s").format(
                        sql.Identifier(schema, "session_marks")
                    ),
                    (bank_id, session_id),
                )
        log.info(
            "purged lessons", extra={"bank_id": bank_id, "deleted": deleted, "still_sourced": len(damaged)}
        )
        return PurgedLessons(deleted, damaged)

    async def lessons_taken(self, bank_id: str, source_ids: Sequence[str]) -> int:
        """Distinct lessons recorded on these tombstones that no longer exist (one drawn again under its
        own id from the sources it still stands on is not counted)."""
        if not source_ids:
            return 0
        query = sql.SQL(
            "SELECT count(DISTINCT x) FROM {} AS p, unnest(p.lesson_ids) AS x(x) "
            "WHERE p.bank_id = %s AND p.source_id = ANY(%s) "
            "AND NOT EXISTS (SELECT 1 FROM {} AS l WHERE l.bank_id = p.bank_id AND l.id = x)"
        ).format(sql.Identifier(self._schema, "purged_sources"), sql.Identifier(self._schema, "lessons"))
        async with self._connection() as conn, conn.cursor() as cur:
            await cur.execute(query, (bank_id, sorted(set(source_ids))))
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def set_source_states(self, bank_id: str, archived: Sequence[str], live: Sequence[str]) -> int:
        """Archived turns are remembered, live ones forgotten again: lessons standing only on archived turns
        are hidden from listing and search (see ``hidden`` in ``__init__``)."""
        table = sql.Identifier(self._schema, "archived_sources")
        changed = 0
        async with self._connection() as conn, conn.transaction(), conn.cursor() as cur:
            if archived:
                await cur.execute(
                    sql.SQL(
                        "INSERT INTO {} (bank_id, source_id) SELECT %s, u.id "
                        "FROM unnest(%s::text[]) AS u(id) ON CONFLICT DO NOTHING"
                    ).format(table),
                    (bank_id, sorted(set(archived))),
                )
                changed += max(cur.rowcount, 0)
            if live:
                await cur.execute(
                    sql.SQL("DELETE FROM {} WHERE bank_id = %s AND source_id = ANY(%s)").format(table),
                    (bank_id, sorted(set(live))),
                )
                changed += max(cur.rowcount, 0)
        return changed

    async def ready(self) -> bool:
        """``SELECT 1`` answers."""
        return await pool_answers(self._pool, log, "postgres readiness check failed")


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
