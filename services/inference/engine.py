"""The inference engine: loaded models, one micro-batcher each, and the single thread they run on.

Everything blocking (reading and hashing model files, building graphs, running them) happens on one
worker thread, so the event loop only ever queues texts and hands back vectors.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from hindsight.inference.batching import BatchStats, MicroBatcher
from hindsight.inference.models import ModelRegistry, load_models
from hindsight.inference.settings import InferenceSettings

log = logging.getLogger(__name__)

WARM_UP_TEXT = "Warm-up: the first run of a graph allocates its buffers."


@dataclass(frozen=True)
class EmbedResult:
    """Vectors for a request, one row per text, and the model that made them."""

    model: str
    dimension: int
    vectors: np.ndarray


@dataclass(frozen=True)
class ModelDescription:
    """A loaded model's identity: stores compare ``content_hash`` to know when to re-embed."""

    name: str
    dimension: int
    max_length: int
    content_hash: str


class InferenceEngine:
    """Embeds texts with named models; build it with :func:`open_engine`."""

    def __init__(self, registry: ModelRegistry, batchers: dict[str, MicroBatcher], max_chars: int) -> None:
        self._registry = registry
        self._batchers = batchers
        self._max_chars = max_chars
        self._warm = False

    @property
    def default_model(self) -> str:
        """The model an empty model name means."""
        return self._registry.default

    def ready(self) -> bool:
        """Warmed up and every batcher running: cheap, never raises."""
        return self._warm and all(batcher.running for batcher in self._batchers.values())

    def describe(self, model: str = "") -> ModelDescription:
        """Name, dimension, token limit and file hash of ``model`` (empty: the default)."""
        embedder = self._registry.get(model)
        return ModelDescription(embedder.name, embedder.dimension, embedder.max_length, embedder.content_hash)

    def stats(self, model: str = "") -> BatchStats:
        """How many batches and texts ``model`` has run (warm-up included)."""
        return self._batchers[self._registry.get(model).name].stats

    async def embed(self, texts: Sequence[str], model: str = "") -> EmbedResult:
        """L2-normalised vectors for ``texts`` in order; texts over the character limit are cut."""
        embedder = self._registry.get(model)
        if not texts:
            return EmbedResult(
                embedder.name, embedder.dimension, np.zeros((0, embedder.dimension), dtype=np.float32)
            )
        cut = [text[: self._max_chars] for text in texts]
        if truncated := sum(len(text) > self._max_chars for text in texts):
            log.info(
                "truncated long texts before embedding",
                extra={"truncated": truncated, "max_chars": self._max_chars, "model": embedder.name},
            )
        vectors = await self._batchers[embedder.name].embed(cut)
        return EmbedResult(embedder.name, embedder.dimension, vectors)

    async def warm_up(self) -> None:
        """Run every model once, so the first real call is not the slow one."""
        for name in self._registry.models:
            await self.embed([WARM_UP_TEXT], name)
        self._warm = True


@contextlib.asynccontextmanager
async def open_engine(settings: InferenceSettings) -> AsyncIterator[InferenceEngine]:
    """Load, hash and warm up every model on the worker thread; stop the batchers and the thread on exit."""
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inference")
    batchers: dict[str, MicroBatcher] = {}
    try:
        registry = await asyncio.get_running_loop().run_in_executor(executor, load_models, settings)
        for name, embedder in registry.models.items():
            batchers[name] = MicroBatcher(
                embedder.embed,
                executor,
                max_batch_size=settings.max_batch_size,
                max_wait_ms=settings.max_batch_wait_ms,
            )
            batchers[name].start()
        engine = InferenceEngine(registry, batchers, settings.max_chars)
        await engine.warm_up()
        log.info("inference ready", extra={"models": sorted(registry.models), "default": registry.default})
        yield engine
    finally:
        for batcher in batchers.values():
            await batcher.close()
        # a batch already on the thread finishes; waiting for it must not block the loop
        await asyncio.to_thread(executor.shutdown, wait=True, cancel_futures=True)
