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
RECORD_KIND_UNSPECIFIED: RecordKind
RECORD_KIND_TURN: RecordKind
RECORD_KIND_FACT: RecordKind
RECORD_KIND_PREFERENCE: RecordKind
RECORD_KIND_RULE: RecordKind
RECORD_KIND_EPISODE: RecordKind

class SemanticRecord(_message.Message):
    __slots__ = ("id", "kind", "text", "speaker", "session_id", "meta")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SPEAKER_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: RecordKind
    text: str
    speaker: str
    session_id: str
    meta: _common_pb2.RecordMeta
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[_Union[RecordKind, str]] = ..., text: _Optional[str] = ..., speaker: _Optional[str] = ..., session_id: _Optional[str] = ..., meta: _Optional[_Union[_common_pb2.RecordMeta, _Mapping]] = ...) -> None: ...

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
    __slots__ = ("bank_id", "query", "limit", "time_range")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    TIME_RANGE_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    query: str
    limit: int
    time_range: _common_pb2.TimeRange
    def __init__(self, bank_id: _Optional[str] = ..., query: _Optional[str] = ..., limit: _Optional[int] = ..., time_range: _Optional[_Union[_common_pb2.TimeRange, _Mapping]] = ...) -> None: ...

class ScoredRecord(_message.Message):
    __slots__ = ("record", "score")
    RECORD_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    record: SemanticRecord
    score: float
    def __init__(self, record: _Optional[_Union[SemanticRecord, _Mapping]] = ..., score: _Optional[float] = ...) -> None: ...

class SearchResponse(_message.Message):
    __slots__ = ("hits",)
    HITS_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[ScoredRecord]
    def __init__(self, hits: _Optional[_Iterable[_Union[ScoredRecord, _Mapping]]] = ...) -> None: ...

class DeleteRequest(_message.Message):
    __slots__ = ("bank_id", "ids", "source_turn_ids")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    ids: _containers.RepeatedScalarFieldContainer[str]
    source_turn_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, bank_id: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ..., source_turn_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class DeleteResponse(_message.Message):
    __slots__ = ("deleted_count",)
    DELETED_COUNT_FIELD_NUMBER: _ClassVar[int]
    deleted_count: int
    def __init__(self, deleted_count: _Optional[int] = ...) -> None: ...
