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

class ReflectionMethod(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REFLECTION_METHOD_UNSPECIFIED: _ClassVar[ReflectionMethod]
    REFLECTION_METHOD_RULES: _ClassVar[ReflectionMethod]
    REFLECTION_METHOD_LLM: _ClassVar[ReflectionMethod]

class ReflectTrigger(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REFLECT_TRIGGER_UNSPECIFIED: _ClassVar[ReflectTrigger]
    REFLECT_TRIGGER_EXPLICIT: _ClassVar[ReflectTrigger]
    REFLECT_TRIGGER_SESSION_CLOSED: _ClassVar[ReflectTrigger]
    REFLECT_TRIGGER_IDLE: _ClassVar[ReflectTrigger]
    REFLECT_TRIGGER_IMPORTANT: _ClassVar[ReflectTrigger]
REFLECTION_METHOD_UNSPECIFIED: ReflectionMethod
REFLECTION_METHOD_RULES: ReflectionMethod
REFLECTION_METHOD_LLM: ReflectionMethod
REFLECT_TRIGGER_UNSPECIFIED: ReflectTrigger
REFLECT_TRIGGER_EXPLICIT: ReflectTrigger
REFLECT_TRIGGER_SESSION_CLOSED: ReflectTrigger
REFLECT_TRIGGER_IDLE: ReflectTrigger
REFLECT_TRIGGER_IMPORTANT: ReflectTrigger

class Lesson(_message.Message):
    __slots__ = ("id", "situation", "action", "outcome", "lesson", "confidence", "source_episode_ids", "meta", "hit_count", "last_hit_at", "weight", "superseded_by", "merged_into", "archived_at", "method", "topic", "action_key", "stance", "created_at")
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
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_BY_FIELD_NUMBER: _ClassVar[int]
    MERGED_INTO_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_AT_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    ACTION_KEY_FIELD_NUMBER: _ClassVar[int]
    STANCE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
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
    weight: float
    superseded_by: str
    merged_into: str
    archived_at: _timestamp_pb2.Timestamp
    method: ReflectionMethod
    topic: str
    action_key: str
    stance: int
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., situation: _Optional[str] = ..., action: _Optional[str] = ..., outcome: _Optional[str] = ..., lesson: _Optional[str] = ..., confidence: _Optional[float] = ..., source_episode_ids: _Optional[_Iterable[str]] = ..., meta: _Optional[_Union[_common_pb2.RecordMeta, _Mapping]] = ..., hit_count: _Optional[int] = ..., last_hit_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., weight: _Optional[float] = ..., superseded_by: _Optional[str] = ..., merged_into: _Optional[str] = ..., archived_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., method: _Optional[_Union[ReflectionMethod, str]] = ..., topic: _Optional[str] = ..., action_key: _Optional[str] = ..., stance: _Optional[int] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ReflectRequest(_message.Message):
    __slots__ = ("bank_id", "session_id", "trigger")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    session_id: str
    trigger: ReflectTrigger
    def __init__(self, bank_id: _Optional[str] = ..., session_id: _Optional[str] = ..., trigger: _Optional[_Union[ReflectTrigger, str]] = ...) -> None: ...

class ReflectResponse(_message.Message):
    __slots__ = ("lessons", "episodes_read", "method", "superseded_ids")
    LESSONS_FIELD_NUMBER: _ClassVar[int]
    EPISODES_READ_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_IDS_FIELD_NUMBER: _ClassVar[int]
    lessons: _containers.RepeatedCompositeFieldContainer[Lesson]
    episodes_read: int
    method: ReflectionMethod
    superseded_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, lessons: _Optional[_Iterable[_Union[Lesson, _Mapping]]] = ..., episodes_read: _Optional[int] = ..., method: _Optional[_Union[ReflectionMethod, str]] = ..., superseded_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class MaintainRequest(_message.Message):
    __slots__ = ("bank_id",)
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    def __init__(self, bank_id: _Optional[str] = ...) -> None: ...

class MaintainResponse(_message.Message):
    __slots__ = ("decayed_ids", "archived_ids", "merged_ids", "reflected_session_ids", "lessons_checked", "skipped", "cold_count", "open_conflicts")
    DECAYED_IDS_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_IDS_FIELD_NUMBER: _ClassVar[int]
    MERGED_IDS_FIELD_NUMBER: _ClassVar[int]
    REFLECTED_SESSION_IDS_FIELD_NUMBER: _ClassVar[int]
    LESSONS_CHECKED_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    COLD_COUNT_FIELD_NUMBER: _ClassVar[int]
    OPEN_CONFLICTS_FIELD_NUMBER: _ClassVar[int]
    decayed_ids: _containers.RepeatedScalarFieldContainer[str]
    archived_ids: _containers.RepeatedScalarFieldContainer[str]
    merged_ids: _containers.RepeatedScalarFieldContainer[str]
    reflected_session_ids: _containers.RepeatedScalarFieldContainer[str]
    lessons_checked: int
    skipped: _containers.RepeatedScalarFieldContainer[str]
    cold_count: int
    open_conflicts: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, decayed_ids: _Optional[_Iterable[str]] = ..., archived_ids: _Optional[_Iterable[str]] = ..., merged_ids: _Optional[_Iterable[str]] = ..., reflected_session_ids: _Optional[_Iterable[str]] = ..., lessons_checked: _Optional[int] = ..., skipped: _Optional[_Iterable[str]] = ..., cold_count: _Optional[int] = ..., open_conflicts: _Optional[_Iterable[str]] = ...) -> None: ...

class ListBanksRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListBanksResponse(_message.Message):
    __slots__ = ("bank_ids",)
    BANK_IDS_FIELD_NUMBER: _ClassVar[int]
    bank_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, bank_ids: _Optional[_Iterable[str]] = ...) -> None: ...

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
    __slots__ = ("bank_id", "query", "limit", "rewrites", "rewrite_weight", "tags", "bank_ids")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    REWRITES_FIELD_NUMBER: _ClassVar[int]
    REWRITE_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    BANK_IDS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    query: str
    limit: int
    rewrites: _containers.RepeatedScalarFieldContainer[str]
    rewrite_weight: float
    tags: _containers.RepeatedScalarFieldContainer[str]
    bank_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, bank_id: _Optional[str] = ..., query: _Optional[str] = ..., limit: _Optional[int] = ..., rewrites: _Optional[_Iterable[str]] = ..., rewrite_weight: _Optional[float] = ..., tags: _Optional[_Iterable[str]] = ..., bank_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ScoredLesson(_message.Message):
    __slots__ = ("lesson", "score", "bank_id")
    LESSON_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    lesson: Lesson
    score: float
    bank_id: str
    def __init__(self, lesson: _Optional[_Union[Lesson, _Mapping]] = ..., score: _Optional[float] = ..., bank_id: _Optional[str] = ...) -> None: ...

