"""Micro-batching: texts from concurrent calls are coalesced into one model run.

Eight runs over one text cost far more than one run over eight, so texts queue and a run takes every
text waiting, up to ``max_batch_size``. A text that finds the model idle waits at most ``max_wait_ms``
for others to join; texts that queued while a run was in progress have had their company already and go
in the next run at once (waiting then would only leave the model idle).

Runs happen on the executor's threads, and the thread that finishes a run takes the next batch itself:
the event loop only queues texts and hands back vectors. A model kept busy by many single-text callers
therefore never waits for the loop (which is busy answering those calls) to start its next run. A
drainer gives its thread back after every run and queues itself again, so other work on the executor
(rerank, a second model) takes its turn.

With ``runs`` > 1, up to that many runs proceed at once: a batch that finds several runs free is split
into that many chunks (large calls use every core), and while every run is busy, texts keep queueing for
the next batch (concurrent callers still share runs).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass

import numpy as np

from hindsight.inference.models import Embedded
from hindsight.runtime.errors import Unavailable
from hindsight.runtime.metrics import observe_batch

log = logging.getLogger(__name__)

EmbedFn = Callable[[Sequence[str]], Embedded]

MIN_CHUNK = 8
"""Fewest texts worth a graph run of their own when a batch is split between free runs."""


@dataclass(frozen=True)
class _Row:
    vector: np.ndarray
    truncated: bool


@dataclass
class _Pending:
    text: str
    future: asyncio.Future[_Row]
    queued_at: float
    """``time.monotonic()`` when queued: the wait for company is counted from here."""


@dataclass
class BatchStats:
    """What the batcher has done so far: the ratio tells how well calls are being coalesced."""

    batches: int = 0
    """Graph runs (a batch split between several runs counts once per run)."""
    texts: int = 0


class MicroBatcher:
    """Coalesces texts from concurrent :meth:`embed` calls into batches of at most ``max_batch_size``.

    Must be started and closed inside the event loop that calls it. The queue and the counters below are
    shared with the executor's threads and guarded by ``_lock``.
    """

    def __init__(
        self,
        embed: EmbedFn,
        executor: Executor,
        *,
        max_batch_size: int,
        max_wait_ms: float,
        runs: int = 1,
        min_chunk: int = MIN_CHUNK,
    ) -> None:
        if max_batch_size < 1:
            raise ValueError("max_batch_size must be at least 1")
        if runs < 1 or min_chunk < 1:
            raise ValueError("runs and min_chunk must be at least 1")
        self._embed = embed
        self._executor = executor
        self._max_batch_size = max_batch_size
        self._max_wait = max(0.0, max_wait_ms) / 1000
        self._runs = runs
        self._min_chunk = min_chunk
        self._lock = threading.Lock()
        self._joined = threading.Condition(self._lock)
        """Notified when texts are queued or the batcher closes: a collecting drainer looks again."""
        self._queue: deque[_Pending] = deque()
        self._drainers = 0
        """Drainer jobs submitted and not yet finished (at most ``runs``)."""
        self._collecting = 0
        """Of those, the ones not running a graph: queued on the executor or gathering a batch."""
        self._jobs: set[Future[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._last_run_end = 0.0
        """``time.monotonic()`` when a run last ended: texts queued before then waited through a run."""
        self._closed = False
        self.stats = BatchStats()

    @property
    def running(self) -> bool:
        """True between :meth:`start` and :meth:`close`."""
        return self._loop is not None and not self._closed

    def start(self) -> None:
        """Accept texts from the running loop; results are handed back on it."""
        self._loop = asyncio.get_running_loop()

    async def close(self) -> None:
        """Stop taking texts, let runs in progress finish, fail what is still queued with UNAVAILABLE."""
        with self._lock:
            self._closed = True
            queued = list(self._queue)
            self._queue.clear()
            jobs = list(self._jobs)
            self._joined.notify_all()
        _fail(queued, Unavailable("the inference service is shutting down"))
        if jobs:  # a run in progress answers its callers; a drainer not yet started just ends
            await asyncio.gather(*(asyncio.wrap_future(job) for job in jobs), return_exceptions=True)

    async def embed(self, texts: Sequence[str]) -> Embedded:
        """Vectors for ``texts``, in order, computed together with whatever else is queued."""
        if not self.running or self._loop is None:
            raise Unavailable("the embedding worker is not running")
        if not texts:
            raise ValueError("nothing to embed")
        now = time.monotonic()
        pending = [_Pending(text, self._loop.create_future(), now) for text in texts]
        with self._lock:
            self._queue.extend(pending)
            self._joined.notify()
            if self._collecting == 0 and self._drainers < self._runs:
                self._submit_drainer()
        done: list[_Row] = []
        try:
            for item in pending:  # a run answers all of its texts at once: awaits after the first are free
                done.append(await item.future)
        except BaseException:
            for item in pending:  # retrieve every failure so none is logged as lost; queued ones are skipped
                if not item.future.done():
                    item.future.cancel()
                elif not item.future.cancelled():
                    item.future.exception()
            raise
        return Embedded(np.stack([r.vector for r in done]), np.array([r.truncated for r in done], dtype=bool))

    def _submit_drainer(self, *, goes_on: bool = False) -> None:
        """Queue a drainer job on the executor (``_lock`` held): a new drainer, or one that ``goes_on``."""
        if not goes_on:
            self._drainers += 1
        self._collecting += 1  # until the job takes its batch
        try:
            job = self._executor.submit(self._drain)
        except RuntimeError:  # the executor is shutting down (close() fails what is queued): this one ends
            self._drainers -= 1
            self._collecting -= 1
            return
        self._jobs.add(job)
        job.add_done_callback(self._forget_job)

    def _forget_job(self, job: Future[None]) -> None:
        with self._lock:
            self._jobs.discard(job)

    def _drain(self) -> None:
        """On an executor thread: gather one batch, run it, then queue itself again if texts remain."""
        with self._lock:
            batch = self._gather()
            self._collecting -= 1
            if not batch:
                self._drainers -= 1
                return
            if self._queue and self._collecting == 0 and self._drainers < self._runs:
                self._submit_drainer()  # texts left over and a run free: split across it now
        observe_batch(len(batch), time.monotonic() - min(item.queued_at for item in batch))
        try:
            result = self._embed([item.text for item in batch])
        except BaseException as exc:  # handed to the callers, never lost
            self._hand_back(batch, None, exc)
        else:
            self._hand_back(batch, result, None)
        with self._lock:
            self._last_run_end = time.monotonic()
            if self._queue and not self._closed:
                self._submit_drainer(goes_on=True)  # behind whatever else waits for the executor
            else:
                self._drainers -= 1

    def _gather(self) -> list[_Pending]:
        """Wait (``_lock`` held) until the batch is full or its oldest text has waited long enough; take it.

        Of the texts queued, a run that finds other runs free takes only its share (never under
        ``min_chunk``); texts of calls already given up on are dropped, not run.
        """
        while True:
            while self._queue and self._queue[0].future.done():
                self._queue.popleft()  # cancelled, or failed by close(): nobody waits for it
            if self._closed or not self._queue:
                return []
            oldest = self._queue[0].queued_at
            remaining = oldest + self._max_wait - time.monotonic()
            waited_through_a_run = oldest < self._last_run_end
            if len(self._queue) >= self._max_batch_size or remaining <= 0 or waited_through_a_run:
                break
            self._joined.wait(remaining)
        running = self._drainers - self._collecting
        free = self._runs - running
        size = chunk_size(min(len(self._queue), self._max_batch_size), free, self._min_chunk)
        batch: list[_Pending] = []
        while self._queue and len(batch) < size:
            item = self._queue.popleft()
            if not item.future.done():
                batch.append(item)
        batch.sort(key=lambda item: len(item.text))  # similar lengths pad less inside the model
        return batch

    def _hand_back(self, batch: list[_Pending], result: Embedded | None, error: BaseException | None) -> None:
        """From the executor thread: settle the batch's futures on the loop, which owns them."""
        assert self._loop is not None
        try:
            self._loop.call_soon_threadsafe(self._settle, batch, result, error)
        except RuntimeError:  # the loop is closed: nobody is left to answer
            log.warning(
                "embedding batch finished after the event loop closed", extra={"batch_size": len(batch)}
            )

    def _settle(self, batch: list[_Pending], result: Embedded | None, error: BaseException | None) -> None:
        if result is None:
            log.error("embedding batch failed", exc_info=error, extra={"batch_size": len(batch)})
            _fail(batch, error or Unavailable("the embedding run failed"))
            return
        self.stats.batches += 1
        self.stats.texts += len(batch)
        for item, vector, cut in zip(batch, result.vectors, result.truncated, strict=True):
            if not item.future.done():
                item.future.set_result(_Row(vector, bool(cut)))


def chunk_size(count: int, free_runs: int, min_chunk: int) -> int:
    """Texts per graph run when ``count`` texts find ``free_runs`` runs free: no chunk under ``min_chunk``."""
    chunks = max(1, min(free_runs, count // max(1, min_chunk)))
    return max(1, -(-count // chunks))


def _fail(batch: list[_Pending], error: BaseException) -> None:
    for pending in batch:
        if not pending.future.done():
            pending.future.set_exception(error)
