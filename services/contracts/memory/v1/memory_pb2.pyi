import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from hindsight.contracts.common.v1 import common_pb2 as _common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2 as _episodic_pb2
from hindsight.contracts.reflect.v1 import reflect_pb2 as _reflect_pb2
from hindsight.contracts.semantic.v1 import semantic_pb2 as _semantic_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ContextOrder(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONTEXT_ORDER_UNSPECIFIED: _ClassVar[ContextOrder]
    CONTEXT_ORDER_SCORE: _ClassVar[ContextOrder]
    CONTEXT_ORDER_IMPORTANCE: _ClassVar[ContextOrder]
    CONTEXT_ORDER_TIME_ASC: _ClassVar[ContextOrder]
    CONTEXT_ORDER_TIME_DESC: _ClassVar[ContextOrder]
    CONTEXT_ORDER_MIX: _ClassVar[ContextOrder]

class Layer(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LAYER_UNSPECIFIED: _ClassVar[Layer]
    LAYER_WORKING: _ClassVar[Layer]
    LAYER_EPISODIC: _ClassVar[Layer]
    LAYER_SEMANTIC: _ClassVar[Layer]
    LAYER_REFLECT: _ClassVar[Layer]
CONTEXT_ORDER_UNSPECIFIED: ContextOrder
CONTEXT_ORDER_SCORE: ContextOrder
CONTEXT_ORDER_IMPORTANCE: ContextOrder
CONTEXT_ORDER_TIME_ASC: ContextOrder
CONTEXT_ORDER_TIME_DESC: ContextOrder
CONTEXT_ORDER_MIX: ContextOrder
LAYER_UNSPECIFIED: Layer
LAYER_WORKING: Layer
LAYER_EPISODIC: Layer
LAYER_SEMANTIC: Layer
LAYER_REFLECT: Layer

class RetainRequest(_message.Message):
    __slots__ = ("bank_id", "turns")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    turns: _containers.RepeatedCompositeFieldContainer[_common_pb2.Turn]
    def __init__(self, bank_id: _Optional[str] = ..., turns: _Optional[_Iterable[_Union[_common_pb2.Turn, _Mapping]]] = ...) -> None: ...

class RetainResponse(_message.Message):
    __slots__ = ("turn_ids", "duplicate_count", "indexed", "screened")
    TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_COUNT_FIELD_NUMBER: _ClassVar[int]
    INDEXED_FIELD_NUMBER: _ClassVar[int]
    SCREENED_FIELD_NUMBER: _ClassVar[int]
    turn_ids: _containers.RepeatedScalarFieldContainer[str]
    duplicate_count: int
    indexed: bool
    screened: _containers.RepeatedCompositeFieldContainer[_common_pb2.TurnScreening]
    def __init__(self, turn_ids: _Optional[_Iterable[str]] = ..., duplicate_count: _Optional[int] = ..., indexed: _Optional[bool] = ..., screened: _Optional[_Iterable[_Union[_common_pb2.TurnScreening, _Mapping]]] = ...) -> None: ...

class RecallRequest(_message.Message):
    __slots__ = ("bank_id", "query", "top_k", "layers", "time_range", "session_id", "min_score", "tags", "token_budget", "order", "reference_time", "time_zone", "as_of", "bank_ids", "bank_weights", "group_by_bank", "agent")
    class BankWeightsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    LAYERS_FIELD_NUMBER: _ClassVar[int]
    TIME_RANGE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    MIN_SCORE_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    TOKEN_BUDGET_FIELD_NUMBER: _ClassVar[int]
    ORDER_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_TIME_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    BANK_IDS_FIELD_NUMBER: _ClassVar[int]
    BANK_WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_BANK_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    query: str
    top_k: int
    layers: _containers.RepeatedScalarFieldContainer[Layer]
    time_range: _common_pb2.TimeRange
    session_id: str
    min_score: float
    tags: _containers.RepeatedScalarFieldContainer[str]
    token_budget: int
    order: ContextOrder
    reference_time: _timestamp_pb2.Timestamp
    time_zone: str
    as_of: _timestamp_pb2.Timestamp
    bank_ids: _containers.RepeatedScalarFieldContainer[str]
    bank_weights: _containers.ScalarMap[str, float]
    group_by_bank: bool
    agent: str
    def __init__(self, bank_id: _Optional[str] = ..., query: _Optional[str] = ..., top_k: _Optional[int] = ..., layers: _Optional[_Iterable[_Union[Layer, str]]] = ..., time_range: _Optional[_Union[_common_pb2.TimeRange, _Mapping]] = ..., session_id: _Optional[str] = ..., min_score: _Optional[float] = ..., tags: _Optional[_Iterable[str]] = ..., token_budget: _Optional[int] = ..., order: _Optional[_Union[ContextOrder, str]] = ..., reference_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., time_zone: _Optional[str] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., bank_ids: _Optional[_Iterable[str]] = ..., bank_weights: _Optional[_Mapping[str, float]] = ..., group_by_bank: _Optional[bool] = ..., agent: _Optional[str] = ...) -> None: ...

class Memory(_message.Message):
    __slots__ = ("id", "layer", "text", "speaker", "score", "meta", "layers", "kind", "supersedes", "superseded_by", "flags", "valid_from", "valid_to", "outdated", "outdated_note", "bank_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    LAYER_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SPEAKER_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    LAYERS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDES_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_BY_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    VALID_FROM_FIELD_NUMBER: _ClassVar[int]
    VALID_TO_FIELD_NUMBER: _ClassVar[int]
    OUTDATED_FIELD_NUMBER: _ClassVar[int]
    OUTDATED_NOTE_FIELD_NUMBER: _ClassVar[int]
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    layer: Layer
    text: str
    speaker: str
    score: float
    meta: _common_pb2.RecordMeta
    layers: _containers.RepeatedScalarFieldContainer[Layer]
    kind: str
    supersedes: _containers.RepeatedScalarFieldContainer[str]
    superseded_by: str
    flags: _containers.RepeatedCompositeFieldContainer[SecurityFlag]
    valid_from: _timestamp_pb2.Timestamp
    valid_to: _timestamp_pb2.Timestamp
    outdated: bool
    outdated_note: str
    bank_id: str
    def __init__(self, id: _Optional[str] = ..., layer: _Optional[_Union[Layer, str]] = ..., text: _Optional[str] = ..., speaker: _Optional[str] = ..., score: _Optional[float] = ..., meta: _Optional[_Union[_common_pb2.RecordMeta, _Mapping]] = ..., layers: _Optional[_Iterable[_Union[Layer, str]]] = ..., kind: _Optional[str] = ..., supersedes: _Optional[_Iterable[str]] = ..., superseded_by: _Optional[str] = ..., flags: _Optional[_Iterable[_Union[SecurityFlag, _Mapping]]] = ..., valid_from: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., valid_to: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., outdated: _Optional[bool] = ..., outdated_note: _Optional[str] = ..., bank_id: _Optional[str] = ...) -> None: ...

class SecurityFlag(_message.Message):
    __slots__ = ("kind", "reason")
    KIND_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    kind: str
    reason: str
    def __init__(self, kind: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class SecurityWarning(_message.Message):
    __slots__ = ("id", "kind", "reason", "excerpt", "time")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    EXCERPT_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: str
    reason: str
    excerpt: str
    time: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[str] = ..., reason: _Optional[str] = ..., excerpt: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class LayerReport(_message.Message):
    __slots__ = ("layer", "ok", "error", "elapsed_ms", "candidate_count")
    LAYER_FIELD_NUMBER: _ClassVar[int]
    OK_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_MS_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_COUNT_FIELD_NUMBER: _ClassVar[int]
    layer: Layer
    ok: bool
    error: str
    elapsed_ms: float
    candidate_count: int
    def __init__(self, layer: _Optional[_Union[Layer, str]] = ..., ok: _Optional[bool] = ..., error: _Optional[str] = ..., elapsed_ms: _Optional[float] = ..., candidate_count: _Optional[int] = ...) -> None: ...

class RecallResponse(_message.Message):
    __slots__ = ("memories", "partial", "layer_reports", "context", "context_ids", "context_tokens", "analysis", "elapsed_ms", "warnings")
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_FIELD_NUMBER: _ClassVar[int]
    LAYER_REPORTS_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_IDS_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    ANALYSIS_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_MS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    memories: _containers.RepeatedCompositeFieldContainer[Memory]
    partial: bool
    layer_reports: _containers.RepeatedCompositeFieldContainer[LayerReport]
    context: str
    context_ids: _containers.RepeatedScalarFieldContainer[str]
    context_tokens: int
    analysis: QueryAnalysis
    elapsed_ms: float
    warnings: _containers.RepeatedCompositeFieldContainer[SecurityWarning]
    def __init__(self, memories: _Optional[_Iterable[_Union[Memory, _Mapping]]] = ..., partial: _Optional[bool] = ..., layer_reports: _Optional[_Iterable[_Union[LayerReport, _Mapping]]] = ..., context: _Optional[str] = ..., context_ids: _Optional[_Iterable[str]] = ..., context_tokens: _Optional[int] = ..., analysis: _Optional[_Union[QueryAnalysis, _Mapping]] = ..., elapsed_ms: _Optional[float] = ..., warnings: _Optional[_Iterable[_Union[SecurityWarning, _Mapping]]] = ...) -> None: ...

class QueryAnalysis(_message.Message):
    __slots__ = ("time_expression", "time_range", "time_use", "entities", "keywords", "rewrites")
    TIME_EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    TIME_RANGE_FIELD_NUMBER: _ClassVar[int]
    TIME_USE_FIELD_NUMBER: _ClassVar[int]
    ENTITIES_FIELD_NUMBER: _ClassVar[int]
    KEYWORDS_FIELD_NUMBER: _ClassVar[int]
    REWRITES_FIELD_NUMBER: _ClassVar[int]
    time_expression: str
    time_range: _common_pb2.TimeRange
    time_use: str
    entities: _containers.RepeatedScalarFieldContainer[str]
    keywords: _containers.RepeatedScalarFieldContainer[str]
    rewrites: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, time_expression: _Optional[str] = ..., time_range: _Optional[_Union[_common_pb2.TimeRange, _Mapping]] = ..., time_use: _Optional[str] = ..., entities: _Optional[_Iterable[str]] = ..., keywords: _Optional[_Iterable[str]] = ..., rewrites: _Optional[_Iterable[str]] = ...) -> None: ...

class WriteEpisodeRequest(_message.Message):
    __slots__ = ("bank_id", "episode")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    EPISODE_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    episode: _episodic_pb2.Episode
    def __init__(self, bank_id: _Optional[str] = ..., episode: _Optional[_Union[_episodic_pb2.Episode, _Mapping]] = ...) -> None: ...

class WriteEpisodeResponse(_message.Message):
    __slots__ = ("episode",)
    EPISODE_FIELD_NUMBER: _ClassVar[int]
    episode: _episodic_pb2.Episode
    def __init__(self, episode: _Optional[_Union[_episodic_pb2.Episode, _Mapping]] = ...) -> None: ...

class ReflectRequest(_message.Message):
    __slots__ = ("bank_id", "session_id")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    session_id: str
    def __init__(self, bank_id: _Optional[str] = ..., session_id: _Optional[str] = ...) -> None: ...

class ReflectResponse(_message.Message):
    __slots__ = ("lessons", "episodes_read")
    LESSONS_FIELD_NUMBER: _ClassVar[int]
    EPISODES_READ_FIELD_NUMBER: _ClassVar[int]
    lessons: _containers.RepeatedCompositeFieldContainer[_reflect_pb2.Lesson]
    episodes_read: int
    def __init__(self, lessons: _Optional[_Iterable[_Union[_reflect_pb2.Lesson, _Mapping]]] = ..., episodes_read: _Optional[int] = ...) -> None: ...

class ForgetRequest(_message.Message):
    __slots__ = ("bank_id", "turn_ids", "hard", "filter")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    HARD_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    turn_ids: _containers.RepeatedScalarFieldContainer[str]
    hard: bool
    filter: _episodic_pb2.TurnFilter
    def __init__(self, bank_id: _Optional[str] = ..., turn_ids: _Optional[_Iterable[str]] = ..., hard: _Optional[bool] = ..., filter: _Optional[_Union[_episodic_pb2.TurnFilter, _Mapping]] = ...) -> None: ...

class ForgetResponse(_message.Message):
    __slots__ = ("forgotten_count", "unindexed_count", "working_removed_count")
    FORGOTTEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    UNINDEXED_COUNT_FIELD_NUMBER: _ClassVar[int]
    WORKING_REMOVED_COUNT_FIELD_NUMBER: _ClassVar[int]
    forgotten_count: int
    unindexed_count: int
    working_removed_count: int
    def __init__(self, forgotten_count: _Optional[int] = ..., unindexed_count: _Optional[int] = ..., working_removed_count: _Optional[int] = ...) -> None: ...

class InvalidateRequest(_message.Message):
    __slots__ = ("bank_id", "ids", "reason", "valid_to")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    VALID_TO_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    ids: _containers.RepeatedScalarFieldContainer[str]
    reason: str
    valid_to: _timestamp_pb2.Timestamp
    def __init__(self, bank_id: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ..., reason: _Optional[str] = ..., valid_to: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

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

class CompressRequest(_message.Message):
    __slots__ = ("bank_id", "session_id")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    session_id: str
    def __init__(self, bank_id: _Optional[str] = ..., session_id: _Optional[str] = ...) -> None: ...

class CompressResponse(_message.Message):
    __slots__ = ("group_count", "summarised_turn_count", "tokens_before", "tokens_after", "summariser")
    GROUP_COUNT_FIELD_NUMBER: _ClassVar[int]
    SUMMARISED_TURN_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOKENS_BEFORE_FIELD_NUMBER: _ClassVar[int]
    TOKENS_AFTER_FIELD_NUMBER: _ClassVar[int]
    SUMMARISER_FIELD_NUMBER: _ClassVar[int]
    group_count: int
    summarised_turn_count: int
    tokens_before: int
    tokens_after: int
    summariser: str
    def __init__(self, group_count: _Optional[int] = ..., summarised_turn_count: _Optional[int] = ..., tokens_before: _Optional[int] = ..., tokens_after: _Optional[int] = ..., summariser: _Optional[str] = ...) -> None: ...

class CloseSessionRequest(_message.Message):
    __slots__ = ("bank_id", "session_id")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    session_id: str
    def __init__(self, bank_id: _Optional[str] = ..., session_id: _Optional[str] = ...) -> None: ...

class CloseSessionResponse(_message.Message):
    __slots__ = ("closed", "turn_count", "summary_count", "token_count", "reflected", "reflect_error", "lessons", "episodes_read")
    CLOSED_FIELD_NUMBER: _ClassVar[int]
    TURN_COUNT_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    REFLECTED_FIELD_NUMBER: _ClassVar[int]
    REFLECT_ERROR_FIELD_NUMBER: _ClassVar[int]
    LESSONS_FIELD_NUMBER: _ClassVar[int]
    EPISODES_READ_FIELD_NUMBER: _ClassVar[int]
    closed: bool
    turn_count: int
    summary_count: int
    token_count: int
    reflected: bool
    reflect_error: str
    lessons: _containers.RepeatedCompositeFieldContainer[_reflect_pb2.Lesson]
    episodes_read: int
    def __init__(self, closed: _Optional[bool] = ..., turn_count: _Optional[int] = ..., summary_count: _Optional[int] = ..., token_count: _Optional[int] = ..., reflected: _Optional[bool] = ..., reflect_error: _Optional[str] = ..., lessons: _Optional[_Iterable[_Union[_reflect_pb2.Lesson, _Mapping]]] = ..., episodes_read: _Optional[int] = ...) -> None: ...

class ListRecentRequest(_message.Message):
    __slots__ = ("bank_id", "limit", "session_id", "tags", "include_archived", "page_token", "agent")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    limit: int
    session_id: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    include_archived: bool
    page_token: str
    agent: str
    def __init__(self, bank_id: _Optional[str] = ..., limit: _Optional[int] = ..., session_id: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., include_archived: _Optional[bool] = ..., page_token: _Optional[str] = ..., agent: _Optional[str] = ...) -> None: ...

class ListRecentResponse(_message.Message):
    __slots__ = ("turns", "next_page_token")
    TURNS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    turns: _containers.RepeatedCompositeFieldContainer[_common_pb2.Turn]
    next_page_token: str
    def __init__(self, turns: _Optional[_Iterable[_Union[_common_pb2.Turn, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class UpdateRequest(_message.Message):
    __slots__ = ("bank_id", "turn_id", "text", "meta")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    turn_id: str
    text: str
    meta: _common_pb2.RecordMeta
    def __init__(self, bank_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., text: _Optional[str] = ..., meta: _Optional[_Union[_common_pb2.RecordMeta, _Mapping]] = ...) -> None: ...

class UpdateResponse(_message.Message):
    __slots__ = ("turn", "superseded_id", "indexed")
    TURN_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_ID_FIELD_NUMBER: _ClassVar[int]
    INDEXED_FIELD_NUMBER: _ClassVar[int]
    turn: _common_pb2.Turn
    superseded_id: str
    indexed: bool
    def __init__(self, turn: _Optional[_Union[_common_pb2.Turn, _Mapping]] = ..., superseded_id: _Optional[str] = ..., indexed: _Optional[bool] = ...) -> None: ...

class PurgeRequest(_message.Message):
    __slots__ = ("bank_id", "ids", "session_id", "whole_bank")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    WHOLE_BANK_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    ids: _containers.RepeatedScalarFieldContainer[str]
    session_id: str
    whole_bank: bool
    def __init__(self, bank_id: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ..., session_id: _Optional[str] = ..., whole_bank: _Optional[bool] = ...) -> None: ...

class PurgeResponse(_message.Message):
    __slots__ = ("turn_count", "episode_count", "unindexed_count", "working_removed_count", "lesson_count", "shared_copy_count")
    TURN_COUNT_FIELD_NUMBER: _ClassVar[int]
    EPISODE_COUNT_FIELD_NUMBER: _ClassVar[int]
    UNINDEXED_COUNT_FIELD_NUMBER: _ClassVar[int]
    WORKING_REMOVED_COUNT_FIELD_NUMBER: _ClassVar[int]
    LESSON_COUNT_FIELD_NUMBER: _ClassVar[int]
    SHARED_COPY_COUNT_FIELD_NUMBER: _ClassVar[int]
    turn_count: int
    episode_count: int
    unindexed_count: int
    working_removed_count: int
    lesson_count: int
    shared_copy_count: int
    def __init__(self, turn_count: _Optional[int] = ..., episode_count: _Optional[int] = ..., unindexed_count: _Optional[int] = ..., working_removed_count: _Optional[int] = ..., lesson_count: _Optional[int] = ..., shared_copy_count: _Optional[int] = ...) -> None: ...

class DebugListRequest(_message.Message):
    __slots__ = ("bank_id", "limit", "page_token")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    limit: int
    page_token: str
    def __init__(self, bank_id: _Optional[str] = ..., limit: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class DebugListResponse(_message.Message):
    __slots__ = ("turns", "episodes", "next_page_token")
    TURNS_FIELD_NUMBER: _ClassVar[int]
    EPISODES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    turns: _containers.RepeatedCompositeFieldContainer[_common_pb2.Turn]
    episodes: _containers.RepeatedCompositeFieldContainer[_episodic_pb2.Episode]
    next_page_token: str
    def __init__(self, turns: _Optional[_Iterable[_Union[_common_pb2.Turn, _Mapping]]] = ..., episodes: _Optional[_Iterable[_Union[_episodic_pb2.Episode, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListEntitiesRequest(_message.Message):
    __slots__ = ("bank_id", "type", "prefix", "limit", "page_token")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    type: str
    prefix: str
    limit: int
    page_token: str
    def __init__(self, bank_id: _Optional[str] = ..., type: _Optional[str] = ..., prefix: _Optional[str] = ..., limit: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListEntitiesResponse(_message.Message):
    __slots__ = ("entities", "next_page_token")
    ENTITIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    entities: _containers.RepeatedCompositeFieldContainer[_semantic_pb2.Entity]
    next_page_token: str
    def __init__(self, entities: _Optional[_Iterable[_Union[_semantic_pb2.Entity, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

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
    entity: _semantic_pb2.Entity
    facts: _containers.RepeatedCompositeFieldContainer[_semantic_pb2.SemanticRecord]
    mentions: _containers.RepeatedCompositeFieldContainer[_semantic_pb2.SemanticRecord]
    next_page_token: str
    def __init__(self, entity: _Optional[_Union[_semantic_pb2.Entity, _Mapping]] = ..., facts: _Optional[_Iterable[_Union[_semantic_pb2.SemanticRecord, _Mapping]]] = ..., mentions: _Optional[_Iterable[_Union[_semantic_pb2.SemanticRecord, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListQuarantineRequest(_message.Message):
    __slots__ = ("bank_id", "status", "limit", "page_token")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    status: str
    limit: int
    page_token: str
    def __init__(self, bank_id: _Optional[str] = ..., status: _Optional[str] = ..., limit: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListQuarantineResponse(_message.Message):
    __slots__ = ("items", "next_page_token", "pending_count")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PENDING_COUNT_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[_common_pb2.QuarantinedTurn]
    next_page_token: str
    pending_count: int
    def __init__(self, items: _Optional[_Iterable[_Union[_common_pb2.QuarantinedTurn, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., pending_count: _Optional[int] = ...) -> None: ...

class ReviewQuarantineRequest(_message.Message):
    __slots__ = ("bank_id", "turn_ids", "decision", "note")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    turn_ids: _containers.RepeatedScalarFieldContainer[str]
    decision: _common_pb2.ReviewDecision
    note: str
    def __init__(self, bank_id: _Optional[str] = ..., turn_ids: _Optional[_Iterable[str]] = ..., decision: _Optional[_Union[_common_pb2.ReviewDecision, str]] = ..., note: _Optional[str] = ...) -> None: ...

class ReviewQuarantineResponse(_message.Message):
    __slots__ = ("approved_count", "rejected_count", "not_pending_ids")
    APPROVED_COUNT_FIELD_NUMBER: _ClassVar[int]
    REJECTED_COUNT_FIELD_NUMBER: _ClassVar[int]
    NOT_PENDING_IDS_FIELD_NUMBER: _ClassVar[int]
    approved_count: int
    rejected_count: int
    not_pending_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, approved_count: _Optional[int] = ..., rejected_count: _Optional[int] = ..., not_pending_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ListAuditRequest(_message.Message):
    __slots__ = ("bank_id", "action", "since", "limit", "page_token")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    action: str
    since: _timestamp_pb2.Timestamp
    limit: int
    page_token: str
    def __init__(self, bank_id: _Optional[str] = ..., action: _Optional[str] = ..., since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., limit: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListAuditResponse(_message.Message):
    __slots__ = ("entries", "next_page_token")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[_common_pb2.AuditEntry]
    next_page_token: str
    def __init__(self, entries: _Optional[_Iterable[_Union[_common_pb2.AuditEntry, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class CreateTokenRequest(_message.Message):
    __slots__ = ("name", "grants", "admin", "expires_at")
    NAME_FIELD_NUMBER: _ClassVar[int]
    GRANTS_FIELD_NUMBER: _ClassVar[int]
    ADMIN_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    name: str
    grants: _containers.RepeatedCompositeFieldContainer[_episodic_pb2.TokenGrant]
    admin: bool
    expires_at: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., grants: _Optional[_Iterable[_Union[_episodic_pb2.TokenGrant, _Mapping]]] = ..., admin: _Optional[bool] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateTokenResponse(_message.Message):
    __slots__ = ("token", "secret")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    token: _episodic_pb2.ManagedToken
    secret: str
    def __init__(self, token: _Optional[_Union[_episodic_pb2.ManagedToken, _Mapping]] = ..., secret: _Optional[str] = ...) -> None: ...

class ListTokensRequest(_message.Message):
    __slots__ = ("include_revoked", "page_size", "page_token")
    INCLUDE_REVOKED_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    include_revoked: bool
    page_size: int
    page_token: str
    def __init__(self, include_revoked: _Optional[bool] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListTokensResponse(_message.Message):
    __slots__ = ("tokens", "next_page_token")
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    tokens: _containers.RepeatedCompositeFieldContainer[_episodic_pb2.ManagedToken]
    next_page_token: str
    def __init__(self, tokens: _Optional[_Iterable[_Union[_episodic_pb2.ManagedToken, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class RevokeTokenRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class RevokeTokenResponse(_message.Message):
    __slots__ = ("revoked_names",)
    REVOKED_NAMES_FIELD_NUMBER: _ClassVar[int]
    revoked_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, revoked_names: _Optional[_Iterable[str]] = ...) -> None: ...

class ShareRequest(_message.Message):
    __slots__ = ("bank_id", "target_bank_id", "ids")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_BANK_ID_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    target_bank_id: str
    ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, bank_id: _Optional[str] = ..., target_bank_id: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ...) -> None: ...

class SharedMemory(_message.Message):
    __slots__ = ("source_id", "id", "layer", "kind")
    SOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LAYER_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    source_id: str
    id: str
    layer: str
    kind: str
    def __init__(self, source_id: _Optional[str] = ..., id: _Optional[str] = ..., layer: _Optional[str] = ..., kind: _Optional[str] = ...) -> None: ...

class ShareResponse(_message.Message):
    __slots__ = ("target_bank_id", "shared", "indexed")
    TARGET_BANK_ID_FIELD_NUMBER: _ClassVar[int]
    SHARED_FIELD_NUMBER: _ClassVar[int]
    INDEXED_FIELD_NUMBER: _ClassVar[int]
    target_bank_id: str
    shared: _containers.RepeatedCompositeFieldContainer[SharedMemory]
    indexed: bool
    def __init__(self, target_bank_id: _Optional[str] = ..., shared: _Optional[_Iterable[_Union[SharedMemory, _Mapping]]] = ..., indexed: _Optional[bool] = ...) -> None: ...
