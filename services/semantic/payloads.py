"""Records, entities and review items as Qdrant points: point ids and payloads, both ways.

Kept apart from the store's families so that the records' tiers, the graph, lineage, the export and the
tests read and write points from the same definitions.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from hindsight.runtime.errors import FailedPrecondition
from hindsight.runtime.records import RecordMeta, as_utc
from hindsight.runtime.text import key_of
from hindsight.semantic.records import Entity, RecordKind, Relation, ReviewItem, SemanticRecord, lineage_of

_POINT_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "hindsight:semantic:point")
OPEN_PAST = -1e13
"""``valid_from_ts`` of a record valid since always: keeps the range filter a plain range."""
OPEN_FUTURE = 1e13
"""``valid_to_ts`` of a record still valid."""


def point_id(bank_id: str, record_id: str) -> str:
    """The Qdrant point id of a record: stable, and distinct per bank."""
    return str(uuid.uuid5(_POINT_NAMESPACE, f"{bank_id}\x1f{record_id}"))


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
        "replies_to": record.replies_to,
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
        replies_to=payload.get("replies_to") or "",
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
    """Aliases unioned in first-seen order, relations unioned in one order whatever the order of the
    merges (by type, then target: a page rebuilt from its contributions reads as the page kept merge by
    merge); a known type beats "other"; page counts added, first and last seen widened."""
    related: dict[str, int] = {}
    for name, count in (*old.related, *new.related):
        related[name] = related.get(name, 0) + count
    return Entity(
        name=old.name,
        type=old.type if old.type != "other" else new.type,
        aliases=tuple(
            dict.fromkeys(a for a in (*old.aliases, *new.aliases) if key_of(a) != key_of(old.name))
        ),
        relations=tuple(sorted(set((*old.relations, *new.relations)), key=lambda r: (r.type, r.target))),
        mention_count=old.mention_count + new.mention_count,
        spoken_count=old.spoken_count + new.spoken_count,
        first_seen=min((t for t in (old.first_seen, new.first_seen) if t), default=None),
        last_seen=max((t for t in (old.last_seen, new.last_seen) if t), default=None),
        related=tuple(sorted(related.items(), key=lambda item: (-item[1], item[0]))[:MAX_RELATED]),
    )


def review_payload(bank_id: str, item: ReviewItem) -> dict[str, Any]:
    """A review item as a graph point: the candidate and the current record travel whole."""
    return {
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


def review_from_payload(payload: dict[str, Any]) -> ReviewItem:
    """Inverse of :func:`review_payload`."""
    return ReviewItem(
        id=payload["review_id"],
        candidate=from_payload(payload["candidate"]),
        current=from_payload(payload["current"]),
        reason=payload.get("reason", ""),
        created_at=_from_iso(payload.get("created_at")) or datetime.now(UTC),
    )


def vector_of(value: Any) -> list[float]:
    """A point's unnamed dense vector as a list."""
    if isinstance(value, list):
        return [float(x) for x in value]
    raise FailedPrecondition("a semantic point holds no unnamed dense vector")
