"""Delivery of the outbox: what other layers must see of episodic writes, at least once, with back-off.

Entries are claimed with a lease (so another replica skips them, and they come back if this one dies
mid-delivery), delivered, then deleted. A failed delivery is retried after ``base * 2 ** attempts``
seconds (capped, with jitter). Entries of one bank and target are delivered in the order written, and
a failure holds back the later ones, so a purge never overtakes an earlier write or the reverse.

Delivery is idempotent on the receiving side: a ``sync`` entry reads the record's current state here
and upserts it by id (or deletes it when it is archived or gone), and deletes are deletes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hindsight.contracts.reflect.v1 import reflect_pb2, reflect_pb2_grpc
from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.contracts.working.v1 import working_pb2, working_pb2_grpc
from hindsight.episodic.models import Episode
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.store import (
    DELETE,
    EPISODE,
    REFLECT,
    SEMANTIC,
    SYNC,
    TURN,
    WORKING,
    EpisodicStore,
    OutboxEntry,
    retry_times,
)
from hindsight.runtime import metrics
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.records import Turn, utcnow
from hindsight.runtime.server import being_cancelled

log = logging.getLogger(__name__)

BACKLOG_REPORT_SECONDS = 5.0
"""Fewest seconds between two reads of the backlog for its gauges (a count over the whole outbox)."""
IDS_PER_CALL = 1000
"""Ids per delete call and records per upsert call, under every layer's request limits."""
_RECONNECT_OPTIONS = (
    # The deliverer keeps its own back-off; the channel should reconnect soon after a layer is back.
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2000),
)


def episode_text(episode: Episode) -> str:
    """What an episode is found by in the semantic layer: its parts, labelled."""
    parts = [
        ("Situation", episode.situation),
        ("Action", episode.action),
        ("Outcome", episode.outcome),
        ("Lesson", episode.lesson),
    ]
    return "\n".join(f"{label}: {text}" for label, text in parts if text.strip())


def turn_record(turn: Turn) -> semantic_pb2.SemanticRecord:
    """A turn as a semantic record (same id, so indexing it again replaces it)."""
    return semantic_pb2.SemanticRecord(
        id=turn.id,
        kind=semantic_pb2.RECORD_KIND_TURN,
        text=turn.text,
        speaker=turn.speaker,
        session_id=turn.session_id,
        meta=turn.meta.to_pb(),
    )


def episode_record(episode: Episode) -> semantic_pb2.SemanticRecord:
    """An episode as a semantic record."""
    return semantic_pb2.SemanticRecord(
        id=episode.id,
        kind=semantic_pb2.RECORD_KIND_EPISODE,
        text=episode_text(episode),
        session_id=episode.session_id,
        meta=episode.meta.to_pb(),
    )


def _chunks(values: Sequence[Any], size: int = IDS_PER_CALL) -> list[Sequence[Any]]:
    return [values[start : start + size] for start in range(0, len(values), size)]


def _observe_lag(entries: Sequence[OutboxEntry], delivered: set[int], now: datetime) -> None:
    """Write-to-delivery time of each delivered entry, by target."""
    by_target: dict[str, list[float]] = {}
    for entry in entries:
        if entry.id in delivered and entry.created_at is not None:
            by_target.setdefault(entry.target, []).append((now - entry.created_at).total_seconds())
    for target, lags in by_target.items():
        metrics.observe_delivery_lag(target, lags)


@dataclass
class Targets:
    """Channels to the layers the outbox delivers to; None where the deployment has none."""

    semantic: LayerClient[semantic_pb2_grpc.SemanticServiceStub] | None = None
    working: LayerClient[working_pb2_grpc.WorkingMemoryServiceStub] | None = None
    reflect: LayerClient[reflect_pb2_grpc.ReflectServiceStub] | None = None

    @classmethod
    def from_settings(cls, settings: EpisodicSettings) -> Targets:
        """A channel to every configured layer."""

        def client(address: str, stub: Any) -> Any:
            if not address:
                return None
            return LayerClient(
                address,
                stub,
                token=settings.internal_token,
                default_timeout=settings.outbox_timeout_seconds,
                options=_RECONNECT_OPTIONS,
            )

        return cls(
            semantic=client(settings.semantic_addr, semantic_pb2_grpc.SemanticServiceStub),
            working=client(settings.working_addr, working_pb2_grpc.WorkingMemoryServiceStub),
            reflect=client(settings.reflect_addr, reflect_pb2_grpc.ReflectServiceStub),
        )

    async def close(self) -> None:
        """Close every channel."""
        for client in (self.semantic, self.working, self.reflect):
            if client is not None:
                await client.close()


