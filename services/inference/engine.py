"""The inference engine: loaded models and rerankers, one micro-batcher per model, a bounded pool.

Everything blocking (reading and hashing model files, building graphs, running them) happens on the
worker threads (``HINDSIGHT_ONNX_RUNS`` of them, one by default), so the event loop only ever queues
texts and hands back vectors; at most that many graph runs proceed at once, each using the ONNX
threads the settings give it.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from hindsight.inference.batching import BatchStats, MicroBatcher
from hindsight.inference.cache import CachedRow, VectorCache
from hindsight.inference.loading import RerankerRegistry, load_models, load_rerankers
from hindsight.inference.models import ModelRegistry
from hindsight.inference.settings import InferenceSettings

log = logging.getLogger(__name__)

WARM_UP_TEXT = "Warm-up: the first run of a graph allocates its buffers."


class Purpose(enum.Enum):
    """What the texts of a call are: models of the e5 family prefix queries and passages differently."""

    NONE = "none"
    QUERY = "query"
    PASSAGE = "passage"


@dataclass(frozen=True)
class EmbedResult:
    """Vectors for a request, one row per text, the model that made them, and which texts were cut."""

    model: str
    dimension: int
    vectors: np.ndarray
    truncated: tuple[int, ...] = ()
    """Indexes of the texts cut to the character limit or to the model's token limit."""


@dataclass(frozen=True)
class RerankResult:
    """One score per document, the reranker that gave them, and which pairs were cut."""

    model: str
    scores: np.ndarray
    truncated: tuple[int, ...] = ()


@dataclass(frozen=True)
class ModelDescription:
    """A loaded model's identity: stores compare ``content_hash`` to know when to re-embed."""

    name: str
    dimension: int
    max_length: int
    content_hash: str
    models: tuple[str, ...] = ()
    """Every loaded embedding model."""
    rerankers: tuple[str, ...] = ()
    """Every loaded reranker."""


class InferenceEngine:
    """Embeds texts and reranks documents with named models; build it with :func:`open_engine`."""

    def __init__(
        self,
        registry: ModelRegistry,
        rerankers: RerankerRegistry,
        batchers: dict[str, MicroBatcher],
        executor: ThreadPoolExecutor,
        max_chars: int,
        cache_entries: int = 0,
    ) -> None:
        self._registry = registry
        self._caches = {name: VectorCache(cache_entries) for name in registry.models}
        self._rerankers = rerankers
        self._batchers = batchers
        self._executor = executor
        self._max_chars = max_chars
        self._warm = False

    def ready(self) -> bool:
        """Warmed up and every batcher running: cheap, never raises."""
        return self._warm and all(batcher.running for batcher in self._batchers.values())

    def describe(self, model: str = "") -> ModelDescription:
        """Name, dimension, token limit and file hash of ``model`` (empty: the default)."""
        embedder = self._registry.get(model)
        return ModelDescription(
            embedder.name,
            embedder.dimension,
            embedder.max_length,
            embedder.content_hash,
            models=tuple(sorted(self._registry.models)),
            rerankers=tuple(sorted(self._rerankers.rerankers)),
        )

    def stats(self, model: str = "") -> BatchStats:
        """How many batches and texts ``model`` has run (warm-up included)."""
        return self._batchers[self._registry.get(model).name].stats

    async def embed(
        self, texts: Sequence[str], model: str = "", purpose: Purpose = Purpose.NONE
    ) -> EmbedResult:
        """L2-normalised vectors for ``texts`` in order; texts over the character limit are cut."""
        embedder = self._registry.get(model)
        if not texts:
            return EmbedResult(
                embedder.name, embedder.dimension, np.zeros((0, embedder.dimension), dtype=np.float32)
            )
        prefix = {
            Purpose.QUERY: embedder.query_prefix,
            Purpose.PASSAGE: embedder.passage_prefix,
            Purpose.NONE: "",
        }[purpose]
        cut = [prefix + text[: self._max_chars] for text in texts]
        if long := sum(len(text) > self._max_chars for text in texts):
            log.info(
                "truncated long texts before embedding",
                extra={"truncated": long, "max_chars": self._max_chars, "model": embedder.name},
            )
        cache = self._caches[embedder.name]
        rows = [cache.get(text) for text in cut]
        if missing := list(dict.fromkeys(text for text, row in zip(cut, rows, strict=True) if row is None)):
            result = await self._batchers[embedder.name].embed(missing)
            fresh = {
                text: CachedRow(vector, bool(cut_by_model))
                for text, vector, cut_by_model in zip(missing, result.vectors, result.truncated, strict=True)
            }
            for text, row in fresh.items():
                cache.put(text, row)
            rows = [row if row is not None else fresh[text] for text, row in zip(cut, rows, strict=True)]
        done = [row for row in rows if row is not None]
        truncated = tuple(
            index
            for index, (text, row) in enumerate(zip(texts, done, strict=True))
            if row.truncated or len(text) > self._max_chars
        )
        return EmbedResult(embedder.name, embedder.dimension, np.stack([r.vector for r in done]), truncated)

    async def rerank(self, query: str, documents: Sequence[str], model: str = "") -> RerankResult:
        """A relevance score per document; a reranker over vectors gets them through the batcher."""
        reranker = self._rerankers.get(model)
        if not documents:
            return RerankResult(reranker.name, np.zeros(0, dtype=np.float32))
        vectors = None
        if embedding_model := reranker.vectors_from(query):
            vectors = (await self.embed([query, *documents], embedding_model, Purpose.QUERY)).vectors
        loop = asyncio.get_running_loop()
        scored = await loop.run_in_executor(self._executor, reranker.score, query, list(documents), vectors)
        truncated = tuple(int(i) for i in np.flatnonzero(scored.truncated))
        return RerankResult(reranker.name, scored.scores, truncated)

    async def warm_up(self) -> None:
        """Run every model and reranker once, so the first real call is not the slow one."""
        for name in self._registry.models:
            await self.embed([WARM_UP_TEXT], name)
        for name in self._rerankers.rerankers:
            await self.rerank(WARM_UP_TEXT, [WARM_UP_TEXT, "Another document."], name)
        self._warm = True


@contextlib.asynccontextmanager
async def open_engine(settings: InferenceSettings) -> AsyncIterator[InferenceEngine]:
    """Load, hash and warm up every model on the worker thread; stop the batchers and the thread on exit."""
    executor = ThreadPoolExecutor(max_workers=settings.parallel_runs, thread_name_prefix="inference")
    batchers: dict[str, MicroBatcher] = {}
    try:
        loop = asyncio.get_running_loop()
        registry = await loop.run_in_executor(executor, load_models, settings)
        rerankers = await loop.run_in_executor(executor, load_rerankers, settings)
        for name, embedder in registry.models.items():
            batchers[name] = MicroBatcher(
                embedder.embed,
                executor,
                max_batch_size=settings.max_batch_size,
                max_wait_ms=settings.max_batch_wait_ms,
                runs=settings.parallel_runs,
            )
            batchers[name].start()
        engine = InferenceEngine(
            registry, rerankers, batchers, executor, settings.max_chars, settings.cache_entries
        )
        await engine.warm_up()
        log.info(
            "inference ready",
            extra={
                "models": sorted(registry.models),
                "default": registry.default,
                "rerankers": sorted(rerankers.rerankers),
            },
        )
        yield engine
    finally:
        for batcher in batchers.values():
            await batcher.close()
        # a batch already on the thread finishes; waiting for it must not block the loop
        await asyncio.to_thread(executor.shutdown, wait=True, cancel_futures=True)
