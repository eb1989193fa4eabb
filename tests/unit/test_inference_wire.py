"""Packed vector encodings of ``EmbedResponse``: what the inference layer packs, clients unpack exactly."""

from __future__ import annotations

import numpy as np
import pytest

from hindsight.contracts.inference.v1 import inference_pb2
from hindsight.runtime.vectors import pack_vectors, reply_vectors, unpack_vectors

FLOAT32 = inference_pb2.VECTOR_ENCODING_FLOAT32
FLOAT16 = inference_pb2.VECTOR_ENCODING_FLOAT16


def _unit_rows(count: int, dimension: int) -> np.ndarray:
    rows = np.random.default_rng(7).normal(size=(count, dimension)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_float32_round_trips_bit_for_bit_through_a_serialised_reply() -> None:
    vectors = _unit_rows(5, 512)
    reply = inference_pb2.EmbedResponse(
        vectors=pack_vectors(vectors, FLOAT32), encoding=FLOAT32, dimension=512, model="m"
    )
    wire = inference_pb2.EmbedResponse.FromString(reply.SerializeToString())
    decoded = reply_vectors(wire, 5)
    assert decoded.dtype == np.float32
    np.testing.assert_array_equal(decoded, vectors)
    assert len(wire.vectors) == 5 * 512 * 4


def test_float16_halves_the_bytes_and_keeps_cosines_to_three_decimals() -> None:
    vectors = _unit_rows(8, 384)
    data = pack_vectors(vectors, FLOAT16)
    assert len(data) == 8 * 384 * 2
    decoded = unpack_vectors(data, FLOAT16, 8, 384)
    assert decoded.dtype == np.float32
    np.testing.assert_allclose(decoded, vectors, atol=1e-3)
    np.testing.assert_allclose(decoded @ decoded.T, vectors @ vectors.T, atol=2e-3)


def test_the_byte_order_is_little_endian_whatever_the_input() -> None:
    vectors = np.array([[1.0, -2.5]], dtype=">f4")  # big-endian input must still go out little-endian
    assert pack_vectors(vectors, FLOAT32) == np.array([1.0, -2.5], dtype="<f4").tobytes()


def test_repeated_floats_are_read_the_same_way() -> None:
    vectors = _unit_rows(3, 16)
    reply = inference_pb2.EmbedResponse(dimension=16)
    for row in vectors:
        reply.embeddings.add(values=row.tolist())
    np.testing.assert_array_equal(reply_vectors(reply, 3), vectors)
    assert reply_vectors(inference_pb2.EmbedResponse(dimension=16), 0).shape == (0, 16)


def test_a_reply_of_the_wrong_size_is_refused_naming_the_field() -> None:
    data = pack_vectors(_unit_rows(2, 16), FLOAT32)
    with pytest.raises(ValueError, match=r"^vectors: 128 bytes, expected 192 for 3 x 16"):
        unpack_vectors(data, FLOAT32, 3, 16)
    short = inference_pb2.EmbedResponse(dimension=16)
    short.embeddings.add(values=[0.0] * 16)
    with pytest.raises(ValueError, match=r"^embeddings: 1 vectors for 2 texts"):
        reply_vectors(short, 2)
    ragged = inference_pb2.EmbedResponse(dimension=16)
    ragged.embeddings.add(values=[0.0] * 15)
    with pytest.raises(ValueError, match=r"^embeddings: a vector is not 16-d"):
        reply_vectors(ragged, 1)


def test_an_unknown_encoding_is_refused_naming_the_field() -> None:
    with pytest.raises(ValueError, match=r"^encoding: 9 is not a packed"):
        pack_vectors(_unit_rows(1, 4), 9)
    with pytest.raises(ValueError, match=r"^encoding: 0 is not a packed"):
        unpack_vectors(b"", inference_pb2.VECTOR_ENCODING_UNSPECIFIED, 0, 4)
