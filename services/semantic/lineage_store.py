"""What the store keeps so that a deleted turn can be subtracted: lineage, tombstones, page contributions and
pending LLM fact passes.

All of it lives beside the records, in the same Qdrant collections (so it moves with a reindex and is as
durable as the records): records carry ``lineage`` (the turns they stand on, indexed); the graph collection
holds, besides entities and review items, a tombstone per deleted turn (``type = tombstone``), the entity
contributions of every turn and fact (``type = contribution``: pages are rebuilt from them) and the LLM fact
passes not yet done (``type = llm_pass``). Every graph point that copies a turn's content carries that
turn's id in ``lineage``, so one filtered read finds all of it when the turn goes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Protocol

from qdrant_client import models

from hindsight.runtime.text import key_of
from hindsight.semantic.filters import field_in, field_is, of_bank
from hindsight.semantic.payloads import (
    OPEN_FUTURE,
    entity_from_payload,
    entity_payload,
    from_payload,
    merge_entities,
    point_id,
    review_from_payload,
    to_payload,
)
from hindsight.semantic.qdrant_base import qdrant_errors
from hindsight.semantic.records import (
    DISTILLED,
    Contribution,
    Entity,
    PendingPass,
    RecordKind,
    ReviewItem,
    SemanticRecord,
    lineage_of,
)
from hindsight.semantic.store import QdrantVectorStore, VectorStore

log = logging.getLogger(__name__)

TOMBSTONE = "tombstone"
CONTRIBUTION = "contribution"
LLM_PASS = "llm_pass"
REVIEW = "review"


class SemanticStore(VectorStore, Protocol):
    """The vector store plus what lineage needs (see the module docstring)."""

    async def standing_on(self, bank_id: str, turn_ids: Sequence[str]) -> list[SemanticRecord]:
        """Records other than turns (either tier) whose lineage or provenance names one of these turns."""
        ...

    async def set_sources(self, bank_id: str, record: SemanticRecord) -> None:
        """Write a record's lineage and provenance (payload only, in whichever tier it lies)."""
        ...

    async def successors_of(self, bank_id: str, ids: Sequence[str]) -> list[SemanticRecord]:
        """Records (either tier) superseded by one of ``ids``: what a deleted successor leaves behind."""
        ...

    async def replies_to(self, bank_id: str, ids: Sequence[str]) -> list[SemanticRecord]:
        """Turns (either tier) whose vector reads one of ``ids`` as the turn they answer."""
        ...

    async def learned(self, bank_id: str) -> list[SemanticRecord]:
        """Every learned record of the bank (facts, preferences, rules, entity summaries; either tier)."""
        ...

    async def reinstate(self, bank_id: str, ids: Sequence[str]) -> int:
        """Make these records current again (payload only, either tier); returns how many."""
        ...

    async def session_turns(self, bank_id: str, session_id: str) -> list[str]:
        """Ids of the turn records of a session (either tier)."""
        ...

    async def bank_turns(self, bank_id: str) -> list[str]:
        """Ids of every turn record of the bank (either tier)."""
        ...

    async def bury(self, bank_id: str, turn_ids: Sequence[str], recoverable: bool) -> None:
        """Leave a tombstone per turn (a permanent one is never made recoverable again)."""
        ...

    async def buried(self, bank_id: str, turn_ids: Sequence[str]) -> dict[str, bool]:
        """The tombstoned ones among ``turn_ids``, each with whether it may be lifted (an archive)."""
        ...

    async def unbury(self, bank_id: str, turn_ids: Sequence[str]) -> None:
        """Lift tombstones (a restored turn)."""
        ...

    async def put_contributions(self, bank_id: str, contributions: Sequence[Contribution]) -> set[str]:
        """Write contributions by origin (a rewrite replaces): a new origin is merged into its entities'
        pages at once; returns the keys of the pages a changed origin needs rebuilt (none for a
        re-delivery, which writes the same contribution again)."""
        ...

    async def rebuild_entities(self, bank_id: str, keys: Sequence[str]) -> None:
        """Rebuild these entities from the contributions that name them; one with none left goes."""
        ...

    async def graph_on(self, bank_id: str, turn_ids: Sequence[str]) -> list[dict[str, Any]]:
        """Graph payloads (contributions, review items, pending passes) standing on one of these turns."""
        ...

    async def put_graph(self, bank_id: str, key: str, payload: dict[str, Any]) -> None:
        """Write one graph point by its key (``type\\x1fid``)."""
        ...

    async def drop_graph(self, bank_id: str, keys: Sequence[str]) -> None:
        """Delete graph points by their keys."""
        ...

    async def get_review(self, bank_id: str, review_id: str) -> ReviewItem | None:
        """A queued conflict, left in the queue."""
        ...

    async def drop_review(self, bank_id: str, review_id: str) -> None:
        """Remove a queued conflict (after its decision was applied)."""
        ...

    async def put_pass(self, bank_id: str, item: PendingPass) -> None:
        """Queue or update an LLM fact pass."""
        ...

    async def due_passes(self, now: datetime, limit: int) -> list[tuple[str, PendingPass]]:
        """(bank, pass) of passes due by ``now``, any bank, earliest first."""
        ...

    async def next_due(self) -> datetime | None:
        """When the earliest waiting pass is due (None when none waits)."""
        ...

    async def failed_passes(self, bank_id: str) -> list[PendingPass]:
        """Passes given up after their last attempt (kept, counted)."""
        ...

    async def drop_pass(self, bank_id: str, pass_id: str) -> None:
        """Remove a pass that is done."""
        ...


