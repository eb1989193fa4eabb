"""The vector store: one facade over Qdrant Edge (embedded), a Qdrant server (fleets) and local mode (tests).

Banks are a payload filter inside one collection per embedding model. Point ids are UUIDs derived
from (bank, record id), so re-upserting a record replaces it and two banks never share a point.

Each model's collection has two companions that move with it (a reindex switches all three aliases in
one request): ``<collection>_cold``, the cold tier (same vectors; default search skips it), and
``<collection>_graph``, without vectors, holding the entity graph and the review queue.

The layer's one store interface: :class:`VectorStore` says what the layer needs, and
:class:`QdrantVectorStore` provides it, assembled from one mixin per family of collections:

- :mod:`~hindsight.semantic.qdrant_base`: the client, the collections' names, the error mapping and the
  reads and writes over both tiers; it says why the families are mixins;
- :mod:`~hindsight.semantic.record_tiers`: records, in the hot and the cold tier;
- :mod:`~hindsight.semantic.entity_graph`: entities and the review queue, in the graph collection.

Lineage extends it in :mod:`~hindsight.semantic.lineage_store`. Points and filters they share sit below
them: :mod:`~hindsight.semantic.payloads` and :mod:`~hindsight.semantic.filters`; creating, checking and
switching the collections is :mod:`~hindsight.semantic.collection_setup`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from hindsight.runtime.records import TimeRange
from hindsight.semantic.entity_graph import EntityGraph
from hindsight.semantic.record_tiers import RecordTiers
from hindsight.semantic.records import (
    EmbeddedRecord,
    Entity,
    ReviewItem,
    ScoredRecord,
    SearchOptions,
    SemanticRecord,
)

log = logging.getLogger(__name__)


class VectorStore(Protocol):
    """Where semantic records, their vectors, the entity graph and the review queue live."""

    async def upsert(self, bank_id: str, items: Sequence[EmbeddedRecord]) -> int:
        """Insert or replace records in the hot tier; returns how many points were written."""
        ...

    async def search(
        self,
        bank_id: str,
        vector: list[float],
        limit: int,
        time_range: TimeRange,
        options: SearchOptions,
        subjects: Sequence[str] = (),
    ) -> list[ScoredRecord]:
        """The bank's records nearest to ``vector``, best first (only about ``subjects`` when given)."""
        ...

    async def search_many(
        self,
        bank_id: str,
        vectors: Sequence[list[float]],
        limit: int,
        time_range: TimeRange,
        options: SearchOptions,
    ) -> list[list[ScoredRecord]]:
        """One :meth:`search` per vector (the phrasings of one query), answered in one batched call."""
        ...

    async def nearest(
        self, bank_id: str, items: Sequence[EmbeddedRecord], threshold: float
    ) -> list[SemanticRecord | None]:
        """Per item, the closest current hot record of its kind at cosine >= ``threshold`` (another id)."""
        ...

    async def get(self, bank_id: str, ids: Sequence[str]) -> dict[str, EmbeddedRecord]:
        """The records with these ids, from either tier, with their vectors."""
        ...

    async def facts_about(
        self, bank_id: str, keys: Sequence[tuple[str, str]], current_only: bool
    ) -> list[SemanticRecord]:
        """Facts (any tier) whose (subject, attribute) is one of ``keys`` (compared by :func:`key_of`)."""
        ...

    async def current_about(self, bank_id: str, subjects: Sequence[str]) -> list[EmbeddedRecord]:
        """Current records (either tier, with vectors) whose subject is one of ``subjects`` (key form)."""
        ...

    async def supersede(self, bank_id: str, record_id: str, valid_to: datetime, by: str) -> None:
        """Close a record's validity and link it to the record that replaced it."""
        ...

    async def restore(self, bank_id: str, superseded_by: Sequence[str]) -> int:
        """Make current again every record superseded by one of these (deleted) ids."""
        ...

    async def relink(self, bank_id: str, superseded_by: str, by: str) -> int:
        """Records superseded by ``superseded_by`` (deleted, itself superseded) are superseded by ``by``
        instead, their validity unchanged; returns how many."""
        ...

    async def delete(
        self, bank_id: str, ids: Sequence[str], source_turn_ids: Sequence[str], session_id: str
    ) -> list[str]:
        """Delete matching records from both tiers (by id, by a cited turn, or the session's records that
        stand on no turn); returns their ids."""
        ...

    async def delete_bank(self, bank_id: str) -> int:
        """Delete every record, entity and review item of the bank; returns how many records went."""
        ...

    async def mark_cold(
        self, bank_id: str, ids: Sequence[str], unused_before: datetime | None, importance_below: float
    ) -> int:
        """Move records to the cold tier; returns how many moved."""
        ...

    async def entities_named(self, bank_id: str, keys: Sequence[str]) -> list[Entity]:
        """Entities whose name or an alias is one of ``keys`` (already :func:`key_of` form)."""
        ...

    async def put_entities(self, bank_id: str, entities: Sequence[Entity]) -> None:
        """Add entities, merging aliases and relations into those already known by name."""
        ...

    async def list_entities(
        self, bank_id: str, limit: int, entity_type: str = "", prefix: str = "", offset: int = 0
    ) -> list[Entity]:
        """The bank's entities by name (of one type, whose name or an alias starts with ``prefix``)."""
        ...

    async def known_ids(self, bank_id: str, ids: Sequence[str]) -> set[str]:
        """Which of these record ids either tier holds already."""
        ...

    async def count_turns(self, bank_id: str) -> int:
        """Turn records of the bank (either tier)."""
        ...

    async def mentioning(
        self, bank_id: str, keys: Sequence[str], spoken: bool, limit: int
    ) -> list[SemanticRecord]:
        """Records (either tier, history included) naming one of ``keys``, or spoken by one of them when
        ``spoken``; at most ``limit``, in no particular order."""
        ...

    async def facts_of(self, bank_id: str, subjects: Sequence[str]) -> list[SemanticRecord]:
        """Every distilled record (either tier, history included) about one of ``subjects`` (key form)."""
        ...

    async def add_review(self, bank_id: str, item: ReviewItem) -> None:
        """Queue a conflict."""
        ...

    async def reviews(self, bank_id: str, limit: int) -> list[ReviewItem]:
        """Queued conflicts, oldest first."""
        ...

    async def take_review(self, bank_id: str, review_id: str) -> ReviewItem | None:
        """Remove a queued conflict and return it (None when there is no such item)."""
        ...

    async def ready(self) -> bool:
        """Whether the store answers; never raises."""
        ...


class QdrantVectorStore(RecordTiers, EntityGraph):
    """The real store: one Qdrant collection per embedding model (plus companions), on any of the engines."""

    async def ready(self) -> bool:
        """The collection exists and the client answers."""
        try:
            return await self._client.collection_exists(self.collection)
        except Exception:
            log.warning("qdrant readiness check failed", exc_info=True)
            return False
