"""Lineage inside episodic memory: version chains, what episodes stand on, and tombstones of purged ids.

A purge deletes every version of the turns it names (an update makes a new turn that names the first
version of its chain). An episode lists the turns it stands on: it dies when the last of them is purged
and lives while one lives; a segmented episode (its text copied from its turns) is then made again, by the
rules, from the turns it still stands on, so that none of a purged turn's text stays in it. Every purged id
leaves a tombstone (id and time, never text) that later writes respect: a retried retain, an approval or an
episode written again cannot bring purged text back. Writers and purges of one bank are serialised by a
per-bank advisory lock (shared for writers, exclusive for a purge), so no write slips between a purge's
delete and its tombstones.

Everything here runs on the caller's connection, inside the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from psycopg import AsyncConnection, sql
from psycopg.rows import DictRow

from hindsight.episodic.models import Episode
from hindsight.episodic.rows import TURN_COLUMNS, turn_from_row
from hindsight.episodic.segment import rule_episode
from hindsight.runtime.errors import FailedPrecondition
from hindsight.runtime.records import Turn

WRITTEN = "written"
"""The method of an episode written by a caller (its text is the caller's, not copied from turns)."""


@dataclass(frozen=True)
class EpisodeChanges:
    """What a purge did to episodes that stood on purged turns."""

    deleted: list[str]
    """Episodes whose every stored source turn was purged."""
    changed: list[str]
    """Episodes that still stand on a turn: their provenance lost the purged ids (and a segmented one was
    made again from its remaining turns)."""


class Lineage:
    """Chains, episode lineage and tombstones on one schema's tables."""

    def __init__(self, schema: str) -> None:
        self._schema = schema
        self._turns = sql.Identifier(schema, "turns")
        self._episodes = sql.Identifier(schema, "episodes")
        self._purged = sql.Identifier(schema, "purged")

    # ----- the per-bank lock -------------------------------------------------------------------------
    async def lock(self, conn: AsyncConnection[DictRow], bank_id: str, exclusive: bool = False) -> None:
        """Take the bank's lineage lock until the transaction ends: shared for a write, exclusive for a
        purge (which then sees every committed write, and no write starts until its tombstones are in)."""
        function = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
        await conn.execute(
            sql.SQL("SELECT {}(hashtext(%s))").format(sql.Identifier(function)),
            (f"hindsight.lineage.{self._schema}\x1f{bank_id}",),
        )

    # ----- tombstones --------------------------------------------------------------------------------
    async def purged_among(
        self, conn: AsyncConnection[DictRow], bank_id: str, ids: Iterable[str]
    ) -> set[str]:
        """Which of ``ids`` were purged from the bank."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return set()
        statement = sql.SQL("SELECT id FROM {purged} WHERE bank_id = %s AND id = ANY(%s)").format(
            purged=self._purged
        )
        rows = await (await conn.execute(statement, (bank_id, wanted))).fetchall()
        return {row["id"] for row in rows}

    async def refuse_purged(
        self, conn: AsyncConnection[DictRow], bank_id: str, ids: Sequence[str], field: str
    ) -> None:
        """FAILED_PRECONDITION, naming the ids, when any of them was purged: a purged record is never
        stored again under its old id (a retried write would bring back what was erased)."""
        purged = await self.purged_among(conn, bank_id, ids)
        if purged:
            named = ", ".join(repr(i) for i in sorted(purged)[:5])
            raise FailedPrecondition(
                f"{field}: {named} {'was' if len(purged) == 1 else 'were'} purged from bank {bank_id!r}; a "
                "purged record is not stored again under its old id (store it under a new id to keep it)"
            )

    async def tombstone(
        self, conn: AsyncConnection[DictRow], bank_id: str, kind: str, ids: Sequence[str]
    ) -> None:
        """Remember purged ids (a second purge of one id keeps the first time)."""
        if not ids:
            return
        statement = sql.SQL(
            "INSERT INTO {purged} (bank_id, id, kind) SELECT %s, u.id, %s FROM unnest(%s::text[]) AS u(id) "
            "ON CONFLICT (bank_id, id) DO NOTHING"
        ).format(purged=self._purged)
        await conn.execute(statement, (bank_id, kind, sorted(set(ids))))

    # ----- version chains ----------------------------------------------------------------------------
    async def delete_chains(
        self, conn: AsyncConnection[DictRow], chosen: sql.Composable, params: dict[str, Any]
    ) -> list[DictRow]:
        """Delete the turns ``chosen`` selects with every version of their chains; the rows deleted (id,
        term_count, live)."""
        statement = sql.SQL(
            "WITH roots AS (SELECT DISTINCT coalesce(chain_id, id) AS root FROM {turns} WHERE {chosen}) "
            "DELETE FROM {turns} t WHERE t.bank_id = %(bank_id)s "
            "AND (t.id IN (SELECT root FROM roots) OR t.chain_id IN (SELECT root FROM roots)) "
            "RETURNING t.id, t.term_count, t.archived_at IS NULL AS live"
        ).format(turns=self._turns, chosen=chosen)
        return list(await (await conn.execute(statement, params)).fetchall())

    def sources_live(self, alias: str) -> sql.Composable:
        """An episode condition: it stands on no stored turn, or on one whose chain has a live version.
        An episode whose turns are all archived (forgotten, recoverable) is kept but not recalled. The
        common case (a live source) is checked first, by primary key; chains only for archived sources."""
        sources = sql.Identifier(alias, "source_turn_ids")
        bank = sql.Identifier(alias, "bank_id")
        return sql.SQL(
            "(EXISTS (SELECT 1 FROM {turns} s WHERE s.bank_id = {bank} AND s.id = ANY({sources}) "
            "AND s.archived_at IS NULL) "
            "OR NOT EXISTS (SELECT 1 FROM {turns} s WHERE s.bank_id = {bank} AND s.id = ANY({sources})) "
            "OR EXISTS (SELECT 1 FROM {turns} s JOIN {turns} c ON c.bank_id = s.bank_id "
            "AND c.chain_id = coalesce(s.chain_id, s.id) "
            "WHERE s.bank_id = {bank} AND s.id = ANY({sources}) AND c.archived_at IS NULL) "
            "OR EXISTS (SELECT 1 FROM {turns} s JOIN {turns} c ON c.bank_id = s.bank_id "
            "AND c.id = s.chain_id "
            "WHERE s.bank_id = {bank} AND s.id = ANY({sources}) AND c.archived_at IS NULL))"
        ).format(turns=self._turns, bank=bank, sources=sources)

    # ----- episodes standing on purged turns ---------------------------------------------------------
    async def settle_episodes(
        self,
        conn: AsyncConnection[DictRow],
        bank_id: str,
        purged_turns: Sequence[str],
        from_row: Callable[[DictRow], Episode],
        to_params: Callable[[str, Episode], dict[str, Any]],
    ) -> EpisodeChanges:
        """Episodes citing purged turns: deleted when no stored turn of theirs is left, else their
        provenance trimmed and, when segmented, their text made again from the turns left (``from_row``
        and ``to_params`` convert episodes as the store stores them)."""
        if not purged_turns:
            return EpisodeChanges([], [])
        select = sql.SQL(
            "SELECT * FROM {episodes} WHERE bank_id = %s AND source_turn_ids && %s::text[] "
            "ORDER BY id FOR UPDATE"
        ).format(episodes=self._episodes)
        rows = await (await conn.execute(select, (bank_id, list(purged_turns)))).fetchall()
        if not rows:
            return EpisodeChanges([], [])
        gone = set(purged_turns)
        left = {row["id"]: [t for t in row["source_turn_ids"] if t not in gone] for row in rows}
        wanted = sorted({t for ids in left.values() for t in ids})
        turns_select = sql.SQL("SELECT {columns} FROM {turns} WHERE bank_id = %s AND id = ANY(%s)").format(
            columns=TURN_COLUMNS, turns=self._turns
        )
        stored = {
            turn.id: turn
            for turn in map(
                turn_from_row, await (await conn.execute(turns_select, (bank_id, wanted))).fetchall()
            )
        }
        deleted: list[str] = []
        changed: list[str] = []
        for row in rows:
            remaining = [stored[t] for t in left[row["id"]] if t in stored]
            if not remaining:
                deleted.append(row["id"])
                continue
            episode = from_row(row)
            if row["method"] == WRITTEN:
                kept = replace(episode, meta=replace(episode.meta, source_turn_ids=tuple(left[row["id"]])))
            else:
                kept = _remade(bank_id, episode, remaining)
            await conn.execute(
                sql.SQL(
                    "UPDATE {episodes} SET situation = %(situation)s, action = %(action)s, "
                    "outcome = %(outcome)s, lesson = %(lesson)s, tools = %(tools)s, result = %(result)s, "
                    "trust = %(trust)s, tags = %(tags)s, importance = %(importance)s, "
                    "source_turn_ids = %(source_turn_ids)s, search_terms = %(search_terms)s::tsvector, "
                    "dedup_key = %(dedup_key)s WHERE bank_id = %(bank_id)s AND id = %(id)s"
                ).format(episodes=self._episodes),
                to_params(bank_id, kept),
            )
            changed.append(row["id"])
        if deleted:
            await conn.execute(
                sql.SQL("DELETE FROM {episodes} WHERE bank_id = %s AND id = ANY(%s)").format(
                    episodes=self._episodes
                ),
                (bank_id, deleted),
            )
        return EpisodeChanges(deleted, changed)


def _remade(bank_id: str, episode: Episode, turns: Sequence[Turn]) -> Episode:
    """A segmented episode made again, by the rules, from the turns it still stands on (id, session and
    time kept): its text was copied from its turns, the purged one's included."""
    ordered = sorted(turns, key=lambda turn: (turn.meta.time, turn.id))
    made = rule_episode(bank_id, ordered)
    return replace(
        made,
        id=episode.id,
        session_id=episode.session_id,
        task_type=episode.task_type,
        meta=replace(made.meta, time=episode.meta.time, schema_version=episode.meta.schema_version),
        recorded_at=episode.recorded_at,
    )
