"""The vector store: one facade over Qdrant Edge (embedded), a Qdrant server (fleets) and local mode (tests).

Banks are a payload filter inside one collection per embedding model. Point ids are UUIDs derived
from (bank, record id), so re-upserting a record replaces it and two banks never share a point.

Each model's collection has two companions that move with it (a reindex switches all three aliases in
one request): ``<collection>_cold``, the cold tier (same vectors; default search skips it), and
``<collection>_graph``, without vectors, holding the entity graph and the review queue.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol, TypeAlias

from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from hindsight.runtime.errors import FailedPrecondition, Unavailable
from hindsight.runtime.records import RecordMeta, TimeRange, as_utc
from hindsight.runtime.text import key_of
from hindsight.semantic.edge_client import EdgeClient
from hindsight.semantic.records import (
    DISTILLED,
    EmbeddedRecord,
    Entity,
    ModelIdentity,
    RecordKind,
    Relation,
    ReviewItem,
    ScoredRecord,
    SearchOptions,
    SemanticRecord,
    alias_name,
    collection_name,
    lineage_of,
    prefix_start,
)

log = logging.getLogger(__name__)

QdrantAPI: TypeAlias = AsyncQdrantClient | EdgeClient
"""What the store, its start-up and the reindex talk to: a Qdrant server or local mode, or Qdrant Edge."""

_POINT_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "hindsight:semantic:point")
COLD = "_cold"
GRAPH = "_graph"
COMPANIONS = (COLD, GRAPH)
OPEN_PAST = -1e13
"""``valid_from_ts`` of a record valid since always: keeps the range filter a plain range."""
OPEN_FUTURE = 1e13
"""``valid_to_ts`` of a record still valid."""
SCROLL_PAGE = 256


def point_id(bank_id: str, record_id: str) -> str:
    """The Qdrant point id of a record: stable, and distinct per bank."""
    return str(uuid.uuid5(_POINT_NAMESPACE, f"{bank_id}\x1f{record_id}"))


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
        """Delete matching records from both tiers; returns their ids."""
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


def _iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat() if moment else None


def _from_iso(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def to_payload(bank_id: str, record: SemanticRecord, now: datetime | None = None) -> dict[str, Any]:
    """The payload stored with a point: everything needed to rebuild the record, plus filter fields."""
    meta = record.meta
    moment = as_utc(meta.time)
    stamped = now or datetime.now(UTC)
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
        "subject": record.subject,
        "subject_key": key_of(record.subject),
        "attribute": record.attribute,
        "value": record.value,
        "source_episode_ids": list(record.source_episode_ids),
        "confidence": record.confidence,
        "valid_from": _iso(record.valid_from),
        "valid_from_ts": record.valid_from.timestamp() if record.valid_from else OPEN_PAST,
        "valid_to": _iso(record.valid_to),
        "valid_to_ts": record.valid_to.timestamp() if record.valid_to else OPEN_FUTURE,
        "superseded_by": record.superseded_by,
        "supersedes": list(record.supersedes),
        "current": record.current,
        "merged_ids": list(record.merged_ids),
        "updated_ts": stamped.timestamp(),
        "entity_keys": list(record.entities),
        "speaker_key": key_of(record.speaker),
        "lineage": list(record.lineage),
    }


def from_payload(payload: dict[str, Any], cold: bool = False) -> SemanticRecord:
    """Rebuild a record from its payload (ISO times are exact; the epochs are only for filtering).

    Payloads written before facts had subjects, validity and counts read with the defaults.
    """
    meta = RecordMeta.from_fields(payload, time=_from_iso(payload.get("time")))
    return SemanticRecord(
        id=payload["record_id"],
        text=payload.get("text", ""),
        kind=RecordKind(payload.get("kind", RecordKind.TURN.value)),
        speaker=payload.get("speaker", ""),
        session_id=payload.get("session_id", ""),
        meta=meta,
        subject=payload.get("subject", ""),
        attribute=payload.get("attribute", ""),
        value=payload.get("value", ""),
        source_episode_ids=tuple(payload.get("source_episode_ids") or ()),
        confidence=float(payload.get("confidence") or 0.0),
        valid_from=_from_iso(payload.get("valid_from")),
        valid_to=_from_iso(payload.get("valid_to")),
        superseded_by=payload.get("superseded_by", ""),
        supersedes=tuple(payload.get("supersedes") or ()),
        merged_ids=tuple(payload.get("merged_ids") or ()),
        cold=cold,
        entities=tuple(payload.get("entity_keys") or ()),
        lineage=tuple(payload.get("lineage") or ()),
    )


def entity_payload(bank_id: str, entity: Entity) -> dict[str, Any]:
    """An entity as a graph point: ``keys`` (name and aliases, compared form) is what lookups match."""
    return {
        "bank_id": bank_id,
        "type": "entity",
        "name": entity.name,
        "entity_type": entity.type,
        "aliases": list(entity.aliases),
        "keys": sorted({key_of(entity.name), *(key_of(alias) for alias in entity.aliases)}),
        "relations": [{"type": r.type, "target": r.target} for r in entity.relations],
        "mention_count": entity.mention_count,
        "spoken_count": entity.spoken_count,
        "first_seen": _iso(entity.first_seen),
        "last_seen": _iso(entity.last_seen),
        "related": [[name, count] for name, count in entity.related],
    }


def entity_from_payload(payload: dict[str, Any]) -> Entity:
    """Inverse of :func:`entity_payload`."""
    return Entity(
        name=payload["name"],
        type=payload.get("entity_type", "other"),
        aliases=tuple(payload.get("aliases") or ()),
        relations=tuple(Relation(r["type"], r["target"]) for r in payload.get("relations") or ()),
        mention_count=int(payload.get("mention_count") or 0),
        spoken_count=int(payload.get("spoken_count") or 0),
        first_seen=_from_iso(payload.get("first_seen")),
        last_seen=_from_iso(payload.get("last_seen")),
        related=tuple((str(name), int(count)) for name, count in payload.get("related") or ()),
    )


MAX_RELATED = 50
"""Co-mentioned entities an entity keeps on its page (the most frequent)."""


def merge_entities(old: Entity, new: Entity) -> Entity:
    """Aliases and relations unioned, in first-seen order; a known type beats "other"; page counts added,
    first and last seen widened."""
    related: dict[str, int] = {}
    for name, count in (*old.related, *new.related):
        related[name] = related.get(name, 0) + count
    return Entity(
        name=old.name,
        type=old.type if old.type != "other" else new.type,
        aliases=tuple(
            dict.fromkeys(a for a in (*old.aliases, *new.aliases) if key_of(a) != key_of(old.name))
        ),
        relations=tuple(dict.fromkeys((*old.relations, *new.relations))),
        mention_count=old.mention_count + new.mention_count,
        spoken_count=old.spoken_count + new.spoken_count,
        first_seen=min((t for t in (old.first_seen, new.first_seen) if t), default=None),
        last_seen=max((t for t in (old.last_seen, new.last_seen) if t), default=None),
        related=tuple(sorted(related.items(), key=lambda item: (-item[1], item[0]))[:MAX_RELATED]),
    )


def _bank(bank_id: str) -> models.FieldCondition:
    return models.FieldCondition(key="bank_id", match=models.MatchValue(value=bank_id))


def _match(key: str, value: Any) -> models.FieldCondition:
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


def _any(key: str, values: Iterable[Any]) -> models.FieldCondition:
    return models.FieldCondition(key=key, match=models.MatchAny(any=list(dict.fromkeys(values))))


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


_SUPERSEDED = _match("current", False)
"""Excluded rather than ``current`` required: points written before validity existed count as current."""


def search_filter(
    bank_id: str, time_range: TimeRange, options: SearchOptions, subjects: Sequence[str] = ()
) -> models.Filter:
    """The bank, plus every filter the options ask for; current records only unless history is asked.

    Validity bounds are written as exclusions, so a point without them (older payloads) is valid always.
    """
    must: list[models.Condition] = [_bank(bank_id)]
    must_not: list[models.Condition] = []
    if (window := _time(time_range)) is not None:
        must.append(window)
    if options.kinds:
        must.append(_any("kind", sorted(kind.value for kind in options.kinds)))
    if options.tags:
        must.append(_any("tags", options.tags))
    if subjects:
        must.append(_any("subject_key", [key_of(subject) for subject in subjects]))
    if options.valid_at is not None:
        moment = options.valid_at.timestamp()
        must_not.append(models.FieldCondition(key="valid_from_ts", range=models.Range(gt=moment)))
        must_not.append(models.FieldCondition(key="valid_to_ts", range=models.Range(lte=moment)))
    elif not options.include_history:
        must_not.append(_SUPERSEDED)
    return models.Filter(must=must, must_not=must_not)


@contextlib.contextmanager
def qdrant_errors(target: str) -> Iterator[None]:
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
    """The real store: one Qdrant collection per embedding model (plus companions), on any of the engines."""

    def __init__(self, client: QdrantAPI, collection: str, target: str) -> None:
        self._client = client
        self.collection = collection
        self.cold = collection + COLD
        self.graph = collection + GRAPH
        self._target = target

    # ----- records ------------------------------------------------------------------------------------
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
                    must=[_bank(bank_id), _match("kind", item.record.kind.value)],
                    must_not=[_SUPERSEDED, models.HasIdCondition(has_id=[point_id(bank_id, item.record.id)])],
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
                    found[record.id] = EmbeddedRecord(record, _vector(point.vector))
        return found

    async def _scroll(
        self, collection: str, selector: models.Filter, with_vectors: bool = False
    ) -> list[models.Record]:
        points: list[models.Record] = []
        offset: Any = None
        while True:
            page, offset = await self._client.scroll(
                collection,
                scroll_filter=selector,
                limit=SCROLL_PAGE,
                offset=offset,
                with_payload=True,
                with_vectors=with_vectors,
            )
            points.extend(page)
            if offset is None:
                return points

    async def facts_about(
        self, bank_id: str, keys: Sequence[tuple[str, str]], current_only: bool
    ) -> list[SemanticRecord]:
        """Scrolls by subject, then keeps the wanted (subject, attribute) pairs."""
        wanted = {(key_of(subject), attribute) for subject, attribute in keys}
        if not wanted:
            return []
        must: list[models.Condition] = [
            _bank(bank_id),
            _any("subject_key", sorted({subject for subject, _ in wanted})),
            _any("attribute", sorted({attribute for _, attribute in wanted})),
        ]
        selector = models.Filter(must=must, must_not=[_SUPERSEDED] if current_only else [])
        records: list[SemanticRecord] = []
        with qdrant_errors(self._target):
            for collection, cold in ((self.collection, False), (self.cold, True)):
                for point in await self._scroll(collection, selector):
                    record = from_payload(point.payload or {}, cold)
                    if (key_of(record.subject), record.attribute) in wanted:
                        records.append(record)
        return records

    async def current_about(self, bank_id: str, subjects: Sequence[str]) -> list[EmbeddedRecord]:
        """One filtered scroll per tier."""
        if not subjects:
            return []
        selector = models.Filter(must=[_bank(bank_id), _any("subject_key", subjects)], must_not=[_SUPERSEDED])
        found: list[EmbeddedRecord] = []
        with qdrant_errors(self._target):
            for collection, cold in ((self.collection, False), (self.cold, True)):
                for point in await self._scroll(collection, selector, with_vectors=True):
                    found.append(
                        EmbeddedRecord(from_payload(point.payload or {}, cold), _vector(point.vector))
                    )
        return found

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
                                _bank(bank_id),
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
            models.Filter(must=[_bank(bank_id), _any("superseded_by", superseded_by)])
        )

    async def _make_current(self, selector: models.Filter) -> int:
        """Clear the successor link and the end of validity of the records ``selector`` picks, in both tiers;
        how many there were."""
        payload = {"valid_to": None, "valid_to_ts": OPEN_FUTURE, "superseded_by": "", "current": True}
        made = 0
        with qdrant_errors(self._target):
            for collection in (self.collection, self.cold):
                count = (await self._client.count(collection, count_filter=selector, exact=True)).count
                if count:
                    await self._client.set_payload(
                        collection, payload=payload, points=models.FilterSelector(filter=selector), wait=True
                    )
                made += count
        return made

    async def relink(self, bank_id: str, superseded_by: str, by: str) -> int:
        """Payload-only update of the ``superseded_by`` link, in both tiers."""
        selector = models.Filter(must=[_bank(bank_id), _match("superseded_by", superseded_by)])
        relinked = 0
        with qdrant_errors(self._target):
            for collection in (self.collection, self.cold):
                count = (await self._client.count(collection, count_filter=selector, exact=True)).count
                if count:
                    await self._client.set_payload(
                        collection,
                        payload={"superseded_by": by},
                        points=models.FilterSelector(filter=selector),
                        wait=True,
                    )
                relinked += count
        return relinked

    async def delete(
        self, bank_id: str, ids: Sequence[str], source_turn_ids: Sequence[str], session_id: str
    ) -> list[str]:
        """Read the matching ids, then delete; the bank condition is always part of the filter."""
        any_of: list[models.Condition] = []
        if ids:
            any_of.append(models.HasIdCondition(has_id=[point_id(bank_id, i) for i in dict.fromkeys(ids)]))
        if source_turn_ids:
            any_of.append(_any("source_turn_ids", source_turn_ids))
        if session_id:
            any_of.append(_match("session_id", session_id))
        if not any_of:
            return []
        selector = models.Filter(must=[_bank(bank_id)], should=any_of)
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
        selector = models.Filter(must=[_bank(bank_id)])
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
        selector = models.Filter(must=[_bank(bank_id)], should=any_of)
        with qdrant_errors(self._target):
            points = await self._scroll(self.collection, selector, with_vectors=True)
            if not points:
                return 0
            await self._client.upsert(
                self.cold,
                points=[
                    models.PointStruct(id=p.id, vector=_vector(p.vector), payload=p.payload) for p in points
                ],
                wait=True,
            )
            await self._client.delete(
                self.collection, points_selector=models.PointIdsList(points=[p.id for p in points]), wait=True
            )
        return len(points)

    # ----- entity graph -------------------------------------------------------------------------------
    async def entities_named(self, bank_id: str, keys: Sequence[str]) -> list[Entity]:
        """A keyword match on the ``keys`` field."""
        if not keys:
            return []
        selector = models.Filter(must=[_bank(bank_id), _match("type", "entity"), _any("keys", keys)])
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
        selector = models.Filter(must=[_bank(bank_id), _match("type", "entity")])
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

    # ----- entity pages -------------------------------------------------------------------------------
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
        selector = models.Filter(must=[_bank(bank_id), _match("kind", RecordKind.TURN.value)])
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
        should: list[models.Condition] = [_any("entity_keys", wanted)]
        if spoken:
            should.append(_any("speaker_key", wanted))
        selector = models.Filter(must=[_bank(bank_id)], should=should)
        found: list[SemanticRecord] = []
        with qdrant_errors(self._target):
            for collection, cold in ((self.collection, False), (self.cold, True)):
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
                _bank(bank_id),
                _any("subject_key", sorted(set(subjects))),
                _any("kind", sorted(kind.value for kind in DISTILLED)),
            ]
        )
        records: list[SemanticRecord] = []
        with qdrant_errors(self._target):
            for collection, cold in ((self.collection, False), (self.cold, True)):
                points = await self._scroll(collection, selector)
                records.extend(from_payload(point.payload or {}, cold) for point in points)
        return records

    # ----- review queue -------------------------------------------------------------------------------
    async def add_review(self, bank_id: str, item: ReviewItem) -> None:
        """The candidate and the current record travel whole in the payload."""
        payload = {
            "bank_id": bank_id,
            "type": "review",
            "review_id": item.id,
            "candidate": to_payload(bank_id, item.candidate),
            "current": to_payload(bank_id, item.current),
            "reason": item.reason,
            "lineage": list(item.lineage),
            "current_lineage": list(lineage_of(item.current)),
            "created_at": _iso(item.created_at),
            "created_ts": item.created_at.timestamp(),
        }
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
        selector = models.Filter(must=[_bank(bank_id), _match("type", "review")])
        with qdrant_errors(self._target):
            points = await self._scroll(self.graph, selector)
        items = sorted((_review(p.payload or {}) for p in points), key=lambda i: (i.created_at, i.id))
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
        return _review(points[0].payload or {})

    async def ready(self) -> bool:
        """The collection exists and the client answers."""
        try:
            return await self._client.collection_exists(self.collection)
        except Exception:
            log.warning("qdrant readiness check failed", exc_info=True)
            return False


def _vector(value: Any) -> list[float]:
    """A point's unnamed dense vector as a list."""
    if isinstance(value, list):
        return [float(x) for x in value]
    raise FailedPrecondition("a semantic point holds no unnamed dense vector")


def _review(payload: dict[str, Any]) -> ReviewItem:
    return ReviewItem(
        id=payload["review_id"],
        candidate=from_payload(payload["candidate"]),
        current=from_payload(payload["current"]),
        reason=payload.get("reason", ""),
        created_at=_from_iso(payload.get("created_at")) or datetime.now(UTC),
    )


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
