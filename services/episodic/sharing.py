"""The sharing family of the episodic store: live turns and episodes of one bank copied into another, each
copy linked to its source (the links themselves are :class:`~hindsight.episodic.shares.SharedCopies`).

A mixin on :class:`~hindsight.episodic.store_base.StoreBase` (see there why mixins), assembled into
:class:`~hindsight.episodic.store.PostgresEpisodicStore`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime

from psycopg import AsyncConnection, sql
from psycopg.rows import DictRow

from hindsight.episodic.episode_rows import EPISODE_COLUMNS_OF_E, episode_from_row
from hindsight.episodic.keyword import analyse_turns
from hindsight.episodic.lineage import WRITTEN
from hindsight.episodic.models import Episode
from hindsight.episodic.rows import TURN_COLUMNS, turn_from_row, turn_params
from hindsight.episodic.shares import Copy, SharedRecord, ShareWrite, episode_copy, turn_copy
from hindsight.episodic.store_base import StoreBase
from hindsight.runtime.records import Source, Turn

log = logging.getLogger(__name__)


class Sharing(StoreBase):
    """Copies of records shared into a bank."""

    async def share(
        self,
        bank_id: str,
        source_bank_id: str,
        ids: Sequence[str],
        copies: Sequence[Copy],
        agent: str,
        claim_until: datetime | None = None,
    ) -> ShareWrite:
        """Under both banks' lineage locks (so that no purge of a source slips in between): the live turns
        and episodes named, copied, and the copies given, each written once and linked to its sources."""
        wanted = list(dict.fromkeys(ids))
        async with self._connection() as conn, conn.transaction():
            for bank in sorted({bank_id, source_bank_id}):  # one lock order for concurrent shares
                await self.lineage.lock(conn, bank)
            turns, episodes = await self._shareable(conn, source_bank_id, wanted)
            unknown = tuple(i for i in wanted if i not in turns and i not in episodes)
            if unknown:
                return ShareWrite(unknown=unknown)
            sources = await self._turn_sources(conn, source_bank_id, episodes.values())
            made = [
                turn_copy(turns[i], source_bank_id, bank_id, agent)
                if i in turns
                else episode_copy(
                    episodes[i],
                    [sources[t] for t in episodes[i].meta.source_turn_ids if t in sources],
                    source_bank_id,
                    bank_id,
                    agent,
                )
                for i in wanted
            ] + list(copies)
            lineage = [i for copy in copies for i in copy.lineage_ids]
            await self.lineage.refuse_purged(conn, source_bank_id, lineage, "ids")
            await self.lineage.refuse_purged(conn, bank_id, [copy.id for copy in made], "ids")
            new_turns = sorted((c.turn for c in made if c.turn is not None), key=lambda turn: turn.id)
            analysed = await analyse_turns([(turn.speaker, turn.text) for turn in new_turns])
            params = [turn_params(bank_id, t, terms) for t, terms in zip(new_turns, analysed, strict=True)]
            recorded = await self._insert_turns(conn, bank_id, params)
            await self.keywords.index(conn, bank_id, recorded)
            fresh = set(recorded)
            if fresh:
                await self._note_bank_and_sessions(conn, bank_id, [t for t in new_turns if t.id in fresh])
            outbox = await self._sync_turns(conn, bank_id, recorded, claim_until)
            written: list[str] = []
            for copy in made:
                episode = copy.episode
                if (
                    episode is not None
                    and await self._insert_episode(conn, bank_id, episode, WRITTEN) is not None
                ):
                    written.append(episode.id)
            if claim_until is not None:
                outbox += await self.shares.claim_syncs(conn, bank_id, written, claim_until)
            await self.shares.link(conn, bank_id, source_bank_id, made, agent)
        shared = tuple(SharedRecord(c.source_id, c.id, c.kind, c.source_kind) for c in made)
        log.info(
            "shared",
            extra={"bank_id": bank_id, "source_bank_id": source_bank_id, "copies": len(made)},
        )
        return ShareWrite(shared, (), len(recorded) + len(written), tuple(outbox))

    async def _shareable(
        self, conn: AsyncConnection[DictRow], bank_id: str, ids: Sequence[str]
    ) -> tuple[dict[str, Turn], dict[str, Episode]]:
        """The live turns and the live episodes (standing on a live turn, or on none) among ``ids``."""
        if not ids:
            return {}, {}
        turn_rows = await (
            await conn.execute(
                sql.SQL(
                    "SELECT {columns} FROM {turns} WHERE bank_id = %s AND id = ANY(%s) "
                    "AND archived_at IS NULL"
                ).format(columns=TURN_COLUMNS, turns=self._turns),
                (bank_id, list(ids)),
            )
        ).fetchall()
        turns = {turn.id: turn for turn in map(turn_from_row, turn_rows)}
        episode_rows = await (
            await conn.execute(
                sql.SQL(
                    "SELECT {columns} FROM {episodes} e WHERE e.bank_id = %(bank_id)s "
                    "AND e.id = ANY(%(ids)s) AND e.archived_at IS NULL AND {live}"
                ).format(
                    columns=EPISODE_COLUMNS_OF_E,
                    episodes=self._episodes,
                    live=self.lineage.sources_live("e"),
                ),
                {"bank_id": bank_id, "ids": [i for i in ids if i not in turns]},
            )
        ).fetchall()
        episodes = {episode.id: episode for episode in map(episode_from_row, episode_rows)}
        return turns, episodes

    async def _turn_sources(
        self, conn: AsyncConnection[DictRow], bank_id: str, episodes: Iterable[Episode]
    ) -> dict[str, Source]:
        """Who produced each stored turn the episodes stand on."""
        wanted = sorted({t for episode in episodes for t in episode.meta.source_turn_ids})
        if not wanted:
            return {}
        rows = await (
            await conn.execute(
                sql.SQL("SELECT id, source FROM {turns} WHERE bank_id = %s AND id = ANY(%s)").format(
                    turns=self._turns
                ),
                (bank_id, wanted),
            )
        ).fetchall()
        return {row["id"]: Source(row["source"]) for row in rows}
