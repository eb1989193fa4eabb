"""The episodes family of the episodic store: episodes written by a caller, listed and searched, and the
segments a session's turns are cut into (merged into a stored episode they repeat), with the session's
segmentation watermark.

A mixin on :class:`~hindsight.episodic.store_base.StoreBase` (see there why mixins), assembled into
:class:`~hindsight.episodic.store.PostgresEpisodicStore`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from psycopg import AsyncConnection, sql
from psycopg.rows import DictRow

from hindsight.episodic.episode_rows import (
    EPISODE_COLUMNS,
    EPISODE_COLUMNS_OF_E,
    dedup_key,
    dedup_terms,
    episode_conditions,
    episode_from_row,
    episode_params,
    jaccard,
)
from hindsight.episodic.models import Episode, EpisodeFilter, Outcome, ScoredEpisode
from hindsight.episodic.outbox_entries import EPISODE, SEMANTIC, SYNC
from hindsight.episodic.paging import PageKey
from hindsight.episodic.rows import TURN_COLUMNS_OF_T, Decay, and_, decay_factor, turn_from_row
from hindsight.episodic.store_base import StoreBase
from hindsight.runtime.errors import FailedPrecondition
from hindsight.runtime.records import RecordMeta, Turn
from hindsight.runtime.tsearch import tsquery_literal

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SegmentWrite:
    """Episodes made from a session's finished segments, and the last turn they cover (the watermark)."""

    episodes: list[Episode]
    method: str
    through: PageKey


