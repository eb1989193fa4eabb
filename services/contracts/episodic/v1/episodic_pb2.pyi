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
OUTCOME_UNSPECIFIED: Outcome
OUTCOME_SUCCESS: Outcome
OUTCOME_FAILURE: Outcome

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
    __slots__ = ("bank_id", "query", "time_range", "limit", "filter", "rewrites", "rewrite_weight", "quarantined_only")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    TIME_RANGE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    REWRITES_FIELD_NUMBER: _ClassVar[int]
    REWRITE_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    QUARANTINED_ONLY_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    query: str
    time_range: _common_pb2.TimeRange
    limit: int
    filter: TurnFilter
    rewrites: _containers.RepeatedScalarFieldContainer[str]
    rewrite_weight: float
    quarantined_only: bool
    def __init__(self, bank_id: _Optional[str] = ..., query: _Optional[str] = ..., time_range: _Optional[_Union[_common_pb2.TimeRange, _Mapping]] = ..., limit: _Optional[int] = ..., filter: _Optional[_Union[TurnFilter, _Mapping]] = ..., rewrites: _Optional[_Iterable[str]] = ..., rewrite_weight: _Optional[float] = ..., quarantined_only: _Optional[bool] = ...) -> None: ...

class TurnFilter(_message.Message):
    __slots__ = ("session_id", "tags", "sources", "min_trust", "time_range", "include_archived")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    MIN_TRUST_FIELD_NUMBER: _ClassVar[int]
    TIME_RANGE_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    sources: _containers.RepeatedScalarFieldContainer[_common_pb2.Source]
    min_trust: _common_pb2.Trust
    time_range: _common_pb2.TimeRange
    include_archived: bool
    def __init__(self, session_id: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., sources: _Optional[_Iterable[_Union[_common_pb2.Source, str]]] = ..., min_trust: _Optional[_Union[_common_pb2.Trust, str]] = ..., time_range: _Optional[_Union[_common_pb2.TimeRange, _Mapping]] = ..., include_archived: _Optional[bool] = ...) -> None: ...

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
    __slots__ = ("forgotten_count",)
    FORGOTTEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    forgotten_count: int
    def __init__(self, forgotten_count: _Optional[int] = ...) -> None: ...

class UpdateTurnRequest(_message.Message):
    __slots__ = ("bank_id", "turn_id", "text", "meta", "index_now")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    INDEX_NOW_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    turn_id: str
    text: str
    meta: _common_pb2.RecordMeta
    index_now: bool
    def __init__(self, bank_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., text: _Optional[str] = ..., meta: _Optional[_Union[_common_pb2.RecordMeta, _Mapping]] = ..., index_now: _Optional[bool] = ...) -> None: ...

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
    __slots__ = ("turn_count", "episode_count", "outbox_count")
    TURN_COUNT_FIELD_NUMBER: _ClassVar[int]
    EPISODE_COUNT_FIELD_NUMBER: _ClassVar[int]
    OUTBOX_COUNT_FIELD_NUMBER: _ClassVar[int]
    turn_count: int
    episode_count: int
    outbox_count: int
    def __init__(self, turn_count: _Optional[int] = ..., episode_count: _Optional[int] = ..., outbox_count: _Optional[int] = ...) -> None: ...

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
    __slots__ = ("pending", "delivered")
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
    PENDING_FIELD_NUMBER: _ClassVar[int]
    DELIVERED_FIELD_NUMBER: _ClassVar[int]
    pending: _containers.ScalarMap[str, int]
    delivered: _containers.ScalarMap[str, int]
    def __init__(self, pending: _Optional[_Mapping[str, int]] = ..., delivered: _Optional[_Mapping[str, int]] = ...) -> None: ...

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
