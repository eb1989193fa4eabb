"""Qdrant Edge behind the subset of ``AsyncQdrantClient`` that the semantic store speaks.

Qdrant Edge (``qdrant-edge-py``) is Qdrant's own engine running in process: segments, payload indexes
and the server's storage format, but no collections, no aliases and no HTTP. This module supplies those
on top of it, so that :mod:`hindsight.semantic.store` and :mod:`hindsight.semantic.reindex` run the same
code on Edge (the embedded default), on a Qdrant server and on qdrant-client's local mode.

Layout under the root directory::

    aliases.json                    alias -> collection, replaced atomically
    collections/<name>/meta.json    vector size and distance (none for a graph), model identity
    collections/<name>/shard/       the Edge shard

Searches are scoped by a tenant keyword index on ``bank_id``: a filtered search reads only the bank's
points, so its cost follows the size of the bank asked, not of the store.

Two things of the binding (0.9.0) shape the code. Its calls hold the GIL while they run, so each runs
in a worker thread that hands the event loop back between calls, and the index build (``optimize``) is
not called in a serving process: filtered searches over the tenant index are exact and fast without it.
And ``MatchValue(True)`` reaches the engine as the integer 1, which no boolean matches: each boolean
payload field is mirrored as a keyword (``<field>__bool``) that filters use, and readers never see.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

import qdrant_edge as edge
from qdrant_client import models

log = logging.getLogger(__name__)

T = TypeVar("T")

BOOL_MIRROR = "__bool"
"""Suffix of the keyword mirror of a boolean payload field (see the module docstring)."""
ALIASES_FILE = "aliases.json"
COLLECTIONS_DIR = "collections"
LOCK_FILE = ".lock"


# ----- the shapes the store reads back ------------------------------------------------------------------
@dataclass(frozen=True)
class CollectionParams:
    """``config.params`` of a collection: its dense vector (``{}`` for a collection without vectors)."""

    vectors: models.VectorParams | dict[str, Any]


@dataclass(frozen=True)
class CollectionConfig:
    """``config`` of a collection, as ``get_collection`` returns it."""

    params: CollectionParams
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CollectionInfo:
    """What ``get_collection`` answers."""

    config: CollectionConfig
    points_count: int


@dataclass(frozen=True)
class QueryReply:
    """What ``query_points`` answers."""

    points: list[models.ScoredPoint]


# ----- translation of qdrant-client models into Edge ones ---------------------------------------------
def _bool_key(key: str) -> str:
    return key + BOOL_MIRROR


def _mirrored(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload plus a keyword mirror of each top-level boolean."""
    extra = {_bool_key(k): ("true" if v else "false") for k, v in payload.items() if isinstance(v, bool)}
    return {**payload, **extra} if extra else payload


def _unmirrored(payload: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (payload or {}).items() if not k.endswith(BOOL_MIRROR)}


def _match(key: str, match: Any) -> edge.FieldCondition:
    if isinstance(match, models.MatchValue):
        if isinstance(match.value, bool):
            flag = "true" if match.value else "false"
            return edge.FieldCondition(_bool_key(key), match=edge.MatchValue(flag))
        return edge.FieldCondition(key, match=edge.MatchValue(match.value))
    if isinstance(match, models.MatchAny):
        values: list[Any] = list(match.any)
        if values and all(isinstance(v, bool) for v in values):
            return edge.FieldCondition(
                _bool_key(key), match=edge.MatchAny(["true" if v else "false" for v in values])
            )
        return edge.FieldCondition(key, match=edge.MatchAny(values))
    if isinstance(match, models.MatchExcept):
        return edge.FieldCondition(key, match=edge.MatchExcept(list[Any](match.except_)))
    if isinstance(match, models.MatchText):
        return edge.FieldCondition(key, match=edge.MatchText(match.text))
    raise ValueError(f"qdrant edge adapter: unsupported match {type(match).__name__} on {key!r}")


def _condition(condition: Any) -> Any:
    """One qdrant-client condition as its Edge equivalent."""
    if isinstance(condition, models.Filter):
        return edge_filter(condition)
    if isinstance(condition, models.HasIdCondition):
        return edge.HasIdCondition({str(point) for point in condition.has_id})
    if isinstance(condition, models.IsNullCondition):
        return edge.IsNullCondition(condition.is_null.key)
    if isinstance(condition, models.IsEmptyCondition):
        return edge.IsEmptyCondition(condition.is_empty.key)
    if isinstance(condition, models.FieldCondition):
        if condition.match is not None:
            return _match(condition.key, condition.match)
        if isinstance(condition.range, models.Range):
            bounds = condition.range
            return edge.FieldCondition(
                condition.key,
                range=edge.RangeFloat(gte=bounds.gte, gt=bounds.gt, lte=bounds.lte, lt=bounds.lt),
            )
        raise ValueError(f"qdrant edge adapter: unsupported condition on {condition.key!r}")
    raise ValueError(f"qdrant edge adapter: unsupported condition {type(condition).__name__}")


