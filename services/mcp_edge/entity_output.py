"""What the entity tools (``list_entities``, ``entity_page``) return: the entity pages as MCP output."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from hindsight.contracts.semantic.v1 import semantic_pb2
from hindsight.runtime.records import RecordMeta, from_timestamp


class RelationOutput(BaseModel):
    """A relation to another entity (``sister``, ``lives_in``, ...)."""

    type: str
    target: str


class RelatedOutput(BaseModel):
    """An entity mentioned in the same turns."""

    name: str
    count: int = Field(description="Turns that mention both.")


class EntityOutput(BaseModel):
    """Someone or something the bank's memories are about."""

    name: str
    type: str = Field(description="person, place, organisation or other.")
    aliases: list[str]
    relations: list[RelationOutput]
    mention_count: int = Field(description="Turns that mention it, as their speaker or by name.")
    spoken_count: int = Field(description="Of those, the turns it spoke.")
    first_seen: datetime | None
    last_seen: datetime | None
    related: list[RelatedOutput]


class ListEntitiesOutput(BaseModel):
    """A page of the bank's entities, by name."""

    entities: list[EntityOutput]
    next_page_token: str


class FactOutput(BaseModel):
    """A fact about the entity; superseded ones are its history."""

    id: str
    text: str
    attribute: str
    value: str
    current: bool = Field(description="False for an earlier value that a later one replaced.")
    valid_from: datetime | None
    valid_to: datetime | None
    superseded_by: str
    state: Literal["current", "superseded", "invalidated"] = Field(
        "current", description="Whether it holds, was replaced by a later value, or was invalidated."
    )
    validity: str = Field("", description="When it held, in words: 'since 2026-01-05', '2026-01-05 to ...'.")
    source_turn_ids: list[str]


class MentionOutput(BaseModel):
    """A turn that mentions the entity."""

    id: str
    speaker: str
    text: str
    time: datetime | None
    session_id: str
    source_turn_ids: list[str]
    valid_to: datetime | None = Field(
        None, description="When what it says stopped holding (a later statement, or invalidated)."
    )
    superseded_by: str = Field("", description="The later turn that replaced what it says, if any.")


class EntityPageOutput(BaseModel):
    """What is known about one entity, citing the turns it comes from."""

    entity: EntityOutput
    facts: list[FactOutput] = Field(description="Grouped by attribute, each group oldest first.")
    mentions: list[MentionOutput] = Field(description="Newest first.")
    next_page_token: str


def entity_output(entity: semantic_pb2.Entity) -> EntityOutput:
    """An entity as the tools return it."""
    return EntityOutput(
        name=entity.name,
        type=entity.type,
        aliases=list(entity.aliases),
        relations=[RelationOutput(type=r.type, target=r.target) for r in entity.relations],
        mention_count=entity.mention_count,
        spoken_count=entity.spoken_count,
        first_seen=from_timestamp(entity.first_seen) if entity.HasField("first_seen") else None,
        last_seen=from_timestamp(entity.last_seen) if entity.HasField("last_seen") else None,
        related=[RelatedOutput(name=r.name, count=r.count) for r in entity.related],
    )


def list_entities_output(reply: semantic_pb2.ListEntitiesResponse) -> ListEntitiesOutput:
    """A ListEntities reply as the tool returns it."""
    return ListEntitiesOutput(
        entities=[entity_output(e) for e in reply.entities], next_page_token=reply.next_page_token
    )


def validity_words(since: datetime | None, until: datetime | None, superseded_by: str) -> str:
    """When a value held, in words: ``since 2026-01-05``, ``2026-01-05 to 2026-04-10 (superseded)``."""
    start = since.strftime("%Y-%m-%d") if since else "unknown"
    if until is None:
        return f"since {start}" if since else "holds"
    how = "superseded" if superseded_by else "invalidated"
    return f"{start} to {until.strftime('%Y-%m-%d')} ({how})"


def _fact_output(record: semantic_pb2.SemanticRecord) -> FactOutput:
    since = from_timestamp(record.valid_from) if record.HasField("valid_from") else None
    since = since or (from_timestamp(record.meta.time) if record.meta.HasField("time") else None)
    until = from_timestamp(record.valid_to) if record.HasField("valid_to") else None
    current = not record.superseded_by and until is None
    return FactOutput(
        id=record.id,
        text=record.text,
        attribute=record.attribute,
        value=record.value,
        current=current,
        valid_from=from_timestamp(record.valid_from) if record.HasField("valid_from") else None,
        valid_to=until,
        superseded_by=record.superseded_by,
        state="current" if current else ("superseded" if record.superseded_by else "invalidated"),
        validity=validity_words(since, until, record.superseded_by),
        source_turn_ids=list(record.meta.source_turn_ids),
    )


def _mention_output(record: semantic_pb2.SemanticRecord) -> MentionOutput:
    meta = RecordMeta.from_pb(record.meta)
    return MentionOutput(
        id=record.id,
        speaker=record.speaker,
        text=record.text,
        time=meta.time,
        session_id=record.session_id,
        source_turn_ids=list(meta.source_turn_ids) or [record.id],
        valid_to=from_timestamp(record.valid_to) if record.HasField("valid_to") else None,
        superseded_by=record.superseded_by,
    )


def entity_page_output(reply: semantic_pb2.GetEntityPageResponse) -> EntityPageOutput:
    """A GetEntityPage reply as the tool returns it."""
    return EntityPageOutput(
        entity=entity_output(reply.entity),
        facts=[_fact_output(f) for f in reply.facts],
        mentions=[_mention_output(m) for m in reply.mentions],
        next_page_token=reply.next_page_token,
    )
