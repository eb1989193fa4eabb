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
    alias_name,
    collection_name,
    prefix_start,
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


def active_alias(prefix: str) -> str:
    """The alias that names the collection in use: a reindex switches it in one atomic step."""
    return alias_name(prefix)


def stored_identity(metadata: dict[str, Any] | None) -> ModelIdentity | None:
    """The model identity a collection was created with (None when it carries none)."""
    stored = metadata or {}
    if not stored.get("model"):
        return None
    return ModelIdentity(
        name=str(stored["model"]),
        dimension=int(stored.get("dimension") or 0),
        content_hash=str(stored.get("content_hash") or ""),
    )


def identity_mismatch(collection: str, stored: ModelIdentity, served: ModelIdentity) -> FailedPrecondition:
    """The refusal a start-up gives when the collection holds another model's vectors."""
    return FailedPrecondition(
        f"collection {collection!r} holds vectors of model {stored.describe()}, but the inference layer "
        f"serves {served.describe()}; vectors of two models cannot be compared. Run `hindsight reindex` "
        f"to re-embed the stored texts with {served.name!r} (the old collection is kept), or serve "
        f"{stored.name!r} again"
    )


async def create_collection(client: AsyncQdrantClient, name: str, model: ModelIdentity, server: bool) -> None:
    """Create a collection for ``model``'s vectors, stamped with its identity (a lost race is fine)."""
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


async def check_collection(client: AsyncQdrantClient, name: str, model: ModelIdentity) -> None:
    """Refuse (FailedPrecondition) a collection whose shape or model identity is not ``model``'s."""
    config = (await client.get_collection(name)).config
    vectors = config.params.vectors
    if not isinstance(vectors, models.VectorParams):
        raise FailedPrecondition(
            f"collection {name!r} does not hold one unnamed vector per point; "
            f"it was not created by the semantic layer"
        )
    stored = stored_identity(config.metadata) or ModelIdentity("unknown", vectors.size or 0)
    if vectors.size != model.dimension:
        raise FailedPrecondition(
            f"collection {name!r} holds {vectors.size}-d vectors but model {model.name!r} makes "
            f"{model.dimension}-d vectors. {identity_mismatch(name, stored, model)}"
        )
    if vectors.distance != models.Distance.COSINE:
        raise FailedPrecondition(f"collection {name!r} uses {vectors.distance} distance, not cosine")
    if config.metadata and (
        stored.name != model.name or (stored.content_hash and stored.content_hash != model.content_hash)
    ):
        raise identity_mismatch(name, stored, model)


async def active_collection(client: AsyncQdrantClient, prefix: str) -> str | None:
    """The collection the active alias names, or None before the first start."""
    alias = active_alias(prefix)
    for description in (await client.get_aliases()).aliases:
        if description.alias_name == alias:
            return description.collection_name
    return None


async def point_alias(client: AsyncQdrantClient, prefix: str, collection: str) -> None:
    """Point the active alias at ``collection`` in one request: readers see the old or the new, never none."""
    alias = active_alias(prefix)
    operations: list[models.AliasOperations] = []
    if await active_collection(client, prefix) is not None:
        operations.append(models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=alias)))
    operations.append(
        models.CreateAliasOperation(
            create_alias=models.CreateAlias(collection_name=collection, alias_name=alias)
        )
    )
    await client.update_collection_aliases(change_aliases_operations=operations)
    log.info("active collection switched", extra={"alias": alias, "collection": collection})


async def _legacy_collections(client: AsyncQdrantClient, prefix: str, keep: str) -> list[str]:
    """Collections of this prefix from before the active alias existed, other than ``keep``, with points."""
    found = []
    start = prefix_start(prefix)
    for description in (await client.get_collections()).collections:
        name = description.name
        if name != keep and name.startswith(start) and (await client.count(name, exact=False)).count:
            found.append(name)
    return found


async def open_active(client: AsyncQdrantClient, prefix: str, model: ModelIdentity, server: bool) -> str:
    """The active collection, checked against ``model``; created (and aliased) on the first start."""
    current = await active_collection(client, prefix)
    if current is not None:
        await check_collection(client, current, model)
        return current
    name = collection_name(prefix, model)
    if not await client.collection_exists(name):
        for legacy in await _legacy_collections(client, prefix, keep=name):
            config = (await client.get_collection(legacy)).config
            stored = stored_identity(config.metadata) or ModelIdentity("unknown", 0)
            raise identity_mismatch(legacy, stored, model)
    await create_collection(client, name, model, server)
    await check_collection(client, name, model)
    await point_alias(client, prefix, name)
    return name


def connect(settings: SemanticSettings) -> AsyncQdrantClient:
    """A Qdrant client: the server when ``QDRANT_URL`` is set, else local mode (a directory, or memory)."""
    if settings.qdrant_url:
        return AsyncQdrantClient(
            url=settings.qdrant_url, api_key=settings.qdrant_api_key or None, timeout=settings.qdrant_timeout
        )
    if settings.qdrant_path:
        return AsyncQdrantClient(path=settings.qdrant_path)
    return AsyncQdrantClient(location=":memory:")


def target_of(settings: SemanticSettings) -> str:
    """Where the vectors are, for messages."""
    return settings.qdrant_url or settings.qdrant_path or ":memory:"


@contextlib.asynccontextmanager
async def open_vector_store(
    settings: SemanticSettings, model: ModelIdentity
) -> AsyncIterator[QdrantVectorStore]:
    """Open Qdrant and check that the active collection holds ``model``'s vectors.

    The store reads and writes through the active alias, so a reindex that switches it (on a Qdrant
    server, while this layer runs) is followed at once.
    """
    client = connect(settings)
    target = target_of(settings)
    try:
        with _qdrant_errors(target):
            collection = await open_active(
                client, settings.collection_prefix, model, server=bool(settings.qdrant_url)
            )
        log.info("active collection", extra={"collection": collection, "model": model.name})
        yield QdrantVectorStore(client, active_alias(settings.collection_prefix), target)
    finally:
        await client.close()
