import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from hindsight.contracts.common.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RecordKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RECORD_KIND_UNSPECIFIED: _ClassVar[RecordKind]
    RECORD_KIND_TURN: _ClassVar[RecordKind]
    RECORD_KIND_FACT: _ClassVar[RecordKind]
    RECORD_KIND_PREFERENCE: _ClassVar[RecordKind]
    RECORD_KIND_RULE: _ClassVar[RecordKind]
    RECORD_KIND_EPISODE: _ClassVar[RecordKind]
    RECORD_KIND_ENTITY: _ClassVar[RecordKind]

class Expansion(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EXPANSION_UNSPECIFIED: _ClassVar[Expansion]
    EXPANSION_OFF: _ClassVar[Expansion]
    EXPANSION_ONE_HOP: _ClassVar[Expansion]
    EXPANSION_TWO_HOPS: _ClassVar[Expansion]

class Resolution(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RESOLUTION_UNSPECIFIED: _ClassVar[Resolution]
    RESOLUTION_ACCEPT: _ClassVar[Resolution]
    RESOLUTION_REJECT: _ClassVar[Resolution]
RECORD_KIND_UNSPECIFIED: RecordKind
RECORD_KIND_TURN: RecordKind
RECORD_KIND_FACT: RecordKind
RECORD_KIND_PREFERENCE: RecordKind
RECORD_KIND_RULE: RecordKind
RECORD_KIND_EPISODE: RecordKind
RECORD_KIND_ENTITY: RecordKind
EXPANSION_UNSPECIFIED: Expansion
EXPANSION_OFF: Expansion
EXPANSION_ONE_HOP: Expansion
EXPANSION_TWO_HOPS: Expansion
RESOLUTION_UNSPECIFIED: Resolution
RESOLUTION_ACCEPT: Resolution
RESOLUTION_REJECT: Resolution

class SemanticRecord(_message.Message):
    __slots__ = ("id", "kind", "text", "speaker", "session_id", "meta", "subject", "attribute", "value", "source_episode_ids", "confidence", "valid_from", "valid_to", "superseded_by", "mention_count", "cold", "supersedes", "replies_to", "lineage", "merged_ids")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SPEAKER_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_EPISODE_IDS_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    VALID_FROM_FIELD_NUMBER: _ClassVar[int]
    VALID_TO_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_BY_FIELD_NUMBER: _ClassVar[int]
    MENTION_COUNT_FIELD_NUMBER: _ClassVar[int]
    COLD_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDES_FIELD_NUMBER: _ClassVar[int]
    REPLIES_TO_FIELD_NUMBER: _ClassVar[int]
    LINEAGE_FIELD_NUMBER: _ClassVar[int]
    MERGED_IDS_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: RecordKind
    text: str
    speaker: str
    session_id: str
    meta: _common_pb2.RecordMeta
    subject: str
    attribute: str
    value: str
    source_episode_ids: _containers.RepeatedScalarFieldContainer[str]
    confidence: float
    valid_from: _timestamp_pb2.Timestamp
    valid_to: _timestamp_pb2.Timestamp
    superseded_by: str
    mention_count: int
    cold: bool
    supersedes: _containers.RepeatedScalarFieldContainer[str]
    replies_to: TurnContext
    lineage: _containers.RepeatedScalarFieldContainer[str]
    merged_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[_Union[RecordKind, str]] = ..., text: _Optional[str] = ..., speaker: _Optional[str] = ..., session_id: _Optional[str] = ..., meta: _Optional[_Union[_common_pb2.RecordMeta, _Mapping]] = ..., subject: _Optional[str] = ..., attribute: _Optional[str] = ..., value: _Optional[str] = ..., source_episode_ids: _Optional[_Iterable[str]] = ..., confidence: _Optional[float] = ..., valid_from: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., valid_to: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., superseded_by: _Optional[str] = ..., mention_count: _Optional[int] = ..., cold: _Optional[bool] = ..., supersedes: _Optional[_Iterable[str]] = ..., replies_to: _Optional[_Union[TurnContext, _Mapping]] = ..., lineage: _Optional[_Iterable[str]] = ..., merged_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class TurnContext(_message.Message):
    __slots__ = ("id", "speaker", "text")
    ID_FIELD_NUMBER: _ClassVar[int]
    SPEAKER_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    id: str
    speaker: str
    text: str
    def __init__(self, id: _Optional[str] = ..., speaker: _Optional[str] = ..., text: _Optional[str] = ...) -> None: ...

class UpsertRequest(_message.Message):
    __slots__ = ("bank_id", "records")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    records: _containers.RepeatedCompositeFieldContainer[SemanticRecord]
    def __init__(self, bank_id: _Optional[str] = ..., records: _Optional[_Iterable[_Union[SemanticRecord, _Mapping]]] = ...) -> None: ...

class UpsertResponse(_message.Message):
    __slots__ = ("upserted_count",)
    UPSERTED_COUNT_FIELD_NUMBER: _ClassVar[int]
    upserted_count: int
    def __init__(self, upserted_count: _Optional[int] = ...) -> None: ...

class SearchRequest(_message.Message):
    __slots__ = ("bank_id", "query", "limit", "time_range", "kinds", "tags", "min_score", "include_history", "include_cold", "valid_at", "expansion", "rewrites", "rewrite_weight", "all_tags", "match_entities", "bank_ids")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    TIME_RANGE_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    MIN_SCORE_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_HISTORY_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_COLD_FIELD_NUMBER: _ClassVar[int]
    VALID_AT_FIELD_NUMBER: _ClassVar[int]
    EXPANSION_FIELD_NUMBER: _ClassVar[int]
    REWRITES_FIELD_NUMBER: _ClassVar[int]
    REWRITE_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    ALL_TAGS_FIELD_NUMBER: _ClassVar[int]
    MATCH_ENTITIES_FIELD_NUMBER: _ClassVar[int]
    BANK_IDS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    query: str
    limit: int
    time_range: _common_pb2.TimeRange
    kinds: _containers.RepeatedScalarFieldContainer[RecordKind]
    tags: _containers.RepeatedScalarFieldContainer[str]
    min_score: float
    include_history: bool
    include_cold: bool
    valid_at: _timestamp_pb2.Timestamp
    expansion: Expansion
    rewrites: _containers.RepeatedScalarFieldContainer[str]
    rewrite_weight: float
    all_tags: bool
    match_entities: bool
    bank_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, bank_id: _Optional[str] = ..., query: _Optional[str] = ..., limit: _Optional[int] = ..., time_range: _Optional[_Union[_common_pb2.TimeRange, _Mapping]] = ..., kinds: _Optional[_Iterable[_Union[RecordKind, str]]] = ..., tags: _Optional[_Iterable[str]] = ..., min_score: _Optional[float] = ..., include_history: _Optional[bool] = ..., include_cold: _Optional[bool] = ..., valid_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expansion: _Optional[_Union[Expansion, str]] = ..., rewrites: _Optional[_Iterable[str]] = ..., rewrite_weight: _Optional[float] = ..., all_tags: _Optional[bool] = ..., match_entities: _Optional[bool] = ..., bank_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ScoredRecord(_message.Message):
    __slots__ = ("record", "score", "expanded_via", "similarity", "bank_id")
    RECORD_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    EXPANDED_VIA_FIELD_NUMBER: _ClassVar[int]
    SIMILARITY_FIELD_NUMBER: _ClassVar[int]
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    record: SemanticRecord
    score: float
    expanded_via: _containers.RepeatedScalarFieldContainer[str]
    similarity: float
    bank_id: str
    def __init__(self, record: _Optional[_Union[SemanticRecord, _Mapping]] = ..., score: _Optional[float] = ..., expanded_via: _Optional[_Iterable[str]] = ..., similarity: _Optional[float] = ..., bank_id: _Optional[str] = ...) -> None: ...

class SearchResponse(_message.Message):
    __slots__ = ("hits", "entities")
    HITS_FIELD_NUMBER: _ClassVar[int]
    ENTITIES_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[ScoredRecord]
    entities: _containers.RepeatedCompositeFieldContainer[EntityMatch]
    def __init__(self, hits: _Optional[_Iterable[_Union[ScoredRecord, _Mapping]]] = ..., entities: _Optional[_Iterable[_Union[EntityMatch, _Mapping]]] = ...) -> None: ...

class DeleteRequest(_message.Message):
    __slots__ = ("bank_id", "ids", "source_turn_ids", "session_id", "whole_bank", "archived")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    WHOLE_BANK_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    ids: _containers.RepeatedScalarFieldContainer[str]
    source_turn_ids: _containers.RepeatedScalarFieldContainer[str]
    session_id: str
    whole_bank: bool
    archived: bool
    def __init__(self, bank_id: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ..., source_turn_ids: _Optional[_Iterable[str]] = ..., session_id: _Optional[str] = ..., whole_bank: _Optional[bool] = ..., archived: _Optional[bool] = ...) -> None: ...

class DeleteResponse(_message.Message):
    __slots__ = ("deleted_count",)
    DELETED_COUNT_FIELD_NUMBER: _ClassVar[int]
    deleted_count: int
    def __init__(self, deleted_count: _Optional[int] = ...) -> None: ...

class MarkColdRequest(_message.Message):
    __slots__ = ("bank_id", "ids", "unused_before", "importance_below")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    UNUSED_BEFORE_FIELD_NUMBER: _ClassVar[int]
    IMPORTANCE_BELOW_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    ids: _containers.RepeatedScalarFieldContainer[str]
    unused_before: _timestamp_pb2.Timestamp
    importance_below: float
    def __init__(self, bank_id: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ..., unused_before: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., importance_below: _Optional[float] = ...) -> None: ...

class MarkColdResponse(_message.Message):
    __slots__ = ("moved_count",)
    MOVED_COUNT_FIELD_NUMBER: _ClassVar[int]
    moved_count: int
    def __init__(self, moved_count: _Optional[int] = ...) -> None: ...

class ListReviewsRequest(_message.Message):
    __slots__ = ("bank_id", "limit")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    limit: int
    def __init__(self, bank_id: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class ReviewItem(_message.Message):
    __slots__ = ("id", "candidate", "current", "reason", "created_at", "source_turn_ids")
    ID_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    id: str
    candidate: SemanticRecord
    current: SemanticRecord
    reason: str
    created_at: _timestamp_pb2.Timestamp
    source_turn_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[str] = ..., candidate: _Optional[_Union[SemanticRecord, _Mapping]] = ..., current: _Optional[_Union[SemanticRecord, _Mapping]] = ..., reason: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., source_turn_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ListReviewsResponse(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[ReviewItem]
    def __init__(self, items: _Optional[_Iterable[_Union[ReviewItem, _Mapping]]] = ...) -> None: ...

class ResolveReviewRequest(_message.Message):
    __slots__ = ("bank_id", "review_id", "resolution")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    REVIEW_ID_FIELD_NUMBER: _ClassVar[int]
    RESOLUTION_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    review_id: str
    resolution: Resolution
    def __init__(self, bank_id: _Optional[str] = ..., review_id: _Optional[str] = ..., resolution: _Optional[_Union[Resolution, str]] = ...) -> None: ...

class ResolveReviewResponse(_message.Message):
    __slots__ = ("current",)
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    current: SemanticRecord
    def __init__(self, current: _Optional[_Union[SemanticRecord, _Mapping]] = ...) -> None: ...

class HistoryRequest(_message.Message):
    __slots__ = ("bank_id", "record_id", "subject", "attribute")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    RECORD_ID_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTE_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    record_id: str
    subject: str
    attribute: str
    def __init__(self, bank_id: _Optional[str] = ..., record_id: _Optional[str] = ..., subject: _Optional[str] = ..., attribute: _Optional[str] = ...) -> None: ...

class HistoryResponse(_message.Message):
    __slots__ = ("records",)
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[SemanticRecord]
    def __init__(self, records: _Optional[_Iterable[_Union[SemanticRecord, _Mapping]]] = ...) -> None: ...

class ListEntitiesRequest(_message.Message):
    __slots__ = ("bank_id", "limit", "type", "prefix", "page_token")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    limit: int
    type: str
    prefix: str
    page_token: str
    def __init__(self, bank_id: _Optional[str] = ..., limit: _Optional[int] = ..., type: _Optional[str] = ..., prefix: _Optional[str] = ..., page_token: _Optional[str] = ...) -> None: ...

class Relation(_message.Message):
    __slots__ = ("type", "target")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    type: str
    target: str
    def __init__(self, type: _Optional[str] = ..., target: _Optional[str] = ...) -> None: ...

class Entity(_message.Message):
    __slots__ = ("name", "type", "aliases", "relations", "mention_count", "spoken_count", "first_seen", "last_seen", "related")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    RELATIONS_FIELD_NUMBER: _ClassVar[int]
    MENTION_COUNT_FIELD_NUMBER: _ClassVar[int]
    SPOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEEN_FIELD_NUMBER: _ClassVar[int]
    LAST_SEEN_FIELD_NUMBER: _ClassVar[int]
    RELATED_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: str
    aliases: _containers.RepeatedScalarFieldContainer[str]
    relations: _containers.RepeatedCompositeFieldContainer[Relation]
    mention_count: int
    spoken_count: int
    first_seen: _timestamp_pb2.Timestamp
    last_seen: _timestamp_pb2.Timestamp
    related: _containers.RepeatedCompositeFieldContainer[RelatedEntity]
    def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., aliases: _Optional[_Iterable[str]] = ..., relations: _Optional[_Iterable[_Union[Relation, _Mapping]]] = ..., mention_count: _Optional[int] = ..., spoken_count: _Optional[int] = ..., first_seen: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_seen: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., related: _Optional[_Iterable[_Union[RelatedEntity, _Mapping]]] = ...) -> None: ...

class RelatedEntity(_message.Message):
    __slots__ = ("name", "count")
    NAME_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    name: str
    count: int
    def __init__(self, name: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class ListEntitiesResponse(_message.Message):
    __slots__ = ("entities", "next_page_token")
    ENTITIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    entities: _containers.RepeatedCompositeFieldContainer[Entity]
    next_page_token: str
    def __init__(self, entities: _Optional[_Iterable[_Union[Entity, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetEntityPageRequest(_message.Message):
    __slots__ = ("bank_id", "entity", "mention_limit", "page_token")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    ENTITY_FIELD_NUMBER: _ClassVar[int]
    MENTION_LIMIT_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    entity: str
    mention_limit: int
    page_token: str
    def __init__(self, bank_id: _Optional[str] = ..., entity: _Optional[str] = ..., mention_limit: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class GetEntityPageResponse(_message.Message):
    __slots__ = ("entity", "facts", "mentions", "next_page_token")
    ENTITY_FIELD_NUMBER: _ClassVar[int]
    FACTS_FIELD_NUMBER: _ClassVar[int]
    MENTIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    entity: Entity
    facts: _containers.RepeatedCompositeFieldContainer[SemanticRecord]
    mentions: _containers.RepeatedCompositeFieldContainer[SemanticRecord]
    next_page_token: str
    def __init__(self, entity: _Optional[_Union[Entity, _Mapping]] = ..., facts: _Optional[_Iterable[_Union[SemanticRecord, _Mapping]]] = ..., mentions: _Optional[_Iterable[_Union[SemanticRecord, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class MatchEntitiesRequest(_message.Message):
    __slots__ = ("bank_id", "query", "rewrites", "max_share", "named_limit")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    REWRITES_FIELD_NUMBER: _ClassVar[int]
    MAX_SHARE_FIELD_NUMBER: _ClassVar[int]
    NAMED_LIMIT_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    query: str
    rewrites: _containers.RepeatedScalarFieldContainer[str]
    max_share: float
    named_limit: int
    def __init__(self, bank_id: _Optional[str] = ..., query: _Optional[str] = ..., rewrites: _Optional[_Iterable[str]] = ..., max_share: _Optional[float] = ..., named_limit: _Optional[int] = ...) -> None: ...

class EntityMatch(_message.Message):
    __slots__ = ("entity", "share", "named_turn_ids")
    ENTITY_FIELD_NUMBER: _ClassVar[int]
    SHARE_FIELD_NUMBER: _ClassVar[int]
    NAMED_TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    entity: Entity
    share: float
    named_turn_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, entity: _Optional[_Union[Entity, _Mapping]] = ..., share: _Optional[float] = ..., named_turn_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class MatchEntitiesResponse(_message.Message):
    __slots__ = ("matches",)
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    matches: _containers.RepeatedCompositeFieldContainer[EntityMatch]
    def __init__(self, matches: _Optional[_Iterable[_Union[EntityMatch, _Mapping]]] = ...) -> None: ...

class ExportRecordsRequest(_message.Message):
    __slots__ = ("bank_id", "page_size", "page_token")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    page_size: int
    page_token: str
    def __init__(self, bank_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ExportRecordsResponse(_message.Message):
    __slots__ = ("records", "next_page_token", "entities", "reviews")
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ENTITIES_FIELD_NUMBER: _ClassVar[int]
    REVIEWS_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[SemanticRecord]
    next_page_token: str
    entities: _containers.RepeatedCompositeFieldContainer[Entity]
    reviews: _containers.RepeatedCompositeFieldContainer[ReviewItem]
    def __init__(self, records: _Optional[_Iterable[_Union[SemanticRecord, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., entities: _Optional[_Iterable[_Union[Entity, _Mapping]]] = ..., reviews: _Optional[_Iterable[_Union[ReviewItem, _Mapping]]] = ...) -> None: ...

class ImportRecordsRequest(_message.Message):
    __slots__ = ("bank_id", "records", "reviews", "replace")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    REVIEWS_FIELD_NUMBER: _ClassVar[int]
    REPLACE_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    records: _containers.RepeatedCompositeFieldContainer[SemanticRecord]
    reviews: _containers.RepeatedCompositeFieldContainer[ReviewItem]
    replace: bool
    def __init__(self, bank_id: _Optional[str] = ..., records: _Optional[_Iterable[_Union[SemanticRecord, _Mapping]]] = ..., reviews: _Optional[_Iterable[_Union[ReviewItem, _Mapping]]] = ..., replace: _Optional[bool] = ...) -> None: ...

class ImportRecordsResponse(_message.Message):
    __slots__ = ("imported_count", "review_count", "removed_count")
    IMPORTED_COUNT_FIELD_NUMBER: _ClassVar[int]
    REVIEW_COUNT_FIELD_NUMBER: _ClassVar[int]
    REMOVED_COUNT_FIELD_NUMBER: _ClassVar[int]
    imported_count: int
    review_count: int
    removed_count: int
    def __init__(self, imported_count: _Optional[int] = ..., review_count: _Optional[int] = ..., removed_count: _Optional[int] = ...) -> None: ...

class InvalidateRequest(_message.Message):
    __slots__ = ("bank_id", "ids", "valid_to")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    VALID_TO_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    ids: _containers.RepeatedScalarFieldContainer[str]
    valid_to: _timestamp_pb2.Timestamp
    def __init__(self, bank_id: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ..., valid_to: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class InvalidateResponse(_message.Message):
    __slots__ = ("invalidated_ids", "unchanged_ids", "unknown_ids", "derived_ids")
    INVALIDATED_IDS_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_IDS_FIELD_NUMBER: _ClassVar[int]
    UNKNOWN_IDS_FIELD_NUMBER: _ClassVar[int]
    DERIVED_IDS_FIELD_NUMBER: _ClassVar[int]
    invalidated_ids: _containers.RepeatedScalarFieldContainer[str]
    unchanged_ids: _containers.RepeatedScalarFieldContainer[str]
    unknown_ids: _containers.RepeatedScalarFieldContainer[str]
    derived_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, invalidated_ids: _Optional[_Iterable[str]] = ..., unchanged_ids: _Optional[_Iterable[str]] = ..., unknown_ids: _Optional[_Iterable[str]] = ..., derived_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class GetRecordsRequest(_message.Message):
    __slots__ = ("bank_id", "ids")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, bank_id: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ...) -> None: ...

class GetRecordsResponse(_message.Message):
    __slots__ = ("records",)
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[SemanticRecord]
    def __init__(self, records: _Optional[_Iterable[_Union[SemanticRecord, _Mapping]]] = ...) -> None: ...
