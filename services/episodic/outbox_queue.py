"""The outbox-delivery family of the episodic store: claiming due entries, reading the state a sync sends,
and noting each delivery or failure (the deliverer itself is :mod:`hindsight.episodic.outbox`; entries are
written by the other families, inside their own transactions).

A mixin on :class:`~hindsight.episodic.store_base.StoreBase` (see there why mixins), assembled into
:class:`~hindsight.episodic.store.PostgresEpisodicStore`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from psycopg import AsyncConnection, sql
from psycopg.rows import DictRow

from hindsight.episodic.episode_rows import EPISODE_COLUMNS, episode_from_row
from hindsight.episodic.models import Episode
from hindsight.episodic.outbox_entries import (
    DELETE,
    REFUSED,
    SYNC,
    TRANSIENT,
    TURN,
    WORKING,
    OutboxEntry,
    entry_from_row,
)
from hindsight.episodic.rows import TURN_COLUMNS, turn_from_row
from hindsight.episodic.store_base import StoreBase
from hindsight.runtime.records import Turn


@dataclass(frozen=True)
class OutboxCounts:
    """Entries waiting and delivered, by target layer."""

    pending: dict[str, int]
    delivered: dict[str, int]
    dead_letters: dict[str, int] = field(default_factory=dict)
    """Entries moved to the dead-letter list, by target layer."""


@dataclass(frozen=True)
class SyncState:
    """The current state of records named by sync entries: the live ones (the rest are gone or archived)."""

    turns: dict[str, Turn] = field(default_factory=dict)
    episodes: dict[str, Episode] = field(default_factory=dict)
    before: dict[str, PreviousTurn] = field(default_factory=dict)
    """Turn id -> the live turn just before it in its session (asked with ``with_before``)."""


@dataclass(frozen=True)
class PreviousTurn:
    """The turn just before another in its session: what that one may answer."""

    id: str
    speaker: str
    role: str
    text: str


class OutboxQueue(StoreBase):
    """Delivery of outbox entries: claims, leases, results and counts."""

    async def queue_working_turns(self, bank_id: str, turn_ids: Sequence[str]) -> int:
        async with self._connection() as conn:
            queued = await self._enqueue(
                conn, bank_id, [(WORKING, SYNC, TURN, turn_id, {}) for turn_id in turn_ids]
            )
        return len(queued)

    async def claim_due(self, now: datetime, lease_until: datetime, limit: int) -> list[OutboxEntry]:
        """An entry is due when its time has come and no older entry of its bank and target holds it back.
        Each entry backs off on its own, so one failing entry does not hold back the others, except where
        order matters: nothing passes a delete (written later, it may be about the same records), a delete
        passes nothing (it waits for every older entry, claimed or backing off), and a sync waits for an
        older sync of the same record. Claims are serialised by an advisory lock (they are short), so two
        replicas never split one bank's queue."""
        statement = sql.SQL(
            "WITH due AS (SELECT o.id FROM {outbox} o WHERE o.next_attempt_at <= %(now)s "
            "  AND NOT EXISTS (SELECT 1 FROM {outbox} e WHERE e.bank_id = o.bank_id AND e.target = o.target "
            "    AND e.id < o.id AND (e.operation = %(delete)s OR (e.next_attempt_at > %(now)s "
            "      AND (o.operation = %(delete)s OR (o.record_id <> '' AND e.record_id = o.record_id))))) "
            "  ORDER BY o.id LIMIT %(limit)s FOR UPDATE SKIP LOCKED) "
            "UPDATE {outbox} o SET next_attempt_at = %(lease)s FROM due WHERE o.id = due.id RETURNING o.*"
        ).format(outbox=self._outbox)
        async with self._connection() as conn, conn.transaction():
            await conn.execute(
                "SELECT pg_advisory_xact_lock(hashtext(%s))", (f"hindsight.outbox.{self._schema}",)
            )
            rows = await (
                await conn.execute(
                    statement, {"now": now, "lease": lease_until, "limit": limit, "delete": DELETE}
                )
            ).fetchall()
        return sorted((entry_from_row(row) for row in rows), key=lambda entry: entry.id)

    async def waiting_before(self, entries: Sequence[OutboxEntry]) -> bool:
        """Whether older work of the same bank and target waits that these must not overtake: a delete, an
        entry failing because the target is down or slow (these would fail too), or a sync of one of the
        same records. (A sync of other records is no reason to wait, nor one the target refused: a sync
        sends the state of its record at delivery, whatever the order.)"""
        if not entries:
            return False
        statement = sql.SQL(
            "SELECT 1 FROM {outbox} e "
            "JOIN unnest(%(banks)s::text[], %(targets)s::text[], %(firsts)s::bigint[]) AS g(bank_id, "
            "target, id) "
            "ON e.bank_id = g.bank_id AND e.target = g.target AND e.id < g.id "
            "WHERE e.operation <> %(sync)s OR (e.attempts > 0 AND e.failure <> %(refused)s) "
            "OR e.record_id = ANY(%(records)s) LIMIT 1"
        ).format(outbox=self._outbox)
        firsts: dict[tuple[str, str], int] = {}
        for entry in sorted(entries, key=lambda item: item.id):
            firsts.setdefault((entry.bank_id, entry.target), entry.id)
        params = {
            "banks": [key[0] for key in firsts],
            "targets": [key[1] for key in firsts],
            "firsts": list(firsts.values()),
            "sync": SYNC,
            "refused": REFUSED,
            "records": [entry.record_id for entry in entries if entry.record_id],
        }
        async with self._connection() as conn:
            return await (await conn.execute(statement, params)).fetchone() is not None

    async def release(self, entries: Sequence[OutboxEntry], at: datetime) -> None:
        """Hand claimed entries back to the background deliverer, due at ``at`` (attempts unchanged)."""
        if not entries:
            return
        statement = sql.SQL("UPDATE {outbox} SET next_attempt_at = %s WHERE id = ANY(%s)").format(
            outbox=self._outbox
        )
        async with self._connection() as conn:
            await conn.execute(statement, (at, [entry.id for entry in entries]))

    async def claimed(self, ids: Sequence[int]) -> list[OutboxEntry]:
        statement = sql.SQL("SELECT * FROM {outbox} WHERE id = ANY(%s) ORDER BY id").format(
            outbox=self._outbox
        )
        async with self._connection() as conn:
            rows = await (await conn.execute(statement, (list(ids),))).fetchall()
        return [entry_from_row(row) for row in rows]

    async def sync_state(
        self,
        bank_id: str,
        turn_ids: Sequence[str],
        episode_ids: Sequence[str],
        with_before: bool = False,
    ) -> SyncState:
        turns: dict[str, Turn] = {}
        episodes: dict[str, Episode] = {}
        before: dict[str, PreviousTurn] = {}
        async with self._connection() as conn:
            if turn_ids:
                statement = sql.SQL(
                    "SELECT {columns} FROM {turns} WHERE bank_id = %s AND id = ANY(%s) AND archived_at IS "
                    "NULL"
                ).format(columns=TURN_COLUMNS, turns=self._turns)
                for row in await (await conn.execute(statement, (bank_id, list(turn_ids)))).fetchall():
                    turns[row["id"]] = turn_from_row(row)
            if turns and with_before:
                before = await self._turns_before(conn, bank_id, list(turns))
            if episode_ids:
                statement = sql.SQL(
                    "SELECT {columns} FROM {episodes} WHERE bank_id = %s AND id = ANY(%s) AND archived_at "
                    "IS NULL"
                ).format(columns=EPISODE_COLUMNS, episodes=self._episodes)
                for row in await (await conn.execute(statement, (bank_id, list(episode_ids)))).fetchall():
                    episodes[row["id"]] = episode_from_row(row)
        return SyncState(turns, episodes, before)

    async def _turns_before(
        self, conn: AsyncConnection[DictRow], bank_id: str, turn_ids: list[str]
    ) -> dict[str, PreviousTurn]:
        """For each turn of a session, the live turn just before it there (by time, then written order)."""
        statement = sql.SQL(
            "SELECT t.id AS turn_id, p.id, p.speaker, p.role, p.text FROM {turns} t CROSS JOIN LATERAL ("
            "  SELECT id, speaker, role, text FROM {turns} p WHERE p.bank_id = t.bank_id "
            "  AND p.session_id = t.session_id AND p.archived_at IS NULL "
            "  AND (p.occurred_at, p.seq) < (t.occurred_at, t.seq) "
            "  ORDER BY p.occurred_at DESC, p.seq DESC LIMIT 1) p "
            "WHERE t.bank_id = %s AND t.id = ANY(%s) AND t.session_id <> ''"
        ).format(turns=self._turns)
        rows = await (await conn.execute(statement, (bank_id, turn_ids))).fetchall()
        return {
            row["turn_id"]: PreviousTurn(row["id"], row["speaker"], row["role"], row["text"]) for row in rows
        }

    async def delivered(self, entries: Sequence[OutboxEntry]) -> None:
        if not entries:
            return
        delete = sql.SQL("DELETE FROM {outbox} WHERE id = ANY(%s) RETURNING id").format(outbox=self._outbox)
        count = sql.SQL(
            "INSERT INTO {delivered} AS d (bank_id, target, count) "
            "SELECT * FROM unnest(%s::text[], %s::text[], %s::bigint[]) "
            "ON CONFLICT (bank_id, target) DO UPDATE SET count = d.count + excluded.count"
        ).format(delivered=self._delivered)
        async with self._connection() as conn, conn.transaction():
            rows = await (await conn.execute(delete, ([entry.id for entry in entries],))).fetchall()
            # Count only what this call removed (a purge may have deleted an entry meanwhile), and not the
            # deletes of a whole bank: the bank is gone, its counts with it.
            removed = {int(row["id"]) for row in rows}
            counts = Counter(
                (entry.bank_id, entry.target)
                for entry in entries
                if entry.id in removed and not entry.payload.get("whole_bank")
            )
            if counts:
                keys = sorted(counts)
                await conn.execute(
                    count, ([k[0] for k in keys], [k[1] for k in keys], [counts[k] for k in keys])
                )

    async def failed(
        self,
        entries: Sequence[OutboxEntry],
        error: str,
        retry_at: Sequence[datetime],
        failure: str = TRANSIENT,
    ) -> None:
        if not entries:
            return
        statement = sql.SQL(
            "UPDATE {outbox} o SET attempts = o.attempts + 1, last_error = %s, failure = %s, "
            "next_attempt_at = u.at FROM unnest(%s::bigint[], %s::timestamptz[]) AS u(id, at) "
            "WHERE o.id = u.id"
        ).format(outbox=self._outbox)
        async with self._connection() as conn:
            await conn.execute(
                statement, (error[:2000], failure, [entry.id for entry in entries], list(retry_at))
            )

    async def next_due(self, after: datetime | None = None) -> datetime | None:
        # Only times still to come: an entry due already but held back by an older one is freed by that
        # one's delivery or its own next attempt, never by waiting for its own time (that would spin).
        statement = sql.SQL(
            "SELECT min(next_attempt_at) AS at FROM {outbox} WHERE %(after)s::timestamptz IS NULL "
            "OR next_attempt_at > %(after)s"
        ).format(outbox=self._outbox)
        async with self._connection() as conn:
            row = await (await conn.execute(statement, {"after": after})).fetchone()
        return None if row is None else row["at"]

    async def outbox_counts(self, bank_id: str) -> OutboxCounts:
        where = sql.SQL("WHERE bank_id = %(bank_id)s") if bank_id else sql.SQL("")
        pending = sql.SQL("SELECT target, count(*) AS n FROM {outbox} {where} GROUP BY target").format(
            outbox=self._outbox, where=where
        )
        delivered = sql.SQL("SELECT target, sum(count) AS n FROM {delivered} {where} GROUP BY target").format(
            delivered=self._delivered, where=where
        )
        async with self._connection() as conn:
            waiting = await (await conn.execute(pending, {"bank_id": bank_id})).fetchall()
            done = await (await conn.execute(delivered, {"bank_id": bank_id})).fetchall()
        return OutboxCounts(
            {row["target"]: int(row["n"]) for row in waiting},
            {row["target"]: int(row["n"]) for row in done},
            await self.dead_letters.counts(bank_id),
        )
