"""The outbox's dead-letter list: entries a layer refused for good, kept out of the way of the rest.

An entry the target refuses as it is (a record too large, a field it rejects) would be refused at every
attempt; after ``HINDSIGHT_EPISODIC_OUTBOX_MAX_ATTEMPTS`` refusals it moves here, so the bank's later
entries are delivered. Nothing here is delivered until an operator queues it again (after fixing the
cause) or drops it; both are recorded in the audit log. A dead letter holds no record content: a sync
names its record (read again at delivery) and a delete names what it removes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from psycopg import AsyncConnection, sql
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.episodic.outbox_entries import DELETE, EPISODE, SEMANTIC, SYNC, TURN, OutboxWork, outbox_fields
from hindsight.episodic.quarantine import AuditEntry, Connect, QuarantineStore
from hindsight.runtime import paging
from hindsight.runtime.records import to_timestamp

RETRY_ACTION = "outbox.retry"
DROP_ACTION = "outbox.drop"
_COLUMNS = "id, bank_id, target, operation, record_kind, record_id, payload, created_at, attempts, last_error"


@dataclass(frozen=True)
class DeadLetter(OutboxWork):
    """One outbox entry moved to the dead-letter list."""

    last_error: str
    created_at: datetime
    dead_at: datetime

    def to_pb(self) -> episodic_pb2.DeadLetter:
        return episodic_pb2.DeadLetter(
            id=self.id,
            bank_id=self.bank_id,
            target=self.target,
            operation=self.operation,
            record_kind=self.record_kind,
            record_id=self.record_id,
            payload_json=json.dumps(self.payload, sort_keys=True) if self.payload else "",
            attempts=self.attempts,
            last_error=self.last_error,
            created_at=to_timestamp(self.created_at),
            dead_at=to_timestamp(self.dead_at),
        )


@dataclass(frozen=True)
class DeadLetterPage:
    """A page of dead letters, the token of the next, and the counts by target."""

    items: list[DeadLetter]
    next_page_token: str
    counts: dict[str, int]


@dataclass(frozen=True)
class Handled:
    """What a retry or a drop did: how many it moved, and named ids that are not dead letters."""

    count: int
    missing: list[int]


def _letter(row: DictRow) -> DeadLetter:
    return DeadLetter(
        **outbox_fields(row),
        last_error=row["last_error"],
        created_at=row["created_at"],
        dead_at=row["dead_at"],
    )


class DeadLetterStore:
    """The dead-letter table beside the outbox, in the layer's schema."""

    def __init__(self, schema: str, connect: Connect, audit: QuarantineStore) -> None:
        self._connection = connect
        self._audit = audit
        self.table = sql.Identifier(schema, "outbox_dead_letters")
        self._outbox = sql.Identifier(schema, "outbox")
        self._turns = sql.Identifier(schema, "turns")
        self._episodes = sql.Identifier(schema, "episodes")

    async def bury(self, ids: Sequence[int], error: str) -> int:
        """Move outbox entries (by id) to the dead-letter list, counting this last attempt; returns how
        many moved (an entry a purge deleted meanwhile is gone, not buried)."""
        if not ids:
            return 0
        statement = sql.SQL(
            "WITH moved AS (DELETE FROM {outbox} WHERE id = ANY(%s) RETURNING {columns}) "
            "INSERT INTO {table} ({columns}) "
            "SELECT id, bank_id, target, operation, record_kind, record_id, payload, created_at, "
            "attempts + 1, %s FROM moved ON CONFLICT (id) DO NOTHING RETURNING id"
        ).format(outbox=self._outbox, table=self.table, columns=sql.SQL(_COLUMNS))
        async with self._connection() as conn:
            rows = await (await conn.execute(statement, (list(ids), error[:2000]))).fetchall()
        return len(rows)

    async def counts(self, bank_id: str) -> dict[str, int]:
        """Dead letters by target layer, of one bank or (empty) every bank."""
        where = sql.SQL("WHERE bank_id = %(bank_id)s") if bank_id else sql.SQL("")
        statement = sql.SQL("SELECT target, count(*) AS n FROM {table} {where} GROUP BY target").format(
            table=self.table, where=where
        )
        async with self._connection() as conn:
            rows = await (await conn.execute(statement, {"bank_id": bank_id})).fetchall()
        return {row["target"]: int(row["n"]) for row in rows}

    async def page(self, bank_id: str, limit: int, page_token: str) -> DeadLetterPage:
        """Oldest first (by outbox id), of one bank or every bank."""
        after = paging.page_offset(page_token)
        conditions = [sql.SQL("id > %(after)s")]
        if bank_id:
            conditions.append(sql.SQL("bank_id = %(bank_id)s"))
        statement = sql.SQL(
            "SELECT {columns}, dead_at FROM {table} WHERE {where} ORDER BY id LIMIT %(limit)s"
        ).format(columns=sql.SQL(_COLUMNS), table=self.table, where=sql.SQL(" AND ").join(conditions))
        params = {"after": after, "bank_id": bank_id, "limit": limit + 1}
        async with self._connection() as conn:
            rows = await (await conn.execute(statement, params)).fetchall()
        letters = [_letter(row) for row in rows[:limit]]
        token = paging.page_token(letters[-1].id) if len(rows) > limit else ""
        return DeadLetterPage(letters, token, await self.counts(bank_id))

    async def _take(
        self, conn: AsyncConnection[DictRow], bank_id: str, ids: Sequence[int]
    ) -> tuple[list[DeadLetter], list[int]]:
        """Delete the named dead letters (every one of the bank, or of every bank, when none is named) and
        return them, with the named ids that were not there."""
        conditions = []
        if bank_id:
            conditions.append(sql.SQL("bank_id = %(bank_id)s"))
        if ids:
            conditions.append(sql.SQL("id = ANY(%(ids)s)"))
        where = sql.SQL(" AND ").join(conditions) if conditions else sql.SQL("TRUE")
        statement = sql.SQL("DELETE FROM {table} WHERE {where} RETURNING {columns}, dead_at").format(
            table=self.table, where=where, columns=sql.SQL(_COLUMNS)
        )
        rows = await (await conn.execute(statement, {"bank_id": bank_id, "ids": list(ids)})).fetchall()
        taken = sorted((_letter(row) for row in rows), key=lambda letter: letter.id)
        found = {letter.id for letter in taken}
        return taken, sorted({value for value in ids if value not in found})

    async def retry(self, bank_id: str, ids: Sequence[int], actor: str) -> Handled:
        """Queue dead letters again as new outbox entries (attempts from zero), audited, in one transaction.

        A delete queued again goes behind everything written since it was buried; on the semantic layer it
        is followed by a sync of every live record in its scope, so what was written since and falls in
        the delete's scope is indexed again rather than lost."""
        async with self._connection() as conn, conn.transaction():
            taken, missing = await self._take(conn, bank_id, ids)
            for letter in taken:
                await self._requeue(conn, letter)
            await self._audit.write_audit(
                conn, [self._audited(RETRY_ACTION, letter, actor, "queued again") for letter in taken]
            )
        return Handled(len(taken), missing)

    async def drop(self, bank_id: str, ids: Sequence[int], actor: str) -> Handled:
        """Delete dead letters for good, with an audit entry each, in one transaction."""
        async with self._connection() as conn, conn.transaction():
            taken, missing = await self._take(conn, bank_id, ids)
            audited = [
                self._audited(DROP_ACTION, letter, actor, "dropped, never delivered") for letter in taken
            ]
            await self._audit.write_audit(conn, audited)
        return Handled(len(taken), missing)

    @staticmethod
    def _audited(action: str, letter: DeadLetter, actor: str, reason: str) -> AuditEntry:
        return AuditEntry(
            action=action,
            actor=actor,
            bank_id=letter.bank_id,
            target=str(letter.id),
            reason=reason,
            details={
                "target": letter.target,
                "operation": letter.operation,
                "record_kind": letter.record_kind,
                "record_id": letter.record_id,
                "attempts": letter.attempts,
                "last_error": letter.last_error,
            },
        ).filled()

    async def _requeue(self, conn: AsyncConnection[DictRow], letter: DeadLetter) -> None:
        insert = sql.SQL(
            "INSERT INTO {outbox} (bank_id, target, operation, record_kind, record_id, payload, created_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s)"
        ).format(outbox=self._outbox)
        await conn.execute(
            insert,
            (
                letter.bank_id,
                letter.target,
                letter.operation,
                letter.record_kind,
                letter.record_id,
                Jsonb(letter.payload),
                letter.created_at,
            ),
        )
        if letter.operation != DELETE or letter.target != SEMANTIC:
            return
        payload = letter.payload
        params = {
            "bank_id": letter.bank_id,
            "whole": bool(payload.get("whole_bank", False)),
            "session_id": str(payload.get("session_id", "")),
            "ids": [str(value) for value in payload.get("ids", [])],
        }
        scope = sql.SQL(
            "bank_id = %(bank_id)s AND archived_at IS NULL AND (%(whole)s OR "
            "(%(session_id)s <> '' AND session_id = %(session_id)s) OR id = ANY(%(ids)s))"
        )
        for kind, table in ((TURN, self._turns), (EPISODE, self._episodes)):
            await conn.execute(
                sql.SQL(
                    "INSERT INTO {outbox} (bank_id, target, operation, record_kind, record_id) "
                    "SELECT bank_id, %(target)s, %(sync)s, %(kind)s, id FROM {table} WHERE {scope} "
                    "ORDER BY id"
                ).format(outbox=self._outbox, table=table, scope=scope),
                {**params, "target": SEMANTIC, "sync": SYNC, "kind": kind},
            )

    async def forget(
        self, conn: AsyncConnection[DictRow], bank_id: str, record_ids: Sequence[str], whole_bank: bool
    ) -> None:
        """Inside a purge's transaction: the bank's dead letters go with the bank, and dead syncs of purged
        records with them (a dead delete stays: it still has something to remove)."""
        if whole_bank:
            await conn.execute(sql.SQL("DELETE FROM {} WHERE bank_id = %s").format(self.table), (bank_id,))
        elif record_ids:
            await conn.execute(
                sql.SQL("DELETE FROM {} WHERE bank_id = %s AND record_id = ANY(%s)").format(self.table),
                (bank_id, list(record_ids)),
            )
