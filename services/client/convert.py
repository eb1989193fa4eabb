"""Between the client's dataclasses and the ``MemoryService`` messages: the only module that sees protobuf."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TypeVar

from google.protobuf.timestamp_pb2 import Timestamp

from hindsight.client import types as t
from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.memory.v1 import memory_pb2
from hindsight.contracts.reflect.v1 import reflect_pb2
from hindsight.contracts.semantic.v1 import semantic_pb2
from hindsight.runtime.records import from_timestamp, to_timestamp

K = TypeVar("K")
V = TypeVar("V")

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
    return common_pb2.TimeRange(start=to_timestamp(time_range.start), end=to_timestamp(time_range.end))


def time_range_from_pb(message: common_pb2.TimeRange) -> t.TimeRange:
    return t.TimeRange(from_timestamp(message.start), from_timestamp(message.end))


def meta_to_pb(meta: t.RecordMeta) -> common_pb2.RecordMeta:
    return common_pb2.RecordMeta(
        source_turn_ids=list(meta.source_turn_ids),
        source=_SOURCES[meta.source] if meta.source else common_pb2.SOURCE_UNSPECIFIED,
        trust=_TRUSTS[meta.trust] if meta.trust else common_pb2.TRUST_UNSPECIFIED,
        time=to_timestamp(meta.time),
        tags=list(meta.tags),
        importance=meta.importance,
        agent=meta.agent,
    )


def meta_from_pb(message: common_pb2.RecordMeta) -> t.RecordMeta:
    return t.RecordMeta(
        source_turn_ids=tuple(message.source_turn_ids),
        source=_SOURCES_BACK.get(message.source),
        trust=_TRUSTS_BACK.get(message.trust),
        time=from_timestamp(message.time) if message.HasField("time") else None,
        tags=tuple(message.tags),
        importance=message.importance,
        agent=message.agent,
    )


def turn_to_pb(turn: t.Turn) -> common_pb2.Turn:
    return common_pb2.Turn(
        id=turn.id,
        session_id=turn.session_id,
        role=_ROLES[turn.role],
        speaker=turn.speaker,
        text=turn.text,
        meta=meta_to_pb(turn.meta),
    )


def turn_from_pb(message: common_pb2.Turn) -> t.Turn:
    return t.Turn(
        text=message.text,
        session_id=message.session_id,
        id=message.id,
        role=_ROLES_BACK.get(message.role, t.Role.USER),
        speaker=message.speaker,
        meta=meta_from_pb(message.meta),
    )


def turns_from_pb(messages: Iterable[common_pb2.Turn]) -> tuple[t.Turn, ...]:
    return tuple(turn_from_pb(m) for m in messages)


def episode_to_pb(episode: t.Episode) -> episodic_pb2.Episode:
    return episodic_pb2.Episode(
        id=episode.id,
        session_id=episode.session_id,
        situation=episode.situation,
        action=episode.action,
        outcome=episode.outcome,
        lesson=episode.lesson,
        task_type=episode.task_type,
        tools=list(episode.tools),
        result=episodic_pb2.OUTCOME_UNSPECIFIED if episode.success is None else _OUTCOMES[episode.success],
        meta=meta_to_pb(episode.meta),
    )


def episode_from_pb(message: episodic_pb2.Episode) -> t.Episode:
    return t.Episode(
        situation=message.situation,
        action=message.action,
        outcome=message.outcome,
        lesson=message.lesson,
        task_type=message.task_type,
        tools=tuple(message.tools),
        success=_OUTCOMES_BACK.get(message.result),
        session_id=message.session_id,
        id=message.id,
        meta=meta_from_pb(message.meta),
        recorded_at=from_timestamp(message.recorded_at),
    )


def lesson_from_pb(message: reflect_pb2.Lesson) -> t.Lesson:
    return t.Lesson(
        id=message.id,
        situation=message.situation,
        action=message.action,
        outcome=message.outcome,
        lesson=message.lesson,
        confidence=message.confidence,
        source_episode_ids=tuple(message.source_episode_ids),
        meta=meta_from_pb(message.meta),
        hit_count=message.hit_count,
        weight=message.weight,
        topic=message.topic,
        superseded_by=message.superseded_by,
        merged_into=message.merged_into,
        created_at=from_timestamp(message.created_at),
        archived_at=from_timestamp(message.archived_at),
    )


def lessons_from_pb(messages: Iterable[reflect_pb2.Lesson]) -> tuple[t.Lesson, ...]:
    return tuple(lesson_from_pb(m) for m in messages)


def turn_filter_to_pb(spec: t.TurnFilter | None) -> episodic_pb2.TurnFilter | None:
    if spec is None:
        return None
    return episodic_pb2.TurnFilter(
        session_id=spec.session_id,
        tags=list(spec.tags),
        sources=[_SOURCES[s] for s in spec.sources],
        min_trust=_TRUSTS[spec.min_trust] if spec.min_trust else common_pb2.TRUST_UNSPECIFIED,
        time_range=time_range_to_pb(spec.time_range),
    )


def retain_from_pb(reply: memory_pb2.RetainResponse) -> t.RetainResult:
    return t.RetainResult(tuple(reply.turn_ids), reply.duplicate_count, reply.indexed)


def memory_from_pb(message: memory_pb2.Memory) -> t.Memory:
    return t.Memory(
        id=message.id,
        layer=_LAYERS_BACK.get(message.layer),
        text=message.text,
        score=message.score,
        meta=meta_from_pb(message.meta),
        speaker=message.speaker,
        layers=tuple(_LAYERS_BACK[layer] for layer in message.layers if layer in _LAYERS_BACK),
        kind=message.kind or "turn",
        supersedes=tuple(message.supersedes),
        superseded_by=message.superseded_by,
        flags=tuple(t.SecurityFlag(flag.kind, flag.reason) for flag in message.flags),
        valid_from=from_timestamp(message.valid_from) if message.HasField("valid_from") else None,
        valid_to=from_timestamp(message.valid_to) if message.HasField("valid_to") else None,
        outdated_note=message.outdated_note or ("outdated" if message.outdated else ""),
        bank_id=message.bank_id,
    )


def recall_from_pb(reply: memory_pb2.RecallResponse) -> t.RecallResult:
    analysis = reply.analysis
    return t.RecallResult(
        memories=tuple(memory_from_pb(m) for m in reply.memories),
        partial=reply.partial,
        layer_reports=tuple(
            t.LayerReport(
                layer=_LAYERS_BACK.get(r.layer),
                ok=r.ok,
                error=r.error,
                elapsed_ms=r.elapsed_ms,
                candidate_count=r.candidate_count,
            )
            for r in reply.layer_reports
        ),
        context=reply.context,
        context_ids=tuple(reply.context_ids),
        context_tokens=reply.context_tokens,
        analysis=t.QueryAnalysis(
            time_expression=analysis.time_expression,
            time_range=time_range_from_pb(analysis.time_range),
            time_use=analysis.time_use,
            entities=tuple(analysis.entities),
            keywords=tuple(analysis.keywords),
            rewrites=tuple(analysis.rewrites),
        ),
        elapsed_ms=reply.elapsed_ms,
        warnings=tuple(
            t.SecurityWarning(
                w.id, w.kind, w.reason, w.excerpt, from_timestamp(w.time) if w.HasField("time") else None
            )
            for w in reply.warnings
        ),
    )


def forget_from_pb(reply: memory_pb2.ForgetResponse) -> t.ForgetResult:
    return t.ForgetResult(reply.forgotten_count, reply.unindexed_count, reply.working_removed_count)


def compress_from_pb(reply: memory_pb2.CompressResponse) -> t.CompressResult:
    return t.CompressResult(
        group_count=reply.group_count,
        summarised_turn_count=reply.summarised_turn_count,
        tokens_before=reply.tokens_before,
        tokens_after=reply.tokens_after,
        summariser=reply.summariser,
    )


def close_session_from_pb(reply: memory_pb2.CloseSessionResponse) -> t.CloseSessionResult:
    return t.CloseSessionResult(
        closed=reply.closed,
        turn_count=reply.turn_count,
        summary_count=reply.summary_count,
        token_count=reply.token_count,
        reflected=reply.reflected,
        reflect_error=reply.reflect_error,
        lessons=lessons_from_pb(reply.lessons),
        episodes_read=reply.episodes_read,
    )


def update_from_pb(reply: memory_pb2.UpdateResponse) -> t.UpdateResult:
    return t.UpdateResult(turn_from_pb(reply.turn), reply.superseded_id, reply.indexed)


def purge_from_pb(reply: memory_pb2.PurgeResponse) -> t.PurgeResult:
    return t.PurgeResult(
        turn_count=reply.turn_count,
        episode_count=reply.episode_count,
        unindexed_count=reply.unindexed_count,
        working_removed_count=reply.working_removed_count,
        lesson_count=reply.lesson_count,
    )


def share_from_pb(reply: memory_pb2.ShareResponse) -> t.ShareResult:
    return t.ShareResult(
        target_bank=reply.target_bank_id,
        shared=tuple(t.SharedMemory(m.source_id, m.id, m.layer, m.kind) for m in reply.shared),
        indexed=reply.indexed,
    )


def debug_list_from_pb(reply: memory_pb2.DebugListResponse) -> t.DebugListing:
    return t.DebugListing(
        turns=turns_from_pb(reply.turns),
        episodes=tuple(episode_from_pb(e) for e in reply.episodes),
        next_page_token=reply.next_page_token,
    )


def entity_from_pb(message: semantic_pb2.Entity) -> t.Entity:
    return t.Entity(
        name=message.name,
        type=message.type,
        aliases=tuple(message.aliases),
        relations=tuple(t.Relation(r.type, r.target) for r in message.relations),
        mention_count=message.mention_count,
        spoken_count=message.spoken_count,
        first_seen=from_timestamp(message.first_seen),
        last_seen=from_timestamp(message.last_seen),
        related=tuple(t.RelatedEntity(r.name, r.count) for r in message.related),
    )


def entity_list_from_pb(reply: memory_pb2.ListEntitiesResponse) -> t.EntityList:
    return t.EntityList(tuple(entity_from_pb(e) for e in reply.entities), reply.next_page_token)


def record_from_pb(message: semantic_pb2.SemanticRecord) -> t.Record:
    return t.Record(
        id=message.id,
        kind=_KINDS.get(message.kind, "turn"),
        text=message.text,
        speaker=message.speaker,
        session_id=message.session_id,
        meta=meta_from_pb(message.meta),
        subject=message.subject,
        attribute=message.attribute,
        value=message.value,
        confidence=message.confidence,
        valid_from=from_timestamp(message.valid_from),
        valid_to=from_timestamp(message.valid_to),
        superseded_by=message.superseded_by,
        supersedes=tuple(message.supersedes),
    )


def entity_page_from_pb(reply: memory_pb2.GetEntityPageResponse) -> t.EntityPage:
    return t.EntityPage(
        entity=entity_from_pb(reply.entity),
        facts=tuple(record_from_pb(r) for r in reply.facts),
        mentions=tuple(record_from_pb(r) for r in reply.mentions),
        next_page_token=reply.next_page_token,
    )
