from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EmbedPurpose(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EMBED_PURPOSE_UNSPECIFIED: _ClassVar[EmbedPurpose]
    EMBED_PURPOSE_QUERY: _ClassVar[EmbedPurpose]
    EMBED_PURPOSE_PASSAGE: _ClassVar[EmbedPurpose]

class VectorEncoding(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VECTOR_ENCODING_UNSPECIFIED: _ClassVar[VectorEncoding]
    VECTOR_ENCODING_FLOAT32: _ClassVar[VectorEncoding]
    VECTOR_ENCODING_FLOAT16: _ClassVar[VectorEncoding]
EMBED_PURPOSE_UNSPECIFIED: EmbedPurpose
EMBED_PURPOSE_QUERY: EmbedPurpose
EMBED_PURPOSE_PASSAGE: EmbedPurpose
VECTOR_ENCODING_UNSPECIFIED: VectorEncoding
VECTOR_ENCODING_FLOAT32: VectorEncoding
VECTOR_ENCODING_FLOAT16: VectorEncoding

class EmbedRequest(_message.Message):
    __slots__ = ("bank_id", "texts", "model", "purpose", "encoding")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    TEXTS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PURPOSE_FIELD_NUMBER: _ClassVar[int]
    ENCODING_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    texts: _containers.RepeatedScalarFieldContainer[str]
    model: str
    purpose: EmbedPurpose
    encoding: VectorEncoding
    def __init__(self, bank_id: _Optional[str] = ..., texts: _Optional[_Iterable[str]] = ..., model: _Optional[str] = ..., purpose: _Optional[_Union[EmbedPurpose, str]] = ..., encoding: _Optional[_Union[VectorEncoding, str]] = ...) -> None: ...

class Embedding(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, values: _Optional[_Iterable[float]] = ...) -> None: ...

class EmbedResponse(_message.Message):
    __slots__ = ("embeddings", "model", "dimension", "truncated_indices", "vectors", "encoding")
    EMBEDDINGS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_INDICES_FIELD_NUMBER: _ClassVar[int]
    VECTORS_FIELD_NUMBER: _ClassVar[int]
    ENCODING_FIELD_NUMBER: _ClassVar[int]
    embeddings: _containers.RepeatedCompositeFieldContainer[Embedding]
    model: str
    dimension: int
    truncated_indices: _containers.RepeatedScalarFieldContainer[int]
    vectors: bytes
    encoding: VectorEncoding
    def __init__(self, embeddings: _Optional[_Iterable[_Union[Embedding, _Mapping]]] = ..., model: _Optional[str] = ..., dimension: _Optional[int] = ..., truncated_indices: _Optional[_Iterable[int]] = ..., vectors: _Optional[bytes] = ..., encoding: _Optional[_Union[VectorEncoding, str]] = ...) -> None: ...

class EmbedStreamRequest(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[EmbedStreamItem]
    def __init__(self, items: _Optional[_Iterable[_Union[EmbedStreamItem, _Mapping]]] = ...) -> None: ...

class EmbedStreamItem(_message.Message):
    __slots__ = ("id", "request", "request_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    request: EmbedRequest
    request_id: str
    def __init__(self, id: _Optional[int] = ..., request: _Optional[_Union[EmbedRequest, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class EmbedStreamResponse(_message.Message):
    __slots__ = ("answers",)
    ANSWERS_FIELD_NUMBER: _ClassVar[int]
    answers: _containers.RepeatedCompositeFieldContainer[EmbedStreamAnswer]
    def __init__(self, answers: _Optional[_Iterable[_Union[EmbedStreamAnswer, _Mapping]]] = ...) -> None: ...

class EmbedStreamAnswer(_message.Message):
    __slots__ = ("id", "reply", "error")
    ID_FIELD_NUMBER: _ClassVar[int]
    REPLY_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    id: int
    reply: EmbedResponse
    error: EmbedStreamError
    def __init__(self, id: _Optional[int] = ..., reply: _Optional[_Union[EmbedResponse, _Mapping]] = ..., error: _Optional[_Union[EmbedStreamError, _Mapping]] = ...) -> None: ...

class EmbedStreamError(_message.Message):
    __slots__ = ("code", "message")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class ModelInfoRequest(_message.Message):
    __slots__ = ("model",)
    MODEL_FIELD_NUMBER: _ClassVar[int]
    model: str
    def __init__(self, model: _Optional[str] = ...) -> None: ...

class ModelInfoResponse(_message.Message):
    __slots__ = ("name", "dimension", "max_length", "content_hash", "models", "rerankers")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    MAX_LENGTH_FIELD_NUMBER: _ClassVar[int]
    CONTENT_HASH_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    RERANKERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    dimension: int
    max_length: int
    content_hash: str
    models: _containers.RepeatedScalarFieldContainer[str]
    rerankers: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., dimension: _Optional[int] = ..., max_length: _Optional[int] = ..., content_hash: _Optional[str] = ..., models: _Optional[_Iterable[str]] = ..., rerankers: _Optional[_Iterable[str]] = ...) -> None: ...

class RerankRequest(_message.Message):
    __slots__ = ("bank_id", "query", "documents", "model")
    BANK_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    bank_id: str
    query: str
    documents: _containers.RepeatedScalarFieldContainer[str]
    model: str
    def __init__(self, bank_id: _Optional[str] = ..., query: _Optional[str] = ..., documents: _Optional[_Iterable[str]] = ..., model: _Optional[str] = ...) -> None: ...

class RerankResponse(_message.Message):
    __slots__ = ("scores", "model", "truncated_indices")
    SCORES_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_INDICES_FIELD_NUMBER: _ClassVar[int]
    scores: _containers.RepeatedScalarFieldContainer[float]
    model: str
    truncated_indices: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, scores: _Optional[_Iterable[float]] = ..., model: _Optional[str] = ..., truncated_indices: _Optional[_Iterable[int]] = ...) -> None: ...