def graph_key(kind: str, name: str) -> str:
    """The key a graph point of this kind is stored under (its point id is derived from it)."""
    return f"{kind}\x1f{name}"


def contribution_payload(bank_id: str, item: Contribution) -> dict[str, Any]:
    """A contribution as a graph point: ``keys`` (the entities it adds to) and ``lineage`` are indexed."""
    return {
        "bank_id": bank_id,
        "type": CONTRIBUTION,
        "origin": item.origin,
        "lineage": list(item.lineage),
        "keys": sorted({key_of(entity.name) for entity in item.entities}),
        "entities": [entity_payload(bank_id, entity) for entity in item.entities],
    }


def contribution_from_payload(payload: dict[str, Any]) -> Contribution:
    """Inverse of :func:`contribution_payload`."""
    return Contribution(
        origin=str(payload.get("origin", "")),
        lineage=tuple(payload.get("lineage") or ()),
        entities=tuple(entity_from_payload(entity) for entity in payload.get("entities") or ()),
    )


def pass_payload(bank_id: str, item: PendingPass) -> dict[str, Any]:
    """A pending pass as a graph point; one given up has no due time (never picked again)."""
    return {
        "bank_id": bank_id,
        "type": LLM_PASS,
        "pass_id": item.id,
        "lineage": [turn.id for turn in item.turns],
        "turns": [to_payload(bank_id, turn) for turn in item.turns],
        "attempts": item.attempts,
        "due_ts": item.due.timestamp() if item.due else OPEN_FUTURE,
        "due": item.due.isoformat() if item.due else None,
        "error": item.error,
    }


def pass_from_payload(payload: dict[str, Any]) -> PendingPass:
    """Inverse of :func:`pass_payload`."""
    due = payload.get("due")
    return PendingPass(
        id=str(payload["pass_id"]),
        turns=tuple(from_payload(turn) for turn in payload.get("turns") or ()),
        attempts=int(payload.get("attempts") or 0),
        due=datetime.fromisoformat(due) if due else None,
        error=str(payload.get("error") or ""),
    )


def rebuilt(key: str, contributions: Sequence[Contribution]) -> Entity | None:
    """The entity ``key`` as its contributions say (first seen first: its name is the earliest form)."""
    parts = [e for c in contributions for e in c.entities if key_of(e.name) == key]
    oldest = datetime.min.replace(tzinfo=UTC)
    parts.sort(key=lambda e: (e.first_seen is None, e.first_seen or oldest, e.name))
    if not parts:
        return None
    entity = parts[0]
    for part in parts[1:]:
        entity = merge_entities(entity, part)
    return entity


