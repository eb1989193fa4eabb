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

class Outcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTCOME_UNSPECIFIED: _ClassVar[Outcome]
    OUTCOME_SUCCESS: _ClassVar[Outcome]
    OUTCOME_FAILURE: _ClassVar[Outcome]

class Operation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OPERATION_UNSPECIFIED: _ClassVar[Operation]
    OPERATION_READ: _ClassVar[Operation]
    OPERATION_WRITE: _ClassVar[Operation]
    OPERATION_FORGET: _ClassVar[Operation]
    OPERATION_ADMIN: _ClassVar[Operation]
OUTCOME_UNSPECIFIED: Outcome
OUTCOME_SUCCESS: Outcome
OUTCOME_FAILURE: Outcome
OPERATION_UNSPECIFIED: Operation
OPERATION_READ: Operation
OPERATION_WRITE: Operation
OPERATION_FORGET: Operation
OPERATION_ADMIN: Operation

class Episode(_message.Message):
    __slots__ = ("id", "session_id", "situation", "action", "outcome", "lesson", "task_type", "tools", "result", "meta", "recorded_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SITUATION_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    LESSON_FIELD_NUMBER: _ClassVar[int]
    TASK_TYPE_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    RECORDED_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    session_id: str
    situation: str
    action: str
    outcome: str
    lesson: str
    task_type: str
    tools: _containers.RepeatedScalarFieldContainer[str]
    result: Outcome
    meta: _common_pb2.RecordMeta
    recorded_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., session_id: _Optional[str] = ..., situation: _Optional[str] = ..., action: _Optional[str] = ..., outcome: _Optional[str] = ..., lesson: _Optional[str] = ..., task_type: _Optional[str] = ..., tools: _Optional[_Iterable[str]] = ..., result: _Optional[_Union[Outcome, str]] = ..., meta: _Optional[_Union[_common_pb2.RecordMeta, _Mapping]] = ..., recorded_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class RecordTurnsRequest(_message.Message):
    __slots__ = ("bank_id", "turns", "index_now", "quarantine", "actor")
    class QuarantineEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _common_pb2.Screening
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_common_pb2.Screening, _Mapping]] = ...) -> None: ...
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    INDEX_NOW_FIELD_NUMBER: _ClassVar[int]
    QUARANTINE_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    turns: _containers.RepeatedCompositeFieldContainer[_common_pb2.Turn]
    index_now: bool
    quarantine: _containers.MessageMap[str, _common_pb2.Screening]
    actor: str
    def __init__(self, bank_id: _Optional[str] = ..., turns: _Optional[_Iterable[_Union[_common_pb2.Turn, _Mapping]]] = ..., index_now: _Optional[bool] = ..., quarantine: _Optional[_Mapping[str, _common_pb2.Screening]] = ..., actor: _Optional[str] = ...) -> None: ...

class RecordTurnsResponse(_message.Message):
    __slots__ = ("recorded_count", "duplicate_count", "indexed")
    RECORDED_COUNT_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_COUNT_FIELD_NUMBER: _ClassVar[int]
    INDEXED_FIELD_NUMBER: _ClassVar[int]
    recorded_count: int
    duplicate_count: int
    indexed: bool
    def __init__(self, recorded_count: _Optional[int] = ..., duplicate_count: _Optional[int] = ..., indexed: _Optional[bool] = ...) -> None: ...

class SearchTurnsRequest(_message.Message):
    __slots__ = ("bank_id", "query", "time_range", "limit", "filter", "rewrites", "rewrite_weight", "quarantined_only", "bank_ids")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    TIME_RANGE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    REWRITES_FIELD_NUMBER: _ClassVar[int]
    REWRITE_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    QUARANTINED_ONLY_FIELD_NUMBER: _ClassVar[int]
    BANK_IDS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    query: str
    time_range: _common_pb2.TimeRange
    limit: int
    filter: TurnFilter
    rewrites: _containers.RepeatedScalarFieldContainer[str]
    rewrite_weight: float
    quarantined_only: bool
    bank_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, bank_id: _Optional[str] = ..., query: _Optional[str] = ..., time_range: _Optional[_Union[_common_pb2.TimeRange, _Mapping]] = ..., limit: _Optional[int] = ..., filter: _Optional[_Union[TurnFilter, _Mapping]] = ..., rewrites: _Optional[_Iterable[str]] = ..., rewrite_weight: _Optional[float] = ..., quarantined_only: _Optional[bool] = ..., bank_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class TurnFilter(_message.Message):
    __slots__ = ("session_id", "tags", "sources", "min_trust", "time_range", "include_archived", "agent")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    MIN_TRUST_FIELD_NUMBER: _ClassVar[int]
    TIME_RANGE_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    sources: _containers.RepeatedScalarFieldContainer[_common_pb2.Source]
    min_trust: _common_pb2.Trust
    time_range: _common_pb2.TimeRange
    include_archived: bool
    agent: str
    def __init__(self, session_id: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., sources: _Optional[_Iterable[_Union[_common_pb2.Source, str]]] = ..., min_trust: _Optional[_Union[_common_pb2.Trust, str]] = ..., time_range: _Optional[_Union[_common_pb2.TimeRange, _Mapping]] = ..., include_archived: _Optional[bool] = ..., agent: _Optional[str] = ...) -> None: ...

