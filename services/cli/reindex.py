"""``hindsight reindex [--bank B]``: re-embed the semantic layer's stored texts with the current model.

Run it after changing the embedding model (the semantic layer then refuses to start and says so).
Vectors are made by the inference service at ``HINDSIGHT_INFERENCE_ADDR`` when it is set, else by the
same models loaded in this process (the inference settings are read from the environment, as
``hindsight up`` would pass them). Qdrant is ``QDRANT_URL``, else ``HINDSIGHT_QDRANT_PATH``, else the
local store of ``hindsight up`` in ``--home``; a local store must not be open elsewhere (stop ``up``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from hindsight.semantic.embedder import Embedder
from hindsight.semantic.records import ModelIdentity

if TYPE_CHECKING:
    from hindsight.inference.engine import InferenceEngine


class ProgressBar:
    """tqdm's bar on ``stream`` (``reindex: 40%|####  | 1200/3000 [...] 240points/s``), fed the running
    count and total that the reindex reports."""

    def __init__(self, stream: TextIO) -> None:
        from tqdm import tqdm  # only when a bar is drawn

        self._bar = tqdm(total=0, desc="reindex", unit="points", file=stream, dynamic_ncols=True)

    def __call__(self, done: int, total: int) -> None:
        if total != self._bar.total:
            self._bar.total = total
            self._bar.refresh()
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        self._bar.close()


class LocalEmbedder:
    """The inference engine in this process, behind the semantic layer's :class:`Embedder` interface."""

    def __init__(self, engine: InferenceEngine, model: ModelIdentity) -> None:
        self._engine = engine
        self._model = model

    @property
    def model(self) -> ModelIdentity:
        return self._model

    async def embed(self, bank_id: str, texts: Sequence[str], query: bool = False) -> list[list[float]]:
        from hindsight.inference.engine import Purpose

        purpose = Purpose.QUERY if query else Purpose.PASSAGE
        result = await self._engine.embed(texts, self._model.name, purpose)
        return [row.tolist() for row in result.vectors]


@contextlib.asynccontextmanager
async def open_embedder(
    inference_addr: str, token: str, model: str, timeout: float
) -> AsyncIterator[Embedder]:
    """The inference service over gRPC when an address is given, else the models in this process."""
    if inference_addr:
        from hindsight.contracts.inference.v1 import inference_pb2_grpc
        from hindsight.runtime.channels import LayerClient
        from hindsight.semantic.embedder import InferenceEmbedder, describe_model

        client = LayerClient(
            inference_addr, inference_pb2_grpc.InferenceServiceStub, token=token, default_timeout=timeout
        )
        try:
            yield InferenceEmbedder(client, await describe_model(client, model, timeout))
        finally:
            await client.close()
        return
    from hindsight.inference.engine import open_engine
    from hindsight.inference.settings import InferenceSettings
    from hindsight.runtime.settings import load

    async with open_engine(load(InferenceSettings)) as engine:
        info = engine.describe(model)
        yield LocalEmbedder(engine, ModelIdentity(info.name, info.dimension, info.content_hash))


async def run_async(args: argparse.Namespace, stderr: TextIO) -> int:
    """The reindex, with its messages on ``stderr``; returns the exit status."""
    from hindsight.runtime.errors import HindsightError
    from hindsight.runtime.home import resolve_home
    from hindsight.runtime.settings import load
    from hindsight.semantic.backend import connect, indexed
    from hindsight.semantic.reindex import reindex
    from hindsight.semantic.settings import SemanticSettings

    settings = load(SemanticSettings)
    if not settings.qdrant_url and not settings.qdrant_path:
        settings = load(SemanticSettings, qdrant_path=str(resolve_home(args.home) / "qdrant"))
    if settings.qdrant_path and not Path(settings.qdrant_path).is_dir():
        print(f"no semantic store at {settings.qdrant_path}: nothing to reindex", file=stderr)
        return 1
    try:
        client = connect(settings)
    except RuntimeError as exc:  # local mode: another process (a running `hindsight up`) holds the store
        print(f"cannot open {settings.qdrant_path}: {exc}\nstop `hindsight up` and run again", file=stderr)
        return 1
    bar = None if args.no_progress else ProgressBar(stderr)
    try:
        async with open_embedder(
            settings.inference_addr,
            settings.internal_token or _home_credential(args.home),
            settings.embedding_model,
            settings.inference_timeout,
        ) as embedder:
            print(f"re-embedding with {embedder.model.describe()}", file=stderr)
            result = await reindex(
                client,
                settings.collection_prefix,
                embedder,
                bank=args.bank,
                indexed=indexed(settings),
                drop_source=args.drop_old,
                progress=bar,
            )
    except HindsightError as exc:
        if bar is not None:
            bar.close()
        print(f"reindex failed: {exc}", file=stderr)
        return 1
    finally:
        await client.close()
    if bar is not None:
        bar.close()
    kept = "dropped" if result.dropped_source else "kept"
    print(
        f"reindexed {result.reembedded} points ({result.copied} copied) in {result.seconds:.1f}s; "
        f"active collection: {result.target}"
        + (f"; previous: {result.source} ({kept})" if result.source else ""),
        file=sys.stdout,
    )
    return 0


def _home_credential(home: Path | None) -> str:
    """The mesh credential of ``home`` (the inference service of a mesh accepts it), or empty."""
    from hindsight.runtime.home import read_credentials, resolve_home

    credentials = read_credentials(resolve_home(home))
    return credentials.internal if credentials else ""


def run(args: argparse.Namespace) -> int:
    """Entry of ``hindsight reindex``."""
    return asyncio.run(run_async(args, sys.stderr))
