"""The gRPC edge of the semantic layer: validates and converts protobuf, then calls the engine."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import grpc

from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.runtime.banks import requested_banks
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.interceptors import caller_var
from hindsight.runtime.records import RecordMeta, TimeRange, from_timestamp, to_timestamp
from hindsight.runtime.rewrites import check_phrasings
from hindsight.runtime.validation import check_count, check_limit, check_name, check_text
from hindsight.semantic.engine import DEFAULT_LIMIT, MAX_LIMIT, SemanticEngine, reply_context
from hindsight.semantic.export_rows import records_page
from hindsight.semantic.pages import EntityMatch
from hindsight.semantic.records import (
    DISTILLED,
    Entity,
    RecordKind,
    Resolution,
    ReviewItem,
    ScoredRecord,
    SearchOptions,
    SemanticRecord,
)
from hindsight.semantic.validity import ValidityServicer

MAX_QUERY_CHARS = 10_000
MAX_RECORDS = 1024
"""Records per Upsert: bounds one request's embedding time and memory."""
MAX_DELETE_KEYS = 10_000
MAX_ID_CHARS = 256
MAX_FIELD_CHARS = 1_000
MAX_TAGS = 100
DEFAULT_PAGE = 100
DEFAULT_EXPORT_PAGE = 256
MAX_PAGE = 1_000
DEFAULT_MENTIONS = 20
DEFAULT_NAMED = 500
MAX_NAMED = 5_000
DEFAULT_MAX_SHARE = 0.6
"""An entity more of the bank's turns mention singles nothing out (docs/semantic.md, entity pages)."""


_KIND_FROM_PB = {
    semantic_pb2.RECORD_KIND_UNSPECIFIED: RecordKind.TURN,
    semantic_pb2.RECORD_KIND_TURN: RecordKind.TURN,
    semantic_pb2.RECORD_KIND_FACT: RecordKind.FACT,
    semantic_pb2.RECORD_KIND_PREFERENCE: RecordKind.PREFERENCE,
    semantic_pb2.RECORD_KIND_RULE: RecordKind.RULE,
    semantic_pb2.RECORD_KIND_EPISODE: RecordKind.EPISODE,
    semantic_pb2.RECORD_KIND_ENTITY: RecordKind.ENTITY,
}
_KIND_TO_PB = {
    kind: value for value, kind in _KIND_FROM_PB.items() if value != semantic_pb2.RECORD_KIND_UNSPECIFIED
}
_HOPS = {
    semantic_pb2.EXPANSION_UNSPECIFIED: None,
    semantic_pb2.EXPANSION_OFF: 0,
    semantic_pb2.EXPANSION_ONE_HOP: 1,
    semantic_pb2.EXPANSION_TWO_HOPS: 2,
}
_RESOLUTIONS = {
    semantic_pb2.RESOLUTION_ACCEPT: Resolution.ACCEPT,
    semantic_pb2.RESOLUTION_REJECT: Resolution.REJECT,
}


def record_from_pb(message: semantic_pb2.SemanticRecord, field_name: str) -> SemanticRecord:
    """Convert and validate one record, naming the offending field."""
    if not message.id:
        raise InvalidArgument(f"{field_name}.id", "is required")
    if len(message.id) > MAX_ID_CHARS:
        raise InvalidArgument(f"{field_name}.id", f"must be at most {MAX_ID_CHARS} characters")
    check_text(message.text, f"{field_name}.text")
    if message.kind not in _KIND_FROM_PB:
        raise InvalidArgument(f"{field_name}.kind", "is not a known record kind")
    for name in ("subject", "attribute", "value"):
        if len(getattr(message, name)) > MAX_FIELD_CHARS:
            raise InvalidArgument(f"{field_name}.{name}", f"must be at most {MAX_FIELD_CHARS} characters")
    if bool(message.subject) != bool(message.attribute):
        raise InvalidArgument(
            f"{field_name}.attribute", "subject and attribute are given together or not at all"
        )
    if not 0.0 <= message.confidence <= 1.0:
        raise InvalidArgument(f"{field_name}.confidence", "must be between 0 and 1")
    replies_to, replies_to_text = _replies_to(message, field_name)
    return SemanticRecord(
        id=message.id,
        text=message.text,
        kind=_KIND_FROM_PB[message.kind],
        speaker=message.speaker,
        session_id=message.session_id,
        meta=RecordMeta.from_pb(message.meta, f"{field_name}.meta"),
        subject=message.subject.strip(),
        attribute=message.attribute.strip(),
        value=message.value.strip(),
        source_episode_ids=tuple(dict.fromkeys(message.source_episode_ids)),
        confidence=message.confidence,
        valid_from=from_timestamp(message.valid_from) if message.HasField("valid_from") else None,
        replies_to=replies_to,
        replies_to_text=replies_to_text,
    )


