"""The access-statistics family of the episodic store: hit counts and freshness of records of every layer
(what :mod:`hindsight.episodic.access` buffers and flushes).

A mixin on :class:`~hindsight.episodic.store_base.StoreBase` (see there why mixins), assembled into
:class:`~hindsight.episodic.store.PostgresEpisodicStore`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from psycopg import sql

from hindsight.episodic.store_base import StoreBase


@dataclass(frozen=True)
class StoredAccess:
    """A record's access statistics as stored: freshness is as of ``freshness_at``."""

    id: str
    layer: str
    hit_count: int
    last_hit: datetime
    freshness: float
    freshness_at: datetime


@dataclass(frozen=True)
class AccessHit:
    """Accesses to one record gathered since the last flush."""

    bank_id: str
    layer: str
    id: str
    hits: int
    last_hit: datetime


class AccessRecords(StoreBase):
    """Access statistics, by bank, layer and record id."""

    async def add_access(self, hits: Sequence[AccessHit], gain: float, decay_per_day: float) -> None:
        """Freshness is kept as (value, as of): a hit first decays the value to the hit time, then adds
        ``gain`` (capped at 1). A first hit starts from ``gain``."""
        if not hits:
            return
        statement = sql.SQL(
            "INSERT INTO {access} AS a (bank_id, layer, id, hit_count, last_hit, freshness, freshness_at) "
            "SELECT u.bank_id, u.layer, u.id, u.hits, u.last_hit, least(1.0, %(gain)s * u.hits), u.last_hit "
            "FROM unnest(%(banks)s::text[], %(layers)s::text[], %(ids)s::text[], %(hits)s::bigint[], "
            "%(times)s::timestamptz[]) AS u(bank_id, layer, id, hits, last_hit) "
            "ON CONFLICT (bank_id, layer, id) DO UPDATE SET hit_count = a.hit_count + excluded.hit_count, "
            "last_hit = greatest(a.last_hit, excluded.last_hit), "
            "freshness = least(1.0, greatest(0.0, a.freshness - %(decay)s * greatest(0.0, "
            "  extract(epoch FROM (excluded.last_hit - a.freshness_at)) / 86400.0)) "
            "  + %(gain)s * excluded.hit_count), "
            "freshness_at = greatest(a.freshness_at, excluded.last_hit)"
        ).format(access=self._access)
        ordered = sorted(
            hits, key=lambda hit: (hit.bank_id, hit.layer, hit.id)
        )  # one lock order: no deadlocks
        params = {
            "gain": gain,
            "decay": decay_per_day,
            "banks": [hit.bank_id for hit in ordered],
            "layers": [hit.layer for hit in ordered],
            "ids": [hit.id for hit in ordered],
            "hits": [hit.hits for hit in ordered],
            "times": [hit.last_hit for hit in ordered],
        }
        async with self._connection() as conn:
            await conn.execute(statement, params)

    async def access_stats(self, bank_id: str, ids: Sequence[str]) -> list[StoredAccess]:
        statement = sql.SQL(
            "SELECT id, layer, hit_count, last_hit, freshness, freshness_at FROM {access} "
            "WHERE bank_id = %s AND id = ANY(%s) ORDER BY id, layer"
        ).format(access=self._access)
        async with self._connection() as conn:
            rows = await (await conn.execute(statement, (bank_id, list(ids)))).fetchall()
        return [
            StoredAccess(
                row["id"],
                row["layer"],
                int(row["hit_count"]),
                row["last_hit"],
                float(row["freshness"]),
                row["freshness_at"],
            )
            for row in rows
        ]