class SearchLessonsResponse(_message.Message):
    __slots__ = ("hits",)
    HITS_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[ScoredLesson]
    def __init__(self, hits: _Optional[_Iterable[_Union[ScoredLesson, _Mapping]]] = ...) -> None: ...

class PurgeLessonsRequest(_message.Message):
    __slots__ = ("bank_id", "source_ids", "session_id", "whole_bank")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_IDS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    WHOLE_BANK_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    source_ids: _containers.RepeatedScalarFieldContainer[str]
    session_id: str
    whole_bank: bool
    def __init__(self, bank_id: _Optional[str] = ..., source_ids: _Optional[_Iterable[str]] = ..., session_id: _Optional[str] = ..., whole_bank: _Optional[bool] = ...) -> None: ...

class PurgeLessonsResponse(_message.Message):
    __slots__ = ("deleted_count",)
    DELETED_COUNT_FIELD_NUMBER: _ClassVar[int]
    deleted_count: int
    def __init__(self, deleted_count: _Optional[int] = ...) -> None: ...

class SetSourceStatesRequest(_message.Message):
    __slots__ = ("bank_id", "archived_ids", "live_ids")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_IDS_FIELD_NUMBER: _ClassVar[int]
    LIVE_IDS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    archived_ids: _containers.RepeatedScalarFieldContainer[str]
    live_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, bank_id: _Optional[str] = ..., archived_ids: _Optional[_Iterable[str]] = ..., live_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class SetSourceStatesResponse(_message.Message):
    __slots__ = ("changed_count",)
    CHANGED_COUNT_FIELD_NUMBER: _ClassVar[int]
    changed_count: int
    def __init__(self, changed_count: _Optional[int] = ...) -> None: ...

class ImportLessonsRequest(_message.Message):
    __slots__ = ("bank_id", "lessons")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    LESSONS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    lessons: _containers.RepeatedCompositeFieldContainer[Lesson]
    def __init__(self, bank_id: _Optional[str] = ..., lessons: _Optional[_Iterable[_Union[Lesson, _Mapping]]] = ...) -> None: ...

class ImportLessonsResponse(_message.Message):
    __slots__ = ("imported_count", "duplicate_count")
    IMPORTED_COUNT_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_COUNT_FIELD_NUMBER: _ClassVar[int]
    imported_count: int
    duplicate_count: int
    def __init__(self, imported_count: _Optional[int] = ..., duplicate_count: _Optional[int] = ...) -> None: ...

class ExportLessonsRequest(_message.Message):
    __slots__ = ("bank_id", "page_size", "page_token")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    page_size: int
    page_token: str
    def __init__(self, bank_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ExportLessonsResponse(_message.Message):
    __slots__ = ("lessons", "next_page_token")
    LESSONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    lessons: _containers.RepeatedCompositeFieldContainer[Lesson]
    next_page_token: str
    def __init__(self, lessons: _Optional[_Iterable[_Union[Lesson, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetLessonsRequest(_message.Message):
    __slots__ = ("bank_id", "ids")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, bank_id: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ...) -> None: ...

class GetLessonsResponse(_message.Message):
    __slots__ = ("lessons",)
    LESSONS_FIELD_NUMBER: _ClassVar[int]
    lessons: _containers.RepeatedCompositeFieldContainer[Lesson]
    def __init__(self, lessons: _Optional[_Iterable[_Union[Lesson, _Mapping]]] = ...) -> None: ...
