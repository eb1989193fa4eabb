from hindsight.contracts.common.v1 import common_pb2 as _common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2 as _episodic_pb2
from hindsight.contracts.reflect.v1 import reflect_pb2 as _reflect_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Layer(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LAYER_UNSPECIFIED: _ClassVar[Layer]
    LAYER_WORKING: _ClassVar[Layer]
    LAYER_EPISODIC: _ClassVar[Layer]
    LAYER_SEMANTIC: _ClassVar[Layer]
    LAYER_REFLECT: _ClassVar[Layer]
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
    __slots__ = ("turn_ids", "duplicate_count", "indexed")
    TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_COUNT_FIELD_NUMBER: _ClassVar[int]
    INDEXED_FIELD_NUMBER: _ClassVar[int]
    turn_ids: _containers.RepeatedScalarFieldContainer[str]
    duplicate_count: int
    indexed: bool
    def __init__(self, turn_ids: _Optional[_Iterable[str]] = ..., duplicate_count: _Optional[int] = ..., indexed: _Optional[bool] = ...) -> None: ...

class RecallRequest(_message.Message):
    __slots__ = ("bank_id", "query", "top_k", "layers", "time_range", "session_id")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    LAYERS_FIELD_NUMBER: _ClassVar[int]
    TIME_RANGE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    query: str
    top_k: int
    layers: _containers.RepeatedScalarFieldContainer[Layer]
    time_range: _common_pb2.TimeRange
    session_id: str
    def __init__(self, bank_id: _Optional[str] = ..., query: _Optional[str] = ..., top_k: _Optional[int] = ..., layers: _Optional[_Iterable[_Union[Layer, str]]] = ..., time_range: _Optional[_Union[_common_pb2.TimeRange, _Mapping]] = ..., session_id: _Optional[str] = ...) -> None: ...

class Memory(_message.Message):
    __slots__ = ("id", "layer", "text", "speaker", "score", "meta", "layers")
    ID_FIELD_NUMBER: _ClassVar[int]
    LAYER_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SPEAKER_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    LAYERS_FIELD_NUMBER: _ClassVar[int]
    id: str
    layer: Layer
    text: str
    speaker: str
    score: float
    meta: _common_pb2.RecordMeta
    layers: _containers.RepeatedScalarFieldContainer[Layer]
    def __init__(self, id: _Optional[str] = ..., layer: _Optional[_Union[Layer, str]] = ..., text: _Optional[str] = ..., speaker: _Optional[str] = ..., score: _Optional[float] = ..., meta: _Optional[_Union[_common_pb2.RecordMeta, _Mapping]] = ..., layers: _Optional[_Iterable[_Union[Layer, str]]] = ...) -> None: ...

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
    __slots__ = ("memories", "partial", "layer_reports")
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_FIELD_NUMBER: _ClassVar[int]
    LAYER_REPORTS_FIELD_NUMBER: _ClassVar[int]
    memories: _containers.RepeatedCompositeFieldContainer[Memory]
    partial: bool
    layer_reports: _containers.RepeatedCompositeFieldContainer[LayerReport]
    def __init__(self, memories: _Optional[_Iterable[_Union[Memory, _Mapping]]] = ..., partial: _Optional[bool] = ..., layer_reports: _Optional[_Iterable[_Union[LayerReport, _Mapping]]] = ...) -> None: ...

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
    __slots__ = ("bank_id", "turn_ids", "hard")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    HARD_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    turn_ids: _containers.RepeatedScalarFieldContainer[str]
    hard: bool
    def __init__(self, bank_id: _Optional[str] = ..., turn_ids: _Optional[_Iterable[str]] = ..., hard: _Optional[bool] = ...) -> None: ...

class ForgetResponse(_message.Message):
    __slots__ = ("forgotten_count", "unindexed_count", "working_removed_count")
    FORGOTTEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    UNINDEXED_COUNT_FIELD_NUMBER: _ClassVar[int]
    WORKING_REMOVED_COUNT_FIELD_NUMBER: _ClassVar[int]
    forgotten_count: int
    unindexed_count: int
    working_removed_count: int
    def __init__(self, forgotten_count: _Optional[int] = ..., unindexed_count: _Optional[int] = ..., working_removed_count: _Optional[int] = ...) -> None: ...

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