def _conditions(items: Any) -> list[Any] | None:
    if items is None:
        return None
    listed = items if isinstance(items, list) else [items]
    return [_condition(item) for item in listed] or None


def edge_filter(selector: models.Filter | None) -> edge.Filter | None:
    """A qdrant-client filter as an Edge filter (None stays None)."""
    if selector is None:
        return None
    return edge.Filter(
        must=_conditions(selector.must),
        should=_conditions(selector.should),
        must_not=_conditions(selector.must_not),
    )


def _selector_filter(selector: Any) -> edge.Filter | None:
    """The points a ``points_selector`` / ``points`` argument names, as a filter."""
    if isinstance(selector, models.FilterSelector):
        return edge_filter(selector.filter)
    if isinstance(selector, models.PointIdsList):
        return edge.Filter(must=[edge.HasIdCondition({str(p) for p in selector.points})])
    if isinstance(selector, models.Filter):
        return edge_filter(selector)
    if isinstance(selector, list):
        return edge.Filter(must=[edge.HasIdCondition({str(p) for p in selector})])
    raise ValueError(f"qdrant edge adapter: unsupported point selector {type(selector).__name__}")


def _index_schema(schema: Any) -> Any:
    if isinstance(schema, models.KeywordIndexParams):
        return edge.KeywordIndexParams(is_tenant=bool(schema.is_tenant))
    names = {
        models.PayloadSchemaType.KEYWORD: edge.PayloadSchemaType.Keyword,
        models.PayloadSchemaType.FLOAT: edge.PayloadSchemaType.Float,
        models.PayloadSchemaType.INTEGER: edge.PayloadSchemaType.Integer,
        models.PayloadSchemaType.BOOL: edge.PayloadSchemaType.Keyword,  # booleans are filtered by mirror
    }
    if schema in names:
        return names[schema]
    raise ValueError(f"qdrant edge adapter: unsupported payload index {schema!r}")


def _point_id(value: Any) -> str:
    return str(value)


def _dense(vector: Any) -> list[float] | dict[str, Any]:
    """The Edge form of a point's vector: the unnamed dense one, or none."""
    if isinstance(vector, dict):
        if vector:
            raise ValueError("qdrant edge adapter: named vectors are not supported")
        return {}
    return [float(x) for x in vector]


