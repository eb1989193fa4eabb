"""Access statistics (the meta-memory): how often recall returns each record, and how fresh it is.

Recall reports what it returned; the counts gather in memory and are written in batches by a
background task (or when enough are pending), so recording an access never waits on PostgreSQL.
Freshness rises by a fixed gain on each access (to at most 1) and falls by a fixed amount per day
without one (to at least 0); the stored value is as of its last access and decayed on read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from hindsight.episodic.access_stats import AccessHit
from hindsight.episodic.models import AccessStats
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.store import EpisodicStore
from hindsight.runtime.records import utcnow
from hindsight.runtime.server import being_cancelled

log = logging.getLogger(__name__)

LAYERS = frozenset({"working", "episodic", "semantic", "reflect"})
"""The layers whose records recall returns."""


def decayed(freshness: float, since: datetime, now: datetime, per_day: float) -> float:
    """``freshness`` as of ``since``, decayed to ``now``."""
    days = max(0.0, (now - since).total_seconds() / 86_400.0)
    return max(0.0, min(1.0, freshness - per_day * days))


@dataclass
class _Pending:
    hits: int
    last_hit: datetime


class AccessRecorder:
    """Queues accesses and writes them in batches, off the request path."""

    def __init__(
        self, store: EpisodicStore, settings: EpisodicSettings, clock: Callable[[], datetime] = utcnow
    ) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self._pending: dict[tuple[str, str, str], _Pending] = {}
        self._full = asyncio.Event()
        self._flushing = asyncio.Lock()
        self.dropped = 0
        """Accesses dropped since start because the buffer was full (PostgreSQL down for a long while)."""
        self._dropped_logged = 0
        self._drop_logged_at = float("-inf")

    def record(self, bank_id: str, records: Sequence[tuple[str, str]]) -> int:
        """Queue one access of each (id, layer); returns how many were queued (those of records new to a
        full buffer are dropped and counted instead)."""
        now = self.clock()
        queued = 0
        for record_id, layer in records:
            queued += self._add((bank_id, layer, record_id), 1, now)
        if len(self._pending) >= self.settings.access_batch:
            self._full.set()
        self._log_drops()
        return queued

    def _add(self, key: tuple[str, str, str], hits: int, last_hit: datetime) -> int:
        """Merge ``hits`` into the buffer; 0 (and counted as dropped) when it is full and the key new."""
        pending = self._pending.get(key)
        if pending is not None:
            pending.hits += hits
            pending.last_hit = max(pending.last_hit, last_hit)
            return 1
        if len(self._pending) >= self.settings.access_buffer:
            self.dropped += hits
            return 0
        self._pending[key] = _Pending(hits, last_hit)
        return 1

    def _log_drops(self) -> None:
        """One warning per flush interval at most, with what was dropped since the last one."""
        if self.dropped == self._dropped_logged:
            return
        moment = time.monotonic()
        if moment - self._drop_logged_at < self.settings.access_flush_seconds:
            return
        log.warning(
            "access statistics dropped: the buffer is full",
            extra={
                "dropped": self.dropped - self._dropped_logged,
                "dropped_total": self.dropped,
                "buffer": self.settings.access_buffer,
            },
        )
        self._dropped_logged, self._drop_logged_at = self.dropped, moment

    @property
    def buffered(self) -> int:
        """Records whose accesses wait to be written."""
        return len(self._pending)

    async def flush(self) -> int:
        """Write every queued access now; returns how many records were written."""
        async with self._flushing:
            taken, self._pending = self._pending, {}
            if not taken:
                return 0
            hits = [
                AccessHit(bank, layer, record_id, p.hits, p.last_hit)
                for (bank, layer, record_id), p in taken.items()
            ]
            try:
                await self.store.add_access(
                    hits, self.settings.freshness_gain, self.settings.freshness_decay_per_day
                )
            except Exception:
                # Put them back (merged with what arrived meanwhile, within the bound) for the next flush.
                for hit in hits:
                    self._add((hit.bank_id, hit.layer, hit.id), hit.hits, hit.last_hit)
                self._log_drops()
                raise
            return len(hits)

    async def run(self) -> None:
        """Flush every ``access_flush_seconds``, or at once when a batch is full, until cancelled."""
        try:
            while True:
                # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancel that lands as it ends
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.settings.access_flush_seconds):
                        await self._full.wait()
                self._full.clear()
                try:
                    await self.flush()
                except Exception:
                    if being_cancelled():  # the cancel of shutdown, turned into an error by a client
                        raise asyncio.CancelledError from None
                    log.exception("writing access statistics failed; kept for the next flush")
        finally:
            with contextlib.suppress(Exception):
                await self.flush()

    async def stats(self, bank_id: str, ids: Sequence[str]) -> list[AccessStats]:
        """Statistics of the records with any, freshness decayed to now (queued accesses written first)."""
        await self.flush()
        now = self.clock()
        settings = self.settings
        result = []
        for row in await self.store.access_stats(bank_id, ids):
            value = decayed(row.freshness, row.freshness_at, now, settings.freshness_decay_per_day)
            result.append(
                AccessStats(
                    row.id,
                    row.layer,
                    row.hit_count,
                    row.last_hit,
                    value,
                    stale=value < settings.freshness_stale_below,
                    hot=value > settings.freshness_hot_above,
                )
            )
        return result
