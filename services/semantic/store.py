"""The vector store: one facade over Qdrant local mode (embedded, tests) and a Qdrant server (fleets).

Banks are a payload filter inside one collection per embedding model. Point ids are UUIDs derived
from (bank, record id), so re-upserting a record replaces it and two banks never share a point.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from hindsight.runtime.errors import FailedPrecondition, Unavailable
from hindsight.runtime.records import RecordMeta, TimeRange
from hindsight.semantic.records import (
    EmbeddedRecord,
    ModelIdentity,
    RecordKind,
    ScoredRecord,
    SemanticRecord,
    collection_name,
)
from hindsight.semantic.settings import SemanticSettings

log = logging.getLogger(__name__)

_POINT_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "hindsight:semantic:point")


def point_id(bank_id: str, record_id: str) -> str:
    """The Qdrant point id of a record: stable, and distinct per bank."""
    return str(uuid.uuid5(_POINT_NAMESPACE, f"{bank_id}\x1f{record_id}"))


class VectorStore(Protocol):
    """Where semantic records and their vectors live."""

    async def upsert(self, bank_id: str, items: Sequence[EmbeddedRecord]) -> int:
        """Insert or replace records; returns how many points were written."""
        ...

    async def search(
        self, bank_id: str, vector: list[float], limit: int, time_range: TimeRange
    ) -> list[ScoredRecord]:
        """The bank's records nearest to ``vector``, best first."""
        ...

    async def delete(self, bank_id: str, ids: Sequence[str], source_turn_ids: Sequence[str]) -> int:
        """Delete the bank's records with these ids or citing these turns; returns how many matched."""
        ...

    async def ready(self) -> bool:
        """Whether the store answers; never raises."""
        ...


def to_payload(bank_id: str, record: SemanticRecord) -> dict[str, Any]:
    """The payload stored with a point: everything needed to rebuild the record, plus filter fields."""
    meta = record.meta
    moment = meta.time.astimezone(UTC) if meta.time else None
    return {
        "bank_id": bank_id,
        "record_id": record.id,
        "kind": record.kind.value,
        "text": record.text,
        "speaker": record.speaker,
        "session_id": record.session_id,
        **meta.to_fields(),
        "time_ts": moment.timestamp() if moment else None,
        "time": moment.isoformat() if moment else None,
    }


def from_payload(payload: dict[str, Any]) -> SemanticRecord:
    """Rebuild a record from its payload (the ISO time is exact; the epoch is only for filtering)."""
    moment = datetime.fromisoformat(payload["time"]) if payload.get("time") else None
    meta = RecordMeta.from_fields(payload, time=moment)
    return SemanticRecord(
        id=payload["record_id"],
        text=payload.get("text", ""),
        kind=RecordKind(payload.get("kind", RecordKind.TURN.value)),
        speaker=payload.get("speaker", ""),
        session_id=payload.get("session_id", ""),
        meta=meta,
    )


def _bank(bank_id: str) -> models.FieldCondition:
    return models.FieldCondition(key="bank_id", match=models.MatchValue(value=bank_id))


def _time(time_range: TimeRange) -> models.FieldCondition | None:
    if time_range.start is None and time_range.end is None:
        return None
    return models.FieldCondition(
        key="time_ts",
        range=models.Range(
            gte=time_range.start.timestamp() if time_range.start else None,
            lt=time_range.end.timestamp() if time_range.end else None,
        ),
    )


@contextlib.contextmanager
def _qdrant_errors(target: str) -> Iterator[None]:
    """A Qdrant server that cannot be reached or fails is Unavailable to the caller, not INTERNAL."""
    try:
        yield
    except ResponseHandlingException as exc:
        raise Unavailable(f"qdrant at {target}: {exc}") from exc
    except UnexpectedResponse as exc:
        if exc.status_code is not None and exc.status_code >= 500:
            raise Unavailable(f"qdrant at {target}: HTTP {exc.status_code}") from exc
        raise


