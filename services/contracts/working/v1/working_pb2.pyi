from hindsight.contracts.common.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AppendTurnsRequest(_message.Message):
    __slots__ = ("bank_id", "turns")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    turns: _containers.RepeatedCompositeFieldContainer[_common_pb2.Turn]
    def __init__(self, bank_id: _Optional[str] = ..., turns: _Optional[_Iterable[_Union[_common_pb2.Turn, _Mapping]]] = ...) -> None: ...

class AppendTurnsResponse(_message.Message):
    __slots__ = ("appended_count",)
    APPENDED_COUNT_FIELD_NUMBER: _ClassVar[int]
    appended_count: int
    def __init__(self, appended_count: _Optional[int] = ...) -> None: ...

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
    __slots__ = ("bank_id", "query", "session_id", "limit")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    query: str
    session_id: str
    limit: int
    def __init__(self, bank_id: _Optional[str] = ..., query: _Optional[str] = ..., session_id: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class SearchRecentResponse(_message.Message):
    __slots__ = ("hits",)
    HITS_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[_common_pb2.ScoredTurn]
    def __init__(self, hits: _Optional[_Iterable[_Union[_common_pb2.ScoredTurn, _Mapping]]] = ...) -> None: ...

class ForgetTurnsRequest(_message.Message):
    __slots__ = ("bank_id", "turn_ids")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    turn_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, bank_id: _Optional[str] = ..., turn_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ForgetTurnsResponse(_message.Message):
    __slots__ = ("removed_count",)
    REMOVED_COUNT_FIELD_NUMBER: _ClassVar[int]
    removed_count: int
    def __init__(self, removed_count: _Optional[int] = ...) -> None: ...
