import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Source(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SOURCE_UNSPECIFIED: _ClassVar[Source]
    SOURCE_USER: _ClassVar[Source]
    SOURCE_AGENT: _ClassVar[Source]
    SOURCE_TOOL: _ClassVar[Source]
    SOURCE_EXTERNAL: _ClassVar[Source]

class Trust(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TRUST_UNSPECIFIED: _ClassVar[Trust]
    TRUST_LOW: _ClassVar[Trust]
    TRUST_MEDIUM: _ClassVar[Trust]
    TRUST_HIGH: _ClassVar[Trust]

class Role(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ROLE_UNSPECIFIED: _ClassVar[Role]
    ROLE_USER: _ClassVar[Role]
    ROLE_ASSISTANT: _ClassVar[Role]
    ROLE_TOOL: _ClassVar[Role]
    ROLE_SYSTEM: _ClassVar[Role]

class ReviewDecision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REVIEW_DECISION_UNSPECIFIED: _ClassVar[ReviewDecision]
    REVIEW_DECISION_APPROVE: _ClassVar[ReviewDecision]
    REVIEW_DECISION_REJECT: _ClassVar[ReviewDecision]
SOURCE_UNSPECIFIED: Source
SOURCE_USER: Source
SOURCE_AGENT: Source
SOURCE_TOOL: Source
SOURCE_EXTERNAL: Source
TRUST_UNSPECIFIED: Trust
TRUST_LOW: Trust
TRUST_MEDIUM: Trust
TRUST_HIGH: Trust
ROLE_UNSPECIFIED: Role
ROLE_USER: Role
ROLE_ASSISTANT: Role
ROLE_TOOL: Role
ROLE_SYSTEM: Role
REVIEW_DECISION_UNSPECIFIED: ReviewDecision
REVIEW_DECISION_APPROVE: ReviewDecision
REVIEW_DECISION_REJECT: ReviewDecision

class RecordMeta(_message.Message):
    __slots__ = ("source_turn_ids", "source", "trust", "time", "tags", "importance", "schema_version", "agent")
    SOURCE_TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TRUST_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    IMPORTANCE_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    source_turn_ids: _containers.RepeatedScalarFieldContainer[str]
    source: Source
    trust: Trust
    time: _timestamp_pb2.Timestamp
    tags: _containers.RepeatedScalarFieldContainer[str]
    importance: float
    schema_version: int
    agent: str
    def __init__(self, source_turn_ids: _Optional[_Iterable[str]] = ..., source: _Optional[_Union[Source, str]] = ..., trust: _Optional[_Union[Trust, str]] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., tags: _Optional[_Iterable[str]] = ..., importance: _Optional[float] = ..., schema_version: _Optional[int] = ..., agent: _Optional[str] = ...) -> None: ...

class TimeRange(_message.Message):
    __slots__ = ("start", "end")
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    start: _timestamp_pb2.Timestamp
    end: _timestamp_pb2.Timestamp
    def __init__(self, start: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Turn(_message.Message):
    __slots__ = ("id", "session_id", "role", "speaker", "text", "meta")
    ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    SPEAKER_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    id: str
    session_id: str
    role: Role
    speaker: str
    text: str
    meta: RecordMeta
    def __init__(self, id: _Optional[str] = ..., session_id: _Optional[str] = ..., role: _Optional[_Union[Role, str]] = ..., speaker: _Optional[str] = ..., text: _Optional[str] = ..., meta: _Optional[_Union[RecordMeta, _Mapping]] = ...) -> None: ...

class ScoredTurn(_message.Message):
    __slots__ = ("turn", "score", "bank_id")
    TURN_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    turn: Turn
    score: float
    bank_id: str
    def __init__(self, turn: _Optional[_Union[Turn, _Mapping]] = ..., score: _Optional[float] = ..., bank_id: _Optional[str] = ...) -> None: ...

class Screening(_message.Message):
    __slots__ = ("kind", "reason", "action")
    KIND_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    kind: str
    reason: str
    action: str
    def __init__(self, kind: _Optional[str] = ..., reason: _Optional[str] = ..., action: _Optional[str] = ...) -> None: ...

class TurnScreening(_message.Message):
    __slots__ = ("turn_id", "screening")
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    SCREENING_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    screening: Screening
    def __init__(self, turn_id: _Optional[str] = ..., screening: _Optional[_Union[Screening, _Mapping]] = ...) -> None: ...

class QuarantinedTurn(_message.Message):
    __slots__ = ("turn", "screening", "quarantined_at", "status", "reviewer", "reviewed_at")
    TURN_FIELD_NUMBER: _ClassVar[int]
    SCREENING_FIELD_NUMBER: _ClassVar[int]
    QUARANTINED_AT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REVIEWER_FIELD_NUMBER: _ClassVar[int]
    REVIEWED_AT_FIELD_NUMBER: _ClassVar[int]
    turn: Turn
    screening: Screening
    quarantined_at: _timestamp_pb2.Timestamp
    status: str
    reviewer: str
    reviewed_at: _timestamp_pb2.Timestamp
    def __init__(self, turn: _Optional[_Union[Turn, _Mapping]] = ..., screening: _Optional[_Union[Screening, _Mapping]] = ..., quarantined_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., status: _Optional[str] = ..., reviewer: _Optional[str] = ..., reviewed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class AuditEntry(_message.Message):
    __slots__ = ("id", "time", "actor", "bank_id", "action", "target", "reason", "details_json")
    ID_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    DETAILS_JSON_FIELD_NUMBER: _ClassVar[int]
    id: str
    time: _timestamp_pb2.Timestamp
    actor: str
    bank_id: str
    action: str
    target: str
    reason: str
    details_json: str
    def __init__(self, id: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., actor: _Optional[str] = ..., bank_id: _Optional[str] = ..., action: _Optional[str] = ..., target: _Optional[str] = ..., reason: _Optional[str] = ..., details_json: _Optional[str] = ...) -> None: ...
