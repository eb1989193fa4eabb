from hindsight.contracts.common.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EntryKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ENTRY_KIND_UNSPECIFIED: _ClassVar[EntryKind]
    ENTRY_KIND_TURN: _ClassVar[EntryKind]
    ENTRY_KIND_SUMMARY: _ClassVar[EntryKind]
ENTRY_KIND_UNSPECIFIED: EntryKind
ENTRY_KIND_TURN: EntryKind
ENTRY_KIND_SUMMARY: EntryKind

class AppendTurnsRequest(_message.Message):
    __slots__ = ("bank_id", "turns")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    turns: _containers.RepeatedCompositeFieldContainer[_common_pb2.Turn]
    def __init__(self, bank_id: _Optional[str] = ..., turns: _Optional[_Iterable[_Union[_common_pb2.Turn, _Mapping]]] = ...) -> None: ...

class AppendTurnsResponse(_message.Message):
    __slots__ = ("appended_count", "compressed_group_count")
    APPENDED_COUNT_FIELD_NUMBER: _ClassVar[int]
    COMPRESSED_GROUP_COUNT_FIELD_NUMBER: _ClassVar[int]
    appended_count: int
    compressed_group_count: int
    def __init__(self, appended_count: _Optional[int] = ..., compressed_group_count: _Optional[int] = ...) -> None: ...

class GetWindowRequest(_message.Message):
    __slots__ = ("bank_id", "session_id", "max_turns")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_TURNS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    session_id: str
    max_turns: int
    def __init__(self, bank_id: _Optional[str] = ..., session_id: _Optional[str] = ..., max_turns: _Optional[int] = ...) -> None: ...

class GetWindowResponse(_message.Message):
    __slots__ = ("turns",)
    TURNS_FIELD_NUMBER: _ClassVar[int]
    turns: _containers.RepeatedCompositeFieldContainer[_common_pb2.Turn]
    def __init__(self, turns: _Optional[_Iterable[_Union[_common_pb2.Turn, _Mapping]]] = ...) -> None: ...

class SearchRecentRequest(_message.Message):
    __slots__ = ("bank_id", "query", "session_id", "limit", "rewrites", "rewrite_weight", "time_range", "tags", "bank_ids")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    REWRITES_FIELD_NUMBER: _ClassVar[int]
    REWRITE_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    TIME_RANGE_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    BANK_IDS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    query: str
    session_id: str
    limit: int
    rewrites: _containers.RepeatedScalarFieldContainer[str]
    rewrite_weight: float
    time_range: _common_pb2.TimeRange
    tags: _containers.RepeatedScalarFieldContainer[str]
    bank_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, bank_id: _Optional[str] = ..., query: _Optional[str] = ..., session_id: _Optional[str] = ..., limit: _Optional[int] = ..., rewrites: _Optional[_Iterable[str]] = ..., rewrite_weight: _Optional[float] = ..., time_range: _Optional[_Union[_common_pb2.TimeRange, _Mapping]] = ..., tags: _Optional[_Iterable[str]] = ..., bank_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class SearchRecentResponse(_message.Message):
    __slots__ = ("hits",)
    HITS_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[_common_pb2.ScoredTurn]
    def __init__(self, hits: _Optional[_Iterable[_Union[_common_pb2.ScoredTurn, _Mapping]]] = ...) -> None: ...

class ForgetTurnsRequest(_message.Message):
    __slots__ = ("bank_id", "turn_ids", "session_id", "whole_bank")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    WHOLE_BANK_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    turn_ids: _containers.RepeatedScalarFieldContainer[str]
    session_id: str
    whole_bank: bool
    def __init__(self, bank_id: _Optional[str] = ..., turn_ids: _Optional[_Iterable[str]] = ..., session_id: _Optional[str] = ..., whole_bank: _Optional[bool] = ...) -> None: ...

class ForgetTurnsResponse(_message.Message):
    __slots__ = ("removed_count",)
    REMOVED_COUNT_FIELD_NUMBER: _ClassVar[int]
    removed_count: int
    def __init__(self, removed_count: _Optional[int] = ...) -> None: ...

class WindowEntry(_message.Message):
    __slots__ = ("kind", "turn", "summary", "token_count", "timestamp_ms")
    KIND_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    kind: EntryKind
    turn: _common_pb2.Turn
    summary: str
    token_count: int
    timestamp_ms: int
    def __init__(self, kind: _Optional[_Union[EntryKind, str]] = ..., turn: _Optional[_Union[_common_pb2.Turn, _Mapping]] = ..., summary: _Optional[str] = ..., token_count: _Optional[int] = ..., timestamp_ms: _Optional[int] = ...) -> None: ...

class GetContextRequest(_message.Message):
    __slots__ = ("bank_id", "session_id", "token_budget")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_BUDGET_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    session_id: str
    token_budget: int
    def __init__(self, bank_id: _Optional[str] = ..., session_id: _Optional[str] = ..., token_budget: _Optional[int] = ...) -> None: ...

class GetContextResponse(_message.Message):
    __slots__ = ("summaries", "turns", "token_count", "session_token_count", "omitted_count", "token_budget")
    SUMMARIES_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    SESSION_TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    OMITTED_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_BUDGET_FIELD_NUMBER: _ClassVar[int]
    summaries: _containers.RepeatedCompositeFieldContainer[WindowEntry]
    turns: _containers.RepeatedCompositeFieldContainer[WindowEntry]
    token_count: int
    session_token_count: int
    omitted_count: int
    token_budget: int
    def __init__(self, summaries: _Optional[_Iterable[_Union[WindowEntry, _Mapping]]] = ..., turns: _Optional[_Iterable[_Union[WindowEntry, _Mapping]]] = ..., token_count: _Optional[int] = ..., session_token_count: _Optional[int] = ..., omitted_count: _Optional[int] = ..., token_budget: _Optional[int] = ...) -> None: ...

class CompressRequest(_message.Message):
    __slots__ = ("bank_id", "session_id", "target_tokens")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_TOKENS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    session_id: str
    target_tokens: int
    def __init__(self, bank_id: _Optional[str] = ..., session_id: _Optional[str] = ..., target_tokens: _Optional[int] = ...) -> None: ...

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
    __slots__ = ("closed", "turn_count", "summary_count", "token_count")
    CLOSED_FIELD_NUMBER: _ClassVar[int]
    TURN_COUNT_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    closed: bool
    turn_count: int
    summary_count: int
    token_count: int
    def __init__(self, closed: _Optional[bool] = ..., turn_count: _Optional[int] = ..., summary_count: _Optional[int] = ..., token_count: _Optional[int] = ...) -> None: ...