class EpisodeRecords(StoreBase):
    """Episodes: written, listed, searched, and made from segments."""

    async def write_episode(self, bank_id: str, episode: Episode, method: str = "written") -> Episode:
        async with self._connection() as conn, conn.transaction():
            await self.lineage.lock(conn, bank_id)
            await self.lineage.refuse_purged(conn, bank_id, [episode.id], "episode.id")
            episode = await self._without_purged_sources(conn, bank_id, episode)
            return await self._insert_or_read(conn, bank_id, episode, method)

    async def _insert_or_read(
        self, conn: AsyncConnection[DictRow], bank_id: str, episode: Episode, method: str
    ) -> Episode:
        """Insert the episode, or read the stored one when its id is stored already (writing it again is a
        no-op: a retried write, or a segment stored before, whose id derives from its first turn)."""
        row = await self._insert_episode(conn, bank_id, episode, method)
        if row is None:
            select = sql.SQL("SELECT {columns} FROM {episodes} WHERE bank_id = %s AND id = %s").format(
                columns=EPISODE_COLUMNS, episodes=self._episodes
            )
            row = await (await conn.execute(select, (bank_id, episode.id))).fetchone()
        if row is None:
            raise RuntimeError(f"episode {episode.id!r} neither inserted nor found")
        return episode_from_row(row)

    async def _without_purged_sources(
        self, conn: AsyncConnection[DictRow], bank_id: str, episode: Episode
    ) -> Episode:
        """The episode citing only the turns that were not purged; refused when it cites only purged ones
        (it would bring back a record of what was erased)."""
        cited = episode.meta.source_turn_ids
        purged = await self.lineage.purged_among(conn, bank_id, cited)
        if not purged:
            return episode
        left = tuple(turn_id for turn_id in cited if turn_id not in purged)
        if not left:
            raise FailedPrecondition(
                f"episode.meta.source_turn_ids: every turn it cites was purged from bank {bank_id!r}"
            )
        return replace(episode, meta=replace(episode.meta, source_turn_ids=left))

    async def list_episodes(
        self, bank_id: str, session_id: str, before: PageKey | None, limit: int
    ) -> list[Episode]:
        conditions = [
            sql.SQL("e.bank_id = %(bank_id)s"),
            sql.SQL("e.archived_at IS NULL"),
            self.lineage.sources_live("e"),
        ]
        if session_id:
            conditions.append(sql.SQL("e.session_id = %(session_id)s"))
        if before is not None:
            conditions.append(sql.SQL("(e.occurred_at, e.id) < (%(at)s, %(id)s)"))
        statement = sql.SQL(
            "SELECT {columns} FROM {episodes} e WHERE {where} ORDER BY e.occurred_at DESC, e.id DESC "
            "LIMIT %(limit)s"
        ).format(
            columns=EPISODE_COLUMNS_OF_E, episodes=self._episodes, where=sql.SQL(" AND ").join(conditions)
        )
        params = {
            "bank_id": bank_id,
            "session_id": session_id,
            "limit": limit,
            "at": before.occurred_at if before else None,
            "id": before.id if before else None,
        }
        async with self._connection() as conn:
            rows = await (await conn.execute(statement, params)).fetchall()
        return [episode_from_row(row) for row in rows]

    async def search_episodes(
        self, bank_id: str, lexemes: Sequence[str], where: EpisodeFilter, decay: Decay, limit: int
    ) -> list[ScoredEpisode]:
        """The filters (task type and tools first: they are indexed) narrow the candidates, which are then
        ranked by ``ts_rank`` (normalised by length) times the time decay."""
        params: dict[str, Any] = {"bank_id": bank_id, "limit": limit}
        conditions = [
            sql.SQL("e.bank_id = %(bank_id)s"),
            *episode_conditions("e", where, params),
            self.lineage.sources_live("e"),
        ]
        factor = decay_factor(sql.Identifier("e", "occurred_at"), decay, params)
        query = tsquery_literal(lexemes)
        if lexemes and query is None:
            return []
        if query is not None:
            params["query"] = query
            conditions.append(sql.SQL("e.search_terms @@ %(query)s::tsquery"))
            rank: sql.Composable = sql.SQL("ts_rank(e.search_terms, %(query)s::tsquery, 1) * {}").format(
                factor
            )
        else:
            rank = factor
        statement = sql.SQL(
            "SELECT {columns}, {rank} AS score FROM {episodes} e WHERE {where} "
            "ORDER BY score DESC, e.occurred_at DESC, e.id LIMIT %(limit)s"
        ).format(columns=EPISODE_COLUMNS_OF_E, rank=rank, episodes=self._episodes, where=and_(conditions))
        async with self._connection() as conn:
            rows = await (await conn.execute(statement, params)).fetchall()
        return [ScoredEpisode(episode_from_row(row), float(row["score"])) for row in rows]

    # ----- segmentation --------------------------------------------------------------------------------
    async def unsegmented_turns(self, bank_id: str, session_id: str, limit: int) -> list[Turn]:
        statement = sql.SQL(
            "SELECT {columns} FROM {turns} t LEFT JOIN {sessions} s "
            "  ON s.bank_id = t.bank_id AND s.session_id = t.session_id "
            "WHERE t.bank_id = %(bank_id)s AND t.session_id = %(session_id)s AND t.archived_at IS NULL "
            "  AND (s.segmented_at IS NULL OR (t.occurred_at, t.id) > (s.segmented_at, s.segmented_id)) "
            "ORDER BY t.occurred_at, t.id LIMIT %(limit)s"
        ).format(columns=TURN_COLUMNS_OF_T, turns=self._turns, sessions=self._sessions)
        async with self._connection() as conn:
            rows = await (
                await conn.execute(statement, {"bank_id": bank_id, "session_id": session_id, "limit": limit})
            ).fetchall()
        return [turn_from_row(row) for row in rows]

    async def save_segments(
        self, bank_id: str, session_id: str, write: SegmentWrite, overlap: float
    ) -> list[Episode]:
        """Under a per-session lock, so two calls never make the same episode twice. Each episode first
        looks for a stored one it repeats (same key, or its situation and action overlap at least
        ``overlap``): found, the stored one absorbs it (provenance, tags and tools united, the time span
        widened, counted once more); otherwise it is inserted."""
        lock = sql.SQL("SELECT pg_advisory_xact_lock(hashtext(%s))")
        mark = sql.SQL(
            "INSERT INTO {sessions} AS s (bank_id, session_id, first_at, last_at, segmented_at, "
            "segmented_id) "
            "VALUES (%(bank_id)s, %(session_id)s, %(at)s, %(at)s, %(at)s, %(id)s) "
            "ON CONFLICT (bank_id, session_id) DO UPDATE SET segmented_at = excluded.segmented_at, "
            "segmented_id = excluded.segmented_id "
            "WHERE s.segmented_at IS NULL "
            "OR (s.segmented_at, s.segmented_id) < (excluded.segmented_at, excluded.segmented_id) "
            "RETURNING 1"
        ).format(sessions=self._sessions)
        saved: list[Episode] = []
        async with self._connection() as conn, conn.transaction():
            await self.lineage.lock(conn, bank_id)
            cited = [turn_id for episode in write.episodes for turn_id in episode.meta.source_turn_ids]
            if await self.lineage.purged_among(conn, bank_id, cited):
                return []  # turns were purged since they were read: the next segmentation reads again
            await conn.execute(lock, (f"hindsight.episodic.segment.{bank_id}\x1f{session_id}",))
            watermark = {
                "bank_id": bank_id,
                "session_id": session_id,
                "at": write.through.occurred_at,
                "id": write.through.id,
            }
            moved = await (await conn.execute(mark, watermark)).fetchone()
            if moved is None:
                return []  # another call segmented these turns already
            for episode in write.episodes:
                saved.append(await self._merge_or_insert(conn, bank_id, episode, write.method, overlap))
        return saved

    async def _merge_or_insert(
        self, conn: AsyncConnection[DictRow], bank_id: str, episode: Episode, method: str, overlap: float
    ) -> Episode:
        key = dedup_key(episode)
        terms = dedup_terms(episode)
        query = tsquery_literal(sorted(terms))
        candidates = sql.SQL(
            "SELECT {columns}, dedup_key FROM {episodes} WHERE bank_id = %(bank_id)s AND archived_at IS NULL "
            "AND (dedup_key = %(key)s OR (%(query)s::tsquery IS NOT NULL AND search_terms @@ "
            "%(query)s::tsquery)) "
            "ORDER BY (dedup_key = %(key)s) DESC, occurred_at DESC LIMIT 20 FOR UPDATE"
        ).format(columns=EPISODE_COLUMNS, episodes=self._episodes)
        rows = await (
            await conn.execute(candidates, {"bank_id": bank_id, "key": key, "query": query})
        ).fetchall()
        for row in rows:
            stored = episode_from_row(row)
            if row["dedup_key"] == key or jaccard(terms, dedup_terms(stored)) >= overlap:
                return await self._absorb(conn, bank_id, stored, episode)
        return await self._insert_or_read(conn, bank_id, episode, method)

    async def _absorb(
        self, conn: AsyncConnection[DictRow], bank_id: str, stored: Episode, new: Episode
    ) -> Episode:
        merged_turns = tuple(dict.fromkeys((*stored.meta.source_turn_ids, *new.meta.source_turn_ids)))
        times = [t for t in (stored.meta.time, new.meta.time) if t is not None]
        merged = Episode(
            id=stored.id,
            session_id=stored.session_id,
            situation=stored.situation,
            action=stored.action,
            outcome=new.outcome or stored.outcome,
            lesson=new.lesson or stored.lesson,
            task_type=stored.task_type or new.task_type,
            tools=tuple(dict.fromkeys((*stored.tools, *new.tools))),
            result=new.result if new.result is not Outcome.UNSPECIFIED else stored.result,
            meta=RecordMeta(
                source_turn_ids=merged_turns,
                source=stored.meta.source,
                trust=min(stored.meta.trust, new.meta.trust),
                time=max(times) if times else None,
                tags=tuple(dict.fromkeys((*stored.meta.tags, *new.meta.tags))),
                importance=max(stored.meta.importance, new.meta.importance),
                schema_version=stored.meta.schema_version,
                agent=stored.meta.agent,
            ),
            recorded_at=stored.recorded_at,
        )
        update = sql.SQL(
            "UPDATE {episodes} SET outcome = %(outcome)s, lesson = %(lesson)s, task_type = %(task_type)s, "
            "tools = %(tools)s, result = %(result)s, trust = %(trust)s, tags = %(tags)s, "
            "importance = %(importance)s, source_turn_ids = %(source_turn_ids)s, "
            "occurred_at = coalesce(%(occurred_at)s::timestamptz, occurred_at), "
            "search_terms = %(search_terms)s::tsvector, "
            "ended_at = greatest(ended_at, %(occurred_at)s::timestamptz), "
            "merged_count = merged_count + 1 WHERE bank_id = %(bank_id)s AND id = %(id)s RETURNING {columns}"
        ).format(episodes=self._episodes, columns=EPISODE_COLUMNS)
        row = await (await conn.execute(update, episode_params(bank_id, merged))).fetchone()
        if row is None:
            raise RuntimeError(f"episode {stored.id!r} vanished while merging")
        await self._enqueue(conn, bank_id, [(SEMANTIC, SYNC, EPISODE, stored.id, {})])
        log.info(
            "merged a repeated episode",
            extra={"bank_id": bank_id, "episode_id": stored.id, "into_from": new.id},
        )
        return episode_from_row(row)