def _replies_to(message: semantic_pb2.SemanticRecord, field_name: str) -> tuple[str, str]:
    """The id of the turn a turn answers and how its words are read into the vector (only a turn answers;
    the text is cut: :func:`.engine.reply_context`)."""
    if not message.HasField("replies_to") or not message.replies_to.id:
        return "", ""
    if _KIND_FROM_PB.get(message.kind) is not RecordKind.TURN:
        raise InvalidArgument(f"{field_name}.replies_to", "is only for turns")
    context = message.replies_to
    if len(context.id) > MAX_ID_CHARS:
        raise InvalidArgument(f"{field_name}.replies_to.id", f"must be at most {MAX_ID_CHARS} characters")
    return context.id, reply_context(context.speaker, context.text)


def record_to_pb(record: SemanticRecord) -> semantic_pb2.SemanticRecord:
    """Convert to protobuf."""
    return semantic_pb2.SemanticRecord(
        id=record.id,
        kind=_KIND_TO_PB[record.kind],
        text=record.text,
        speaker=record.speaker,
        session_id=record.session_id,
        meta=record.meta.to_pb(),
        subject=record.subject,
        attribute=record.attribute,
        value=record.value,
        source_episode_ids=list(record.source_episode_ids),
        confidence=record.confidence,
        valid_from=to_timestamp(record.valid_from),
        valid_to=to_timestamp(record.valid_to),
        superseded_by=record.superseded_by,
        mention_count=record.mention_count,
        cold=record.cold,
        supersedes=list(record.supersedes),
        replies_to=semantic_pb2.TurnContext(id=record.replies_to) if record.replies_to else None,
        lineage=list(record.lineage),
        merged_ids=list(record.merged_ids),
    )


def learned_from_pb(message: semantic_pb2.SemanticRecord, field_name: str) -> SemanticRecord:
    """A learned record as an export holds it: its validity, links, merges and lineage kept (the output
    fields a plain write ignores), for :meth:`.engine.SemanticEngine.import_learned`."""
    record = record_from_pb(message, field_name)
    if record.kind not in DISTILLED:
        raise InvalidArgument(f"{field_name}.kind", "must be a learned kind (fact, preference, rule, entity)")
    return replace(
        record,
        valid_to=from_timestamp(message.valid_to) if message.HasField("valid_to") else None,
        superseded_by=message.superseded_by,
        supersedes=tuple(message.supersedes),
        merged_ids=tuple(dict.fromkeys(message.merged_ids)),
        lineage=tuple(dict.fromkeys(message.lineage)),
        cold=message.cold,  # written back into the tier the export found it in
    )


def review_from_pb(message: semantic_pb2.ReviewItem, field_name: str) -> ReviewItem:
    """A review item as an export holds it (its candidate stands on ``source_turn_ids``)."""
    if not message.id:
        raise InvalidArgument(f"{field_name}.id", "is required")
    if not message.HasField("candidate") or not message.HasField("current"):
        raise InvalidArgument(f"{field_name}.candidate", "candidate and current are both required")
    created_at = from_timestamp(message.created_at)
    if created_at is None:
        raise InvalidArgument(f"{field_name}.created_at", "is required")
    candidate = learned_from_pb(message.candidate, f"{field_name}.candidate")
    return ReviewItem(
        id=message.id,
        candidate=replace(candidate, lineage=tuple(dict.fromkeys(message.source_turn_ids))),
        current=learned_from_pb(message.current, f"{field_name}.current"),
        reason=message.reason,
        created_at=created_at,
    )


