"""Re-embed stored texts with the model the inference layer serves now, then switch over atomically.

Every point keeps its text in the payload, so nothing else is needed: the points of the active
collection are read page by page, their texts embedded again, and written (same ids, same payloads)
into a new collection stamped with the new model's identity. Only when every point is in does the
active alias move, in one request; the old collection is kept (recoverable) unless asked otherwise.

With ``bank`` set, only that bank's texts are re-embedded and the other banks' vectors are copied as
they are, which is only meaningful when the model did not change: under a new model every bank
must be re-embedded, and a bank-only run is refused.

Writes that reach the old collection during a run are not carried over: stop the semantic layer
while reindexing (the in-process engines allow one process at a time anyway).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from qdrant_client import models

from hindsight.runtime.errors import FailedPrecondition
from hindsight.semantic.collection_setup import (
    active_collection,
    check_collection,
    create_collection,
    create_companions,
    point_alias,
    stored_identity,
)
from hindsight.semantic.embedder import EMBED_BATCH, Embedder
from hindsight.semantic.engine import record_vectors, reply_context
from hindsight.semantic.payloads import from_payload, point_id
from hindsight.semantic.qdrant_base import COLD, GRAPH, QdrantAPI
from hindsight.semantic.records import SemanticRecord, collection_name

log = logging.getLogger(__name__)

PAGE = EMBED_BATCH
"""Points read (and texts embedded) per step."""

Progress = Callable[[int, int], None]
"""Called with (points done, points in all) after every page."""


@dataclass(frozen=True)
class ReindexResult:
    """What a reindex did."""

    source: str
    """The collection that was active before ("" when there was none)."""
    target: str
    """The collection that is active now."""
    reembedded: int
    """Points whose text was embedded again."""
    copied: int
    """Points of other banks copied with their vectors (bank-only runs)."""
    seconds: float
    dropped_source: bool = False


@dataclass
class _Tally:
    reembedded: int = 0
    copied: int = 0


async def reindex(
    client: QdrantAPI,
    prefix: str,
    embedder: Embedder,
    *,
    bank: str = "",
    indexed: bool = False,
    drop_source: bool = False,
    progress: Progress | None = None,
) -> ReindexResult:
    """Rebuild the active collection with ``embedder.model`` (see the module docstring)."""
    started = time.monotonic()
    model = embedder.model
    source = await active_collection(client, prefix)
    if source is None:
        legacy = collection_name(prefix, model)
        source = legacy if await client.collection_exists(legacy) else None
    if source is not None:
        stored = stored_identity((await client.get_collection(source)).config.metadata)
        if bank and stored != model:
            held = stored.describe() if stored else "an unknown model"
            raise FailedPrecondition(
                f"the active collection {source!r} holds vectors of {held}, but the inference layer serves "
                f"{model.describe()}: every bank must be re-embedded, so run the reindex without a bank"
            )
    target = f"{collection_name(prefix, model)}_r{int(time.time() * 1000)}"
    await create_collection(client, target, model, indexed)
    await check_collection(client, target, model)
    await create_companions(client, target, model, indexed)
    tally = _Tally()
    if source is not None:
        pairs = [(source, target)]
        if await client.collection_exists(source + COLD):
            pairs.append((source + COLD, target + COLD))
        total = sum([(await client.count(name, exact=True)).count for name, _ in pairs])
        for old, new in pairs:
            await _copy(client, old, new, embedder, bank, total, progress, tally)
            expected = (await client.count(old, exact=True)).count
            written = (await client.count(new, exact=True)).count
            if written != expected:
                raise FailedPrecondition(
                    f"reindex wrote {written} of {expected} points into {new!r}; the active collection is "
                    f"unchanged ({source!r}); was the semantic layer writing during the run?"
                )
        if await client.collection_exists(source + GRAPH):
            await _copy_graph(client, source + GRAPH, target + GRAPH)
    await point_alias(client, prefix, target)
    dropped = False
    if drop_source and source is not None:
        dropped = bool(await client.delete_collection(source))
        for suffix in (COLD, GRAPH):
            if await client.collection_exists(source + suffix):
                await client.delete_collection(source + suffix)
    result = ReindexResult(
        source or "", target, tally.reembedded, tally.copied, time.monotonic() - started, dropped
    )
    log.info(
        "reindexed",
        extra={
            "source": result.source,
            "target": target,
            "reembedded": tally.reembedded,
            "copied": tally.copied,
        },
    )
    return result


async def _copy(
    client: QdrantAPI,
    source: str,
    target: str,
    embedder: Embedder,
    bank: str,
    total: int,
    progress: Progress | None,
    tally: _Tally,
) -> None:
    """Page through ``source`` into ``target``: texts of ``bank`` (every bank when "") embedded again."""
    offset: Any = None
    while True:
        points, offset = await client.scroll(
            source, limit=PAGE, offset=offset, with_payload=True, with_vectors=bool(bank)
        )
        fresh = [p for p in points if not bank or (p.payload or {}).get("bank_id") == bank]
        kept = [p for p in points if bank and (p.payload or {}).get("bank_id") != bank]
        written: list[models.PointStruct] = [
            models.PointStruct(id=p.id, vector=p.vector, payload=p.payload)  # type: ignore[arg-type]
            for p in kept
        ]
        by_bank: dict[str, list[Any]] = {}
        for point in fresh:
            by_bank.setdefault(str((point.payload or {}).get("bank_id", "")), []).append(point)
        for bank_id, group in by_bank.items():
            vectors = await record_vectors(
                embedder, bank_id, await _as_written(client, source, bank_id, group)
            )
            written.extend(
                models.PointStruct(id=p.id, vector=vector, payload=p.payload)
                for p, vector in zip(group, vectors, strict=True)
            )
        if written:
            await client.upsert(target, points=written, wait=True)
        tally.reembedded += len(fresh)
        tally.copied += len(kept)
        if progress is not None:
            progress(tally.reembedded + tally.copied, total)
        if offset is None:
            return


async def _as_written(
    client: QdrantAPI, source: str, bank_id: str, points: Sequence[Any]
) -> list[SemanticRecord]:
    """Each point's record as the layer embedded it when written (:func:`.engine.record_vectors`): a reply
    with the turn it answers, looked up in the hot tier, then the cold one."""
    records = [from_payload(point.payload or {}) for point in points]
    cited = {point_id(bank_id, r.replies_to): r.replies_to for r in records if r.replies_to}
    said: dict[str, str] = {}
    base = source.removesuffix(COLD)
    for collection in (base, base + COLD):
        wanted = [pid for pid, record_id in cited.items() if record_id not in said]
        if wanted and await client.collection_exists(collection):
            for point in await client.retrieve(collection, ids=wanted, with_payload=True):
                payload = point.payload or {}
                said[str(payload.get("record_id", ""))] = reply_context(
                    str(payload.get("speaker", "")), str(payload.get("text", ""))
                )
    return [replace(r, replies_to_text=said.get(r.replies_to, "")) if r.replies_to else r for r in records]


async def _copy_graph(client: QdrantAPI, source: str, target: str) -> None:
    """Entities and review items have no vectors: copied page by page as they are."""
    offset: Any = None
    while True:
        points, offset = await client.scroll(source, limit=PAGE, offset=offset, with_payload=True)
        if points:
            await client.upsert(
                target,
                points=[models.PointStruct(id=p.id, vector={}, payload=p.payload) for p in points],
                wait=True,
            )
        if offset is None:
            return
