"""The review queue and the audit log: turns that screening held back, and every security decision.

A held-back turn is kept apart from the turns table (in ``quarantine``): search, listing, episodes,
segmentation and the outbox read only ``turns``, so a held turn reaches none of them until a reviewer
approves it. A rejected one stays in the queue for good, searchable only to warn related recalls. The
statements here run inside the caller's transaction where a decision must commit with its record.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from psycopg import AsyncConnection, sql
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from hindsight.contracts.common.v1 import common_pb2
from hindsight.episodic.keyword import TurnTerms
from hindsight.episodic.paging import PageKey
from hindsight.episodic.rows import TURN_COLUMN_NAMES, ScoredTurn, turn_from_row, turn_params
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.records import Turn, from_timestamp, to_timestamp

PENDING = "pending"
APPROVED = "approved"
REJECTED = "rejected"
STATUSES = (PENDING, APPROVED, REJECTED)
ALL = "all"
APPROVE = "approve"
REJECT = "reject"
MAX_AUDIT_TEXT = 2_000
MAX_DETAILS_CHARS = 10_000

_DECISIONS = {common_pb2.REVIEW_DECISION_APPROVE: APPROVE, common_pb2.REVIEW_DECISION_REJECT: REJECT}

Connect = Callable[[], AbstractAsyncContextManager[AsyncConnection[DictRow]]]


@dataclass(frozen=True)
class Screening:
    """What screening found in a turn and what it did (``quarantine``, ``redact``, ``refuse``, ``flag``)."""

    kind: str
    reason: str
    action: str = "quarantine"

    @classmethod
    def from_pb(cls, message: common_pb2.Screening, field_name: str) -> Screening:
        if not message.kind.strip():
            raise InvalidArgument(f"{field_name}.kind", "is required")
        for name in ("kind", "reason", "action"):
            value = getattr(message, name)
            if len(value) > MAX_AUDIT_TEXT or "\x00" in value:
                raise InvalidArgument(
                    f"{field_name}.{name}", f"must be at most {MAX_AUDIT_TEXT} characters, without NUL"
                )
        return cls(message.kind.strip(), message.reason, message.action or "quarantine")

    def to_pb(self) -> common_pb2.Screening:
        return common_pb2.Screening(kind=self.kind, reason=self.reason, action=self.action)


@dataclass(frozen=True)
class HeldTurn:
    """A turn in the review queue."""

    turn: Turn
    screening: Screening
    quarantined_at: datetime
    status: str
    reviewer: str = ""
    reviewed_at: datetime | None = None

    def to_pb(self) -> common_pb2.QuarantinedTurn:
        return common_pb2.QuarantinedTurn(
            turn=self.turn.to_pb(),
            screening=self.screening.to_pb(),
            quarantined_at=to_timestamp(self.quarantined_at),
            status=self.status,
            reviewer=self.reviewer,
            reviewed_at=to_timestamp(self.reviewed_at),
        )


@dataclass(frozen=True)
class AuditEntry:
    """One security decision: who, which bank, what, to what, why (details: a JSON object)."""

    action: str
    actor: str = ""
    bank_id: str = ""
    target: str = ""
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    id: str = ""
    time: datetime | None = None

    def filled(self) -> AuditEntry:
        """With an id when it has none (the time is the store's, when none is given)."""
        return self if self.id else AuditEntry(**{**self.__dict__, "id": uuid.uuid4().hex})

    @classmethod
    def from_pb(cls, message: common_pb2.AuditEntry, field_name: str) -> AuditEntry:
        if not message.action.strip():
            raise InvalidArgument(f"{field_name}.action", "is required")
        for name in ("id", "actor", "bank_id", "action", "target", "reason"):
            value = getattr(message, name)
            if len(value) > MAX_AUDIT_TEXT or "\x00" in value:
                raise InvalidArgument(
                    f"{field_name}.{name}", f"must be at most {MAX_AUDIT_TEXT} characters, without NUL"
                )
        details: dict[str, Any] = {}
        if message.details_json:
            if len(message.details_json) > MAX_DETAILS_CHARS:
                raise InvalidArgument(
                    f"{field_name}.details_json", f"must be at most {MAX_DETAILS_CHARS} characters"
                )
            try:
                parsed = json.loads(message.details_json)
            except ValueError:
                raise InvalidArgument(f"{field_name}.details_json", "is not JSON") from None
            if not isinstance(parsed, dict) or "\\u0000" in message.details_json:
                raise InvalidArgument(f"{field_name}.details_json", "must be a JSON object without NUL")
            details = parsed
        return cls(
            action=message.action.strip(),
            actor=message.actor,
            bank_id=message.bank_id,
            target=message.target,
            reason=message.reason,
            details=details,
            id=message.id,
            time=from_timestamp(message.time) if message.HasField("time") else None,
        )

    def to_pb(self) -> common_pb2.AuditEntry:
        return common_pb2.AuditEntry(
            id=self.id,
            time=to_timestamp(self.time),
            actor=self.actor,
            bank_id=self.bank_id,
            action=self.action,
            target=self.target,
            reason=self.reason,
            details_json=json.dumps(self.details, ensure_ascii=False, sort_keys=True) if self.details else "",
        )


@dataclass(frozen=True)
class ReviewResult:
    """What a review did, and the outbox entries the approved turns queued."""

    approved: int
    rejected: int
    not_pending: tuple[str, ...]
    outbox_ids: tuple[int, ...] = ()


def decision_from_pb(value: common_pb2.ReviewDecision) -> str:
    """``approve`` or ``reject``; anything else is INVALID_ARGUMENT."""
    if value not in _DECISIONS:
        raise InvalidArgument("decision", "must be REVIEW_DECISION_APPROVE or REVIEW_DECISION_REJECT")
    return _DECISIONS[value]


def check_status(value: str) -> str:
    """A queue status to list by: pending (default), approved, rejected or all."""
    status = value.strip().lower() or PENDING
    if status not in (*STATUSES, ALL):
        raise InvalidArgument("status", "must be pending, approved, rejected or all")
    return status


_HELD_COLUMNS = [
    *TURN_COLUMN_NAMES,
    *("kind", "reason", "action", "quarantined_at", "status", "reviewer", "reviewed_at"),
]
_HELD = sql.SQL(", ").join(map(sql.Identifier, _HELD_COLUMNS))
_AUDIT = sql.SQL("id, at, actor, bank_id, action, target, reason, details")


def held_from_row(row: DictRow) -> HeldTurn:
    return HeldTurn(
        turn=turn_from_row(row),
        screening=Screening(row["kind"], row["reason"], row["action"]),
        quarantined_at=row["quarantined_at"],
        status=row["status"],
        reviewer=row["reviewer"],
        reviewed_at=row["reviewed_at"],
    )


def _audit_from_row(row: DictRow) -> AuditEntry:
    return AuditEntry(
        id=row["id"],
        time=row["at"],
        actor=row["actor"],
        bank_id=row["bank_id"],
        action=row["action"],
        target=row["target"],
        reason=row["reason"],
        details=dict(row["details"] or {}),
    )


class QuarantineStore:
    """The ``quarantine`` and ``audit`` tables of the layer's schema."""

    def __init__(self, schema: str, connection: Connect) -> None:
        self._connection = connection
        self.table = sql.Identifier(schema, "quarantine")
        self.audit_table = sql.Identifier(schema, "audit")
        self._turns = sql.Identifier(schema, "turns")

    # ----- inside the caller's transaction -------------------------------------------------------------
    async def held_ids(self, conn: AsyncConnection[DictRow], bank_id: str, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are in the queue (any status): they are not stored again as ordinary turns."""
        if not ids:
            return set()
        statement = sql.SQL("SELECT id FROM {table} WHERE bank_id = %s AND id = ANY(%s)").format(
            table=self.table
        )
        return {row["id"] for row in await (await conn.execute(statement, (bank_id, list(ids)))).fetchall()}

    async def hold(
        self,
        conn: AsyncConnection[DictRow],
        bank_id: str,
        turns: Sequence[tuple[Turn, TurnTerms, Screening]],
        actor: str,
    ) -> list[str]:
        """Insert turns into the queue (ids already stored as turns or queued are skipped) with an audit
        entry each; returns the ids inserted."""
        if not turns:
            return []
        statement = sql.SQL(
            "INSERT INTO {table} (bank_id, id, session_id, role, speaker, text, source, trust, occurred_at, "
            "tags, importance, source_turn_ids, schema_version, search_terms, kind, reason, action, agent) "
            "SELECT %(bank_id)s, %(id)s, %(session_id)s, %(role)s, %(speaker)s, %(text)s, %(source)s, "
            "%(trust)s, coalesce(%(occurred_at)s::timestamptz, now()), %(tags)s, %(importance)s, "
            "%(source_turn_ids)s, "
            "%(schema_version)s, %(search_terms)s::tsvector, %(kind)s, %(reason)s, %(action)s, %(agent)s "
            "WHERE NOT EXISTS (SELECT 1 FROM {turns} WHERE bank_id = %(bank_id)s AND id = %(id)s) "
            "ON CONFLICT (bank_id, id) DO NOTHING RETURNING id"
        ).format(table=self.table, turns=self._turns)
        inserted: list[str] = []
        entries: list[AuditEntry] = []
        for turn, terms, screening in sorted(turns, key=lambda item: item[0].id):
            params = {
                **turn_params(bank_id, turn, terms),
                "kind": screening.kind,
                "reason": screening.reason,
                "action": screening.action,
            }
            row = await (await conn.execute(statement, params)).fetchone()
            if row is None:
                continue
            inserted.append(turn.id)
            entries.append(
                AuditEntry(
                    action="quarantine",
                    actor=actor,
                    bank_id=bank_id,
                    target=turn.id,
                    reason=screening.reason,
                    details={
                        "kind": screening.kind,
                        "source": turn.meta.source.value,
                        "session_id": turn.session_id,
                    },
                )
            )
        await self.write_audit(conn, entries)
        return inserted

    async def take_pending(
        self, conn: AsyncConnection[DictRow], bank_id: str, ids: Sequence[str]
    ) -> list[HeldTurn]:
        """The pending ones of ``ids``, locked for a review."""
        statement = sql.SQL(
            "SELECT {columns} FROM {table} WHERE bank_id = %s AND id = ANY(%s) AND status = %s "
            "ORDER BY id FOR UPDATE"
        ).format(columns=_HELD, table=self.table)
        rows = await (await conn.execute(statement, (bank_id, list(ids), PENDING))).fetchall()
        return [held_from_row(row) for row in rows]

    async def mark(
        self, conn: AsyncConnection[DictRow], bank_id: str, ids: Sequence[str], status: str, reviewer: str
    ) -> None:
        statement = sql.SQL(
            "UPDATE {table} SET status = %s, reviewer = %s, reviewed_at = now() "
            "WHERE bank_id = %s AND id = ANY(%s)"
        ).format(table=self.table)
        await conn.execute(statement, (status, reviewer, bank_id, list(ids)))

    async def write_audit(self, conn: AsyncConnection[DictRow], entries: Sequence[AuditEntry]) -> int:
        """Append entries (ids filled when empty; times the transaction's when not given)."""
        if not entries:
            return 0
        filled = [entry.filled() for entry in entries]
        statement = sql.SQL(
            "INSERT INTO {audit} (id, at, actor, bank_id, action, target, reason, details) "
            "SELECT u.id, coalesce(u.at, now()), u.actor, u.bank_id, u.action, u.target, u.reason, u.details "
            "FROM unnest(%s::text[], %s::timestamptz[], %s::text[], %s::text[], %s::text[], %s::text[], "
            "%s::text[], %s::jsonb[]) AS u(id, at, actor, bank_id, action, target, reason, details) "
            "ON CONFLICT (id) DO NOTHING"
        ).format(audit=self.audit_table)
        cursor = await conn.execute(
            statement,
            (
                [e.id for e in filled],
                [e.time for e in filled],
                [e.actor for e in filled],
                [e.bank_id for e in filled],
                [e.action for e in filled],
                [e.target for e in filled],
                [e.reason[:MAX_AUDIT_TEXT] for e in filled],
                [Jsonb(e.details) for e in filled],
            ),
        )
        return cursor.rowcount

    async def purge(
        self, conn: AsyncConnection[DictRow], bank_id: str, where: sql.Composable, params: dict[str, Any]
    ) -> int:
        """Delete queued turns matching ``where`` (a condition on bank_id, id and session_id); returns how
        many were still held (an approved one is counted with the turns)."""
        statement = sql.SQL("DELETE FROM {table} WHERE {where} RETURNING status").format(
            table=self.table, where=where
        )
        rows = await (await conn.execute(statement, params)).fetchall()
        return sum(1 for row in rows if row["status"] != APPROVED)

    # ----- reads ---------------------------------------------------------------------------------------
    async def page(
        self, bank_id: str, status: str, after: PageKey | None, limit: int
    ) -> tuple[list[HeldTurn], int]:
        """A page of the queue, oldest first, and how many of the bank's turns are pending."""
        params: dict[str, Any] = {"bank_id": bank_id, "limit": limit, "pending": PENDING}
        conditions = [sql.SQL("bank_id = %(bank_id)s")]
        if status != ALL:
            params["status"] = status
            conditions.append(sql.SQL("status = %(status)s"))
        if after is not None:
            params["at"], params["after_id"] = after.occurred_at, after.id
            conditions.append(sql.SQL("(quarantined_at, id) > (%(at)s, %(after_id)s)"))
        page = sql.SQL(
            "SELECT {columns} FROM {table} WHERE {where} ORDER BY quarantined_at, id LIMIT %(limit)s"
        ).format(columns=_HELD, table=self.table, where=sql.SQL(" AND ").join(conditions))
        count = sql.SQL(
            "SELECT count(*) AS n FROM {table} WHERE bank_id = %(bank_id)s AND status = %(pending)s"
        ).format(table=self.table)
        async with self._connection() as conn:
            rows = await (await conn.execute(page, params)).fetchall()
            counted = await (await conn.execute(count, params)).fetchone()
        return [held_from_row(row) for row in rows], int(counted["n"]) if counted else 0

    async def search(self, bank_id: str, query: str | None, limit: int) -> list[ScoredTurn]:
        """Held-back turns (pending and rejected) matching the ``tsquery`` literal, best first."""
        if query is None:
            return []
        columns = sql.SQL(", ").join(map(sql.Identifier, TURN_COLUMN_NAMES))
        statement = sql.SQL(
            "SELECT {columns}, ts_rank(search_terms, %(query)s::tsquery, 1) AS score FROM {table} "
            "WHERE bank_id = %(bank_id)s AND status <> %(approved)s AND search_terms @@ %(query)s::tsquery "
            "ORDER BY score DESC, quarantined_at DESC, id LIMIT %(limit)s"
        ).format(columns=columns, table=self.table)
        params = {"bank_id": bank_id, "query": query, "limit": limit, "approved": APPROVED}
        async with self._connection() as conn:
            rows = await (await conn.execute(statement, params)).fetchall()
        return [ScoredTurn(turn_from_row(row), float(row["score"])) for row in rows]

    async def append_audit(self, entries: Sequence[AuditEntry]) -> int:
        async with self._connection() as conn:
            return await self.write_audit(conn, entries)

    async def list_audit(
        self, bank_id: str, action: str, since: datetime | None, before: PageKey | None, limit: int
    ) -> list[AuditEntry]:
        """Entries newest first, of one bank (or every bank when empty) and action, after ``since``."""
        params: dict[str, Any] = {"limit": limit}
        conditions: list[sql.Composable] = []
        if bank_id:
            params["bank_id"] = bank_id
            conditions.append(sql.SQL("bank_id = %(bank_id)s"))
        if action:
            params["action"] = action
            conditions.append(sql.SQL("action = %(action)s"))
        if since is not None:
            params["since"] = since
            conditions.append(sql.SQL("at >= %(since)s"))
        if before is not None:
            params["at"], params["before_id"] = before.occurred_at, before.id
            conditions.append(sql.SQL("(at, id) < (%(at)s, %(before_id)s)"))
        where = sql.SQL(" AND ").join(conditions) if conditions else sql.SQL("TRUE")
        statement = sql.SQL(
            "SELECT {columns} FROM {audit} WHERE {where} ORDER BY at DESC, id DESC LIMIT %(limit)s"
        ).format(columns=_AUDIT, audit=self.audit_table, where=where)
        async with self._connection() as conn:
            rows = await (await conn.execute(statement, params)).fetchall()
        return [_audit_from_row(row) for row in rows]
