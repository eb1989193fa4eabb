"""LLM fact passes as durable work: queued in the store with the Upsert, run after its reply, retried.

A pass is written to the store (the graph collection, :mod:`.lineage_store`) before the Upsert answers, so
a restart resumes it. At most ``max_in_flight`` run at once; the rest wait their turn in the store (never
dropped). A pass that fails (no usable answer, an error, past its time limit) is tried again after an
exponential back-off; after ``max_attempts`` it is given up: counted, logged, and kept in the store as the
record of a pass that never succeeded (a purge of its turns still removes it). A pass carries copies of its
turns, so a Delete of those turns edits or removes it (:mod:`.erase`), and its facts go through the same
tombstone check as every write.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from hindsight.runtime.background import spawn
from hindsight.runtime.metrics import LLM_PASSES_GIVEN_UP
from hindsight.runtime.records import content_id
from hindsight.semantic.lineage_store import SemanticStore
from hindsight.semantic.records import PendingPass, SemanticRecord

log = logging.getLogger(__name__)

PassRunner = Callable[[str, Sequence[SemanticRecord]], Awaitable[bool]]
"""Runs one pass for a bank's turns: True when it is done, False when it should be tried again."""


def utc_now() -> datetime:
    """Retries are scheduled on the real clock (an engine's injected clock says when facts were true)."""
    return datetime.now(UTC)


@dataclass
class PassQueue:
    """The durable queue of one engine's LLM fact passes (see the module docstring)."""

    store: SemanticStore
    run: PassRunner
    lock: Callable[[str], asyncio.Lock]
    """The bank's write lock: a failed pass is put back under it, after the turns still alive are read."""
    timeout: float = 300.0
    """Seconds one attempt may take in all (the LLM's answer, then embedding and writing its facts)."""
    max_in_flight: int = 8
    max_attempts: int = 5
    backoff: float = 5.0
    """Seconds before the second attempt; doubled for each one after."""
    max_backoff: float = 300.0
    now: Callable[[], datetime] = utc_now
    given_up: int = 0
    """Passes given up since start (each also logged, counted in the metrics and kept in the store)."""
    _tasks: set[asyncio.Task[None]] = field(default_factory=set, init=False, repr=False)
    _timer: asyncio.TimerHandle | None = field(default=None, init=False, repr=False)
    _again: bool = field(default=False, init=False, repr=False)

    async def enqueue(self, bank_id: str, turns: Sequence[SemanticRecord]) -> None:
        """Store a pass over ``turns`` (the same turns again replace it: a retried Upsert queues one pass)."""
        pass_id = content_id(bank_id, *sorted(turn.id for turn in turns))
        await self.store.put_pass(bank_id, PendingPass(pass_id, tuple(turns), 0, self.now()))
        self.wake()

    def wake(self) -> None:
        """Start the pump unless it runs (then it looks again when it ends)."""
        if self._tasks:
            self._again = True
            return
        spawn(self._pump(), name="llm-fact-passes", timeout=None, keep=self._tasks)

    def resume(self) -> None:
        """After a start: run what a previous process left in the store."""
        self.wake()

    def close(self) -> None:
        """Stop scheduling (on shutdown; what is left stays in the store for the next start)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def drain(self) -> None:
        """Wait for the passes that are due now (on shutdown, and in tests); later retries stay queued."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _pump(self) -> None:
        try:
            while True:
                self._again = False
                due = await self.store.due_passes(self.now(), self.max_in_flight)
                if not due and not self._again:
                    break
                await asyncio.gather(*(self._attempt(bank_id, item) for bank_id, item in due))
            self._schedule(await self.store.next_due())
        except Exception:
            log.exception("llm fact pass queue failed; it is read again on the next write or start")

    def _schedule(self, moment: datetime | None) -> None:
        self.close()
        if moment is None:
            return
        delay = max(0.0, (moment - self.now()).total_seconds())
        with contextlib.suppress(RuntimeError):  # no running loop: the next start resumes
            self._timer = asyncio.get_running_loop().call_later(delay, self.wake)

    async def _attempt(self, bank_id: str, item: PendingPass) -> None:
        error = ""
        try:
            done = await asyncio.wait_for(self.run(bank_id, item.turns), self.timeout)
            error = "" if done else "no usable answer"
        except Exception as exc:  # any failure is retried; the record keeps what it was
            done, error = False, repr(exc)
        async with self.lock(bank_id):
            if done:
                await self.store.drop_pass(bank_id, item.id)
                return
            buried = await self.store.buried(bank_id, [turn.id for turn in item.turns])
            turns = tuple(turn for turn in item.turns if turn.id not in buried)
            if not turns:
                await self.store.drop_pass(bank_id, item.id)
                return
            attempts = item.attempts + 1
            extra = {"bank_id": bank_id, "pass_id": item.id, "attempts": attempts, "error": error}
            if attempts >= self.max_attempts:
                self.given_up += 1
                LLM_PASSES_GIVEN_UP.inc()
                log.error(
                    "llm fact pass given up; kept in the store", extra=extra | {"given_up": self.given_up}
                )
                await self.store.put_pass(
                    bank_id, replace(item, turns=turns, attempts=attempts, due=None, error=error)
                )
                return
            delay = min(self.max_backoff, self.backoff * 2 ** (attempts - 1))
            log.warning("llm fact pass failed; tried again later", extra=extra | {"retry_in_s": delay})
            await self.store.put_pass(
                bank_id,
                replace(
                    item,
                    turns=turns,
                    attempts=attempts,
                    due=self.now() + timedelta(seconds=delay),
                    error=error,
                ),
            )