def scored_to_pb(hit: ScoredRecord) -> semantic_pb2.ScoredRecord:
    """Convert to protobuf."""
    return semantic_pb2.ScoredRecord(
        record=record_to_pb(hit.record),
        score=hit.score,
        expanded_via=list(hit.expanded_via),
        similarity=hit.similarity,
        bank_id=hit.bank_id,
    )


def review_to_pb(item: ReviewItem) -> semantic_pb2.ReviewItem:
    """Convert to protobuf."""
    return semantic_pb2.ReviewItem(
        id=item.id,
        candidate=record_to_pb(item.candidate),
        current=record_to_pb(item.current),
        reason=item.reason,
        created_at=to_timestamp(item.created_at),
        source_turn_ids=list(item.lineage),
    )


def entity_to_pb(entity: Entity) -> semantic_pb2.Entity:
    """Convert to protobuf."""
    return semantic_pb2.Entity(
        name=entity.name,
        type=entity.type,
        aliases=list(entity.aliases),
        relations=[semantic_pb2.Relation(type=r.type, target=r.target) for r in entity.relations],
        mention_count=entity.mention_count,
        spoken_count=entity.spoken_count,
        first_seen=to_timestamp(entity.first_seen),
        last_seen=to_timestamp(entity.last_seen),
        related=[semantic_pb2.RelatedEntity(name=name, count=count) for name, count in entity.related],
    )


def match_to_pb(match: EntityMatch) -> semantic_pb2.EntityMatch:
    """Convert to protobuf."""
    return semantic_pb2.EntityMatch(
        entity=entity_to_pb(match.entity), share=match.share, named_turn_ids=list(match.named_turn_ids)
    )


def options_from_pb(request: semantic_pb2.SearchRequest) -> SearchOptions:
    """The search's filters, validated field by field."""
    kinds = set()
    for index, kind in enumerate(request.kinds):
        if kind not in _KIND_FROM_PB:
            raise InvalidArgument(f"kinds[{index}]", "is not a known record kind")
        kinds.add(_KIND_FROM_PB[kind])
    if len(request.tags) > MAX_TAGS:
        raise InvalidArgument("tags", f"must list at most {MAX_TAGS} tags")
    if not 0.0 <= request.min_score <= 1.0:
        raise InvalidArgument("min_score", "must be between 0 and 1")
    if request.expansion not in _HOPS:
        raise InvalidArgument("expansion", "is not a known expansion")
    return SearchOptions(
        kinds=frozenset(kinds),
        tags=tuple(_keys(list(request.tags), "tags")),
        min_score=request.min_score,
        include_history=request.include_history,
        include_cold=request.include_cold,
        valid_at=from_timestamp(request.valid_at) if request.HasField("valid_at") else None,
        hops=_HOPS[request.expansion],
        all_tags=request.all_tags,
    )


def _keys(values: list[str], field_name: str) -> list[str]:
    if len(values) > MAX_DELETE_KEYS:
        raise InvalidArgument(field_name, f"must list at most {MAX_DELETE_KEYS} values")
    for index, value in enumerate(values):
        if not value:
            raise InvalidArgument(f"{field_name}[{index}]", "must not be empty")
    return values