# ----- the client ---------------------------------------------------------------------------------------
class EdgeClient:
    """Collections of Edge shards under one directory, answering like ``AsyncQdrantClient``.

    One process owns a directory at a time (as with local mode). Every shard call runs in a worker
    thread; shard handles and the alias file are guarded by one lock.
    """

    def __init__(self, root: Path, search_threads: int | None = None, remove_on_close: bool = False) -> None:
        self.root = root
        self._search_threads = search_threads
        self._remove_on_close = remove_on_close
        self._collections = root / COLLECTIONS_DIR
        self._collections.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._shards: dict[str, edge.EdgeShard] = {}
        self._meta: dict[str, dict[str, Any]] = {}
        self._closed = False
        self._alias_map: dict[str, str] | None = None
        self._owner = _hold(root / LOCK_FILE)

    @classmethod
    def scratch(cls) -> EdgeClient:
        """A store in a fresh temporary directory, removed on close (tests)."""
        return cls(Path(tempfile.mkdtemp(prefix="hindsight-edge-")), remove_on_close=True)

    # ----- plumbing ---------------------------------------------------------------------------------
    async def _run(self, work: Callable[[], T]) -> T:
        return await asyncio.to_thread(work)

    def _aliases(self) -> dict[str, str]:
        """A copy of the aliases: read from disk once, since this process alone owns the directory."""
        if self._alias_map is None:
            path = self.root / ALIASES_FILE
            self._alias_map = json.loads(path.read_text()) if path.exists() else {}
        return dict(self._alias_map)

    def _write_aliases(self, aliases: dict[str, str]) -> None:
        self._alias_map = dict(aliases)
        path = self.root / ALIASES_FILE
        scratch = path.with_suffix(".tmp")
        with scratch.open("w") as handle:
            json.dump(aliases, handle, indent=1, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(scratch, path)

    def _resolve(self, name: str) -> str:
        return self._aliases().get(name, name)

    def _meta_of(self, name: str) -> dict[str, Any] | None:
        if name in self._meta:
            return self._meta[name]
        path = self._collections / name / "meta.json"
        if not path.exists():
            return None
        meta: dict[str, Any] = json.loads(path.read_text())
        self._meta[name] = meta
        return meta

    def _config(self, meta: dict[str, Any]) -> edge.EdgeConfig:
        size = int(meta.get("size") or 0)
        if size:
            return edge.EdgeConfig(
                vectors=edge.EdgeVectorParams(size=size, distance=edge.Distance.Cosine),
                max_search_threads=self._search_threads,
            )
        return edge.EdgeConfig(
            sparse_vectors={"none": edge.EdgeSparseVectorParams()}, max_search_threads=self._search_threads
        )

    def _shard(self, name: str) -> edge.EdgeShard:
        """The open shard of a collection (or alias), opened on first use."""
        with self._lock:
            if self._closed:
                raise RuntimeError("qdrant edge store is closed")
            real = self._resolve(name)
            shard = self._shards.get(real)
            if shard is not None:
                return shard
            meta = self._meta_of(real)
            if meta is None:
                raise ValueError(f"Collection {name} not found")
            shard = edge.EdgeShard.load(str(self._collections / real / "shard"), self._config(meta))
            self._shards[real] = shard
            return shard

    # ----- collections and aliases ------------------------------------------------------------------
    async def collection_exists(self, collection_name: str) -> bool:
        with self._lock:
            return self._meta_of(self._resolve(collection_name)) is not None

    async def create_collection(
        self,
        collection_name: str,
        vectors_config: models.VectorParams | dict[str, Any],
        metadata: dict[str, Any] | None = None,
    ) -> bool:
        if isinstance(vectors_config, models.VectorParams):
            if vectors_config.distance != models.Distance.COSINE:
                raise ValueError("qdrant edge adapter: only cosine distance is used")
            meta: dict[str, Any] = {"size": vectors_config.size, "distance": "Cosine"}
        elif not vectors_config:
            meta = {"size": 0}
        else:
            raise ValueError("qdrant edge adapter: named vectors are not supported")
        meta["metadata"] = dict(metadata or {})
        meta["indexes"] = {}

        def create() -> bool:
            with self._lock:
                if self._meta_of(self._resolve(collection_name)) is not None:
                    raise ValueError(f"Collection {collection_name} already exists")
                folder = self._collections / collection_name
                shutil.rmtree(folder, ignore_errors=True)  # a half-made one from a crash
                folder.mkdir(parents=True)
                shard = edge.EdgeShard.create(str(folder / "shard"), self._config(meta))
                self._shards[collection_name] = shard
                self._save_meta(collection_name, meta)
                return True

        return await self._run(create)

    def _save_meta(self, name: str, meta: dict[str, Any]) -> None:
        path = self._collections / name / "meta.json"
        scratch = path.with_suffix(".tmp")
        scratch.write_text(json.dumps(meta, indent=1, sort_keys=True))
        os.replace(scratch, path)
        self._meta[name] = meta

    async def delete_collection(self, collection_name: str) -> bool:
        def delete() -> bool:
            with self._lock:
                real = self._resolve(collection_name)
                if self._meta_of(real) is None:
                    return False
                shard = self._shards.pop(real, None)
                if shard is not None:
                    shard.close()
                self._meta.pop(real, None)
                shutil.rmtree(self._collections / real)
                aliases = {a: c for a, c in self._aliases().items() if c != real}
                self._write_aliases(aliases)
                return True

        return await self._run(delete)

    async def get_collection(self, collection_name: str) -> CollectionInfo:
        with self._lock:
            meta = self._meta_of(self._resolve(collection_name))
        if meta is None:
            raise ValueError(f"Collection {collection_name} not found")
        size = int(meta.get("size") or 0)
        vectors: models.VectorParams | dict[str, Any] = (
            models.VectorParams(size=size, distance=models.Distance.COSINE) if size else {}
        )
        shard = self._shard(collection_name)
        count = await self._run(lambda: shard.count(edge.CountRequest(exact=True)))
        return CollectionInfo(CollectionConfig(CollectionParams(vectors), dict(meta["metadata"])), count)

    async def get_collections(self) -> models.CollectionsResponse:
        with self._lock:
            names = sorted(p.name for p in self._collections.iterdir() if (p / "meta.json").exists())
        return models.CollectionsResponse(collections=[models.CollectionDescription(name=n) for n in names])

    async def get_aliases(self) -> models.CollectionsAliasesResponse:
        with self._lock:
            aliases = self._aliases()
        return models.CollectionsAliasesResponse(
            aliases=[
                models.AliasDescription(alias_name=alias, collection_name=target)
                for alias, target in sorted(aliases.items())
            ]
        )

    async def update_collection_aliases(self, change_aliases_operations: Sequence[Any]) -> bool:
        """All changes land in one file replace: readers see the old aliases or the new ones."""
        with self._lock:
            aliases = self._aliases()
            for operation in change_aliases_operations:
                if isinstance(operation, models.DeleteAliasOperation):
                    aliases.pop(operation.delete_alias.alias_name, None)
                elif isinstance(operation, models.CreateAliasOperation):
                    target = operation.create_alias.collection_name
                    if self._meta_of(target) is None:
                        raise ValueError(f"Collection {target} not found")
                    aliases[operation.create_alias.alias_name] = target
                else:
                    raise ValueError(f"qdrant edge adapter: unsupported alias operation {operation!r}")
            self._write_aliases(aliases)
        return True

    async def create_payload_index(
        self, collection_name: str, field_name: str, field_schema: Any, wait: bool = True
    ) -> None:
        """Idempotent: an index already made is not made again."""
        key = _bool_key(field_name) if field_schema == models.PayloadSchemaType.BOOL else field_name
        schema = _index_schema(field_schema)

        def create() -> None:
            with self._lock:
                real = self._resolve(collection_name)
                meta = self._meta_of(real)
                if meta is None:
                    raise ValueError(f"Collection {collection_name} not found")
                if key in meta["indexes"]:
                    return
                self._shard(real).update(edge.UpdateOperation.create_field_index(key, schema))
                self._save_meta(real, {**meta, "indexes": {**meta["indexes"], key: repr(field_schema)}})

        await self._run(create)

    # ----- points -----------------------------------------------------------------------------------
    async def upsert(
        self, collection_name: str, points: Sequence[models.PointStruct], wait: bool = True
    ) -> None:
        shard = self._shard(collection_name)
        converted = [
            edge.Point(_point_id(p.id), _dense(p.vector), _mirrored(dict(p.payload or {}))) for p in points
        ]
        if converted:
            await self._run(lambda: shard.update(edge.UpdateOperation.upsert_points(converted)))

    async def delete(self, collection_name: str, points_selector: Any, wait: bool = True) -> None:
        shard = self._shard(collection_name)
        if isinstance(points_selector, models.PointIdsList):
            ids: list[Any] = [_point_id(p) for p in points_selector.points]
            operation = edge.UpdateOperation.delete_points(ids)
        else:
            selected = _selector_filter(points_selector)
            assert selected is not None
            operation = edge.UpdateOperation.delete_points_by_filter(selected)
        await self._run(lambda: shard.update(operation))

    async def set_payload(
        self, collection_name: str, payload: dict[str, Any], points: Any, wait: bool = True
    ) -> None:
        shard = self._shard(collection_name)
        selected = _selector_filter(points)
        assert selected is not None
        operation = edge.UpdateOperation.set_payload_by_filter(selected, _mirrored(dict(payload)))
        await self._run(lambda: shard.update(operation))

    async def count(
        self, collection_name: str, count_filter: models.Filter | None = None, exact: bool = True
    ) -> models.CountResult:
        shard = self._shard(collection_name)
        request = edge.CountRequest(filter=edge_filter(count_filter), exact=True)
        return models.CountResult(count=await self._run(lambda: shard.count(request)))

    async def retrieve(
        self,
        collection_name: str,
        ids: Sequence[Any],
        with_payload: bool = True,
        with_vectors: bool = False,
    ) -> list[models.Record]:
        shard = self._shard(collection_name)
        wanted: list[Any] = [_point_id(i) for i in ids]
        found = await self._run(lambda: shard.retrieve(wanted, with_payload, with_vectors))
        return [_record(point, with_vectors) for point in found]

    async def scroll(
        self,
        collection_name: str,
        scroll_filter: models.Filter | None = None,
        limit: int = 10,
        offset: Any = None,
        with_payload: bool = True,
        with_vectors: bool = False,
    ) -> tuple[list[models.Record], Any]:
        shard = self._shard(collection_name)
        request = edge.ScrollRequest(
            offset=_point_id(offset) if offset is not None else None,
            limit=limit,
            filter=edge_filter(scroll_filter),
            with_payload=with_payload,
            with_vector=with_vectors,
        )
        page, following = await self._run(lambda: shard.scroll(request))
        records = [_record(point, with_vectors) for point in page]
        return records, (_point_id(following) if following is not None else None)

    async def query_points(
        self,
        collection_name: str,
        query: list[float],
        query_filter: models.Filter | None = None,
        limit: int = 10,
        with_payload: bool = True,
        with_vectors: bool = False,
        score_threshold: float | None = None,
    ) -> QueryReply:
        shard = self._shard(collection_name)
        request = _query_request(
            query, edge_filter(query_filter), limit, with_payload, with_vectors, score_threshold
        )
        hits = await self._run(lambda: shard.query(request))
        return QueryReply([_scored(hit, with_vectors) for hit in hits])

    async def query_batch_points(
        self, collection_name: str, requests: Sequence[models.QueryRequest]
    ) -> list[QueryReply]:
        """One planned batch: the engine shares its pass over the segments between the queries."""
        shard = self._shard(collection_name)
        batch = edge.QueryBatchRequest(
            [
                _query_request(
                    _vector_of(request.query),
                    edge_filter(request.filter),
                    request.limit or 10,
                    bool(request.with_payload),
                    bool(request.with_vector),
                    request.score_threshold,
                )
                for request in requests
            ]
        )
        replies = await self._run(lambda: shard.query_batch(batch))
        return [QueryReply([_scored(hit, False) for hit in hits]) for hits in replies]

    # ----- life cycle ---------------------------------------------------------------------------------
    def payload_schema(self, collection_name: str) -> dict[str, str]:
        """The payload indexes of a collection as the engine reports them (``tenant`` marks the bank's)."""
        described = {}
        for key, info in self._shard(collection_name).info().payload_schema.items():
            tenant = bool(getattr(info.params, "is_tenant", False))
            described[key] = f"{info.data_type}{' tenant' if tenant else ''}"
        return described

    async def close(self) -> None:
        """Flush and close every shard; the client refuses calls afterwards."""

        def close() -> None:
            with self._lock:
                self._closed = True
                for shard in self._shards.values():
                    shard.flush()
                    shard.close()
                self._shards.clear()
                self._owner.close()  # releases the directory lock
                if self._remove_on_close:
                    shutil.rmtree(self.root, ignore_errors=True)

        await self._run(close)


def _hold(path: Path) -> IO[bytes]:
    """An exclusive lock on the directory for this process: a second opener gets RuntimeError at once
    (as with local mode), instead of two writers on one shard."""
    handle = path.open("ab")
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        handle.close()
        raise RuntimeError(f"the vector store at {path.parent} is in use by another process") from exc
    return handle


def _vector_of(query: Any) -> list[float]:
    if isinstance(query, list):
        return [float(x) for x in query]
    if isinstance(query, models.NearestQuery) and isinstance(query.nearest, list):
        return [float(x) for x in query.nearest]  # type: ignore[arg-type]
    raise ValueError(f"qdrant edge adapter: unsupported query {type(query).__name__}")


def _query_request(
    vector: list[float],
    selector: edge.Filter | None,
    limit: int,
    with_payload: bool,
    with_vectors: bool,
    score_threshold: float | None,
) -> edge.QueryRequest:
    return edge.QueryRequest(
        limit=limit,
        query=edge.Query.Nearest([float(x) for x in vector]),
        filter=selector,
        with_payload=with_payload,
        with_vector=with_vectors,
        score_threshold=score_threshold,
    )


def _plain_vector(vector: Any) -> Any:
    if isinstance(vector, list):
        return [float(x) for x in vector]
    return {}


def _record(point: Any, with_vectors: bool) -> models.Record:
    return models.Record.model_construct(
        id=_point_id(point.id),
        payload=_unmirrored(point.payload),
        vector=_plain_vector(point.vector) if with_vectors else None,
        shard_key=None,
        order_value=None,
    )


def _scored(hit: Any, with_vectors: bool) -> models.ScoredPoint:
    return models.ScoredPoint.model_construct(
        id=_point_id(hit.id),
        version=0,
        score=float(hit.score),
        payload=_unmirrored(hit.payload),
        vector=_plain_vector(hit.vector) if with_vectors else None,
        shard_key=None,
        order_value=None,
    )
