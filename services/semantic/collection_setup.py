"""The collections of one embedding model and the alias that names the active one: creating them with their
payload indexes, checking them against the model served, and switching the alias (start-up and reindex).

Each model's collection has two companions that move with it (a reindex switches all three aliases in
one request): ``<collection>_cold``, the cold tier, and ``<collection>_graph``, the entity graph and the
review queue.
"""

from __future__ import annotations

import logging
from typing import Any

from qdrant_client import models
from qdrant_client.http.exceptions import UnexpectedResponse

from hindsight.runtime.errors import FailedPrecondition
from hindsight.semantic.qdrant_base import COLD, COMPANIONS, GRAPH, QdrantAPI
from hindsight.semantic.records import ModelIdentity, alias_name, collection_name, prefix_start

log = logging.getLogger(__name__)


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


_KEYWORD_FIELDS = (
    "source_turn_ids",
    "kind",
    "subject_key",
    "attribute",
    "session_id",
    "tags",
    "superseded_by",
    "entity_keys",
    "speaker_key",
    "lineage",
    "replies_to",
)
_FLOAT_FIELDS = ("time_ts", "valid_from_ts", "valid_to_ts", "updated_ts", "importance")


async def create_collection(client: QdrantAPI, name: str, model: ModelIdentity, indexed: bool) -> None:
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
    if indexed:  # local mode ignores payload indexes (and warns); the engines need them to filter fast
        await record_indexes(client, name)


async def record_indexes(client: QdrantAPI, name: str) -> None:
    """The payload indexes of a record collection: the bank as tenant, and every filtered field."""
    await _bank_index(client, name)
    for field_name in _KEYWORD_FIELDS:
        await client.create_payload_index(name, field_name, models.PayloadSchemaType.KEYWORD, wait=True)
    for field_name in _FLOAT_FIELDS:
        await client.create_payload_index(name, field_name, models.PayloadSchemaType.FLOAT, wait=True)
    await client.create_payload_index(name, "current", models.PayloadSchemaType.BOOL, wait=True)


async def graph_indexes(client: QdrantAPI, name: str) -> None:
    """The payload indexes of a graph collection (entities and review items)."""
    await _bank_index(client, name)
    for field_name in ("type", "keys", "lineage"):
        await client.create_payload_index(name, field_name, models.PayloadSchemaType.KEYWORD, wait=True)
    await client.create_payload_index(name, "due_ts", models.PayloadSchemaType.FLOAT, wait=True)


async def _bank_index(client: QdrantAPI, name: str) -> None:
    await client.create_payload_index(
        name,
        "bank_id",
        models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True),
        wait=True,
    )


async def create_companions(client: QdrantAPI, name: str, model: ModelIdentity, indexed: bool) -> None:
    """The cold tier (same vectors as ``name``) and the graph collection (no vectors) of a collection."""
    await create_collection(client, name + COLD, model, indexed)
    if not await client.collection_exists(name + GRAPH):
        try:
            await client.create_collection(name + GRAPH, vectors_config={}, metadata=model.as_metadata())
        except (UnexpectedResponse, ValueError):
            if not await client.collection_exists(name + GRAPH):
                raise
    if indexed:
        await graph_indexes(client, name + GRAPH)


async def check_collection(client: QdrantAPI, name: str, model: ModelIdentity) -> None:
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


async def active_collection(client: QdrantAPI, prefix: str) -> str | None:
    """The collection the active alias names, or None before the first start."""
    return (await _aliases(client)).get(active_alias(prefix))


async def _aliases(client: QdrantAPI) -> dict[str, str]:
    return {d.alias_name: d.collection_name for d in (await client.get_aliases()).aliases}


async def point_alias(client: QdrantAPI, prefix: str, collection: str) -> None:
    """Point the active alias (and its companions' aliases) at ``collection`` in one request: readers see
    the old or the new, never none."""
    alias = active_alias(prefix)
    known = await _aliases(client)
    operations: list[models.AliasOperations] = []
    for suffix in ("", *COMPANIONS):
        if alias + suffix in known:
            operations.append(
                models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=alias + suffix))
            )
        operations.append(
            models.CreateAliasOperation(
                create_alias=models.CreateAlias(
                    collection_name=collection + suffix, alias_name=alias + suffix
                )
            )
        )
    await client.update_collection_aliases(change_aliases_operations=operations)
    log.info("active collection switched", extra={"alias": alias, "collection": collection})


async def _legacy_collections(client: QdrantAPI, prefix: str, keep: str) -> list[str]:
    """Collections of this prefix from before the active alias existed, other than ``keep``, with points."""
    found = []
    start = prefix_start(prefix)
    for description in (await client.get_collections()).collections:
        name = description.name
        if name.endswith(COMPANIONS):
            continue
        if name != keep and name.startswith(start) and (await client.count(name, exact=False)).count:
            found.append(name)
    return found


async def open_active(client: QdrantAPI, prefix: str, model: ModelIdentity, indexed: bool) -> str:
    """The active collection, checked against ``model``; created (and aliased) on the first start.

    A collection from before the cold tier and the graph existed gets its companions here.
    """
    current = await active_collection(client, prefix)
    if current is not None:
        await check_collection(client, current, model)
        await create_companions(client, current, model, indexed)
        known = await _aliases(client)
        if any(active_alias(prefix) + suffix not in known for suffix in COMPANIONS):
            await point_alias(client, prefix, current)
        return current
    name = collection_name(prefix, model)
    if not await client.collection_exists(name):
        for legacy in await _legacy_collections(client, prefix, keep=name):
            config = (await client.get_collection(legacy)).config
            stored = stored_identity(config.metadata) or ModelIdentity("unknown", 0)
            raise identity_mismatch(legacy, stored, model)
    await create_collection(client, name, model, indexed)
    await check_collection(client, name, model)
    await create_companions(client, name, model, indexed)
    await point_alias(client, prefix, name)
    return name
