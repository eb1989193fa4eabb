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


def embedding_text(record: SemanticRecord) -> str:
    """What a record's vector encodes: ``"speaker: text"`` when the speaker is known, else the text.

    Questions name people ("What did Caroline paint?"); a turn's text rarely names its own speaker,
    so without it a vector cannot tell whose memory it is (R@10 of the vector channel on the LoCoMo
    dev split: 0.19 for the text alone, 0.33 with the speaker; docs/retrieval.md).
    """
    return f"{record.speaker}: {record.text}" if record.speaker else record.text


@dataclass
class SemanticEngine:
    """Upsert, search and delete inside one bank."""

    store: VectorStore
    embedder: Embedder

    async def upsert(self, bank_id: str, records: Sequence[SemanticRecord]) -> int:
        """Embed every text first, then write all points at once: a failed embedding writes nothing."""
        vectors = await self.embedder.embed(bank_id, [embedding_text(record) for record in records])
        written = await self.store.upsert(
            bank_id, [EmbeddedRecord(record, vector) for record, vector in zip(records, vectors, strict=True)]
        )
        log.info("upserted", extra={"records": written})
        return written

    async def search(self, bank_id: str, query: str, limit: int, time_range: TimeRange) -> list[ScoredRecord]:
        """The bank's records closest in meaning to ``query``, best first."""
        [vector] = await self.embedder.embed(bank_id, [query], query=True)
        return await self.store.search(bank_id, vector, limit, time_range)

    async def delete(self, bank_id: str, ids: Sequence[str], source_turn_ids: Sequence[str]) -> int:
        """Delete by record id and/or by cited source turn; returns how many records went."""
        deleted = await self.store.delete(bank_id, ids, source_turn_ids)
        log.info("deleted", extra={"records": deleted})
        return deleted
