"""Delivery of the outbox: what other layers must see of episodic writes, at least once, with back-off.

Entries are claimed with a lease (so another replica skips them, and they come back if this one dies
mid-delivery), delivered, then deleted. A failed delivery is retried after ``base * 2 ** attempts``
seconds (capped, with jitter), each entry on its own, so one failing entry never holds back the rest of
its bank. Order is kept where it matters (see ``claim_due`` in the store): nothing overtakes a delete, a
delete overtakes nothing, and two syncs of one record go in the order written.

A failure is either transient (the target is down, slow, busy or will not let us in: retried for as long
as it takes) or a refusal (the target will not take the entry as it is: a record too large, a field it
rejects). A refused request of several records is split in halves until the refused ones are found, so
the others go through; an entry refused ``HINDSIGHT_EPISODIC_OUTBOX_MAX_ATTEMPTS`` times moves to the
dead-letter list (:mod:`hindsight.episodic.dead_letters`). Requests are sized by their serialized bytes
as well as by count, under ``HINDSIGHT_MAX_REQUEST_BYTES``.

Delivery is idempotent on the receiving side: a ``sync`` entry reads the record's current state here
and upserts it by id (or deletes it when it is archived or gone), and deletes are deletes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import grpc

from hindsight.contracts.reflect.v1 import reflect_pb2, reflect_pb2_grpc
from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.contracts.working.v1 import working_pb2, working_pb2_grpc
from hindsight.episodic.models import Episode
from hindsight.episodic.outbox_entries import (
    DELETE,
    EPISODE,
    REFLECT,
    REFUSED,
    SEMANTIC,
    SYNC,
    TRANSIENT,
    TURN,
    WORKING,
    OutboxEntry,
    retry_times,
)
from hindsight.episodic.outbox_queue import PreviousTurn
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.store import EpisodicStore
from hindsight.runtime import metrics
from hindsight.runtime.channels import LayerClient, message_limits
from hindsight.runtime.errors import HindsightError
from hindsight.runtime.records import Turn, utcnow
from hindsight.runtime.server import being_cancelled
from hindsight.runtime.text import key_of

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


def turn_record(turn: Turn, before: PreviousTurn | None = None) -> semantic_pb2.SemanticRecord:
    """A turn as a semantic record (same id, so indexing it again replaces it), with the turn it answers
    when ``before`` (the turn just before it in its session) is another speaker's."""
    answered = None
    if before is not None and answers(turn, before):
        answered = semantic_pb2.TurnContext(id=before.id, speaker=before.speaker, text=before.text)
    return semantic_pb2.SemanticRecord(
        id=turn.id,
        kind=semantic_pb2.RECORD_KIND_TURN,
        text=turn.text,
        speaker=turn.speaker,
        session_id=turn.session_id,
        meta=turn.meta.to_pb(),
        replies_to=answered,
    )


def answers(turn: Turn, before: PreviousTurn) -> bool:
    """Whether ``turn`` replies to ``before``: another speaker said it (by name where both have one, else
    by role). A speaker's second message in a row goes on with their own thought: read alone."""
    if turn.speaker.strip() and before.speaker.strip():
        return key_of(turn.speaker) != key_of(before.speaker)
    return turn.role.value != before.role


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


REFUSAL_CODES = frozenset(
    {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.OUT_OF_RANGE,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.ALREADY_EXISTS,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.DATA_LOSS,
    }
)
"""Statuses that say the target will not take this request as it is: sending it again unchanged is
refused again. Every other status (UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED, CANCELLED, RESOURCE_EXHAUSTED
from load, PERMISSION_DENIED, UNAUTHENTICATED, UNIMPLEMENTED) is about the target, not the entry."""
_TOO_LARGE = ("larger than max", "over the limit of")
"""How gRPC and the runtime's size check word a RESOURCE_EXHAUSTED that is about the request's size."""


def refused(exc: BaseException) -> bool:
    """Whether a delivery failure is a refusal of the request itself (True) or transient (False)."""
    if isinstance(exc, grpc.aio.AioRpcError):
        code, details = exc.code(), exc.details() or ""
    elif isinstance(exc, HindsightError):
        code, details = exc.code, str(exc)
    else:
        # An entry this code cannot make a request of is refused; the store or the network here (anything
        # else) has nothing to do with the entry.
        return isinstance(exc, (ValueError, TypeError))
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        return any(marker in details for marker in _TOO_LARGE)
    return code in REFUSAL_CODES


