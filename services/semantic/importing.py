"""An export's learned records written back as they were: an import holds exactly the source's facts.

Deriving facts again from the imported turns cannot give the source's: the source met its turns one at a
time (a value stated, restated elsewhere, then corrected by an update), while the target derives them all
at once, so merges, supersessions and review items come out otherwise. So the import writes the export's
learned records whole (validity, supersede links, merges, lineage) and its review queue, after the turns
are indexed; the first request removes what the target derived from those turns (``replace``). Entity pages
follow: the removed records' contributions go, the written ones' come, the pages they name are rebuilt.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from hindsight.runtime.text import key_of
from hindsight.semantic.embedder import Embedder
from hindsight.semantic.lineage_store import CONTRIBUTION, SemanticStore, graph_key
from hindsight.semantic.records import Contribution, EmbeddedRecord, ReviewItem, SemanticRecord
from hindsight.semantic.settlement import contributions_of

log = logging.getLogger(__name__)

MAX_REVIEWS = 1_000_000
"""Review items read to remove a bank's queue (a bank's queue, not its records)."""


@dataclass(frozen=True)
class ImportedLearned:
    """What one import request wrote and removed."""

    records: int
    reviews: int
    removed: int


async def import_learned(
    store: SemanticStore,
    embed: Embedder,
    bank_id: str,
    records: Sequence[SemanticRecord],
    reviews: Sequence[ReviewItem],
    replace: bool,
) -> ImportedLearned:
    """Write ``records`` and ``reviews`` as given (``replace``: after removing the bank's learned records
    and review queue). Runs under the bank's lock."""
    from hindsight.semantic.engine import record_vectors, write_in_tier  # the engine imports this module

    removed, rebuild = (await _clear(store, bank_id)) if replace else (0, set())
    if records:
        vectors = await record_vectors(embed, bank_id, records)
        items = [EmbeddedRecord(r, v) for r, v in zip(records, vectors, strict=True)]
        await write_in_tier(store, bank_id, items)
        contributions = contributions_of({}, records)
        rebuild |= await store.put_contributions(bank_id, contributions)
        rebuild |= {key for item in contributions for key in _keys(item)}
    for item in reviews:
        await store.add_review(bank_id, item)
    await store.rebuild_entities(bank_id, sorted(rebuild))
    log.info(
        "learned records imported",
        extra={"records": len(records), "reviews": len(reviews), "removed": removed},
    )
    return ImportedLearned(len(records), len(reviews), removed)


async def _clear(store: SemanticStore, bank_id: str) -> tuple[int, set[str]]:
    """Remove the bank's learned records, their entity contributions and its review queue; returns how
    many records went and the entity keys whose pages need rebuilding."""
    learned = await store.learned(bank_id)
    ids = [record.id for record in learned]
    emptied = [Contribution(f"fact:{record_id}", (), ()) for record_id in ids]
    rebuild = await store.put_contributions(bank_id, emptied)  # the keys each named before
    await store.drop_graph(bank_id, [graph_key(CONTRIBUTION, item.origin) for item in emptied])
    if ids:
        await store.delete(bank_id, ids, (), "")
    for item in await store.reviews(bank_id, MAX_REVIEWS):
        await store.drop_review(bank_id, item.id)
    return len(ids), rebuild


def _keys(item: Contribution) -> set[str]:
    return {key_of(entity.name) for entity in item.entities}
