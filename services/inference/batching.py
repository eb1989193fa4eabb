"""Micro-batching: texts from concurrent calls are coalesced into one model run.

One model run over 32 texts costs little more than a run over one, so a worker waits a few
milliseconds after the first text arrives for others to join, then runs the batch in a bounded
executor so the event loop keeps answering while the model works.

With ``runs`` > 1, up to that many graph runs proceed at once (one executor thread each): a batch that
finds several runs free is split into that many chunks (large calls use every core), and while runs
are busy, texts keep queueing for the next batch (concurrent callers still share runs).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np

from hindsight.inference.models import Embedded
from hindsight.runtime.errors import Unavailable

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


@dataclass
class BatchStats:
    """What the batcher has done so far: the ratio tells how well calls are being coalesced."""

    batches: int = 0
    """Graph runs (a batch split between several runs counts once per run)."""
    texts: int = 0


class MicroBatcher:
    """Coalesces texts from concurrent :meth:`embed` calls into batches of at most ``max_batch_size``.

    Must be started and closed inside the event loop that calls it.
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
        self._free = runs
        self._freed = asyncio.Event()
        self._running: set[asyncio.Task[None]] = set()
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None
        self.stats = BatchStats()

    @property
    def running(self) -> bool:
        """True while the worker is alive and accepting texts."""
        return self._worker is not None and not self._worker.done()

    def start(self) -> None:
        """Start the worker in the running loop."""
        if self._worker is None:
            self._worker = asyncio.get_running_loop().create_task(self._work(), name="embed-batcher")

    async def close(self) -> None:
        """Stop the worker; texts still queued fail with UNAVAILABLE."""
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
        for task in list(self._running):
            task.cancel()
        if self._running:
            await asyncio.gather(*self._running, return_exceptions=True)
        queued = []
        while not self._queue.empty():
            queued.append(self._queue.get_nowait())
        _fail(queued, Unavailable("the inference service is shutting down"))

    async def embed(self, texts: Sequence[str]) -> Embedded:
        """Vectors for ``texts``, in order, computed together with whatever else is queued."""
        if not self.running:
            raise Unavailable("the embedding worker is not running")
        loop = asyncio.get_running_loop()
        futures = []
        for text in texts:
            future: asyncio.Future[_Row] = loop.create_future()
            self._queue.put_nowait(_Pending(text, future))
            futures.append(future)
        if not futures:
            raise ValueError("nothing to embed")
        done: list[_Row] = []
        try:
            for future in futures:  # a run answers all of its texts at once: awaits after the first are free
                done.append(await future)
        except BaseException:
            for future in futures:  # retrieve every failure so none is logged as lost; drop what is queued
                if not future.done():
                    future.cancel()
                elif not future.cancelled():
                    future.exception()
            raise
        return Embedded(np.stack([r.vector for r in done]), np.array([r.truncated for r in done], dtype=bool))

    async def _collect(self) -> list[_Pending]:
        """The first queued text plus whatever joins within the wait, up to the batch size."""
        loop = asyncio.get_running_loop()
        batch = [await self._queue.get()]
        deadline = loop.time() + self._max_wait
        while len(batch) < self._max_batch_size:
            if not self._queue.empty():
                batch.append(self._queue.get_nowait())
                continue
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            try:
                async with asyncio.timeout(remaining):
                    batch.append(await self._queue.get())
            except TimeoutError:
                break
        return batch

    async def _work(self) -> None:
        while True:
            while not self._free:  # every run busy: texts keep queueing for the next batch
                self._freed.clear()
                await self._freed.wait()
            batch = [p for p in await self._collect() if not p.future.done()]  # skip abandoned calls
            if not batch:
                continue
            batch.sort(key=lambda p: len(p.text))  # similar lengths pad less inside the model
            size = chunk_size(len(batch), self._free, self._min_chunk)
            for start in range(0, len(batch), size):
                self._free -= 1
                task = asyncio.get_running_loop().create_task(self._run(batch[start : start + size]))
                self._running.add(task)
                task.add_done_callback(self._running.discard)

    async def _run(self, batch: list[_Pending]) -> None:
        """One graph run on the executor; its run slot is free again when it ends, however it ends."""
        try:
            loop = asyncio.get_running_loop()
            try:
                result = await loop.run_in_executor(self._executor, self._embed, [p.text for p in batch])
            except asyncio.CancelledError:
                _fail(batch, Unavailable("the inference service is shutting down"))
                raise
            except Exception as exc:
                log.exception("embedding batch failed", extra={"batch_size": len(batch)})
                _fail(batch, exc)
                return
            self.stats.batches += 1
            self.stats.texts += len(batch)
            for pending, vector, cut in zip(batch, result.vectors, result.truncated, strict=True):
                if not pending.future.done():
                    pending.future.set_result(_Row(vector, bool(cut)))
        finally:
            self._free += 1
            self._freed.set()


def chunk_size(count: int, free_runs: int, min_chunk: int) -> int:
    """Texts per graph run when ``count`` texts find ``free_runs`` runs free: no chunk under ``min_chunk``."""
    chunks = max(1, min(free_runs, count // max(1, min_chunk)))
    return max(1, -(-count // chunks))


def _fail(batch: list[_Pending], error: BaseException) -> None:
    for pending in batch:
        if not pending.future.done():
            pending.future.set_exception(error)
