"""Embedding vectors on the wire: the packed ``bytes`` forms of ``EmbedResponse``, both ways.

A reply of repeated floats costs one Python float per component on each side (32 vectors of 512: ~0.5 ms
to build, ~0.7 ms to read back into numpy); a packed reply is one copy. The inference layer packs, every
client that asks for a packed encoding unpacks here, so both sides agree on byte order and shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hindsight.contracts.inference.v1 import inference_pb2, inference_pb2_grpc
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.embed_stream import shared_embed_stream
from hindsight.runtime.errors import Unavailable

PACKED_DTYPES: dict[int, np.dtype] = {
    inference_pb2.VECTOR_ENCODING_FLOAT32: np.dtype("<f4"),
    inference_pb2.VECTOR_ENCODING_FLOAT16: np.dtype("<f2"),
}
"""Packed encodings and the little-endian element type of each."""


def pack_vectors(vectors: np.ndarray, encoding: int) -> bytes:
    """Rows of ``vectors`` one after the other in ``encoding`` (a packed ``VectorEncoding``)."""
    dtype = PACKED_DTYPES.get(encoding)
    if dtype is None:
        raise ValueError(f"encoding: {encoding} is not a packed vector encoding")
    return np.ascontiguousarray(vectors, dtype=dtype).tobytes()


def unpack_vectors(data: bytes, encoding: int, count: int, dimension: int) -> np.ndarray:
    """``count`` float32 rows of ``dimension`` from packed ``data``; a wrong length is refused."""
    dtype = PACKED_DTYPES.get(encoding)
    if dtype is None:
        raise ValueError(f"encoding: {encoding} is not a packed vector encoding")
    expected = count * dimension * dtype.itemsize
    if len(data) != expected:
        raise ValueError(
            f"vectors: {len(data)} bytes, expected {expected} for {count} x {dimension} "
            f"{inference_pb2.VectorEncoding.Name(encoding)}"
        )
    return np.frombuffer(data, dtype=dtype).astype(np.float32).reshape(count, dimension)


def reply_vectors(reply: inference_pb2.EmbedResponse, count: int) -> np.ndarray:
    """The ``count`` vectors of an ``Embed`` reply as a float32 matrix, whichever encoding carried them."""
    if reply.encoding == inference_pb2.VECTOR_ENCODING_UNSPECIFIED:
        if len(reply.embeddings) != count:
            raise ValueError(f"embeddings: {len(reply.embeddings)} vectors for {count} texts")
        if count == 0:
            return np.zeros((0, reply.dimension), dtype=np.float32)
        rows = [list(embedding.values) for embedding in reply.embeddings]
        if any(len(row) != reply.dimension for row in rows):
            raise ValueError(f"embeddings: a vector is not {reply.dimension}-d")
        return np.array(rows, dtype=np.float32)
    return unpack_vectors(reply.vectors, reply.encoding, count, reply.dimension)


EMBED_BATCH = 128
"""Texts per Embed call from a layer: under the inference layer's default limit (256), large enough to
keep its model busy."""

STREAM_MAX_TEXTS = 16
"""Requests of up to this many texts go as messages on the shared EmbedStream: for them the per-call cost
of a unary call is a large share of the model's. Larger ones go as unary calls (they would hold the
stream's answers up, and their call cost is spread over many texts)."""


@dataclass(frozen=True)
class Embedded:
    """Vectors for a list of texts and the model the inference layer says made them."""

    model: str
    vectors: np.ndarray


async def embed_texts(
    client: LayerClient[inference_pb2_grpc.InferenceServiceStub],
    bank_id: str,
    texts: Sequence[str],
    *,
    model: str = "",
    purpose: inference_pb2.EmbedPurpose = inference_pb2.EMBED_PURPOSE_UNSPECIFIED,
    batch_size: int = EMBED_BATCH,
) -> Embedded:
    """Embed ``texts`` through the inference layer in batches, as packed float32 (one copy per reply).

    Every layer that embeds calls this, so batching, the wire encoding and the checks on a reply's shape
    live in one place. A reply of the wrong size is refused; batches from two models are refused.
    """
    size = max(1, min(batch_size, EMBED_BATCH))
    served = ""
    parts: list[np.ndarray] = []
    for start in range(0, len(texts), size):
        batch = list(texts[start : start + size])
        request = inference_pb2.EmbedRequest(
            bank_id=bank_id,
            texts=batch,
            model=model,
            purpose=purpose,
            encoding=inference_pb2.VECTOR_ENCODING_FLOAT32,
        )
        if len(batch) <= STREAM_MAX_TEXTS:
            reply = await shared_embed_stream(client).embed(request)
        else:
            reply = await client.call("Embed", request)
        if served and reply.model != served:
            raise Unavailable(f"inference layer switched models from {served!r} to {reply.model!r}")
        served = reply.model
        try:
            parts.append(reply_vectors(reply, len(batch)))
        except ValueError as exc:
            raise Unavailable(f"inference layer sent a malformed reply: {exc}") from exc
    if not parts:
        return Embedded(model=model, vectors=np.zeros((0, 0), dtype=np.float32))
    return Embedded(model=served, vectors=np.concatenate(parts) if len(parts) > 1 else parts[0])
