"""A bank's learned records whole, for ``hindsight export``: facts, preferences, rules and entity summaries,
current and superseded, in both tiers (the entity pages list only facts about entities, so a fact about
no entity, "user likes green tea", was never exported), with the entities and the review queue.

Turn and episode records are left out: they mirror the episodic layer's records one to one and are
indexed again from them by the target's own model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qdrant_client import models

from hindsight.runtime.errors import FailedPrecondition
from hindsight.runtime.paging import decode_position, encode_position, foreign_token
from hindsight.semantic.payloads import from_payload
from hindsight.semantic.qdrant_base import qdrant_errors
from hindsight.semantic.records import DISTILLED, Entity, ReviewItem, SemanticRecord
from hindsight.semantic.store import QdrantVectorStore

TIERS = ("hot", "cold")
MAX_ENTITIES = 1_000_000
"""Entities and review items come whole on the last page (a bank's graph, not its records)."""


@dataclass(frozen=True)
class RecordsPage:
    """One page of learned records; the last page also carries the entities and the review queue."""

    records: list[SemanticRecord]
    next_page_token: str
    entities: list[Entity]
    reviews: list[ReviewItem]


def _token(tier: str, offset: Any) -> str:
    return encode_position({"t": tier, "o": offset})


def _position(token: str) -> tuple[str, Any]:
    data = decode_position(token)
    if data is None:
        return TIERS[0], None
    if data.get("t") not in TIERS or not isinstance(data.get("o"), str | int | None):
        raise foreign_token()
    return data["t"], data["o"]


async def records_page(store: object, bank_id: str, page_size: int, page_token: str) -> RecordsPage:
    """The page of the bank's learned records after ``page_token`` (hot tier, then cold, by point)."""
    if not isinstance(store, QdrantVectorStore):
        raise FailedPrecondition("ExportRecords needs the Qdrant store")
    tier, offset = _position(page_token)
    selector = models.Filter(
        must=[
            models.FieldCondition(key="bank_id", match=models.MatchValue(value=bank_id)),
            models.FieldCondition(key="kind", match=models.MatchAny(any=sorted(k.value for k in DISTILLED))),
        ]
    )
    with qdrant_errors(store._target):
        points, following = await store._client.scroll(
            store.collection if tier == "hot" else store.cold,
            scroll_filter=selector,
            limit=page_size,
            offset=offset,
            with_payload=True,
            with_vectors=False,
        )
    records = [from_payload(point.payload or {}, tier == "cold") for point in points]
    if following is not None:
        return RecordsPage(records, _token(tier, following), [], [])
    if tier == "hot":
        return RecordsPage(records, _token("cold", None), [], [])
    entities = await store.list_entities(bank_id, MAX_ENTITIES)
    reviews = await store.reviews(bank_id, MAX_ENTITIES)
    return RecordsPage(records, "", entities, reviews)
