import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from hindsight.contracts.common.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Lesson(_message.Message):
    __slots__ = ("id", "situation", "action", "outcome", "lesson", "confidence", "source_episode_ids", "meta", "hit_count", "last_hit_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    SITUATION_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    LESSON_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_EPISODE_IDS_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    HIT_COUNT_FIELD_NUMBER: _ClassVar[int]
    LAST_HIT_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    situation: str
    action: str
    outcome: str
    lesson: str
    confidence: float
    source_episode_ids: _containers.RepeatedScalarFieldContainer[str]
    meta: _common_pb2.RecordMeta
    hit_count: int
    last_hit_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., situation: _Optional[str] = ..., action: _Optional[str] = ..., outcome: _Optional[str] = ..., lesson: _Optional[str] = ..., confidence: _Optional[float] = ..., source_episode_ids: _Optional[_Iterable[str]] = ..., meta: _Optional[_Union[_common_pb2.RecordMeta, _Mapping]] = ..., hit_count: _Optional[int] = ..., last_hit_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

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
    lessons: _containers.RepeatedCompositeFieldContainer[Lesson]
    episodes_read: int
    def __init__(self, lessons: _Optional[_Iterable[_Union[Lesson, _Mapping]]] = ..., episodes_read: _Optional[int] = ...) -> None: ...

class ListLessonsRequest(_message.Message):
    __slots__ = ("bank_id", "page_size", "page_token")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    page_size: int
    page_token: str
    def __init__(self, bank_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListLessonsResponse(_message.Message):
    __slots__ = ("lessons", "next_page_token")
    LESSONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    lessons: _containers.RepeatedCompositeFieldContainer[Lesson]
    next_page_token: str
    def __init__(self, lessons: _Optional[_Iterable[_Union[Lesson, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class SearchLessonsRequest(_message.Message):
    __slots__ = ("bank_id", "query", "limit")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    query: str
    limit: int
    def __init__(self, bank_id: _Optional[str] = ..., query: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class ScoredLesson(_message.Message):
    __slots__ = ("lesson", "score")
    LESSON_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    lesson: Lesson
    score: float
    def __init__(self, lesson: _Optional[_Union[Lesson, _Mapping]] = ..., score: _Optional[float] = ...) -> None: ...

class SearchLessonsResponse(_message.Message):
    __slots__ = ("hits",)
    HITS_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[ScoredLesson]
    def __init__(self, hits: _Optional[_Iterable[_Union[ScoredLesson, _Mapping]]] = ...) -> None: ...
