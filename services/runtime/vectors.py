"""Embedding vectors on the wire: the packed ``bytes`` forms of ``EmbedResponse``, both ways.

A reply of repeated floats costs one Python float per component on each side (32 vectors of 512: ~0.5 ms
to build, ~0.7 ms to read back into numpy); a packed reply is one copy. The inference layer packs, every
client that asks for a packed encoding unpacks here, so both sides agree on byte order and shape.
"""

from __future__ import annotations

import numpy as np

from hindsight.contracts.inference.v1 import inference_pb2

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
