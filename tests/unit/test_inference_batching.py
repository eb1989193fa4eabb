"""Micro-batching and the engine around it, on the real packaged model."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from hindsight.inference.batching import EmbedFn, MicroBatcher, chunk_size
from hindsight.inference.cache import CachedRow, VectorCache
from hindsight.inference.engine import InferenceEngine
from hindsight.inference.loading import RerankerRegistry, load_models
from hindsight.inference.models import Embedded, Embedder, ModelRegistry
from hindsight.inference.settings import InferenceSettings
from hindsight.runtime.errors import Unavailable

NO_RERANKERS = RerankerRegistry({}, default="")


@pytest.fixture(scope="module")
def registry() -> ModelRegistry:
    """The packaged model, loaded once for this module."""
    return load_models(InferenceSettings(packaged_models=("use-multilingual-v3",)))


@pytest.fixture(scope="module")
def executor() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=1) as pool:
        yield pool


@pytest.fixture
def model(registry: ModelRegistry) -> Embedder:
    return registry.get()


@contextlib.asynccontextmanager
async def started(
    embed: EmbedFn,
    executor: ThreadPoolExecutor,
    max_batch_size: int = 32,
    max_wait_ms: float = 3.0,
    runs: int = 1,
) -> AsyncIterator[MicroBatcher]:
    batcher = MicroBatcher(embed, executor, max_batch_size=max_batch_size, max_wait_ms=max_wait_ms, runs=runs)
    batcher.start()
    try:
        yield batcher
    finally:
        await batcher.close()


def _held(model: Embedder) -> tuple[threading.Event, list[list[str]], EmbedFn]:
    """A model whose runs record their texts, then wait until the test opens the gate."""
    gate = threading.Event()
    seen: list[list[str]] = []

    def held(texts: Sequence[str]) -> Embedded:
        seen.append(list(texts))
        if not gate.wait(timeout=20):
            raise TimeoutError("the test never opened the gate")
        return model.embed(texts)

    return gate, seen, held


def _assert_same_direction(actual: np.ndarray, expected: np.ndarray) -> None:
    """Padding inside a batch moves the int8 model's vectors slightly, so compare directions."""
    assert actual.shape == expected.shape
    assert np.all(np.sum(actual * expected, axis=1) > 0.99)


async def test_twenty_concurrent_single_text_calls_are_coalesced_into_fewer_batches(
    model: Embedder, executor: ThreadPoolExecutor
) -> None:
    texts = [f"Sentence number {i} about memory." for i in range(20)]
    async with started(model.embed, executor) as batcher:
        results = await asyncio.gather(*(batcher.embed([text]) for text in texts))
    assert batcher.stats.texts == 20
    assert batcher.stats.batches < 20
    _assert_same_direction(np.vstack([r.vectors for r in results]), model.embed(texts).vectors)


async def test_a_large_call_runs_in_bounded_batches_sorted_by_length_and_answers_in_order(
    model: Embedder, executor: ThreadPoolExecutor
) -> None:
    seen: list[list[str]] = []

    def recording(texts: Sequence[str]) -> Embedded:
        seen.append(list(texts))
        return model.embed(texts)

    texts = [("word " * (i % 7 + 1)) + str(i) for i in range(70)]
    async with started(recording, executor, max_batch_size=16) as batcher:
        vectors = await batcher.embed(texts)
    assert len(seen) == 5
    assert all(len(batch) <= 16 for batch in seen)
    assert all([len(t) for t in batch] == sorted(len(t) for t in batch) for batch in seen)
    _assert_same_direction(vectors.vectors, model.embed(texts).vectors)


async def test_a_failing_batch_fails_its_callers_and_the_worker_keeps_serving(
    model: Embedder, executor: ThreadPoolExecutor
) -> None:
    def fragile(texts: Sequence[str]) -> Embedded:
        if "boom" in texts:
            raise RuntimeError("model crashed")
        return model.embed(texts)

    async with started(fragile, executor) as batcher:
        with pytest.raises(RuntimeError, match="model crashed"):
            await batcher.embed(["boom", "fine"])
        assert (await batcher.embed(["fine"])).vectors.shape == (1, 512)
        assert batcher.running