class QdrantSemanticStore(QdrantVectorStore):
    """The Qdrant store with lineage, tombstones, contributions and pending passes."""

    def _pid(self, bank_id: str, key: str) -> str:
        return point_id(bank_id, key)

    # ----- records ------------------------------------------------------------------------------------
    async def standing_on(self, bank_id: str, turn_ids: Sequence[str]) -> list[SemanticRecord]:
        """A filtered scroll of both tiers (turn records die by their own id only)."""
        if not turn_ids:
            return []
        return await self._records_where(
            models.Filter(
                must=[of_bank(bank_id)],
                must_not=[field_is("kind", RecordKind.TURN.value)],
                should=[field_in("lineage", turn_ids), field_in("source_turn_ids", turn_ids)],
            )
        )

    async def set_sources(self, bank_id: str, record: SemanticRecord) -> None:
        """Payload-only update of ``lineage`` and ``source_turn_ids`` in both tiers."""
        payload = {"lineage": list(record.lineage), "source_turn_ids": list(record.meta.source_turn_ids)}
        selector = models.Filter(
            must=[of_bank(bank_id), models.HasIdCondition(has_id=[point_id(bank_id, record.id)])]
        )
        with qdrant_errors(self._target):
            for collection in (self.collection, self.cold):
                await self._client.set_payload(
                    collection, payload=payload, points=models.FilterSelector(filter=selector), wait=True
                )

    async def successors_of(self, bank_id: str, ids: Sequence[str]) -> list[SemanticRecord]:
        """A filtered scroll of both tiers by ``superseded_by``."""
        if not ids:
            return []
        return await self._records_where(
            models.Filter(must=[of_bank(bank_id), field_in("superseded_by", list(dict.fromkeys(ids)))])
        )

    async def replies_to(self, bank_id: str, ids: Sequence[str]) -> list[SemanticRecord]:
        """A filtered scroll of both tiers by ``replies_to``."""
        if not ids:
            return []
        return await self._records_where(
            models.Filter(must=[of_bank(bank_id), field_in("replies_to", list(dict.fromkeys(ids)))])
        )

    async def learned(self, bank_id: str) -> list[SemanticRecord]:
        """A filtered scroll of both tiers by kind."""
        kinds = sorted(kind.value for kind in DISTILLED)
        return await self._records_where(models.Filter(must=[of_bank(bank_id), field_in("kind", kinds)]))

    async def _records_where(self, selector: models.Filter) -> list[SemanticRecord]:
        """The records ``selector`` picks in either tier, one per id: the cold tier is read first, so a record
        found in both tiers is read from the hot one (as :meth:`get` reads it)."""
        found: dict[str, SemanticRecord] = {}
        with qdrant_errors(self._target):
            for collection, cold in ((self.cold, True), (self.collection, False)):
                for point in await self._scroll(collection, selector):
                    record = from_payload(point.payload or {}, cold)
                    found[record.id] = record
        return list(found.values())

    async def reinstate(self, bank_id: str, ids: Sequence[str]) -> int:
        """Clear the link and the end of validity, by point id, in both tiers."""
        if not ids:
            return 0
        wanted: list[models.ExtendedPointId] = [point_id(bank_id, i) for i in dict.fromkeys(ids)]
        return await self._make_current(
            models.Filter(must=[of_bank(bank_id), models.HasIdCondition(has_id=wanted)])
        )

    async def _turn_ids(self, selector: models.Filter) -> list[str]:
        ids: list[str] = []
        with qdrant_errors(self._target):
            for collection in (self.collection, self.cold):
                ids.extend(
                    str((p.payload or {}).get("record_id", ""))
                    for p in await self._scroll(collection, selector)
                )
        return list(dict.fromkeys(i for i in ids if i))

    async def session_turns(self, bank_id: str, session_id: str) -> list[str]:
        """A scroll by session and kind."""
        return await self._turn_ids(
            models.Filter(
                must=[
                    of_bank(bank_id),
                    field_is("session_id", session_id),
                    field_is("kind", RecordKind.TURN.value),
                ]
            )
        )

    async def bank_turns(self, bank_id: str) -> list[str]:
        """A scroll by kind."""
        return await self._turn_ids(
            models.Filter(must=[of_bank(bank_id), field_is("kind", RecordKind.TURN.value)])
        )

    # ----- graph points by key ------------------------------------------------------------------------
    async def put_graph(self, bank_id: str, key: str, payload: dict[str, Any]) -> None:
        """One upsert."""
        with qdrant_errors(self._target):
            await self._client.upsert(
                self.graph,
                points=[models.PointStruct(id=self._pid(bank_id, key), vector={}, payload=payload)],
                wait=True,
            )

    async def drop_graph(self, bank_id: str, keys: Sequence[str]) -> None:
        """One delete by point ids."""
        if not keys:
            return
        with qdrant_errors(self._target):
            await self._client.delete(
                self.graph,
                points_selector=models.PointIdsList(
                    points=[self._pid(bank_id, k) for k in dict.fromkeys(keys)]
                ),
                wait=True,
            )

    async def graph_on(self, bank_id: str, turn_ids: Sequence[str]) -> list[dict[str, Any]]:
        """A filtered scroll of the graph by ``lineage``."""
        if not turn_ids:
            return []
        selector = models.Filter(must=[of_bank(bank_id), field_in("lineage", turn_ids)])
        with qdrant_errors(self._target):
            return [point.payload or {} for point in await self._scroll(self.graph, selector)]

    # ----- tombstones ---------------------------------------------------------------------------------
    async def bury(self, bank_id: str, turn_ids: Sequence[str], recoverable: bool) -> None:
        """One upsert; a permanent tombstone stays permanent."""
        if not turn_ids:
            return
        ids = list(dict.fromkeys(turn_ids))
        held = await self.buried(bank_id, ids) if recoverable else {}
        now = datetime.now(UTC)
        points = [
            models.PointStruct(
                id=self._pid(bank_id, graph_key(TOMBSTONE, turn_id)),
                vector={},
                payload={
                    "bank_id": bank_id,
                    "type": TOMBSTONE,
                    "turn_id": turn_id,
                    "recoverable": recoverable and held.get(turn_id, True),
                    "at": now.isoformat(),
                },
            )
            for turn_id in ids
        ]
        with qdrant_errors(self._target):
            await self._client.upsert(self.graph, points=points, wait=True)

    async def buried(self, bank_id: str, turn_ids: Sequence[str]) -> dict[str, bool]:
        """A retrieve by point ids."""
        if not turn_ids:
            return {}
        wanted = [self._pid(bank_id, graph_key(TOMBSTONE, i)) for i in dict.fromkeys(turn_ids)]
        with qdrant_errors(self._target):
            points = await self._client.retrieve(self.graph, ids=wanted, with_payload=True)
        return {
            str((p.payload or {}).get("turn_id")): bool((p.payload or {}).get("recoverable")) for p in points
        }

    async def unbury(self, bank_id: str, turn_ids: Sequence[str]) -> None:
        """A delete by point ids."""
        await self.drop_graph(bank_id, [graph_key(TOMBSTONE, i) for i in turn_ids])

    # ----- entity contributions -----------------------------------------------------------------------
    async def put_contributions(self, bank_id: str, contributions: Sequence[Contribution]) -> set[str]:
        """Read the ones written before under the same origins: an equal one is left as it is, a new one
        is merged into the pages (so a write costs the same however often an entity was mentioned), a
        changed one asks for a rebuild of its old and new keys."""
        payloads = {item.origin: contribution_payload(bank_id, item) for item in contributions}
        if not payloads:
            return set()
        ids = {origin: self._pid(bank_id, graph_key(CONTRIBUTION, origin)) for origin in payloads}
        origin_of = {pid: origin for origin, pid in ids.items()}
        rebuild: set[str] = set()
        with qdrant_errors(self._target):
            held = {
                origin_of[str(point.id)]: point.payload or {}
                for point in await self._client.retrieve(
                    self.graph, ids=list(ids.values()), with_payload=True
                )
            }
            changed = {o: p for o, p in payloads.items() if held.get(o) != p}
            for origin in changed:
                if origin in held:
                    rebuild.update(held[origin].get("keys") or ())
                    rebuild.update(changed[origin]["keys"])
            if changed:
                await self._client.upsert(
                    self.graph,
                    points=[models.PointStruct(id=ids[o], vector={}, payload=p) for o, p in changed.items()],
                    wait=True,
                )
        fresh = [
            e
            for item in contributions
            if item.origin in changed and item.origin not in held
            for e in item.entities
        ]
        await self.put_entities(bank_id, [e for e in fresh if key_of(e.name) not in rebuild])
        return rebuild

    async def rebuild_entities(self, bank_id: str, keys: Sequence[str]) -> None:
        """One scroll of the contributions naming any of ``keys``; one upsert and one delete."""
        wanted = sorted({key for key in keys if key})
        if not wanted:
            return
        selector = models.Filter(
            must=[of_bank(bank_id), field_is("type", CONTRIBUTION), field_in("keys", wanted)]
        )
        with qdrant_errors(self._target):
            found = [
                contribution_from_payload(p.payload or {}) for p in await self._scroll(self.graph, selector)
            ]
            entities = {key: rebuilt(key, found) for key in wanted}
            kept = [
                models.PointStruct(
                    id=self._pid(bank_id, f"entity\x1f{key}"),
                    vector={},
                    payload=entity_payload(bank_id, entity),
                )
                for key, entity in entities.items()
                if entity is not None
            ]
            gone: list[models.ExtendedPointId] = [
                self._pid(bank_id, f"entity\x1f{key}") for key, entity in entities.items() if entity is None
            ]
            if kept:
                await self._client.upsert(self.graph, points=kept, wait=True)
            if gone:
                await self._client.delete(
                    self.graph, points_selector=models.PointIdsList(points=gone), wait=True
                )

    # ----- review queue -------------------------------------------------------------------------------
    async def get_review(self, bank_id: str, review_id: str) -> ReviewItem | None:
        """A retrieve by point id."""
        with qdrant_errors(self._target):
            points = await self._client.retrieve(
                self.graph, ids=[self._pid(bank_id, graph_key(REVIEW, review_id))], with_payload=True
            )
        return review_from_payload(points[0].payload or {}) if points else None

    async def drop_review(self, bank_id: str, review_id: str) -> None:
        """A delete by point id."""
        await self.drop_graph(bank_id, [graph_key(REVIEW, review_id)])

    # ----- pending LLM fact passes --------------------------------------------------------------------
    async def put_pass(self, bank_id: str, item: PendingPass) -> None:
        """One upsert under the pass's key."""
        await self.put_graph(bank_id, graph_key(LLM_PASS, item.id), pass_payload(bank_id, item))

    async def due_passes(self, now: datetime, limit: int) -> list[tuple[str, PendingPass]]:
        """A filtered scroll by ``due_ts`` (every bank: the worker serves them all)."""
        selector = models.Filter(
            must=[
                field_is("type", LLM_PASS),
                models.FieldCondition(key="due_ts", range=models.Range(lte=now.timestamp())),
            ]
        )
        with qdrant_errors(self._target):
            points = await self._scroll(self.graph, selector)
        ordered = sorted(points, key=lambda p: float((p.payload or {}).get("due_ts") or 0.0))[:limit]
        return [(str((p.payload or {})["bank_id"]), pass_from_payload(p.payload or {})) for p in ordered]

    async def next_due(self) -> datetime | None:
        """A scroll of waiting passes (those given up have no due time)."""
        selector = models.Filter(
            must=[
                field_is("type", LLM_PASS),
                models.FieldCondition(key="due_ts", range=models.Range(lt=OPEN_FUTURE)),
            ]
        )
        with qdrant_errors(self._target):
            points = await self._scroll(self.graph, selector)
        moments = [float((p.payload or {}).get("due_ts") or 0.0) for p in points]
        return datetime.fromtimestamp(min(moments), UTC) if moments else None

    async def failed_passes(self, bank_id: str) -> list[PendingPass]:
        """A scroll of the bank's passes without a due time."""
        selector = models.Filter(
            must=[
                of_bank(bank_id),
                field_is("type", LLM_PASS),
                models.FieldCondition(key="due_ts", range=models.Range(gte=OPEN_FUTURE)),
            ]
        )
        with qdrant_errors(self._target):
            return [pass_from_payload(p.payload or {}) for p in await self._scroll(self.graph, selector)]

    async def drop_pass(self, bank_id: str, pass_id: str) -> None:
        """A delete by point id."""
        await self.drop_graph(bank_id, [graph_key(LLM_PASS, pass_id)])


def without(record: SemanticRecord, dead: set[str]) -> SemanticRecord | None:
    """``record`` with the dead turns taken out of its lineage and provenance; None when it stood on turns
    and none is left (a record that stood on no turn is kept)."""
    if dead.isdisjoint(lineage_of(record)) and dead.isdisjoint(record.meta.source_turn_ids):
        return record
    lineage = tuple(i for i in lineage_of(record) if i not in dead)
    if lineage_of(record) and not lineage:
        return None
    sources = tuple(i for i in record.meta.source_turn_ids if i not in dead)
    return replace(record, lineage=lineage, meta=replace(record.meta, source_turn_ids=sources))
