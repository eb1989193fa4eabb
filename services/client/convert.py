"""Between the client's dataclasses and the ``MemoryService`` messages: the only module that sees protobuf."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from hindsight.client import types as t
from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.memory.v1 import memory_pb2
from hindsight.contracts.reflect.v1 import reflect_pb2
from hindsight.contracts.semantic.v1 import semantic_pb2
from hindsight.runtime.records import from_timestamp, to_timestamp

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

K = TypeVar("K")
V = TypeVar("V")
D = TypeVar("D", bound="DataclassInstance")
M = TypeVar("M", bound=Message)

_SOURCES = {
    t.Source.USER: common_pb2.SOURCE_USER,
    t.Source.AGENT: common_pb2.SOURCE_AGENT,
    t.Source.TOOL: common_pb2.SOURCE_TOOL,
    t.Source.EXTERNAL: common_pb2.SOURCE_EXTERNAL,
}
_TRUSTS = {
    t.Trust.LOW: common_pb2.TRUST_LOW,
    t.Trust.MEDIUM: common_pb2.TRUST_MEDIUM,
    t.Trust.HIGH: common_pb2.TRUST_HIGH,
}
_ROLES = {
    t.Role.USER: common_pb2.ROLE_USER,
    t.Role.ASSISTANT: common_pb2.ROLE_ASSISTANT,
    t.Role.TOOL: common_pb2.ROLE_TOOL,
    t.Role.SYSTEM: common_pb2.ROLE_SYSTEM,
}
_LAYERS = {
    t.Layer.WORKING: memory_pb2.LAYER_WORKING,
    t.Layer.EPISODIC: memory_pb2.LAYER_EPISODIC,
    t.Layer.SEMANTIC: memory_pb2.LAYER_SEMANTIC,
    t.Layer.REFLECT: memory_pb2.LAYER_REFLECT,
}
_ORDERS = {
    "": memory_pb2.CONTEXT_ORDER_UNSPECIFIED,
    "score": memory_pb2.CONTEXT_ORDER_SCORE,
    "importance": memory_pb2.CONTEXT_ORDER_IMPORTANCE,
    "time_asc": memory_pb2.CONTEXT_ORDER_TIME_ASC,
    "time_desc": memory_pb2.CONTEXT_ORDER_TIME_DESC,
    "mix": memory_pb2.CONTEXT_ORDER_MIX,
}
_KINDS = {
    semantic_pb2.RECORD_KIND_UNSPECIFIED: "turn",
    semantic_pb2.RECORD_KIND_TURN: "turn",
    semantic_pb2.RECORD_KIND_FACT: "fact",
    semantic_pb2.RECORD_KIND_PREFERENCE: "preference",
    semantic_pb2.RECORD_KIND_RULE: "rule",
    semantic_pb2.RECORD_KIND_EPISODE: "episode",
    semantic_pb2.RECORD_KIND_ENTITY: "entity",
}
_OUTCOMES = {True: episodic_pb2.OUTCOME_SUCCESS, False: episodic_pb2.OUTCOME_FAILURE}


def _reverse(mapping: Mapping[K, V]) -> dict[V, K]:
    return {v: k for k, v in mapping.items()}


_SOURCES_BACK = _reverse(_SOURCES)
_TRUSTS_BACK = _reverse(_TRUSTS)
_ROLES_BACK = _reverse(_ROLES)
_LAYERS_BACK = _reverse(_LAYERS)
_OUTCOMES_BACK = _reverse(_OUTCOMES)


def from_message(record_type: type[D], message: Message, **overrides: Any) -> D:
    """A client dataclass read from a message field by field of the same name (repeated fields as tuples,
    Timestamps as datetimes or None); ``overrides`` give the fields that need more (an enum, a nested
    message, a rename). A field that is neither plain nor overridden raises TypeError rather than pass
    through unconverted."""
    wire_fields = message.DESCRIPTOR.fields_by_name
    values = dict(overrides)
    for name in (f.name for f in dataclasses.fields(record_type) if f.init and f.name not in overrides):
        wire = wire_fields.get(name)
        if wire is None or not _is_plain(wire):
            raise TypeError(
                f"{record_type.__name__}.{name}: {message.DESCRIPTOR.full_name} has no plain field so named"
            )
        values[name] = _read_plain(wire, getattr(message, name))
    return record_type(**values)


def from_messages(record_type: type[D], messages: Iterable[Message]) -> tuple[D, ...]:
    """Repeated messages whose fields all copy as they are."""
    return tuple(from_message(record_type, message) for message in messages)


def to_message(message_type: type[M], record: DataclassInstance, **overrides: Any) -> M:
    """A message whose fields are copied from the record's fields of the same name (tuples as lists,
    datetimes as Timestamps); ``overrides`` set the rest. Fields the record lacks stay unset; one that
    is not plain and not overridden raises TypeError."""
    record_fields = {f.name for f in dataclasses.fields(record)}
    values = dict(overrides)
    for wire in message_type.DESCRIPTOR.fields:
        if wire.name in overrides or wire.name not in record_fields:
            continue
        if not _is_plain(wire):
            raise TypeError(
                f"{message_type.DESCRIPTOR.full_name}.{wire.name}: not a plain field, give it as an override"
            )
        values[wire.name] = _write_plain(wire, getattr(record, wire.name))
    return message_type(**values)


def _is_plain(wire: FieldDescriptor) -> bool:
    """A field that converts by itself: a scalar, a repeated scalar or a single Timestamp (enums and other
    messages need the caller's mapping)."""
    if wire.message_type is not None:
        return wire.message_type.full_name == Timestamp.DESCRIPTOR.full_name and not wire.is_repeated
    return wire.enum_type is None


def _read_plain(wire: FieldDescriptor, value: Any) -> Any:
    if wire.message_type is not None:
        return from_timestamp(value)
    return tuple(value) if wire.is_repeated else value


def _write_plain(wire: FieldDescriptor, value: Any) -> Any:
    if wire.message_type is not None:
        return to_timestamp(value)
    return list(value) if wire.is_repeated else value


def layer_to_pb(layer: t.Layer | str) -> memory_pb2.Layer:
    """A layer, given as the enum or its name ("semantic")."""
    try:
        return _LAYERS[t.Layer(layer)]
    except ValueError:
        names = ", ".join(item.value for item in t.Layer)
        raise ValueError(f"layers: {layer!r} is not a layer ({names})") from None


def order_to_pb(order: str) -> memory_pb2.ContextOrder:
    """A context order by name; empty means the edge's setting."""
    if order not in _ORDERS:
        raise ValueError(f"order: {order!r} is not one of {', '.join(name for name in _ORDERS if name)}")
    return _ORDERS[order]


def moment_to_pb(moment: datetime | None) -> Timestamp | None:
    """A point in time (a naive one is taken as UTC), or None."""
    return to_timestamp(moment)


def time_range_to_pb(time_range: t.TimeRange | None) -> common_pb2.TimeRange | None:
    """A time range, or None when both ends are open."""
    if time_range is None or (time_range.start is None and time_range.end is None):
        return None
    return to_message(common_pb2.TimeRange, time_range)


def meta_to_pb(meta: t.RecordMeta) -> common_pb2.RecordMeta:
    return to_message(
        common_pb2.RecordMeta,
        meta,
        source=_SOURCES[meta.source] if meta.source else common_pb2.SOURCE_UNSPECIFIED,
        trust=_TRUSTS[meta.trust] if meta.trust else common_pb2.TRUST_UNSPECIFIED,
    )


def meta_from_pb(message: common_pb2.RecordMeta) -> t.RecordMeta:
    return from_message(
        t.RecordMeta, message, source=_SOURCES_BACK.get(message.source), trust=_TRUSTS_BACK.get(message.trust)
    )


def turn_to_pb(turn: t.Turn) -> common_pb2.Turn:
    return to_message(common_pb2.Turn, turn, role=_ROLES[turn.role], meta=meta_to_pb(turn.meta))


def turn_from_pb(message: common_pb2.Turn) -> t.Turn:
    role = _ROLES_BACK.get(message.role, t.Role.USER)
    return from_message(t.Turn, message, role=role, meta=meta_from_pb(message.meta))


def turns_from_pb(messages: Iterable[common_pb2.Turn]) -> tuple[t.Turn, ...]:
    return tuple(turn_from_pb(m) for m in messages)


def episode_to_pb(episode: t.Episode) -> episodic_pb2.Episode:
    return to_message(
        episodic_pb2.Episode,
        episode,
        result=episodic_pb2.OUTCOME_UNSPECIFIED if episode.success is None else _OUTCOMES[episode.success],
        meta=meta_to_pb(episode.meta),
        recorded_at=None,  # the service stamps it
    )


def episode_from_pb(message: episodic_pb2.Episode) -> t.Episode:
    success = _OUTCOMES_BACK.get(message.result)
    return from_message(t.Episode, message, success=success, meta=meta_from_pb(message.meta))


def lesson_from_pb(message: reflect_pb2.Lesson) -> t.Lesson:
    return from_message(t.Lesson, message, meta=meta_from_pb(message.meta))


def lessons_from_pb(messages: Iterable[reflect_pb2.Lesson]) -> tuple[t.Lesson, ...]:
    return tuple(lesson_from_pb(m) for m in messages)


def turn_filter_to_pb(spec: t.TurnFilter | None) -> episodic_pb2.TurnFilter | None:
    if spec is None:
        return None
    return to_message(
        episodic_pb2.TurnFilter,
        spec,
        sources=[_SOURCES[s] for s in spec.sources],
        min_trust=_TRUSTS[spec.min_trust] if spec.min_trust else common_pb2.TRUST_UNSPECIFIED,
        time_range=time_range_to_pb(spec.time_range),
    )


def memory_from_pb(message: memory_pb2.Memory) -> t.Memory:
    return from_message(
        t.Memory,
        message,
        layer=_LAYERS_BACK.get(message.layer),
        meta=meta_from_pb(message.meta),
        layers=tuple(_LAYERS_BACK[layer] for layer in message.layers if layer in _LAYERS_BACK),
        kind=message.kind or "turn",
        flags=from_messages(t.SecurityFlag, message.flags),
        outdated_note=message.outdated_note or ("outdated" if message.outdated else ""),
    )


def recall_from_pb(reply: memory_pb2.RecallResponse) -> t.RecallResult:
    analysis = reply.analysis
    return from_message(
        t.RecallResult,
        reply,
        memories=tuple(memory_from_pb(m) for m in reply.memories),
        layer_reports=tuple(
            from_message(t.LayerReport, r, layer=_LAYERS_BACK.get(r.layer)) for r in reply.layer_reports
        ),
        analysis=from_message(
            t.QueryAnalysis, analysis, time_range=from_message(t.TimeRange, analysis.time_range)
        ),
        warnings=from_messages(t.SecurityWarning, reply.warnings),
    )


def reflect_from_pb(reply: memory_pb2.ReflectResponse) -> t.ReflectResult:
    return from_message(t.ReflectResult, reply, lessons=lessons_from_pb(reply.lessons))


def close_session_from_pb(reply: memory_pb2.CloseSessionResponse) -> t.CloseSessionResult:
    return from_message(t.CloseSessionResult, reply, lessons=lessons_from_pb(reply.lessons))


def turn_page_from_pb(reply: memory_pb2.ListRecentResponse) -> t.TurnPage:
    return from_message(t.TurnPage, reply, turns=turns_from_pb(reply.turns))


def update_from_pb(reply: memory_pb2.UpdateResponse) -> t.UpdateResult:
    return from_message(t.UpdateResult, reply, turn=turn_from_pb(reply.turn))


def share_from_pb(reply: memory_pb2.ShareResponse) -> t.ShareResult:
    shared = from_messages(t.SharedMemory, reply.shared)
    return from_message(t.ShareResult, reply, target_bank=reply.target_bank_id, shared=shared)


def debug_list_from_pb(reply: memory_pb2.DebugListResponse) -> t.DebugListing:
    episodes = tuple(episode_from_pb(e) for e in reply.episodes)
    return from_message(t.DebugListing, reply, turns=turns_from_pb(reply.turns), episodes=episodes)


def entity_from_pb(message: semantic_pb2.Entity) -> t.Entity:
    relations = from_messages(t.Relation, message.relations)
    return from_message(
        t.Entity, message, relations=relations, related=from_messages(t.RelatedEntity, message.related)
    )


def entity_list_from_pb(reply: memory_pb2.ListEntitiesResponse) -> t.EntityList:
    return from_message(t.EntityList, reply, entities=tuple(entity_from_pb(e) for e in reply.entities))


def record_from_pb(message: semantic_pb2.SemanticRecord) -> t.Record:
    kind = _KINDS.get(message.kind, "turn")
    return from_message(t.Record, message, kind=kind, meta=meta_from_pb(message.meta))


def entity_page_from_pb(reply: memory_pb2.GetEntityPageResponse) -> t.EntityPage:
    return from_message(
        t.EntityPage,
        reply,
        entity=entity_from_pb(reply.entity),
        facts=tuple(record_from_pb(r) for r in reply.facts),
        mentions=tuple(record_from_pb(r) for r in reply.mentions),
    )