def test_a_batch_is_split_only_between_free_runs_and_never_below_the_smallest_chunk() -> None:
    assert chunk_size(32, 2, 8) == 16
    assert chunk_size(32, 1, 8) == 32
    assert chunk_size(15, 2, 8) == 15  # two chunks would be under 8
    assert chunk_size(16, 4, 8) == 8
    assert chunk_size(5, 4, 1) == 2  # at most 4 runs: 2 + 2 + 1
    assert chunk_size(1, 0, 8) == 1


async def test_with_two_runs_a_large_call_runs_as_two_graph_runs_at_once_and_answers_in_order(
    model: Embedder,
) -> None:
    both_inside = threading.Barrier(2, timeout=20)  # breaks (and the test fails) unless two runs overlap
    seen: list[int] = []

    def overlapping(texts: Sequence[str]) -> Embedded:
        seen.append(len(texts))
        both_inside.wait()
        return model.embed(texts)

    texts = [f"Memory number {i}: " + "the deploy went fine. " * (i % 5) for i in range(32)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        async with started(overlapping, pool, runs=2) as batcher:
            result = await batcher.embed(texts)
    assert sorted(seen) == [16, 16]
    assert (batcher.stats.batches, batcher.stats.texts) == (2, 32)
    _assert_same_direction(result.vectors, model.embed(texts).vectors)


async def test_while_every_run_is_busy_new_texts_queue_and_then_share_one_run(model: Embedder) -> None:
    gate, seen, held = _held(model)

    with ThreadPoolExecutor(max_workers=2) as pool:
        async with started(held, pool, max_wait_ms=1.0, runs=2) as batcher:
            first = asyncio.ensure_future(batcher.embed([f"first {i}" for i in range(16)]))
            async with asyncio.timeout(20):
                while len(seen) < 2:  # both runs taken by the first call's two chunks
                    await asyncio.sleep(0.01)
            later = [asyncio.ensure_future(batcher.embed([f"later {i}"])) for i in range(10)]
            await asyncio.sleep(0.05)  # far beyond the 1 ms wait: no run is free, so nothing starts
            assert len(seen) == 2
            gate.set()
            await first
            answers = await asyncio.gather(*later)
    assert [len(batch) for batch in seen] == [8, 8, 10]
    assert all(answer.vectors.shape == (1, 512) for answer in answers)


async def test_a_cancelled_call_leaves_the_queue_and_its_texts_are_never_run(
    model: Embedder, executor: ThreadPoolExecutor
) -> None:
    gate, seen, held = _held(model)

    async with started(held, executor, max_wait_ms=1.0) as batcher:
        busy = asyncio.ensure_future(batcher.embed(["keeps the only run busy"]))
        async with asyncio.timeout(20):
            while not seen:
                await asyncio.sleep(0.01)
        abandoned = asyncio.ensure_future(batcher.embed(["abandoned one", "abandoned two"]))
        kept = asyncio.ensure_future(batcher.embed(["kept"]))
        await asyncio.sleep(0)  # both calls are queued
        abandoned.cancel()
        gate.set()
        await busy
        assert (await kept).vectors.shape == (1, 512)
    assert abandoned.cancelled()
    assert seen == [["keeps the only run busy"], ["kept"]]


async def test_a_failing_run_fails_only_its_callers_and_frees_its_run(model: Embedder) -> None:
    def fragile(texts: Sequence[str]) -> Embedded:
        if "boom" in texts:
            raise RuntimeError("model crashed")
        return model.embed(texts)

    with ThreadPoolExecutor(max_workers=2) as pool:
        async with started(fragile, pool, max_wait_ms=1.0, runs=2) as batcher:
            for _ in range(3):  # a run that is never given back would leave none after two failures
                with pytest.raises(RuntimeError, match="model crashed"):
                    await batcher.embed(["boom"])
            assert (await batcher.embed(["fine"])).vectors.shape == (1, 512)


async def test_a_closed_batcher_refuses_new_texts(model: Embedder, executor: ThreadPoolExecutor) -> None:
    async with started(model.embed, executor) as batcher:
        pass
    assert not batcher.running
    with pytest.raises(Unavailable):
        await batcher.embed(["too late"])


async def test_the_engine_cuts_long_texts_and_says_so_in_the_log(
    registry: ModelRegistry, model: Embedder, executor: ThreadPoolExecutor, caplog: pytest.LogCaptureFixture
) -> None:
    head = "The cat is sleeping on the sofa."
    async with started(model.embed, executor) as batcher:
        engine = InferenceEngine(registry, NO_RERANKERS, {model.name: batcher}, executor, max_chars=len(head))
        with caplog.at_level(logging.INFO, logger="hindsight.inference.engine"):
            result = await engine.embed([head + " Then it woke up and ate." * 10])
    np.testing.assert_allclose(result.vectors, model.embed([head]).vectors, atol=1e-6)
    assert result.truncated == (0,)
    record = next(r for r in caplog.records if "truncated" in r.getMessage())
    assert record.__dict__["truncated"] == 1
    assert record.__dict__["max_chars"] == len(head)


async def test_the_engine_is_ready_only_after_warming_up_and_answers_no_texts_with_no_vectors(
    registry: ModelRegistry, model: Embedder, executor: ThreadPoolExecutor
) -> None:
    async with started(model.embed, executor) as batcher:
        engine = InferenceEngine(registry, NO_RERANKERS, {model.name: batcher}, executor, max_chars=4096)
        assert not engine.ready()
        await engine.warm_up()
        assert engine.ready()
        assert engine.stats().batches == 1
        empty = await engine.embed([])
    assert (empty.model, empty.dimension, empty.vectors.shape) == (model.name, 512, (0, 512))
    assert not engine.ready()


async def test_the_engine_embeds_a_text_it_has_seen_recently_from_its_cache(
    registry: ModelRegistry, model: Embedder, executor: ThreadPoolExecutor
) -> None:
    async with started(model.embed, executor) as batcher:
        engine = InferenceEngine(
            registry, NO_RERANKERS, {model.name: batcher}, executor, 4096, cache_entries=2
        )
        first = await engine.embed(["one", "two", "one"])
        assert batcher.stats.texts == 2  # the repeated text is embedded once
        again = await engine.embed(["two", "one"])
        assert batcher.stats.texts == 2
        np.testing.assert_allclose(again.vectors, first.vectors[[1, 0]])
        await engine.embed(["three"])  # evicts the least recently used ("two")
        await engine.embed(["two"])
    assert batcher.stats.texts == 4


def test_the_vector_cache_keeps_the_most_recently_used_rows_and_nothing_at_capacity_zero() -> None:
    cache = VectorCache(2)
    for text in ("a", "b"):
        cache.put(text, CachedRow(np.zeros(2), False))
    assert cache.get("a") is not None  # "b" is now the least recently used
    cache.put("c", CachedRow(np.ones(2), True))
    assert (cache.get("b"), len(cache), cache.hits, cache.misses) == (None, 2, 1, 1)
    off = VectorCache(0)
    off.put("a", CachedRow(np.zeros(2), False))
    assert len(off) == 0


async def test_texts_that_queued_during_a_run_go_in_the_next_run_without_waiting_for_company(
    model: Embedder, executor: ThreadPoolExecutor
) -> None:
    gate, seen, held = _held(model)

    # An idle model would hold a lone text for a minute; a full batch starts at once.
    async with started(held, executor, max_batch_size=4, max_wait_ms=60_000) as batcher:
        busy = asyncio.ensure_future(batcher.embed([f"fills the batch {i}" for i in range(4)]))
        async with asyncio.timeout(20):
            while not seen:
                await asyncio.sleep(0.01)
        queued = [asyncio.ensure_future(batcher.embed([f"queued during the run {i}"])) for i in range(3)]
        await asyncio.sleep(0.05)
        gate.set()
        await busy
        async with asyncio.timeout(20):  # a third of the minute an idle model would wait
            answers = await asyncio.gather(*queued)
    assert [len(batch) for batch in seen] == [4, 3]
    assert all(answer.vectors.shape == (1, 512) for answer in answers)


async def test_runs_happen_off_the_event_loop_thread_and_answers_come_back_on_it(
    model: Embedder, executor: ThreadPoolExecutor
) -> None:
    threads: list[str] = []

    def recording(texts: Sequence[str]) -> Embedded:
        threads.append(threading.current_thread().name)
        return model.embed(texts)

    async with started(recording, executor) as batcher:
        results = await asyncio.gather(*(batcher.embed([f"text {i}"]) for i in range(5)))
    assert threads and threading.current_thread().name not in threads
    assert all(result.vectors.shape == (1, 512) for result in results)
