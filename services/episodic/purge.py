"""The purge family of the episodic store: deleting for good, across every table that holds a record, the
copies shared from it into other banks, and the deletes queued for the other layers.

A mixin on :class:`~hindsight.episodic.store_base.StoreBase` (see there why mixins), assembled into
:class:`~hindsight.episodic.store.PostgresEpisodicStore`. One bank's purge runs in steps, each a helper
below, in the order their statements must run inside the one transaction.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from psycopg import AsyncConnection, sql
from psycopg.rows import DictRow

from hindsight.episodic.episode_rows import episode_from_row, episode_update_params
from hindsight.episodic.lineage import EpisodeChanges
from hindsight.episodic.models import PurgedCopies, PurgeResult, PurgeScope
from hindsight.episodic.outbox_entries import DELETE, EPISODE, REFLECT, SEMANTIC, SYNC, TURN, WORKING
from hindsight.episodic.store_base import StoreBase

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Chosen:
    """What one bank's purge selects: its statement parameters, and the condition (on bank_id, id and
    session_id) that picks its turns and its episodes."""

    params: dict[str, Any]
    where: sql.Composable


def _chosen(bank_id: str, scope: PurgeScope) -> _Chosen:
    params: dict[str, Any] = {"bank_id": bank_id, "ids": list(scope.ids), "session_id": scope.session_id}
    if scope.whole_bank:
        where = sql.SQL("bank_id = %(bank_id)s")
    elif scope.session_id:
        where = sql.SQL("bank_id = %(bank_id)s AND session_id = %(session_id)s")
    else:
        where = sql.SQL("bank_id = %(bank_id)s AND id = ANY(%(ids)s)")
    return _Chosen(params, where)


class Purging(StoreBase):
    """Purges: one bank's records, then the copies shared from them, in one transaction."""

    async def purge(
        self, bank_id: str, scope: PurgeScope, claim_until: datetime | None = None
    ) -> PurgeResult:
        """Turns (every version of each one chosen), held-back turns, the episodes named or of the session,
        their access statistics and their pending outbox entries all go in one transaction, which also
        leaves tombstones of the ids and queues the deletes for the other layers. An episode that stood on
        purged turns dies with the last of them and otherwise loses them from its provenance (see
        :mod:`hindsight.episodic.lineage`). The copies shared from what it took into other banks go in the
        same transaction (see :mod:`hindsight.episodic.shares`)."""
        async with self._connection() as conn, conn.transaction():
            await self.lineage.lock(conn, bank_id, exclusive=True)
            result = await self._purge_locked(conn, bank_id, scope, claim_until)
            copies = await self._purge_copies(conn, bank_id, scope, result, claim_until)
        return replace(result, copies=copies)

    async def _purge_copies(
        self,
        conn: AsyncConnection[DictRow],
        bank_id: str,
        scope: PurgeScope,
        result: PurgeResult,
        claim_until: datetime | None,
    ) -> tuple[PurgedCopies, ...]:
        """Purge, bank by bank, the copies shared from what a purge took (and the copies of those), in its
        transaction; a copy its bank re-stated stays, unlinked."""
        await self.shares.unlink(conn, bank_id, result.ids, scope.whole_bank)  # copies held here
        taken: list[PurgedCopies] = []
        pending = [(bank_id, {*scope.ids, *result.ids}, scope.whole_bank)]
        while pending:
            source, gone, whole = pending.pop(0)
            linked = await self.shares.linked_to(conn, source, gone, whole)
            for target in sorted(linked):
                await self.lineage.lock(conn, target, exclusive=True)
                kept = await self.shares.restated(conn, target, linked[target])
                await self.shares.unlink(conn, target, sorted(kept))
                doomed = tuple(i for i in linked[target] if i not in kept)
                if not doomed:
                    continue
                purged = await self._purge_locked(conn, target, PurgeScope(ids=doomed), claim_until)
                await self.shares.unlink(conn, target, [*doomed, *purged.ids])
                taken.append(PurgedCopies(target, purged.ids, purged.outbox_ids))
                pending.append((target, set(purged.ids), False))
        return tuple(taken)

    async def _purge_locked(
        self,
        conn: AsyncConnection[DictRow],
        bank_id: str,
        scope: PurgeScope,
        claim_until: datetime | None,
    ) -> PurgeResult:
        """One bank's purge, in the caller's transaction, under the bank's exclusive lineage lock."""
        chosen = _chosen(bank_id, scope)
        turn_ids = await self._delete_turns(conn, bank_id, scope, chosen)
        held_ids, held = await self._delete_held(conn, bank_id, scope, chosen, turn_ids)
        episode_ids, settled = await self._delete_episodes(conn, bank_id, chosen, turn_ids)
        purged_turns = sorted({*turn_ids, *held_ids})
        gone = [*purged_turns, *episode_ids]
        await self.lineage.tombstone(conn, bank_id, TURN, purged_turns)
        await self.lineage.tombstone(conn, bank_id, EPISODE, episode_ids)
        await self.dead_letters.forget(conn, bank_id, gone, scope.whole_bank)
        await self._delete_bookkeeping(conn, bank_id, scope, gone)
        # First the new text of the episodes that live on (their provenance no longer cites the
        # purged ids, so the deletes after cannot take them): claimed, for the call to deliver.
        synced = await self._enqueue(
            conn, bank_id, [(SEMANTIC, SYNC, EPISODE, i, {}) for i in settled.changed], claim_until
        )
        queued = await self._queue_deletes(conn, bank_id, scope, gone, purged_turns)
        log.info(
            "purged",
            extra={
                "bank_id": bank_id,
                "turns": len(turn_ids),
                "held": held,
                "episodes": len(episode_ids),
                "episodes_kept": len(settled.changed),
                "outbox": len(queued),
            },
        )
        named = () if scope.whole_bank else tuple(gone)  # a whole bank is deleted by its name, not its ids
        return PurgeResult(len(turn_ids) + held, len(episode_ids), len(queued), named, tuple(synced))

    async def _delete_turns(
        self, conn: AsyncConnection[DictRow], bank_id: str, scope: PurgeScope, chosen: _Chosen
    ) -> list[str]:
        """Delete the chosen turns (with every version of their chains) and unindex the live ones; their
        ids."""
        if scope.whole_bank:
            statement = sql.SQL(
                "DELETE FROM {turns} WHERE bank_id = %(bank_id)s "
                "RETURNING id, term_count, archived_at IS NULL AS live"
            ).format(turns=self._turns)
            rows = await (await conn.execute(statement, chosen.params)).fetchall()
        else:
            rows = await self.lineage.delete_chains(conn, chosen.where, chosen.params)
        live = [row for row in rows if row["live"]]
        await self.keywords.unindex(
            conn, bank_id, [row["id"] for row in live], sum(row["term_count"] for row in live)
        )
        return [row["id"] for row in rows]

    async def _delete_held(
        self,
        conn: AsyncConnection[DictRow],
        bank_id: str,
        scope: PurgeScope,
        chosen: _Chosen,
        turn_ids: list[str],
    ) -> tuple[list[str], int]:
        """Delete the held-back turns: those named, those of the session, and any version purged above. Their
        ids, and how many were still held."""
        params = chosen.params
        params["held_ids"] = sorted({*scope.ids, *turn_ids})
        held_where = (
            chosen.where
            if scope.whole_bank
            else sql.SQL("bank_id = %(bank_id)s AND (id = ANY(%(held_ids)s) OR {})").format(
                sql.SQL("session_id = %(session_id)s") if scope.session_id else sql.SQL("false")
            )
        )
        select = sql.SQL("SELECT id FROM {table} WHERE {where}").format(
            table=self.quarantine.table, where=held_where
        )
        held_ids = [row["id"] for row in await (await conn.execute(select, params)).fetchall()]
        return held_ids, await self.quarantine.purge(conn, bank_id, held_where, params)

    async def _delete_episodes(
        self, conn: AsyncConnection[DictRow], bank_id: str, chosen: _Chosen, turn_ids: list[str]
    ) -> tuple[list[str], EpisodeChanges]:
        """Delete the chosen episodes, and settle those standing on purged turns (see
        :meth:`Lineage.settle_episodes`); the ids of every episode deleted, and what settling did."""
        statement = sql.SQL("DELETE FROM {episodes} WHERE {where} RETURNING id").format(
            episodes=self._episodes, where=chosen.where
        )
        rows = await (await conn.execute(statement, chosen.params)).fetchall()
        settled = await self.lineage.settle_episodes(
            conn, bank_id, turn_ids, episode_from_row, episode_update_params
        )
        return [row["id"] for row in rows] + settled.deleted, settled

    async def _delete_bookkeeping(
        self, conn: AsyncConnection[DictRow], bank_id: str, scope: PurgeScope, gone: list[str]
    ) -> None:
        """Delete what the store keeps about the purged records: pending outbox entries and access
        statistics, and the session's or the whole bank's rows."""
        if scope.whole_bank:
            for table in (self._outbox, self._access, self._sessions, self._delivered, self._banks):
                await conn.execute(sql.SQL("DELETE FROM {} WHERE bank_id = %s").format(table), (bank_id,))
            return
        # Pending work about the purged records would index them again, or hold their content.
        await conn.execute(
            sql.SQL("DELETE FROM {outbox} WHERE bank_id = %s AND record_id = ANY(%s)").format(
                outbox=self._outbox
            ),
            (bank_id, gone),
        )
        await conn.execute(
            sql.SQL("DELETE FROM {access} WHERE bank_id = %s AND id = ANY(%s)").format(access=self._access),
            (bank_id, gone),
        )
        if scope.session_id:
            await conn.execute(
                sql.SQL("DELETE FROM {sessions} WHERE bank_id = %s AND session_id = %s").format(
                    sessions=self._sessions
                ),
                (bank_id, scope.session_id),
            )

    async def _queue_deletes(
        self,
        conn: AsyncConnection[DictRow],
        bank_id: str,
        scope: PurgeScope,
        gone: list[str],
        purged_turns: list[str],
    ) -> list[int]:
        """Queue the deletes for the other layers (none when the purge took nothing and named no scope)."""
        if not (gone or scope.session_id or scope.whole_bank):
            return []
        payload = {
            "ids": [] if scope.whole_bank else gone,
            "session_id": scope.session_id,
            "whole_bank": scope.whole_bank,
        }
        # Working memory takes new turns straight from the edge, not through this outbox, so its
        # delete, delivered late, goes by the purged turns' ids ("by_ids"): by session or bank it
        # would also drop the turns retained there since.
        by_ids = payload | {"ids": purged_turns, "by_ids": True}
        return await self._enqueue(
            conn,
            bank_id,
            [
                (target, DELETE, "", "", by_ids if target == WORKING else payload)
                for target in (SEMANTIC, WORKING, REFLECT)
            ],
        )
