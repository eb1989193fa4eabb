"""The outbox's vocabulary: target layers, operations, record kinds, how a delivery failed, and an entry.

Kept below every module that writes or reads the outbox (the store's families, the dead-letter list and the
deliverer), so each names the same values without importing the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from psycopg.rows import DictRow

SEMANTIC = "semantic"
WORKING = "working"
REFLECT = "reflect"
SYNC = "sync"
"""Outbox operation: make the target's copy of one record match its current state here."""
DELETE = "delete"
"""Outbox operation: delete what the target derived from some ids, a session or a whole bank."""
TURN = "turn"
EPISODE = "episode"
TRANSIENT = "transient"
"""How a delivery failed: the target was down, slow or busy (retried for as long as it takes)."""
REFUSED = "refused"
"""How a delivery failed: the target will not take the entry as it is (dead-lettered after a few tries)."""


@dataclass(frozen=True)
class OutboxWork:
    """What an outbox entry and a dead letter both are: one piece of work for another layer."""

    id: int
    bank_id: str
    target: str
    operation: str
    record_kind: str
    record_id: str
    payload: dict[str, Any]
    attempts: int


@dataclass(frozen=True)
class OutboxEntry(OutboxWork):
    """One piece of work for another layer, waiting in the outbox."""

    created_at: datetime | None = None
    """When the entry was written (its delivery lag is measured from here)."""


def outbox_fields(row: DictRow) -> dict[str, Any]:
    """The columns of :class:`OutboxWork`, as keyword arguments of an entry or a dead letter."""
    return {
        "id": int(row["id"]),
        "bank_id": row["bank_id"],
        "target": row["target"],
        "operation": row["operation"],
        "record_kind": row["record_kind"],
        "record_id": row["record_id"],
        "payload": dict(row["payload"] or {}),
        "attempts": int(row["attempts"]),
    }


def entry_from_row(row: DictRow) -> OutboxEntry:
    return OutboxEntry(**outbox_fields(row), created_at=row.get("created_at"))


def retry_times(
    entries: Sequence[OutboxEntry], now: datetime, base: float, cap: float, jitter: Sequence[float]
) -> list[datetime]:
    """When each failed entry is tried again: ``base * 2 ** attempts`` seconds (capped), times a jitter."""
    return [
        now + timedelta(seconds=min(cap, base * 2 ** min(entry.attempts, 30)) * factor)
        for entry, factor in zip(entries, jitter, strict=True)
    ]
