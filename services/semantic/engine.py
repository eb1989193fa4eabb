"""Semantic memory's logic: embed through the inference layer, then store or search in the vector store."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from hindsight.runtime.records import TimeRange
from hindsight.semantic.embedder import Embedder
from hindsight.semantic.records import EmbeddedRecord, ScoredRecord, SemanticRecord
from hindsight.semantic.store import VectorStore

log = logging.getLogger(__name__)

DEFAULT_LIMIT = 10
MAX_LIMIT = 200


@dataclass
class SemanticEngine:
    """Upsert, search and delete inside one bank."""

    store: VectorStore
    embedder: Embedder

    async def upsert(self, bank_id: str, records: Sequence[SemanticRecord]) -> int:
        """Embed every text first, then write all points at once: a failed embedding writes nothing."""
        vectors = await self.embedder.embed(bank_id, [record.text for record in records])
        written = await self.store.upsert(
            bank_id, [EmbeddedRecord(record, vector) for record, vector in zip(records, vectors, strict=True)]
        )
        log.info("upserted", extra={"records": written})
        return written

    async def search(self, bank_id: str, query: str, limit: int, time_range: TimeRange) -> list[ScoredRecord]:
        """The bank's records closest in meaning to ``query``, best first."""
        [vector] = await self.embedder.embed(bank_id, [query])
        return await self.store.search(bank_id, vector, limit, time_range)

    async def delete(self, bank_id: str, ids: Sequence[str], source_turn_ids: Sequence[str]) -> int:
        """Delete by record id and/or by cited source turn; returns how many records went."""
        deleted = await self.store.delete(bank_id, ids, source_turn_ids)
        log.info("deleted", extra={"records": deleted})
        return deleted
