"""The turns family of the episodic store: recording, the review queue's decisions, reads, updates, forget
and restore of turns, each with its keyword index and outbox entries in the same transaction.

A mixin on :class:`~hindsight.episodic.store_base.StoreBase` (see there why mixins), assembled into
:class:`~hindsight.episodic.store.PostgresEpisodicStore`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from psycopg import sql

from hindsight.episodic.keyword import analyse_turns
from hindsight.episodic.models import TurnFilter
from hindsight.episodic.outbox_entries import DELETE, REFLECT, SYNC, TURN, WORKING
from hindsight.episodic.paging import PageKey
from hindsight.episodic.quarantine import (
    APPROVE,
    APPROVED,
    REJECTED,
    AuditEntry,
    HeldTurn,
    ReviewResult,
    Screening,
)
from hindsight.episodic.rows import (
    TURN_COLUMNS,
    TURN_COLUMNS_OF_T,
    Decay,
    ScoredTurn,
    and_,
    turn_conditions,
    turn_from_row,
    turn_params,
)
from hindsight.episodic.store_base import StoreBase
from hindsight.runtime.errors import FailedPrecondition, NotFound
from hindsight.runtime.records import Turn
from hindsight.runtime.trust import REVIEWED_TAG
from hindsight.runtime.tsearch import tsquery_literal


@dataclass(frozen=True)
class RecordResult:
    """How many turns of a request were new and how many were already stored, and their outbox entries."""

    recorded: int
    duplicates: int
    outbox_ids: tuple[int, ...] = ()
    quarantined: int = 0
    """Of the recorded, how many were held back for review."""


class TurnRecords(StoreBase):
    """Turns: recorded, held back and decided, read, updated, forgotten and restored."""

    async def record_turns(
        self,
        bank_id: str,
        turns: Sequence[Turn],
        claim_until: datetime | None,
        held: Mapping[str, Screening] | None = None,
        actor: str = "",
    ) -> RecordResult:
        held = held or {}
        ordered = sorted(turns, key=lambda turn: turn.id)  # one lock order for concurrent writers
        analysed = await analyse_turns([(turn.speaker, turn.text) for turn in ordered])
        ordinary = [
            (turn, terms) for turn, terms in zip(ordered, analysed, strict=True) if turn.id not in held
        ]
        holding = [
            (turn, terms, held[turn.id])
            for turn, terms in zip(ordered, analysed, strict=True)
            if turn.id in held
        ]
        async with self._connection() as conn, conn.transaction():
            await self.lineage.lock(conn, bank_id)
            await self.lineage.refuse_purged(conn, bank_id, [turn.id for turn in ordered], "turns")
            queued = await self.quarantine.held_ids(conn, bank_id, [turn.id for turn, _ in ordinary])
            params = [turn_params(bank_id, turn, terms) for turn, terms in ordinary if turn.id not in queued]
            recorded = await self._insert_turns(conn, bank_id, params, [turn.id for turn in turns])
            await self.keywords.index(conn, bank_id, recorded)  # right after the turns: the lock order
            quarantined = await self.quarantine.hold(conn, bank_id, holding, actor)
            fresh = set(recorded)
            if fresh or quarantined:
                await self._note_bank_and_sessions(
                    conn, bank_id, [turn for turn in turns if turn.id in fresh]
                )
            outbox = await self._sync_turns(conn, bank_id, recorded, claim_until)
        stored = len(recorded) + len(quarantined)
        return RecordResult(stored, len(turns) - stored, tuple(outbox), len(quarantined))

    # ----- the review queue and the audit log ---------------------------------------------------------
    async def search_quarantined(self, bank_id: str, lexemes: Sequence[str], limit: int) -> list[ScoredTurn]:
        return await self.quarantine.search(bank_id, tsquery_literal(lexemes), limit)

    async def list_quarantined(
        self, bank_id: str, status: str, after: PageKey | None, limit: int
    ) -> tuple[list[HeldTurn], int]:
        return await self.quarantine.page(bank_id, status, after, limit)

    async def review(
        self,
        bank_id: str,
        turn_ids: Sequence[str],
        decision: str,
        reviewer: str,
        note: str,
        claim_until: datetime | None = None,
    ) -> ReviewResult:
        """An approved turn moves into turns, keyword-indexed and queued for the other layers, as if it had
        just been retained; a rejected one stays in the queue. One audit entry per turn decided."""
        wanted = list(dict.fromkeys(turn_ids))
        async with self._connection() as conn, conn.transaction():
            await self.lineage.lock(conn, bank_id)
            pending = await self.quarantine.take_pending(conn, bank_id, wanted)
            found = [held.turn.id for held in pending]
            outbox: list[int] = []
            if decision == APPROVE and pending:
                analysed = await analyse_turns([(held.turn.speaker, held.turn.text) for held in pending])
                params = [  # a person read and approved it: it carries the review mark from now on
                    turn_params(bank_id, with_review_mark(held.turn), terms)
                    for held, terms in zip(pending, analysed, strict=True)
                ]
                recorded = await self._insert_turns(conn, bank_id, params)
                await self.keywords.index(conn, bank_id, recorded)
                fresh = set(recorded)
                await self._note_bank_and_sessions(
                    conn, bank_id, [h.turn for h in pending if h.turn.id in fresh]
                )
                outbox = await self._sync_turns(conn, bank_id, recorded, claim_until)
            await self.quarantine.mark(
                conn, bank_id, found, APPROVED if decision == APPROVE else REJECTED, reviewer
            )
            await self.quarantine.write_audit(
                conn,
                [
                    AuditEntry(
                        action=decision,
                        actor=reviewer,
                        bank_id=bank_id,
                        target=held.turn.id,
                        reason=note or held.screening.reason,
                        details={"kind": held.screening.kind, "screened_for": held.screening.reason},
                    )
                    for held in pending
                ],
            )
        count = len(found)
        return ReviewResult(
            approved=count if decision == APPROVE else 0,
            rejected=0 if decision == APPROVE else count,
            not_pending=tuple(turn_id for turn_id in wanted if turn_id not in set(found)),
            outbox_ids=tuple(outbox),
        )

    async def append_audit(self, entries: Sequence[AuditEntry]) -> int:
        return await self.quarantine.append_audit(entries)

    async def list_audit(
        self, bank_id: str, action: str, since: datetime | None, before: PageKey | None, limit: int
    ) -> list[AuditEntry]:
        return await self.quarantine.list_audit(bank_id, action, since, before, limit)

    async def search_turns(
        self, bank_id: str, lexemes: Sequence[str], where: TurnFilter, decay: Decay, limit: int
    ) -> list[ScoredTurn]:
        """Okapi BM25 over the bank's live turns times the time decay (see :meth:`KeywordStore.search`)."""
        return await self.keywords.search(bank_id, lexemes, where, decay, limit)

    async def list_turns(
        self, bank_id: str, where: TurnFilter, after: PageKey | None, newest_first: bool, limit: int
    ) -> list[Turn]:
        params: dict[str, Any] = {"bank_id": bank_id, "limit": limit}
        conditions = [sql.SQL("t.bank_id = %(bank_id)s"), *turn_conditions("t", where, params)]
        if after is not None:
            params["at"], params["after_id"] = after.occurred_at, after.id
            op = "<" if newest_first else ">"
            conditions.append(sql.SQL(f"(t.occurred_at, t.id) {op} (%(at)s, %(after_id)s)"))
        order = sql.SQL("t.occurred_at DESC, t.id DESC" if newest_first else "t.occurred_at, t.id")
        statement = sql.SQL(
            "SELECT {columns} FROM {turns} t WHERE {where} ORDER BY {order} LIMIT %(limit)s"
        ).format(columns=TURN_COLUMNS_OF_T, turns=self._turns, where=and_(conditions), order=order)
        async with self._connection() as conn:
            rows = await (await conn.execute(statement, params)).fetchall()
        return [turn_from_row(row) for row in rows]

    async def get_turn(self, bank_id: str, turn_id: str) -> Turn:
        statement = sql.SQL("SELECT {columns} FROM {turns} WHERE bank_id = %s AND id = %s").format(
            columns=TURN_COLUMNS, turns=self._turns
        )
        async with self._connection() as conn:
            row = await (await conn.execute(statement, (bank_id, turn_id))).fetchone()
        if row is None:
            raise NotFound(f"turn {turn_id!r} is not in bank {bank_id!r}")
        return turn_from_row(row)

    async def get_turns(self, bank_id: str, turn_ids: Sequence[str]) -> list[Turn]:
        statement = sql.SQL("SELECT {columns} FROM {turns} WHERE bank_id = %s AND id = ANY(%s)").format(
            columns=TURN_COLUMNS, turns=self._turns
        )
        async with self._connection() as conn:
            rows = await (await conn.execute(statement, (bank_id, list(turn_ids)))).fetchall()
        found = {turn.id: turn for turn in map(turn_from_row, rows)}
        return [found[turn_id] for turn_id in dict.fromkeys(turn_ids) if turn_id in found]

    async def update_turn(
        self, bank_id: str, old_id: str, new: Turn, claim_until: datetime | None = None
    ) -> tuple[Turn, tuple[int, ...]]:
        lock = sql.SQL(
            "SELECT archived_at, term_count, coalesce(chain_id, id) AS chain, seq FROM {turns} "
            "WHERE bank_id = %s AND id = %s FOR UPDATE"
        ).format(turns=self._turns)
        insert = sql.SQL(
            "INSERT INTO {turns} (bank_id, id, session_id, role, speaker, text, source, trust, occurred_at, "
            "tags, importance, source_turn_ids, schema_version, search_terms, term_count, analyzer, "
            "chain_id, agent, seq) VALUES (%(bank_id)s, %(id)s, %(session_id)s, %(role)s, %(speaker)s, "
            "%(text)s, %(source)s, %(trust)s, coalesce(%(occurred_at)s::timestamptz, now()), %(tags)s, "
            "%(importance)s, %(source_turn_ids)s, %(schema_version)s, %(search_terms)s::tsvector, "
            "%(term_count)s, %(analyzer)s, %(chain_id)s, %(agent)s, %(seq)s) RETURNING {columns}"
        ).format(turns=self._turns, columns=TURN_COLUMNS)
        supersede = sql.SQL(
            "UPDATE {turns} SET archived_at = now(), superseded_by = %s WHERE bank_id = %s AND id = %s"
        ).format(turns=self._turns)
        (analysed,) = await analyse_turns([(new.speaker, new.text)])
        async with self._connection() as conn, conn.transaction():
            await self.lineage.lock(conn, bank_id)
            old = await (await conn.execute(lock, (bank_id, old_id))).fetchone()
            if old is None:
                raise NotFound(f"turn {old_id!r} is not in bank {bank_id!r}")
            if old["archived_at"] is not None:
                raise FailedPrecondition(
                    f"turn {old_id!r} is archived (forgotten or superseded); restore it first"
                )
            # The new version joins the old one's chain: a purge of any version deletes them all.
            # It takes the old one's place in its session too (the turn before it, the turn after it).
            values = {**turn_params(bank_id, new, analysed), "chain_id": old["chain"], "seq": old["seq"]}
            row = await (await conn.execute(insert, values)).fetchone()
            await conn.execute(supersede, (new.id, bank_id, old_id))
            await self.keywords.unindex(conn, bank_id, [old_id], old["term_count"])
            await self.keywords.index(conn, bank_id, [new.id])
            outbox = await self._sync_turns(conn, bank_id, [old_id, new.id], claim_until)
        if row is None:
            raise RuntimeError(f"turn {new.id!r} was not inserted")
        return turn_from_row(row), tuple(outbox)

    async def restore_turns(self, bank_id: str, turn_ids: Sequence[str]) -> int:
        statement = sql.SQL(
            "UPDATE {turns} SET archived_at = NULL, superseded_by = NULL "
            "WHERE bank_id = %s AND id = ANY(%s) AND archived_at IS NOT NULL RETURNING id"
        ).format(turns=self._turns)
        async with self._connection() as conn, conn.transaction():
            rows = await (await conn.execute(statement, (bank_id, list(turn_ids)))).fetchall()
            restored = [row["id"] for row in rows]
            await self.keywords.index(conn, bank_id, restored)
            await self._sync_turns(conn, bank_id, restored)
            await self._enqueue(conn, bank_id, [(REFLECT, SYNC, TURN, i, {}) for i in restored])
        return len(restored)

    async def forget_turns(self, bank_id: str, turn_ids: Sequence[str], where: TurnFilter | None) -> int:
        params: dict[str, Any] = {"bank_id": bank_id, "ids": list(turn_ids)}
        chosen: list[sql.Composable] = [sql.SQL("t.id = ANY(%(ids)s)")]
        if where is not None:
            chosen.append(sql.SQL("({})").format(and_(turn_conditions("t", where, params))))
        statement = sql.SQL(
            "UPDATE {turns} t SET archived_at = now() WHERE t.bank_id = %(bank_id)s "
            "AND t.archived_at IS NULL AND ({chosen}) RETURNING t.id, t.term_count"
        ).format(turns=self._turns, chosen=sql.SQL(" OR ").join(chosen))
        async with self._connection() as conn, conn.transaction():
            rows = await (await conn.execute(statement, params)).fetchall()
            forgotten = [row["id"] for row in rows]
            await self.keywords.unindex(conn, bank_id, forgotten, sum(row["term_count"] for row in rows))
            if forgotten:
                await self._sync_turns(conn, bank_id, forgotten)
                await self._enqueue(conn, bank_id, [(WORKING, DELETE, "", "", {"ids": forgotten})])
                # Reflection hides the lessons standing only on archived turns (a restore shows them again).
                await self._enqueue(conn, bank_id, [(REFLECT, SYNC, TURN, i, {}) for i in forgotten])
        return len(forgotten)


def with_review_mark(turn: Turn) -> Turn:
    """``turn`` tagged as approved by a reviewer (see :data:`~hindsight.runtime.trust.REVIEWED_TAG`)."""
    tags = tuple(dict.fromkeys((*turn.meta.tags, REVIEWED_TAG)))
    return replace(turn, meta=replace(turn.meta, tags=tags))