class OutboxDeliverer:
    """Delivers due entries in the background, and a request's own entries on demand (``index_now``)."""

    def __init__(
        self,
        store: EpisodicStore,
        targets: Targets,
        settings: EpisodicSettings,
        clock: Callable[[], datetime] = utcnow,
        jitter: Callable[[], float] = lambda: random.uniform(0.8, 1.2),
    ) -> None:
        self.store = store
        self.targets = targets
        self.settings = settings
        self.clock = clock
        self.jitter = jitter
        self._wake = asyncio.Event()
        self._backlog_reported = -BACKLOG_REPORT_SECONDS

    def wake(self) -> None:
        """New entries are due: look now instead of at the next poll."""
        self._wake.set()

    async def run(self) -> None:
        """Deliver until cancelled; a failing round is logged and the loop goes on."""
        while True:
            try:
                claimed = await self.deliver_due()
            except Exception:
                if being_cancelled():  # a client turned the cancel into its own error: stop, do not retry
                    raise asyncio.CancelledError from None
                log.exception("outbox round failed")
                claimed = 0
            await self._report_backlog()
            if claimed >= self.settings.outbox_batch:
                continue  # a full batch: more may be due at once
            await self._idle()

    async def _report_backlog(self) -> None:
        """Set the backlog gauges from the store, at most every ``BACKLOG_REPORT_SECONDS``."""
        now = time.monotonic()
        if now - self._backlog_reported < BACKLOG_REPORT_SECONDS:
            return
        self._backlog_reported = now
        try:
            counts = await self.store.outbox_counts("")
        except Exception as exc:  # the store is down: the round's own failure says so, the gauges keep
            log.debug("outbox backlog not read", extra={"error": repr(exc)})
            return
        metrics.set_outbox_backlog(counts.pending, self.store.targets)

    async def _idle(self) -> None:
        wait = self.settings.outbox_poll_seconds
        with contextlib.suppress(Exception):
            due = await self.store.next_due()
            if due is not None:
                wait = min(wait, max(0.0, (due - self.clock()).total_seconds()))
        # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancel that lands as the wait ends
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait):
                await self._wake.wait()
        self._wake.clear()

    async def deliver_due(self) -> int:
        """Claim and deliver one batch of due entries; returns how many were claimed."""
        now = self.clock()
        lease = now + timedelta(seconds=self.settings.outbox_lease_seconds)
        entries = await self.store.claim_due(now, lease, self.settings.outbox_batch)
        if entries:
            await self.deliver(entries)
        return len(entries)

    async def deliver_claimed(self, ids: Sequence[int], budget: float) -> bool:
        """Deliver entries the caller wrote already claimed, within ``budget`` seconds; True when every one
        was delivered. What is not delivered in time is handed to the background deliverer at once."""
        if not ids:
            return True
        entries = await self.store.claimed(ids)
        if await self.store.waiting_before(entries):
            # Older work for the same bank and layer waits (a layer is down, or a purge is queued): these
            # must not overtake it, so they queue behind it.
            await self.store.release(entries, self.clock())
            self.wake()
            return False
        try:
            delivered = await asyncio.wait_for(self.deliver(entries), timeout=max(budget, 0.001))
        except TimeoutError:
            now = self.clock()
            retry_at = retry_times(
                entries,
                now,
                self.settings.outbox_backoff_seconds,
                self.settings.outbox_max_backoff_seconds,
                [self.jitter() for _ in entries],
            )
            await self.store.failed(entries, "not delivered within the caller's deadline", retry_at)
            return False
        return len(delivered) == len(ids)

    async def deliver(self, entries: Sequence[OutboxEntry]) -> set[int]:
        """Deliver entries grouped by bank and target (groups side by side); returns the delivered ids."""
        groups: dict[tuple[str, str], list[OutboxEntry]] = {}
        for entry in sorted(entries, key=lambda item: item.id):
            groups.setdefault((entry.bank_id, entry.target), []).append(entry)
        results = await asyncio.gather(*(self._deliver_group(group) for group in groups.values()))
        delivered = {entry_id for done in results for entry_id in done}
        _observe_lag(entries, delivered, self.clock())
        return delivered

    async def _deliver_group(self, entries: list[OutboxEntry]) -> set[int]:
        runs: list[list[OutboxEntry]] = []
        for entry in entries:
            if runs and entry.operation == SYNC and runs[-1][0].operation == SYNC:
                runs[-1].append(entry)
            else:
                runs.append([entry])
        done: list[OutboxEntry] = []
        for index, run in enumerate(runs):
            try:
                await self._send(run)
            except Exception as exc:
                held = [entry for later in runs[index:] for entry in later]
                first = run[0]
                log.warning(
                    "outbox delivery failed; will retry",
                    extra={
                        "bank_id": first.bank_id,
                        "target": first.target,
                        "entries": len(held),
                        "attempts": first.attempts + 1,
                        "error": repr(exc),
                    },
                )
                now = self.clock()
                retry_at = retry_times(
                    held,
                    now,
                    self.settings.outbox_backoff_seconds,
                    self.settings.outbox_max_backoff_seconds,
                    [self.jitter() for _ in held],
                )
                await self.store.delivered(done)
                await self.store.failed(held, repr(exc), retry_at)
                return {entry.id for entry in done}
            done.extend(run)
        await self.store.delivered(done)
        return {entry.id for entry in done}

    async def _send(self, run: Sequence[OutboxEntry]) -> None:
        first = run[0]
        if first.operation == SYNC and first.target == SEMANTIC:
            await self._sync_semantic(first.bank_id, run)
        elif first.operation == DELETE:
            await self._delete(first)
        else:
            raise ValueError(f"unknown outbox entry: {first.operation} to {first.target}")

    async def _sync_semantic(self, bank_id: str, run: Sequence[OutboxEntry]) -> None:
        client = self.targets.semantic
        if client is None:
            raise RuntimeError("no semantic layer configured")
        turn_ids = list(dict.fromkeys(entry.record_id for entry in run if entry.record_kind == TURN))
        episode_ids = list(dict.fromkeys(entry.record_id for entry in run if entry.record_kind == EPISODE))
        state = await self.store.sync_state(bank_id, turn_ids, episode_ids)
        records = [turn_record(turn) for turn in state.turns.values()]
        records += [episode_record(episode) for episode in state.episodes.values()]
        gone = [i for i in turn_ids if i not in state.turns] + [
            i for i in episode_ids if i not in state.episodes
        ]
        for chunk in _chunks(records):
            await client.call("Upsert", semantic_pb2.UpsertRequest(bank_id=bank_id, records=list(chunk)))
        for chunk in _chunks(gone):
            await client.call("Delete", semantic_pb2.DeleteRequest(bank_id=bank_id, ids=list(chunk)))

    async def _delete(self, entry: OutboxEntry) -> None:
        payload = entry.payload
        ids = [str(value) for value in payload.get("ids", [])]
        session_id = str(payload.get("session_id", ""))
        whole_bank = bool(payload.get("whole_bank", False))
        bank_id = entry.bank_id
        # Ids in chunks, the session with the first (alone when there are no ids); a whole bank needs no ids.
        chunks: list[Sequence[str]] = [[]] if whole_bank else _chunks(ids) or [[]]
        for index, chunk in enumerate(chunks):
            scope_session = session_id if index == 0 else ""
            scope_bank = whole_bank if index == 0 else False
            if entry.target == SEMANTIC and self.targets.semantic is not None:
                await self.targets.semantic.call(
                    "Delete",
                    semantic_pb2.DeleteRequest(
                        bank_id=bank_id,
                        ids=list(chunk),
                        source_turn_ids=list(chunk),
                        session_id=scope_session,
                        whole_bank=scope_bank,
                    ),
                )
            elif entry.target == WORKING and self.targets.working is not None:
                await self.targets.working.call(
                    "ForgetTurns",
                    working_pb2.ForgetTurnsRequest(
                        bank_id=bank_id, turn_ids=list(chunk), session_id=scope_session, whole_bank=scope_bank
                    ),
                )
            elif entry.target == REFLECT and self.targets.reflect is not None:
                await self.targets.reflect.call(
                    "PurgeLessons",
                    reflect_pb2.PurgeLessonsRequest(
                        bank_id=bank_id,
                        source_ids=list(chunk),
                        session_id=scope_session,
                        whole_bank=scope_bank,
                    ),
                )
            else:
                raise RuntimeError(f"no {entry.target} layer configured")
