"""The graph family of the semantic store: entities (merged by name) and the review queue of conflicts,
as points without vectors in the graph collection.

A mixin on :class:`~hindsight.semantic.qdrant_base.QdrantCollections` (see there why mixins), assembled
into :class:`~hindsight.semantic.store.QdrantVectorStore`.
"""

from __future__ import annotations

from collections.abc import Sequence

from qdrant_client import models

from hindsight.runtime.text import key_of
from hindsight.semantic.filters import field_in, field_is, of_bank
from hindsight.semantic.payloads import (
    entity_from_payload,
    entity_payload,
    merge_entities,
    point_id,
    review_from_payload,
    review_payload,
)
from hindsight.semantic.qdrant_base import QdrantCollections, qdrant_errors
from hindsight.semantic.records import Entity, ReviewItem


class EntityGraph(QdrantCollections):
    """Entities and review items in the graph collection."""

    async def entities_named(self, bank_id: str, keys: Sequence[str]) -> list[Entity]:
        """A keyword match on the ``keys`` field."""
        if not keys:
            return []
        selector = models.Filter(must=[of_bank(bank_id), field_is("type", "entity"), field_in("keys", keys)])
        with qdrant_errors(self._target):
            points = await self._scroll(self.graph, selector)
        return [entity_from_payload(point.payload or {}) for point in points]

    async def put_entities(self, bank_id: str, entities: Sequence[Entity]) -> None:
        """Read the known ones, merge, write all in one call."""
        merged: dict[str, Entity] = {}
        for entity in entities:
            key = key_of(entity.name)
            merged[key] = merge_entities(merged[key], entity) if key in merged else entity
        if not merged:
            return
        ids = {key: point_id(bank_id, f"entity\x1f{key}") for key in merged}
        with qdrant_errors(self._target):
            for point in await self._client.retrieve(self.graph, ids=list(ids.values()), with_payload=True):
                known = entity_from_payload(point.payload or {})
                merged[key_of(known.name)] = merge_entities(known, merged[key_of(known.name)])
            await self._client.upsert(
                self.graph,
                points=[
                    models.PointStruct(id=ids[key], vector={}, payload=entity_payload(bank_id, entity))
                    for key, entity in merged.items()
                ],
                wait=True,
            )

    async def list_entities(
        self, bank_id: str, limit: int, entity_type: str = "", prefix: str = "", offset: int = 0
    ) -> list[Entity]:
        """Sorted by name; the type and prefix are compared without case."""
        selector = models.Filter(must=[of_bank(bank_id), field_is("type", "entity")])
        with qdrant_errors(self._target):
            points = await self._scroll(self.graph, selector)
        start, kind = key_of(prefix), entity_type.casefold()
        entities = sorted(
            (
                entity
                for entity in (entity_from_payload(p.payload or {}) for p in points)
                if (not kind or entity.type.casefold() == kind)
                and (not start or any(key_of(n).startswith(start) for n in (entity.name, *entity.aliases)))
            ),
            key=lambda e: key_of(e.name),
        )
        return entities[offset : offset + limit]

    # ----- review queue -------------------------------------------------------------------------------
    async def add_review(self, bank_id: str, item: ReviewItem) -> None:
        """The candidate and the current record travel whole in the payload."""
        payload = review_payload(bank_id, item)
        with qdrant_errors(self._target):
            await self._client.upsert(
                self.graph,
                points=[
                    models.PointStruct(
                        id=point_id(bank_id, f"review\x1f{item.id}"), vector={}, payload=payload
                    )
                ],
                wait=True,
            )

    async def reviews(self, bank_id: str, limit: int) -> list[ReviewItem]:
        """Oldest first."""
        selector = models.Filter(must=[of_bank(bank_id), field_is("type", "review")])
        with qdrant_errors(self._target):
            points = await self._scroll(self.graph, selector)
        items = sorted(
            (review_from_payload(p.payload or {}) for p in points), key=lambda i: (i.created_at, i.id)
        )
        return items[:limit]

    async def take_review(self, bank_id: str, review_id: str) -> ReviewItem | None:
        """Read then delete one item."""
        pid = point_id(bank_id, f"review\x1f{review_id}")
        with qdrant_errors(self._target):
            points = await self._client.retrieve(self.graph, ids=[pid], with_payload=True)
            if not points:
                return None
            await self._client.delete(
                self.graph, points_selector=models.PointIdsList(points=[pid]), wait=True
            )
        return review_from_payload(points[0].payload or {})