class QdrantVectorStore:
    """The real store: one Qdrant collection per embedding model, in local mode or on a server."""

    def __init__(self, client: AsyncQdrantClient, collection: str, target: str) -> None:
        self._client = client
        self.collection = collection
        self._target = target

    async def upsert(self, bank_id: str, items: Sequence[EmbeddedRecord]) -> int:
        """Write every point in one call, so a request is stored whole or not at all."""
        points = {
            point_id(bank_id, item.record.id): models.PointStruct(
                id=point_id(bank_id, item.record.id),
                vector=item.vector,
                payload=to_payload(bank_id, item.record),
            )
            for item in items
        }
        if not points:
            return 0
        with _qdrant_errors(self._target):
            await self._client.upsert(self.collection, points=list(points.values()), wait=True)
        return len(points)

    async def search(
        self, bank_id: str, vector: list[float], limit: int, time_range: TimeRange
    ) -> list[ScoredRecord]:
        """Cosine search filtered to the bank (and the time range, when bounded)."""
        must: list[models.Condition] = [_bank(bank_id)]
        if (window := _time(time_range)) is not None:
            must.append(window)
        with _qdrant_errors(self._target):
            reply = await self._client.query_points(
                self.collection,
                query=vector,
                query_filter=models.Filter(must=must),
                limit=limit,
                with_payload=True,
            )
        return [ScoredRecord(from_payload(point.payload or {}), float(point.score)) for point in reply.points]

    async def delete(self, bank_id: str, ids: Sequence[str], source_turn_ids: Sequence[str]) -> int:
        """Count then delete the matching points; the bank condition is always part of the filter."""
        any_of: list[models.Condition] = []
        if ids:
            any_of.append(models.HasIdCondition(has_id=[point_id(bank_id, i) for i in dict.fromkeys(ids)]))
        if source_turn_ids:
            any_of.append(
                models.FieldCondition(
                    key="source_turn_ids", match=models.MatchAny(any=list(dict.fromkeys(source_turn_ids)))
                )
            )
        if not any_of:
            return 0
        selector = models.Filter(must=[_bank(bank_id)], should=any_of)
        with _qdrant_errors(self._target):
            matched = (await self._client.count(self.collection, count_filter=selector, exact=True)).count
            if matched:
                await self._client.delete(
                    self.collection, points_selector=models.FilterSelector(filter=selector), wait=True
                )
        return matched

    async def ready(self) -> bool:
        """The collection exists and the client answers."""
        try:
            return await self._client.collection_exists(self.collection)
        except Exception:
            log.warning("qdrant readiness check failed", exc_info=True)
            return False


async def _ensure_collection(
    client: AsyncQdrantClient, name: str, model: ModelIdentity, server: bool
) -> None:
    """Create the model's collection, or check that an existing one holds this model's vectors."""
    if not await client.collection_exists(name):
        try:
            await client.create_collection(
                name,
                vectors_config=models.VectorParams(size=model.dimension, distance=models.Distance.COSINE),
                metadata=model.as_metadata(),
            )
            log.info(
                "created collection",
                extra={"collection": name, "model": model.name, "dimension": model.dimension},
            )
        except (UnexpectedResponse, ValueError):
            if not await client.collection_exists(name):  # not a lost race with another replica
                raise
    await _check_collection(client, name, model)
    if server:  # local mode ignores payload indexes (and warns); a server needs them to filter fast
        await client.create_payload_index(
            name,
            "bank_id",
            models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True),
            wait=True,
        )
        await client.create_payload_index(name, "time_ts", models.PayloadSchemaType.FLOAT, wait=True)
        await client.create_payload_index(
            name, "source_turn_ids", models.PayloadSchemaType.KEYWORD, wait=True
        )


async def _check_collection(client: AsyncQdrantClient, name: str, model: ModelIdentity) -> None:
    config = (await client.get_collection(name)).config
    vectors = config.params.vectors
    if not isinstance(vectors, models.VectorParams):
        raise FailedPrecondition(
            f"collection {name!r} does not hold one unnamed vector per point; "
            f"it was not created by the semantic layer"
        )
    if vectors.size != model.dimension:
        raise FailedPrecondition(
            f"collection {name!r} holds {vectors.size}-d vectors but model {model.name!r} makes "
            f"{model.dimension}-d vectors; serve the model it was built with, or reindex into a new one"
        )
    if vectors.distance != models.Distance.COSINE:
        raise FailedPrecondition(f"collection {name!r} uses {vectors.distance} distance, not cosine")
    stored = config.metadata or {}
    for key in ("model", "content_hash"):
        expected = model.as_metadata()[key]
        if stored.get(key) not in (None, expected):
            raise FailedPrecondition(
                f"collection {name!r} holds vectors of {key} {stored[key]!r}, but the "
                f"inference layer serves {expected!r}; reindex into a new collection"
            )


@contextlib.asynccontextmanager
async def open_vector_store(
    settings: SemanticSettings, model: ModelIdentity
) -> AsyncIterator[QdrantVectorStore]:
    """Open Qdrant (server when ``QDRANT_URL`` is set, else local mode) and make sure the collection fits."""
    if settings.qdrant_url:
        client = AsyncQdrantClient(
            url=settings.qdrant_url, api_key=settings.qdrant_api_key or None, timeout=settings.qdrant_timeout
        )
        target = settings.qdrant_url
    elif settings.qdrant_path:
        client = AsyncQdrantClient(path=settings.qdrant_path)
        target = settings.qdrant_path
    else:
        client = AsyncQdrantClient(location=":memory:")
        target = ":memory:"
    name = collection_name(settings.collection_prefix, model)
    try:
        with _qdrant_errors(target):
            await _ensure_collection(client, name, model, server=bool(settings.qdrant_url))
        yield QdrantVectorStore(client, name, target)
    finally:
        await client.close()
