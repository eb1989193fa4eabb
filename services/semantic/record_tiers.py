"""The records family of the semantic store: turns, episodes and facts as points with vectors, in the hot
tier and the cold one (same vectors; default search skips it). Written, searched, superseded and restored,
moved cold, deleted, and read for entity pages.

A mixin on :class:`~hindsight.semantic.qdrant_base.QdrantCollections` (see there why mixins), assembled
into :class:`~hindsight.semantic.store.QdrantVectorStore`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from qdrant_client import models

from hindsight.runtime.records import TimeRange
from hindsight.runtime.text import key_of
from hindsight.semantic.filters import SUPERSEDED, field_in, field_is, of_bank, search_filter
from hindsight.semantic.payloads import OPEN_FUTURE, from_payload, point_id, to_payload, vector_of
from hindsight.semantic.qdrant_base import SCROLL_PAGE, QdrantCollections, qdrant_errors
from hindsight.semantic.records import (
    DISTILLED,
    EmbeddedRecord,
    RecordKind,
    ScoredRecord,
    SearchOptions,
    SemanticRecord,
)


class RecordTiers(QdrantCollections):
    """Record points in the hot and the cold tier."""

    async def upsert(self, bank_id: str, items: Sequence[EmbeddedRecord]) -> int:
        """Write every point in one call (a request is stored whole or not at all); a record written
        again while cold comes back to the hot tier."""
        now = datetime.now(UTC)
        points = {
            point_id(bank_id, item.record.id): models.PointStruct(
                id=point_id(bank_id, item.record.id),
                vector=item.vector,
                payload=to_payload(bank_id, item.record, now),
            )
            for item in items
        }
        if not points:
            return 0
        with qdrant_errors(self._target):
            await self._client.upsert(self.collection, points=list(points.values()), wait=True)
            await self._client.delete(
                self.cold, points_selector=models.PointIdsList(points=list(points)), wait=True
            )
        return len(points)

    async def search(
        self,
        bank_id: str,
        vector: list[float],
        limit: int,
        time_range: TimeRange,
        options: SearchOptions,
        subjects: Sequence[str] = (),
    ) -> list[ScoredRecord]:
        """Cosine search over the hot tier (and the cold one when asked), filtered, best first."""
        [hits] = await self._search_tiers(bank_id, [vector], limit, time_range, options, subjects)
        return hits

    async def search_many(
        self,
        bank_id: str,
        vectors: Sequence[list[float]],
        limit: int,
        time_range: TimeRange,
        options: SearchOptions,
    ) -> list[list[ScoredRecord]]:
        """Every vector in one batched request per tier: the engine plans them as one pass."""
        if not vectors:
            return []
        return await self._search_tiers(bank_id, vectors, limit, time_range, options, ())

    async def _search_tiers(
        self,
        bank_id: str,
        vectors: Sequence[list[float]],
        limit: int,
        time_range: TimeRange,
        options: SearchOptions,
        subjects: Sequence[str],
    ) -> list[list[ScoredRecord]]:
        selector = search_filter(bank_id, time_range, options, subjects)
        tiers = [(self.collection, False)] + ([(self.cold, True)] if options.include_cold else [])
        found: list[list[ScoredRecord]] = [[] for _ in vectors]
        with qdrant_errors(self._target):
            for collection, cold in tiers:
                if len(vectors) == 1:
                    reply = await self._client.query_points(
                        collection,
                        query=vectors[0],
                        query_filter=selector,
                        limit=limit,
                        with_payload=True,
                        score_threshold=options.min_score or None,
                    )
                    replies = [reply.points]
                else:
                    requests = [
                        models.QueryRequest(
                            query=vector,
                            filter=selector,
                            limit=limit,
                            with_payload=True,
                            score_threshold=options.min_score or None,
                        )
                        for vector in vectors
                    ]
                    batch = await self._client.query_batch_points(collection, requests=requests)
                    replies = [reply.points for reply in batch]
                for hits, points in zip(found, replies, strict=True):
                    hits.extend(
                        ScoredRecord(from_payload(point.payload or {}, cold), float(point.score))
                        for point in points
                    )
        for hits in found:
            hits.sort(key=lambda hit: -hit.score)
        return [hits[:limit] for hits in found]

    async def nearest(
        self, bank_id: str, items: Sequence[EmbeddedRecord], threshold: float
    ) -> list[SemanticRecord | None]:
        """One batched query for every item."""
        if not items:
            return []
        requests = [
            models.QueryRequest(
                query=item.vector,
                filter=models.Filter(
                    must=[of_bank(bank_id), field_is("kind", item.record.kind.value)],
                    must_not=[SUPERSEDED, models.HasIdCondition(has_id=[point_id(bank_id, item.record.id)])],
                ),
                limit=1,
                score_threshold=threshold,
                with_payload=True,
            )
            for item in items
        ]
        with qdrant_errors(self._target):
            replies = await self._client.query_batch_points(self.collection, requests=requests)
        return [from_payload(reply.points[0].payload or {}) if reply.points else None for reply in replies]

    async def get(self, bank_id: str, ids: Sequence[str]) -> dict[str, EmbeddedRecord]:
        """Hot first; a record found in both tiers is read from the hot one."""
        found: dict[str, EmbeddedRecord] = {}
        if not ids:
            return found
        wanted = [point_id(bank_id, record_id) for record_id in dict.fromkeys(ids)]
        with qdrant_errors(self._target):
            for collection, cold in ((self.cold, True), (self.collection, False)):
                for point in await self._client.retrieve(
                    collection, ids=wanted, with_payload=True, with_vectors=True
                ):
                    record = from_payload(point.payload or {}, cold)
                    found[record.id] = EmbeddedRecord(record, vector_of(point.vector))
        return found

    async def facts_about(
        self, bank_id: str, keys: Sequence[tuple[str, str]], current_only: bool
    ) -> list[SemanticRecord]:
        """Scrolls by subject, then keeps the wanted (subject, attribute) pairs."""
        wanted = {(key_of(subject), attribute) for subject, attribute in keys}
        if not wanted:
            return []
        must: list[models.Condition] = [
            of_bank(bank_id),
            field_in("subject_key", sorted({subject for subject, _ in wanted})),
            field_in("attribute", sorted({attribute for _, attribute in wanted})),
        ]
        selector = models.Filter(must=must, must_not=[SUPERSEDED] if current_only else [])
        with qdrant_errors(self._target):
            points = await self._scroll_tiers(selector)
        records = (from_payload(point.payload or {}, cold) for point, cold in points)
        return [record for record in records if (key_of(record.subject), record.attribute) in wanted]

    async def current_about(self, bank_id: str, subjects: Sequence[str]) -> list[EmbeddedRecord]:
        """One filtered scroll per tier."""
        if not subjects:
            return []
        selector = models.Filter(
            must=[of_bank(bank_id), field_in("subject_key", subjects)], must_not=[SUPERSEDED]
        )
        with qdrant_errors(self._target):
            points = await self._scroll_tiers(selector, with_vectors=True)
        return [
            EmbeddedRecord(from_payload(point.payload or {}, cold), vector_of(point.vector))
            for point, cold in points
        ]

    async def supersede(self, bank_id: str, record_id: str, valid_to: datetime, by: str) -> None:
        """Payload-only update, in whichever tier the record lies."""
        moment = valid_to.astimezone(UTC)
        payload = {
            "valid_to": moment.isoformat(),
            "valid_to_ts": moment.timestamp(),
            "superseded_by": by,
            "current": False,
        }
        with qdrant_errors(self._target):
            for collection in (self.collection, self.cold):  # by filter: a miss in one tier is no error
                await self._client.set_payload(
                    collection,
                    payload=payload,
                    points=models.FilterSelector(
                        filter=models.Filter(
                            must=[
                                of_bank(bank_id),
                                models.HasIdCondition(has_id=[point_id(bank_id, record_id)]),
                            ]
                        )
                    ),
                    wait=True,
                )

    async def restore(self, bank_id: str, superseded_by: Sequence[str]) -> int:
        """Clear the link and the end of validity of records whose successor is gone."""
        if not superseded_by:
            return 0
        return await self._make_current(
            models.Filter(must=[of_bank(bank_id), field_in("superseded_by", superseded_by)])
        )

    async def _make_current(self, selector: models.Filter) -> int:
        """Clear the successor link and the end of validity of the records ``selector`` picks, in both tiers;
        how many there were."""
        payload = {"valid_to": None, "valid_to_ts": OPEN_FUTURE, "superseded_by": "", "current": True}
        return await self._set_payload_where(selector, payload)

    async def relink(self, bank_id: str, superseded_by: str, by: str) -> int:
        """Payload-only update of the ``superseded_by`` link, in both tiers."""
        selector = models.Filter(must=[of_bank(bank_id), field_is("superseded_by", superseded_by)])
        return await self._set_payload_where(selector, {"superseded_by": by})

    async def delete(
        self, bank_id: str, ids: Sequence[str], source_turn_ids: Sequence[str], session_id: str
    ) -> list[str]:
        """Read the matching ids, then delete; the bank condition is always part of the filter.
        ``session_id`` takes only the session's records that stand on no turn: one that does dies with
        the last of its turns (:mod:`.erase`), and a fact merged from turns of several sessions outlives
        the purge of one of them."""
        any_of: list[models.Condition] = []
        if ids:
            any_of.append(models.HasIdCondition(has_id=[point_id(bank_id, i) for i in dict.fromkeys(ids)]))
        if source_turn_ids:
            any_of.append(field_in("source_turn_ids", source_turn_ids))
        if session_id:
            any_of.append(
                models.Filter(
                    must=[
                        field_is("session_id", session_id),
                        models.IsEmptyCondition(is_empty=models.PayloadField(key="lineage")),
                        models.IsEmptyCondition(is_empty=models.PayloadField(key="source_turn_ids")),
                    ]
                )
            )
        if not any_of:
            return []
        selector = models.Filter(must=[of_bank(bank_id)], should=any_of)
        deleted: list[str] = []
        with qdrant_errors(self._target):
            for collection in (self.collection, self.cold):
                matched = await self._scroll(collection, selector)
                if matched:
                    await self._client.delete(
                        collection, points_selector=models.FilterSelector(filter=selector), wait=True
                    )
                deleted.extend(str((point.payload or {}).get("record_id", "")) for point in matched)
        return deleted

    async def delete_bank(self, bank_id: str) -> int:
        """Every tier and the graph (entities and review queue)."""
        selector = models.Filter(must=[of_bank(bank_id)])
        deleted = 0
        with qdrant_errors(self._target):
            for collection in (self.collection, self.cold, self.graph):
                count = (await self._client.count(collection, count_filter=selector, exact=True)).count
                if count:
                    await self._client.delete(
                        collection, points_selector=models.FilterSelector(filter=selector), wait=True
                    )
                if collection != self.graph:
                    deleted += count
        return deleted

    async def mark_cold(
        self, bank_id: str, ids: Sequence[str], unused_before: datetime | None, importance_below: float
    ) -> int:
        """Copy the points (vectors and payloads) into the cold tier, then remove them from the hot one."""
        any_of: list[models.Condition] = []
        if ids:
            any_of.append(models.HasIdCondition(has_id=[point_id(bank_id, i) for i in dict.fromkeys(ids)]))
        if unused_before is not None:  # a point written before updated_ts existed is stale
            stale = models.Filter(
                must=[models.FieldCondition(key="importance", range=models.Range(lt=importance_below))]
                if importance_below > 0
                else [],
                must_not=[
                    models.FieldCondition(key="updated_ts", range=models.Range(gte=unused_before.timestamp()))
                ],
            )
            any_of.append(stale)
        if not any_of:
            return 0
        selector = models.Filter(must=[of_bank(bank_id)], should=any_of)
        with qdrant_errors(self._target):
            points = await self._scroll(self.collection, selector, with_vectors=True)
            if not points:
                return 0
            await self._client.upsert(
                self.cold,
                points=[
                    models.PointStruct(id=p.id, vector=vector_of(p.vector), payload=p.payload) for p in points
                ],
                wait=True,
            )
            await self._client.delete(
                self.collection, points_selector=models.PointIdsList(points=[p.id for p in points]), wait=True
            )
        return len(points)

    async def known_ids(self, bank_id: str, ids: Sequence[str]) -> set[str]:
        """A retrieve by point id in both tiers, without payloads."""
        wanted = {point_id(bank_id, record_id): record_id for record_id in dict.fromkeys(ids)}
        if not wanted:
            return set()
        found: set[str] = set()
        with qdrant_errors(self._target):
            for collection in (self.collection, self.cold):
                for point in await self._client.retrieve(collection, ids=list(wanted), with_payload=False):
                    found.add(wanted[str(point.id)])
        return found

    async def count_turns(self, bank_id: str) -> int:
        """An exact count through the bank and kind indexes."""
        selector = models.Filter(must=[of_bank(bank_id), field_is("kind", RecordKind.TURN.value)])
        total = 0
        with qdrant_errors(self._target):
            for collection in (self.collection, self.cold):
                total += (await self._client.count(collection, count_filter=selector, exact=True)).count
        return total

    async def mentioning(
        self, bank_id: str, keys: Sequence[str], spoken: bool, limit: int
    ) -> list[SemanticRecord]:
        """A filtered scroll (``entity_keys``, and ``speaker_key`` when ``spoken``) of both tiers."""
        if not keys or limit <= 0:
            return []
        wanted = list(dict.fromkeys(keys))
        should: list[models.Condition] = [field_in("entity_keys", wanted)]
        if spoken:
            should.append(field_in("speaker_key", wanted))
        selector = models.Filter(must=[of_bank(bank_id)], should=should)
        found: list[SemanticRecord] = []
        with qdrant_errors(self._target):
            for collection, cold in self._tiers:
                offset: Any = None
                while len(found) < limit:
                    page, offset = await self._client.scroll(
                        collection,
                        scroll_filter=selector,
                        limit=min(SCROLL_PAGE, limit - len(found)),
                        offset=offset,
                        with_payload=True,
                    )
                    found.extend(from_payload(point.payload or {}, cold) for point in page)
                    if offset is None:
                        break
        return found[:limit]

    async def facts_of(self, bank_id: str, subjects: Sequence[str]) -> list[SemanticRecord]:
        """A scroll by ``subject_key`` of both tiers, superseded records included."""
        if not subjects:
            return []
        selector = models.Filter(
            must=[
                of_bank(bank_id),
                field_in("subject_key", sorted(set(subjects))),
                field_in("kind", sorted(kind.value for kind in DISTILLED)),
            ]
        )
        with qdrant_errors(self._target):
            points = await self._scroll_tiers(selector)
        return [from_payload(point.payload or {}, cold) for point, cold in points]