def sized(
    items: Sequence[tuple[str, Any]], budget: int, count: int = IDS_PER_CALL
) -> list[list[tuple[str, Any]]]:
    """``(record id, message)`` items in runs of at most ``count`` whose serialized sizes add up to at most
    ``budget`` bytes (a single item over it makes a run of its own, which the size check then refuses)."""
    runs: list[list[tuple[str, Any]]] = []
    size = 0
    for item in items:
        item_size = item[1].ByteSize() + 8  # the field's tag and length prefix
        if not runs or len(runs[-1]) >= count or size + item_size > budget:
            runs.append([])
            size = 0
        runs[-1].append(item)
        size += item_size
    return runs


@dataclass(frozen=True)
class Failure:
    """Entries whose delivery failed, why, and whether the target refused them (else it was transient)."""

    entries: list[OutboxEntry]
    error: str
    refused: bool


@dataclass
class GroupOutcome:
    """What one bank and target's delivery did: delivered, failed, and held back behind a failure."""

    delivered: list[OutboxEntry] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    held: list[OutboxEntry] = field(default_factory=list)


@dataclass(frozen=True)
class _Refused:
    """Record ids of a request the target failed, with the error."""

    ids: list[str]
    error: BaseException


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
            if claimed:
                continue  # what this round delivered may have freed entries held back behind it
            await self._idle()

    async def _report_backlog(self) -> None:
        """Set the backlog and dead-letter gauges from the store, at most every ``BACKLOG_REPORT_SECONDS``."""
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
        metrics.set_outbox_dead_letters(counts.dead_letters, self.store.targets)

    async def _idle(self) -> None:
        wait = self.settings.outbox_poll_seconds
        with contextlib.suppress(Exception):
            due = await self.store.next_due(self.clock())
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
        outcomes = await asyncio.gather(*(self._deliver_group(group) for group in groups.values()))
        delivered = {entry.id for outcome in outcomes for entry in outcome.delivered}
        _observe_lag(entries, delivered, self.clock())
        for outcome in outcomes:
            await self._settle(outcome)
        return delivered

    async def _settle(self, outcome: GroupOutcome) -> None:
        """Write one group's outcome: delivered entries go, failed ones back off (or, refused too often,
        move to the dead-letter list), held ones are due again at once (their blocker decides when)."""
        now = self.clock()
        await self.store.delivered(outcome.delivered)
        for failure in outcome.failures:
            first = failure.entries[0]
            bury = [
                entry
                for entry in failure.entries
                if failure.refused and entry.attempts + 1 >= self.settings.outbox_max_attempts
            ]
            again = [entry for entry in failure.entries if entry not in bury]
            log.warning(
                "outbox delivery refused" if failure.refused else "outbox delivery failed; will retry",
                extra={
                    "bank_id": first.bank_id,
                    "target": first.target,
                    "entries": len(failure.entries),
                    "dead_lettered": len(bury),
                    "attempts": first.attempts + 1,
                    "error": failure.error,
                },
            )
            if again:
                retry_at = retry_times(
                    again,
                    now,
                    self.settings.outbox_backoff_seconds,
                    self.settings.outbox_max_backoff_seconds,
                    [self.jitter() for _ in again],
                )
                kind = REFUSED if failure.refused else TRANSIENT
                await self.store.failed(again, failure.error, retry_at, kind)
            if bury:
                buried = await self.store.dead_letters.bury([entry.id for entry in bury], failure.error)
                metrics.count_dead_lettered(first.target, buried)
        await self.store.release(outcome.held, now)

    async def _deliver_group(self, entries: list[OutboxEntry]) -> GroupOutcome:
        """One bank and target's entries, in the order written: runs of syncs, and deletes one by one. A
        delete waits for every failure before it, and what comes after a failed delete waits for it."""
        runs: list[list[OutboxEntry]] = []
        for entry in entries:
            if runs and entry.operation == SYNC and runs[-1][0].operation == SYNC:
                runs[-1].append(entry)
            else:
                runs.append([entry])
        outcome = GroupOutcome()
        failed_records: set[str] = set()
        for index, run in enumerate(runs):
            if run[0].operation != SYNC:
                if outcome.failures:
                    outcome.held.extend(entry for later in runs[index:] for entry in later)
                    break
                try:
                    await self._send(run)
                except Exception as exc:
                    outcome.failures.append(Failure(run, repr(exc), refused(exc)))
                    outcome.held.extend(entry for later in runs[index + 1 :] for entry in later)
                    break
                outcome.delivered.extend(run)
                continue
            # A sync after a failed sync of the same record (both claimed at once) waits for it.
            held = [entry for entry in run if entry.record_id in failed_records]
            outcome.held.extend(held)
            sent = [entry for entry in run if entry.record_id not in failed_records]
            result = await self._sync(sent)
            outcome.delivered.extend(result.delivered)
            outcome.failures.extend(result.failures)
            failed_records |= {entry.record_id for failure in result.failures for entry in failure.entries}
        return outcome

    async def _send(self, run: Sequence[OutboxEntry]) -> None:
        first = run[0]
        if first.operation == DELETE:
            await self._delete(first)
        else:
            raise ValueError(f"unknown outbox entry: {first.operation} to {first.target}")

    async def _sync(self, run: Sequence[OutboxEntry]) -> GroupOutcome:
        """Deliver a run of syncs of one bank and target; each entry is delivered or fails on its own."""
        outcome = GroupOutcome()
        if not run:
            return outcome
        first = run[0]
        try:
            if first.target == REFLECT:
                failed = await self._sync_reflect(first.bank_id, run)
            elif first.target == WORKING:
                failed = await self._sync_working(first.bank_id, run)
            elif first.target != SEMANTIC:
                raise ValueError(f"unknown outbox entry: {first.operation} to {first.target}")
            else:
                failed = await self._sync_semantic(first.bank_id, run)
        except Exception as exc:  # the state could not be read, or no semantic layer: the whole run
            outcome.failures.append(Failure(list(run), repr(exc), refused(exc)))
            return outcome
        failed_ids = {record_id for item in failed for record_id in item.ids}
        outcome.delivered.extend(entry for entry in run if entry.record_id not in failed_ids)
        for item in failed:
            ids = set(item.ids)
            entries = [entry for entry in run if entry.record_id in ids]
            if entries:
                outcome.failures.append(Failure(entries, repr(item.error), refused(item.error)))
        return outcome

    def _request_budget(self) -> int:
        """Bytes one delivery request may carry: the setting, under the request limit of every layer."""
        return min(self.settings.outbox_batch_bytes, message_limits().max_request_bytes)

    async def _sync_semantic(self, bank_id: str, run: Sequence[OutboxEntry]) -> list[_Refused]:
        """Upsert the live records and delete the gone ones; returns the record ids that failed, and why."""
        client = self.targets.semantic
        if client is None:
            raise RuntimeError("no semantic layer configured")
        turn_ids = list(dict.fromkeys(entry.record_id for entry in run if entry.record_kind == TURN))
        episode_ids = list(dict.fromkeys(entry.record_id for entry in run if entry.record_kind == EPISODE))
        state = await self.store.sync_state(
            bank_id, turn_ids, episode_ids, with_before=self.settings.reply_context
        )
        records = [(turn.id, turn_record(turn, state.before.get(turn.id))) for turn in state.turns.values()]
        records += [(episode.id, episode_record(episode)) for episode in state.episodes.values()]
        gone = [i for i in turn_ids if i not in state.turns] + [
            i for i in episode_ids if i not in state.episodes
        ]

        async def upsert(items: Sequence[tuple[str, Any]]) -> None:
            request = semantic_pb2.UpsertRequest(bank_id=bank_id, records=[item[1] for item in items])
            message_limits().check_request(request, "records")
            await client.call("Upsert", request)

        async def delete(items: Sequence[tuple[str, Any]]) -> None:
            await client.call(
                "Delete", semantic_pb2.DeleteRequest(bank_id=bank_id, ids=[item[0] for item in items])
            )

        budget = self._request_budget()
        calls: list[tuple[Callable[[Sequence[tuple[str, Any]]], Awaitable[None]], list[tuple[str, Any]]]] = [
            (upsert, run_items) for run_items in sized(records, budget)
        ]
        ids_only = [(record_id, semantic_pb2.DeleteRequest(ids=[record_id])) for record_id in gone]
        calls += [(delete, run_items) for run_items in sized(ids_only, budget)]
        failed: list[_Refused] = []
        down: BaseException | None = None
        for send, items in calls:
            if down is not None:  # the target is down or slow: the rest would fail the same way
                failed.append(_Refused([item[0] for item in items], down))
                continue
            for failure in await self._split_on_refusal(send, items):
                failed.append(failure)
                if not refused(failure.error):
                    down = failure.error
        return failed

    async def _sync_reflect(self, bank_id: str, run: Sequence[OutboxEntry]) -> list[_Refused]:
        """Tell reflection which of the turns are archived now and which are live: a lesson standing only
        on archived turns is kept but not recalled, and comes back with a restore."""
        client = self.targets.reflect
        if client is None:
            raise RuntimeError("no reflect layer configured")
        turn_ids = list(dict.fromkeys(entry.record_id for entry in run if entry.record_kind == TURN))
        state = await self.store.sync_state(bank_id, turn_ids, [])
        for chunk in _chunks(turn_ids):
            await client.call(
                "SetSourceStates",
                reflect_pb2.SetSourceStatesRequest(
                    bank_id=bank_id,
                    archived_ids=[i for i in chunk if i not in state.turns],
                    live_ids=[i for i in chunk if i in state.turns],
                ),
            )
        return []

    async def _sync_working(self, bank_id: str, run: Sequence[OutboxEntry]) -> list[_Refused]:
        """Append the live turns to their session windows (working memory skips those it holds and puts a
        late one in its place by time); a turn archived or purged since is left out."""
        client = self.targets.working
        if client is None:
            raise RuntimeError("no working layer configured")
        turn_ids = list(dict.fromkeys(entry.record_id for entry in run if entry.record_kind == TURN))
        state = await self.store.sync_state(bank_id, turn_ids, [])
        live = sorted(
            state.turns.values(), key=lambda turn: (turn.meta.time is None, turn.meta.time, turn.id)
        )

        async def append(chunk: Sequence[tuple[str, Any]]) -> None:
            request = working_pb2.AppendTurnsRequest(bank_id=bank_id, turns=[item[1] for item in chunk])
            message_limits().check_request(request, "turns")
            await client.call("AppendTurns", request)

        failed: list[_Refused] = []
        down: BaseException | None = None
        for chunk in sized([(turn.id, turn.to_pb()) for turn in live], self._request_budget()):
            if down is not None:  # the layer is down or slow: the rest would fail the same way
                failed.append(_Refused([item[0] for item in chunk], down))
                continue
            for failure in await self._split_on_refusal(append, chunk):
                failed.append(failure)
                if not refused(failure.error):
                    down = failure.error
        return failed

    async def _split_on_refusal(
        self,
        send: Callable[[Sequence[tuple[str, Any]]], Awaitable[None]],
        items: Sequence[tuple[str, Any]],
    ) -> list[_Refused]:
        """Send ``items``; when the target refuses them, send each half on its own (recursively) so that
        only the refused records fail. A transient failure fails them all, unsplit."""
        try:
            await send(items)
            return []
        except Exception as exc:
            if being_cancelled():
                raise
            if len(items) == 1 or not refused(exc):
                return [_Refused([item[0] for item in items], exc)]
        middle = len(items) // 2
        return [
            *await self._split_on_refusal(send, items[:middle]),
            *await self._split_on_refusal(send, items[middle:]),
        ]

    async def _delete(self, entry: OutboxEntry) -> None:
        payload = entry.payload
        ids = [str(value) for value in payload.get("ids", [])]
        # A delete "by_ids" names every record it removes: the session or bank it came from is not sent, so
        # what was written there after the purge stays.
        by_ids = bool(payload.get("by_ids", False))
        session_id = "" if by_ids else str(payload.get("session_id", ""))
        whole_bank = False if by_ids else bool(payload.get("whole_bank", False))
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