class SemanticServicer(ValidityServicer, semantic_pb2_grpc.SemanticServiceServicer):
    """Thin: protobuf in, engine call, protobuf out."""

    def __init__(self, engine: SemanticEngine) -> None:
        self.engine = engine

    async def Upsert(
        self, request: semantic_pb2.UpsertRequest, context: grpc.aio.ServicerContext
    ) -> semantic_pb2.UpsertResponse:
        check_count(request.records, "records", MAX_RECORDS, "records")
        records = [record_from_pb(record, f"records[{i}]") for i, record in enumerate(request.records)]
        return semantic_pb2.UpsertResponse(upserted_count=await self.engine.upsert(request.bank_id, records))

    async def Search(
        self, request: semantic_pb2.SearchRequest, context: grpc.aio.ServicerContext
    ) -> semantic_pb2.SearchResponse:
        weight = request.rewrite_weight if request.HasField("rewrite_weight") else None
        phrasings = check_phrasings(request.query, request.rewrites, weight, MAX_QUERY_CHARS)
        limit = check_limit(request.limit, "limit", DEFAULT_LIMIT, MAX_LIMIT)
        window = TimeRange.from_pb(request.time_range if request.HasField("time_range") else None)
        banks = requested_banks(request.bank_id, request.bank_ids) if request.bank_ids else ()
        if banks and request.match_entities:
            raise InvalidArgument("match_entities", "names the entities of one bank: not with bank_ids")
        search = self.engine.search(
            request.bank_id, phrasings, limit, window, options_from_pb(request), banks=banks
        )
        if not request.match_entities:
            hits = await search
            return semantic_pb2.SearchResponse(hits=[scored_to_pb(hit) for hit in hits])
        hits, matches = await asyncio.gather(
            search, self.engine.entity_matches(request.bank_id, phrasings, DEFAULT_MAX_SHARE, DEFAULT_NAMED)
        )
        return semantic_pb2.SearchResponse(
            hits=[scored_to_pb(hit) for hit in hits], entities=[match_to_pb(m) for m in matches]
        )

    async def Delete(
        self, request: semantic_pb2.DeleteRequest, context: grpc.aio.ServicerContext
    ) -> semantic_pb2.DeleteResponse:
        ids = _keys(list(request.ids), "ids")
        turns = _keys(list(request.source_turn_ids), "source_turn_ids")
        if request.whole_bank and (ids or turns or request.session_id):
            raise InvalidArgument("whole_bank", "deletes everything: give no ids, turns or session with it")
        if not request.whole_bank and not ids and not turns and not request.session_id:
            raise InvalidArgument("ids", "give record ids, source_turn_ids, a session_id or whole_bank")
        if request.archived and not turns:
            raise InvalidArgument("archived", "applies to source_turn_ids: name the archived turns")
        deleted = await self.engine.delete(
            request.bank_id, ids, turns, request.session_id, request.whole_bank, request.archived
        )
        return semantic_pb2.DeleteResponse(deleted_count=deleted)

    async def MarkCold(
        self, request: semantic_pb2.MarkColdRequest, context: grpc.aio.ServicerContext
    ) -> semantic_pb2.MarkColdResponse:
        ids = _keys(list(request.ids), "ids")
        before = from_timestamp(request.unused_before) if request.HasField("unused_before") else None
        if not 0.0 <= request.importance_below <= 1.0:
            raise InvalidArgument("importance_below", "must be between 0 and 1")
        if request.importance_below and before is None:
            raise InvalidArgument("unused_before", "is required with importance_below")
        if not ids and before is None:
            raise InvalidArgument("ids", "give record ids or unused_before")
        moved = await self.engine.mark_cold(request.bank_id, ids, before, request.importance_below)
        return semantic_pb2.MarkColdResponse(moved_count=moved)

    async def ExportRecords(
        self, request: semantic_pb2.ExportRecordsRequest, context: grpc.aio.ServicerContext
    ) -> semantic_pb2.ExportRecordsResponse:
        """The bank's learned records, entities and review queue, whole: for an operator's export."""
        caller_var.get().require_all_banks("ExportRecords")
        size = check_limit(request.page_size, "page_size", DEFAULT_EXPORT_PAGE, MAX_PAGE)
        page = await records_page(self.engine.store, request.bank_id, size, request.page_token)
        return semantic_pb2.ExportRecordsResponse(
            records=[record_to_pb(record) for record in page.records],
            next_page_token=page.next_page_token,
            entities=[entity_to_pb(entity) for entity in page.entities],
            reviews=[review_to_pb(item) for item in page.reviews],
        )

    async def ImportRecords(
        self, request: semantic_pb2.ImportRecordsRequest, context: grpc.aio.ServicerContext
    ) -> semantic_pb2.ImportRecordsResponse:
        """An export's learned records and review items, written as they were: for an operator's import."""
        caller_var.get().require_all_banks("ImportRecords")
        if len(request.records) + len(request.reviews) > MAX_RECORDS:
            raise InvalidArgument("records", f"records and reviews must hold at most {MAX_RECORDS} in all")
        records = [learned_from_pb(r, f"records[{i}]") for i, r in enumerate(request.records)]
        reviews = [review_from_pb(r, f"reviews[{i}]") for i, r in enumerate(request.reviews)]
        done = await self.engine.import_learned(request.bank_id, records, reviews, request.replace)
        return semantic_pb2.ImportRecordsResponse(
            imported_count=done.records, review_count=done.reviews, removed_count=done.removed
        )

    async def ListReviews(
        self, request: semantic_pb2.ListReviewsRequest, context: grpc.aio.ServicerContext
    ) -> semantic_pb2.ListReviewsResponse:
        limit = check_limit(request.limit, "limit", DEFAULT_PAGE, MAX_PAGE)
        items = await self.engine.reviews(request.bank_id, limit)
        return semantic_pb2.ListReviewsResponse(items=[review_to_pb(item) for item in items])

    async def ResolveReview(
        self, request: semantic_pb2.ResolveReviewRequest, context: grpc.aio.ServicerContext
    ) -> semantic_pb2.ResolveReviewResponse:
        if not request.review_id:
            raise InvalidArgument("review_id", "is required")
        if request.resolution not in _RESOLUTIONS:
            raise InvalidArgument("resolution", "must be RESOLUTION_ACCEPT or RESOLUTION_REJECT")
        current = await self.engine.resolve(
            request.bank_id, request.review_id, _RESOLUTIONS[request.resolution]
        )
        return semantic_pb2.ResolveReviewResponse(current=record_to_pb(current))

    async def GetRecords(
        self, request: semantic_pb2.GetRecordsRequest, context: grpc.aio.ServicerContext
    ) -> semantic_pb2.GetRecordsResponse:
        if len(request.ids) > MAX_PAGE:
            raise InvalidArgument("ids", f"must list at most {MAX_PAGE} ids")
        ids = _keys(list(request.ids), "ids")
        records = await self.engine.records(request.bank_id, ids)
        return semantic_pb2.GetRecordsResponse(records=[record_to_pb(record) for record in records])

    async def History(
        self, request: semantic_pb2.HistoryRequest, context: grpc.aio.ServicerContext
    ) -> semantic_pb2.HistoryResponse:
        if not request.record_id and not (request.subject and request.attribute):
            raise InvalidArgument("record_id", "give record_id, or subject and attribute")
        records = await self.engine.history(
            request.bank_id, request.record_id, request.subject, request.attribute
        )
        return semantic_pb2.HistoryResponse(records=[record_to_pb(record) for record in records])

    async def ListEntities(
        self, request: semantic_pb2.ListEntitiesRequest, context: grpc.aio.ServicerContext
    ) -> semantic_pb2.ListEntitiesResponse:
        limit = check_limit(request.limit, "limit", DEFAULT_PAGE, MAX_PAGE)
        entities, following = await self.engine.list_pages(
            request.bank_id,
            limit,
            check_name(request.type, "type"),
            check_name(request.prefix, "prefix"),
            request.page_token,
        )
        return semantic_pb2.ListEntitiesResponse(
            entities=[entity_to_pb(entity) for entity in entities], next_page_token=following
        )

    async def GetEntityPage(
        self, request: semantic_pb2.GetEntityPageRequest, context: grpc.aio.ServicerContext
    ) -> semantic_pb2.GetEntityPageResponse:
        if not request.entity.strip():
            raise InvalidArgument("entity", "is required")
        name = check_name(request.entity, "entity")
        limit = check_limit(request.mention_limit, "mention_limit", DEFAULT_MENTIONS, MAX_PAGE)
        page = await self.engine.entity_page(request.bank_id, name, limit, request.page_token)
        return semantic_pb2.GetEntityPageResponse(
            entity=entity_to_pb(page.entity),
            facts=[record_to_pb(fact) for fact in page.facts],
            mentions=[record_to_pb(turn) for turn in page.mentions],
            next_page_token=page.next_page_token,
        )

    async def MatchEntities(
        self, request: semantic_pb2.MatchEntitiesRequest, context: grpc.aio.ServicerContext
    ) -> semantic_pb2.MatchEntitiesResponse:
        phrasings = check_phrasings(request.query, request.rewrites, None, MAX_QUERY_CHARS)
        if not 0.0 <= request.max_share <= 1.0:
            raise InvalidArgument("max_share", "must be between 0 and 1")
        named = check_limit(request.named_limit, "named_limit", DEFAULT_NAMED, MAX_NAMED)
        matches = await self.engine.entity_matches(
            request.bank_id, phrasings, request.max_share or DEFAULT_MAX_SHARE, named
        )
        return semantic_pb2.MatchEntitiesResponse(matches=[match_to_pb(match) for match in matches])