class SearchTurnsResponse(_message.Message):
    __slots__ = ("hits",)
    HITS_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[_common_pb2.ScoredTurn]
    def __init__(self, hits: _Optional[_Iterable[_Union[_common_pb2.ScoredTurn, _Mapping]]] = ...) -> None: ...

class ListTurnsRequest(_message.Message):
    __slots__ = ("bank_id", "page_size", "page_token", "filter", "newest_first")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    NEWEST_FIRST_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    page_size: int
    page_token: str
    filter: TurnFilter
    newest_first: bool
    def __init__(self, bank_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., filter: _Optional[_Union[TurnFilter, _Mapping]] = ..., newest_first: _Optional[bool] = ...) -> None: ...

class ListTurnsResponse(_message.Message):
    __slots__ = ("turns", "next_page_token")
    TURNS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    turns: _containers.RepeatedCompositeFieldContainer[_common_pb2.Turn]
    next_page_token: str
    def __init__(self, turns: _Optional[_Iterable[_Union[_common_pb2.Turn, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class WriteEpisodeRequest(_message.Message):
    __slots__ = ("bank_id", "episode")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    EPISODE_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    episode: Episode
    def __init__(self, bank_id: _Optional[str] = ..., episode: _Optional[_Union[Episode, _Mapping]] = ...) -> None: ...

class WriteEpisodeResponse(_message.Message):
    __slots__ = ("episode",)
    EPISODE_FIELD_NUMBER: _ClassVar[int]
    episode: Episode
    def __init__(self, episode: _Optional[_Union[Episode, _Mapping]] = ...) -> None: ...

class ListEpisodesRequest(_message.Message):
    __slots__ = ("bank_id", "session_id", "page_size", "page_token")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    session_id: str
    page_size: int
    page_token: str
    def __init__(self, bank_id: _Optional[str] = ..., session_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListEpisodesResponse(_message.Message):
    __slots__ = ("episodes", "next_page_token")
    EPISODES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    episodes: _containers.RepeatedCompositeFieldContainer[Episode]
    next_page_token: str
    def __init__(self, episodes: _Optional[_Iterable[_Union[Episode, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ForgetTurnsRequest(_message.Message):
    __slots__ = ("bank_id", "turn_ids", "hard", "filter")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    HARD_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    turn_ids: _containers.RepeatedScalarFieldContainer[str]
    hard: bool
    filter: TurnFilter
    def __init__(self, bank_id: _Optional[str] = ..., turn_ids: _Optional[_Iterable[str]] = ..., hard: _Optional[bool] = ..., filter: _Optional[_Union[TurnFilter, _Mapping]] = ...) -> None: ...

class ForgetTurnsResponse(_message.Message):
    __slots__ = ("forgotten_count", "purged_ids", "purged_copies")
    FORGOTTEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    PURGED_IDS_FIELD_NUMBER: _ClassVar[int]
    PURGED_COPIES_FIELD_NUMBER: _ClassVar[int]
    forgotten_count: int
    purged_ids: _containers.RepeatedScalarFieldContainer[str]
    purged_copies: _containers.RepeatedCompositeFieldContainer[PurgedCopies]
    def __init__(self, forgotten_count: _Optional[int] = ..., purged_ids: _Optional[_Iterable[str]] = ..., purged_copies: _Optional[_Iterable[_Union[PurgedCopies, _Mapping]]] = ...) -> None: ...

class UpdateTurnRequest(_message.Message):
    __slots__ = ("bank_id", "turn_id", "text", "meta", "index_now", "agent")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    INDEX_NOW_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    turn_id: str
    text: str
    meta: _common_pb2.RecordMeta
    index_now: bool
    agent: str
    def __init__(self, bank_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., text: _Optional[str] = ..., meta: _Optional[_Union[_common_pb2.RecordMeta, _Mapping]] = ..., index_now: _Optional[bool] = ..., agent: _Optional[str] = ...) -> None: ...

class UpdateTurnResponse(_message.Message):
    __slots__ = ("turn", "superseded_id", "indexed")
    TURN_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_ID_FIELD_NUMBER: _ClassVar[int]
    INDEXED_FIELD_NUMBER: _ClassVar[int]
    turn: _common_pb2.Turn
    superseded_id: str
    indexed: bool
    def __init__(self, turn: _Optional[_Union[_common_pb2.Turn, _Mapping]] = ..., superseded_id: _Optional[str] = ..., indexed: _Optional[bool] = ...) -> None: ...

class RestoreTurnsRequest(_message.Message):
    __slots__ = ("bank_id", "turn_ids")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    turn_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, bank_id: _Optional[str] = ..., turn_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class RestoreTurnsResponse(_message.Message):
    __slots__ = ("restored_count",)
    RESTORED_COUNT_FIELD_NUMBER: _ClassVar[int]
    restored_count: int
    def __init__(self, restored_count: _Optional[int] = ...) -> None: ...

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
    __slots__ = ("turn_count", "episode_count", "outbox_count", "purged_ids", "purged_copies")
    TURN_COUNT_FIELD_NUMBER: _ClassVar[int]
    EPISODE_COUNT_FIELD_NUMBER: _ClassVar[int]
    OUTBOX_COUNT_FIELD_NUMBER: _ClassVar[int]
    PURGED_IDS_FIELD_NUMBER: _ClassVar[int]
    PURGED_COPIES_FIELD_NUMBER: _ClassVar[int]
    turn_count: int
    episode_count: int
    outbox_count: int
    purged_ids: _containers.RepeatedScalarFieldContainer[str]
    purged_copies: _containers.RepeatedCompositeFieldContainer[PurgedCopies]
    def __init__(self, turn_count: _Optional[int] = ..., episode_count: _Optional[int] = ..., outbox_count: _Optional[int] = ..., purged_ids: _Optional[_Iterable[str]] = ..., purged_copies: _Optional[_Iterable[_Union[PurgedCopies, _Mapping]]] = ...) -> None: ...

class PurgedCopies(_message.Message):
    __slots__ = ("bank_id", "purged_ids")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    PURGED_IDS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    purged_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, bank_id: _Optional[str] = ..., purged_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class SearchEpisodesRequest(_message.Message):
    __slots__ = ("bank_id", "query", "limit", "tags", "tools", "task_type", "result", "sources", "min_trust", "time_range")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    TASK_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    MIN_TRUST_FIELD_NUMBER: _ClassVar[int]
    TIME_RANGE_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    query: str
    limit: int
    tags: _containers.RepeatedScalarFieldContainer[str]
    tools: _containers.RepeatedScalarFieldContainer[str]
    task_type: str
    result: Outcome
    sources: _containers.RepeatedScalarFieldContainer[_common_pb2.Source]
    min_trust: _common_pb2.Trust
    time_range: _common_pb2.TimeRange
    def __init__(self, bank_id: _Optional[str] = ..., query: _Optional[str] = ..., limit: _Optional[int] = ..., tags: _Optional[_Iterable[str]] = ..., tools: _Optional[_Iterable[str]] = ..., task_type: _Optional[str] = ..., result: _Optional[_Union[Outcome, str]] = ..., sources: _Optional[_Iterable[_Union[_common_pb2.Source, str]]] = ..., min_trust: _Optional[_Union[_common_pb2.Trust, str]] = ..., time_range: _Optional[_Union[_common_pb2.TimeRange, _Mapping]] = ...) -> None: ...

class ScoredEpisode(_message.Message):
    __slots__ = ("episode", "score")
    EPISODE_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    episode: Episode
    score: float
    def __init__(self, episode: _Optional[_Union[Episode, _Mapping]] = ..., score: _Optional[float] = ...) -> None: ...

class SearchEpisodesResponse(_message.Message):
    __slots__ = ("hits",)
    HITS_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[ScoredEpisode]
    def __init__(self, hits: _Optional[_Iterable[_Union[ScoredEpisode, _Mapping]]] = ...) -> None: ...

class SegmentSessionRequest(_message.Message):
    __slots__ = ("bank_id", "session_id", "final")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    FINAL_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    session_id: str
    final: bool
    def __init__(self, bank_id: _Optional[str] = ..., session_id: _Optional[str] = ..., final: _Optional[bool] = ...) -> None: ...

class SegmentSessionResponse(_message.Message):
    __slots__ = ("episodes", "method")
    EPISODES_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    episodes: _containers.RepeatedCompositeFieldContainer[Episode]
    method: str
    def __init__(self, episodes: _Optional[_Iterable[_Union[Episode, _Mapping]]] = ..., method: _Optional[str] = ...) -> None: ...

class AccessedRecord(_message.Message):
    __slots__ = ("id", "layer")
    ID_FIELD_NUMBER: _ClassVar[int]
    LAYER_FIELD_NUMBER: _ClassVar[int]
    id: str
    layer: str
    def __init__(self, id: _Optional[str] = ..., layer: _Optional[str] = ...) -> None: ...

class RecordAccessRequest(_message.Message):
    __slots__ = ("bank_id", "records")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    records: _containers.RepeatedCompositeFieldContainer[AccessedRecord]
    def __init__(self, bank_id: _Optional[str] = ..., records: _Optional[_Iterable[_Union[AccessedRecord, _Mapping]]] = ...) -> None: ...

class RecordAccessResponse(_message.Message):
    __slots__ = ("accepted_count",)
    ACCEPTED_COUNT_FIELD_NUMBER: _ClassVar[int]
    accepted_count: int
    def __init__(self, accepted_count: _Optional[int] = ...) -> None: ...

class GetAccessStatsRequest(_message.Message):
    __slots__ = ("bank_id", "ids")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, bank_id: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ...) -> None: ...

class AccessStats(_message.Message):
    __slots__ = ("id", "layer", "hit_count", "last_hit", "freshness", "stale", "hot")
    ID_FIELD_NUMBER: _ClassVar[int]
    LAYER_FIELD_NUMBER: _ClassVar[int]
    HIT_COUNT_FIELD_NUMBER: _ClassVar[int]
    LAST_HIT_FIELD_NUMBER: _ClassVar[int]
    FRESHNESS_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    HOT_FIELD_NUMBER: _ClassVar[int]
    id: str
    layer: str
    hit_count: int
    last_hit: _timestamp_pb2.Timestamp
    freshness: float
    stale: bool
    hot: bool
    def __init__(self, id: _Optional[str] = ..., layer: _Optional[str] = ..., hit_count: _Optional[int] = ..., last_hit: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., freshness: _Optional[float] = ..., stale: _Optional[bool] = ..., hot: _Optional[bool] = ...) -> None: ...

class GetAccessStatsResponse(_message.Message):
    __slots__ = ("stats",)
    STATS_FIELD_NUMBER: _ClassVar[int]
    stats: _containers.RepeatedCompositeFieldContainer[AccessStats]
    def __init__(self, stats: _Optional[_Iterable[_Union[AccessStats, _Mapping]]] = ...) -> None: ...

class OutboxStatusRequest(_message.Message):
    __slots__ = ("bank_id",)
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    def __init__(self, bank_id: _Optional[str] = ...) -> None: ...

class OutboxStatusResponse(_message.Message):
    __slots__ = ("pending", "delivered", "dead_letters")
    class PendingEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class DeliveredEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class DeadLettersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    PENDING_FIELD_NUMBER: _ClassVar[int]
    DELIVERED_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERS_FIELD_NUMBER: _ClassVar[int]
    pending: _containers.ScalarMap[str, int]
    delivered: _containers.ScalarMap[str, int]
    dead_letters: _containers.ScalarMap[str, int]
    def __init__(self, pending: _Optional[_Mapping[str, int]] = ..., delivered: _Optional[_Mapping[str, int]] = ..., dead_letters: _Optional[_Mapping[str, int]] = ...) -> None: ...

class GetTurnsRequest(_message.Message):
    __slots__ = ("bank_id", "turn_ids")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    turn_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, bank_id: _Optional[str] = ..., turn_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class GetTurnsResponse(_message.Message):
    __slots__ = ("turns",)
    TURNS_FIELD_NUMBER: _ClassVar[int]
    turns: _containers.RepeatedCompositeFieldContainer[_common_pb2.Turn]
    def __init__(self, turns: _Optional[_Iterable[_Union[_common_pb2.Turn, _Mapping]]] = ...) -> None: ...

class ListQuarantinedRequest(_message.Message):
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

class ListQuarantinedResponse(_message.Message):
    __slots__ = ("items", "next_page_token", "pending_count")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PENDING_COUNT_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[_common_pb2.QuarantinedTurn]
    next_page_token: str
    pending_count: int
    def __init__(self, items: _Optional[_Iterable[_Union[_common_pb2.QuarantinedTurn, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., pending_count: _Optional[int] = ...) -> None: ...

class ReviewQuarantinedRequest(_message.Message):
    __slots__ = ("bank_id", "turn_ids", "decision", "reviewer", "note")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    REVIEWER_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    turn_ids: _containers.RepeatedScalarFieldContainer[str]
    decision: _common_pb2.ReviewDecision
    reviewer: str
    note: str
    def __init__(self, bank_id: _Optional[str] = ..., turn_ids: _Optional[_Iterable[str]] = ..., decision: _Optional[_Union[_common_pb2.ReviewDecision, str]] = ..., reviewer: _Optional[str] = ..., note: _Optional[str] = ...) -> None: ...

class ReviewQuarantinedResponse(_message.Message):
    __slots__ = ("approved_count", "rejected_count", "not_pending_ids")
    APPROVED_COUNT_FIELD_NUMBER: _ClassVar[int]
    REJECTED_COUNT_FIELD_NUMBER: _ClassVar[int]
    NOT_PENDING_IDS_FIELD_NUMBER: _ClassVar[int]
    approved_count: int
    rejected_count: int
    not_pending_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, approved_count: _Optional[int] = ..., rejected_count: _Optional[int] = ..., not_pending_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class AppendAuditRequest(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[_common_pb2.AuditEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[_common_pb2.AuditEntry, _Mapping]]] = ...) -> None: ...

class AppendAuditResponse(_message.Message):
    __slots__ = ("appended_count",)
    APPENDED_COUNT_FIELD_NUMBER: _ClassVar[int]
    appended_count: int
    def __init__(self, appended_count: _Optional[int] = ...) -> None: ...

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

class DeadLetter(_message.Message):
    __slots__ = ("id", "bank_id", "target", "operation", "record_kind", "record_id", "payload_json", "attempts", "last_error", "created_at", "dead_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    RECORD_KIND_FIELD_NUMBER: _ClassVar[int]
    RECORD_ID_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_JSON_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    DEAD_AT_FIELD_NUMBER: _ClassVar[int]
    id: int
    bank_id: str
    target: str
    operation: str
    record_kind: str
    record_id: str
    payload_json: str
    attempts: int
    last_error: str
    created_at: _timestamp_pb2.Timestamp
    dead_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[int] = ..., bank_id: _Optional[str] = ..., target: _Optional[str] = ..., operation: _Optional[str] = ..., record_kind: _Optional[str] = ..., record_id: _Optional[str] = ..., payload_json: _Optional[str] = ..., attempts: _Optional[int] = ..., last_error: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., dead_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListDeadLettersRequest(_message.Message):
    __slots__ = ("bank_id", "limit", "page_token")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    limit: int
    page_token: str
    def __init__(self, bank_id: _Optional[str] = ..., limit: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListDeadLettersResponse(_message.Message):
    __slots__ = ("dead_letters", "next_page_token", "counts")
    class CountsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    DEAD_LETTERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    dead_letters: _containers.RepeatedCompositeFieldContainer[DeadLetter]
    next_page_token: str
    counts: _containers.ScalarMap[str, int]
    def __init__(self, dead_letters: _Optional[_Iterable[_Union[DeadLetter, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., counts: _Optional[_Mapping[str, int]] = ...) -> None: ...

class RetryDeadLettersRequest(_message.Message):
    __slots__ = ("bank_id", "ids")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, bank_id: _Optional[str] = ..., ids: _Optional[_Iterable[int]] = ...) -> None: ...

class RetryDeadLettersResponse(_message.Message):
    __slots__ = ("retried_count", "missing_ids")
    RETRIED_COUNT_FIELD_NUMBER: _ClassVar[int]
    MISSING_IDS_FIELD_NUMBER: _ClassVar[int]
    retried_count: int
    missing_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, retried_count: _Optional[int] = ..., missing_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class DropDeadLettersRequest(_message.Message):
    __slots__ = ("bank_id", "ids")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, bank_id: _Optional[str] = ..., ids: _Optional[_Iterable[int]] = ...) -> None: ...

class DropDeadLettersResponse(_message.Message):
    __slots__ = ("dropped_count", "missing_ids")
    DROPPED_COUNT_FIELD_NUMBER: _ClassVar[int]
    MISSING_IDS_FIELD_NUMBER: _ClassVar[int]
    dropped_count: int
    missing_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, dropped_count: _Optional[int] = ..., missing_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class ExportedTurn(_message.Message):
    __slots__ = ("turn", "archived_at", "superseded_by")
    TURN_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_AT_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_BY_FIELD_NUMBER: _ClassVar[int]
    turn: _common_pb2.Turn
    archived_at: _timestamp_pb2.Timestamp
    superseded_by: str
    def __init__(self, turn: _Optional[_Union[_common_pb2.Turn, _Mapping]] = ..., archived_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., superseded_by: _Optional[str] = ...) -> None: ...

class ExportTurnsRequest(_message.Message):
    __slots__ = ("bank_id", "page_size", "page_token")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    page_size: int
    page_token: str
    def __init__(self, bank_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ExportTurnsResponse(_message.Message):
    __slots__ = ("turns", "next_page_token")
    TURNS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    turns: _containers.RepeatedCompositeFieldContainer[ExportedTurn]
    next_page_token: str
    def __init__(self, turns: _Optional[_Iterable[_Union[ExportedTurn, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ImportTurnsRequest(_message.Message):
    __slots__ = ("bank_id", "turns", "archive_only")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    ARCHIVE_ONLY_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    turns: _containers.RepeatedCompositeFieldContainer[ExportedTurn]
    archive_only: bool
    def __init__(self, bank_id: _Optional[str] = ..., turns: _Optional[_Iterable[_Union[ExportedTurn, _Mapping]]] = ..., archive_only: _Optional[bool] = ...) -> None: ...

class ImportTurnsResponse(_message.Message):
    __slots__ = ("imported_count", "duplicate_count")
    IMPORTED_COUNT_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_COUNT_FIELD_NUMBER: _ClassVar[int]
    imported_count: int
    duplicate_count: int
    def __init__(self, imported_count: _Optional[int] = ..., duplicate_count: _Optional[int] = ...) -> None: ...

class ExportedEpisode(_message.Message):
    __slots__ = ("episode", "archived_at", "method", "started_at", "ended_at", "merged_count")
    EPISODE_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_AT_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    MERGED_COUNT_FIELD_NUMBER: _ClassVar[int]
    episode: Episode
    archived_at: _timestamp_pb2.Timestamp
    method: str
    started_at: _timestamp_pb2.Timestamp
    ended_at: _timestamp_pb2.Timestamp
    merged_count: int
    def __init__(self, episode: _Optional[_Union[Episode, _Mapping]] = ..., archived_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., method: _Optional[str] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., merged_count: _Optional[int] = ...) -> None: ...

class ExportEpisodesRequest(_message.Message):
    __slots__ = ("bank_id", "page_size", "page_token")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    page_size: int
    page_token: str
    def __init__(self, bank_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ExportEpisodesResponse(_message.Message):
    __slots__ = ("episodes", "next_page_token")
    EPISODES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    episodes: _containers.RepeatedCompositeFieldContainer[ExportedEpisode]
    next_page_token: str
    def __init__(self, episodes: _Optional[_Iterable[_Union[ExportedEpisode, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ImportEpisodesRequest(_message.Message):
    __slots__ = ("bank_id", "episodes")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    EPISODES_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    episodes: _containers.RepeatedCompositeFieldContainer[ExportedEpisode]
    def __init__(self, bank_id: _Optional[str] = ..., episodes: _Optional[_Iterable[_Union[ExportedEpisode, _Mapping]]] = ...) -> None: ...

class ImportEpisodesResponse(_message.Message):
    __slots__ = ("imported_count", "duplicate_count")
    IMPORTED_COUNT_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_COUNT_FIELD_NUMBER: _ClassVar[int]
    imported_count: int
    duplicate_count: int
    def __init__(self, imported_count: _Optional[int] = ..., duplicate_count: _Optional[int] = ...) -> None: ...

class ImportQuarantinedRequest(_message.Message):
    __slots__ = ("bank_id", "items")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    items: _containers.RepeatedCompositeFieldContainer[_common_pb2.QuarantinedTurn]
    def __init__(self, bank_id: _Optional[str] = ..., items: _Optional[_Iterable[_Union[_common_pb2.QuarantinedTurn, _Mapping]]] = ...) -> None: ...

class ImportQuarantinedResponse(_message.Message):
    __slots__ = ("imported_count", "duplicate_count")
    IMPORTED_COUNT_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_COUNT_FIELD_NUMBER: _ClassVar[int]
    imported_count: int
    duplicate_count: int
    def __init__(self, imported_count: _Optional[int] = ..., duplicate_count: _Optional[int] = ...) -> None: ...

class HealWorkingWindowsRequest(_message.Message):
    __slots__ = ("bank_id", "turn_ids")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    turn_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, bank_id: _Optional[str] = ..., turn_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class HealWorkingWindowsResponse(_message.Message):
    __slots__ = ("queued_count",)
    QUEUED_COUNT_FIELD_NUMBER: _ClassVar[int]
    queued_count: int
    def __init__(self, queued_count: _Optional[int] = ...) -> None: ...

class TokenGrant(_message.Message):
    __slots__ = ("bank_id", "operations")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    operations: _containers.RepeatedScalarFieldContainer[Operation]
    def __init__(self, bank_id: _Optional[str] = ..., operations: _Optional[_Iterable[_Union[Operation, str]]] = ...) -> None: ...

class ManagedToken(_message.Message):
    __slots__ = ("name", "grants", "admin", "expires_at", "created_at", "last_used_at", "revoked_at", "parent", "created_by")
    NAME_FIELD_NUMBER: _ClassVar[int]
    GRANTS_FIELD_NUMBER: _ClassVar[int]
    ADMIN_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_USED_AT_FIELD_NUMBER: _ClassVar[int]
    REVOKED_AT_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    name: str
    grants: _containers.RepeatedCompositeFieldContainer[TokenGrant]
    admin: bool
    expires_at: _timestamp_pb2.Timestamp
    created_at: _timestamp_pb2.Timestamp
    last_used_at: _timestamp_pb2.Timestamp
    revoked_at: _timestamp_pb2.Timestamp
    parent: str
    created_by: str
    def __init__(self, name: _Optional[str] = ..., grants: _Optional[_Iterable[_Union[TokenGrant, _Mapping]]] = ..., admin: _Optional[bool] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_used_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., revoked_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., parent: _Optional[str] = ..., created_by: _Optional[str] = ...) -> None: ...

class CreateTokenRequest(_message.Message):
    __slots__ = ("name", "digest", "grants", "admin", "expires_at", "parent", "created_by")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    GRANTS_FIELD_NUMBER: _ClassVar[int]
    ADMIN_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    name: str
    digest: str
    grants: _containers.RepeatedCompositeFieldContainer[TokenGrant]
    admin: bool
    expires_at: _timestamp_pb2.Timestamp
    parent: str
    created_by: str
    def __init__(self, name: _Optional[str] = ..., digest: _Optional[str] = ..., grants: _Optional[_Iterable[_Union[TokenGrant, _Mapping]]] = ..., admin: _Optional[bool] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., parent: _Optional[str] = ..., created_by: _Optional[str] = ...) -> None: ...

class CreateTokenResponse(_message.Message):
    __slots__ = ("token",)
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    token: ManagedToken
    def __init__(self, token: _Optional[_Union[ManagedToken, _Mapping]] = ...) -> None: ...

class ListTokensRequest(_message.Message):
    __slots__ = ("include_revoked", "within_bank_ids", "page_size", "page_token")
    INCLUDE_REVOKED_FIELD_NUMBER: _ClassVar[int]
    WITHIN_BANK_IDS_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    include_revoked: bool
    within_bank_ids: _containers.RepeatedScalarFieldContainer[str]
    page_size: int
    page_token: str
    def __init__(self, include_revoked: _Optional[bool] = ..., within_bank_ids: _Optional[_Iterable[str]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListTokensResponse(_message.Message):
    __slots__ = ("tokens", "next_page_token")
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    tokens: _containers.RepeatedCompositeFieldContainer[ManagedToken]
    next_page_token: str
    def __init__(self, tokens: _Optional[_Iterable[_Union[ManagedToken, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class RevokeTokenRequest(_message.Message):
    __slots__ = ("name", "within_bank_ids", "revoked_by")
    NAME_FIELD_NUMBER: _ClassVar[int]
    WITHIN_BANK_IDS_FIELD_NUMBER: _ClassVar[int]
    REVOKED_BY_FIELD_NUMBER: _ClassVar[int]
    name: str
    within_bank_ids: _containers.RepeatedScalarFieldContainer[str]
    revoked_by: str
    def __init__(self, name: _Optional[str] = ..., within_bank_ids: _Optional[_Iterable[str]] = ..., revoked_by: _Optional[str] = ...) -> None: ...

class RevokeTokenResponse(_message.Message):
    __slots__ = ("revoked_names",)
    REVOKED_NAMES_FIELD_NUMBER: _ClassVar[int]
    revoked_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, revoked_names: _Optional[_Iterable[str]] = ...) -> None: ...

class SyncTokensRequest(_message.Message):
    __slots__ = ("after_version", "page_size")
    AFTER_VERSION_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    after_version: int
    page_size: int
    def __init__(self, after_version: _Optional[int] = ..., page_size: _Optional[int] = ...) -> None: ...

class TokenRecord(_message.Message):
    __slots__ = ("token", "digest", "version")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    token: ManagedToken
    digest: str
    version: int
    def __init__(self, token: _Optional[_Union[ManagedToken, _Mapping]] = ..., digest: _Optional[str] = ..., version: _Optional[int] = ...) -> None: ...

class SyncTokensResponse(_message.Message):
    __slots__ = ("tokens", "version", "more")
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    MORE_FIELD_NUMBER: _ClassVar[int]
    tokens: _containers.RepeatedCompositeFieldContainer[TokenRecord]
    version: int
    more: bool
    def __init__(self, tokens: _Optional[_Iterable[_Union[TokenRecord, _Mapping]]] = ..., version: _Optional[int] = ..., more: _Optional[bool] = ...) -> None: ...

class TokenUse(_message.Message):
    __slots__ = ("name", "used_at")
    NAME_FIELD_NUMBER: _ClassVar[int]
    USED_AT_FIELD_NUMBER: _ClassVar[int]
    name: str
    used_at: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., used_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class TouchTokensRequest(_message.Message):
    __slots__ = ("uses",)
    USES_FIELD_NUMBER: _ClassVar[int]
    uses: _containers.RepeatedCompositeFieldContainer[TokenUse]
    def __init__(self, uses: _Optional[_Iterable[_Union[TokenUse, _Mapping]]] = ...) -> None: ...

class TouchTokensResponse(_message.Message):
    __slots__ = ("updated_count",)
    UPDATED_COUNT_FIELD_NUMBER: _ClassVar[int]
    updated_count: int
    def __init__(self, updated_count: _Optional[int] = ...) -> None: ...

class ShareRecordsRequest(_message.Message):
    __slots__ = ("bank_id", "source_bank_id", "ids", "copies", "agent", "index_now")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_BANK_ID_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    COPIES_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    INDEX_NOW_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    source_bank_id: str
    ids: _containers.RepeatedScalarFieldContainer[str]
    copies: _containers.RepeatedCompositeFieldContainer[SharedCopy]
    agent: str
    index_now: bool
    def __init__(self, bank_id: _Optional[str] = ..., source_bank_id: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ..., copies: _Optional[_Iterable[_Union[SharedCopy, _Mapping]]] = ..., agent: _Optional[str] = ..., index_now: _Optional[bool] = ...) -> None: ...

class SharedCopy(_message.Message):
    __slots__ = ("source_id", "source_kind", "lineage_ids", "source_agent", "turn", "episode")
    SOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_KIND_FIELD_NUMBER: _ClassVar[int]
    LINEAGE_IDS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_AGENT_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    EPISODE_FIELD_NUMBER: _ClassVar[int]
    source_id: str
    source_kind: str
    lineage_ids: _containers.RepeatedScalarFieldContainer[str]
    source_agent: str
    turn: _common_pb2.Turn
    episode: Episode
    def __init__(self, source_id: _Optional[str] = ..., source_kind: _Optional[str] = ..., lineage_ids: _Optional[_Iterable[str]] = ..., source_agent: _Optional[str] = ..., turn: _Optional[_Union[_common_pb2.Turn, _Mapping]] = ..., episode: _Optional[_Union[Episode, _Mapping]] = ...) -> None: ...

class SharedRecord(_message.Message):
    __slots__ = ("source_id", "id", "kind", "source_kind")
    SOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SOURCE_KIND_FIELD_NUMBER: _ClassVar[int]
    source_id: str
    id: str
    kind: str
    source_kind: str
    def __init__(self, source_id: _Optional[str] = ..., id: _Optional[str] = ..., kind: _Optional[str] = ..., source_kind: _Optional[str] = ...) -> None: ...

class ShareRecordsResponse(_message.Message):
    __slots__ = ("shared", "unknown_ids", "stored_count", "indexed")
    SHARED_FIELD_NUMBER: _ClassVar[int]
    UNKNOWN_IDS_FIELD_NUMBER: _ClassVar[int]
    STORED_COUNT_FIELD_NUMBER: _ClassVar[int]
    INDEXED_FIELD_NUMBER: _ClassVar[int]
    shared: _containers.RepeatedCompositeFieldContainer[SharedRecord]
    unknown_ids: _containers.RepeatedScalarFieldContainer[str]
    stored_count: int
    indexed: bool
    def __init__(self, shared: _Optional[_Iterable[_Union[SharedRecord, _Mapping]]] = ..., unknown_ids: _Optional[_Iterable[str]] = ..., stored_count: _Optional[int] = ..., indexed: _Optional[bool] = ...) -> None: ...
