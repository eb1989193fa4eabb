"""The inference service through a real gRPC server on loopback, with the real packaged model."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from hindsight.bench import inference as bench
from hindsight.contracts.inference.v1 import inference_pb2, inference_pb2_grpc
from hindsight.inference.models import file_sha256, packaged_use_path
from hindsight.inference.service import SERVICE_NAME, open_service
from hindsight.inference.settings import InferenceSettings
from hindsight.runtime.testing import channel_to, serving
from hindsight.runtime.vectors import reply_vectors

BANK = "bank-inference"


@pytest.fixture(scope="module")
async def channel() -> AsyncIterator[grpc.aio.Channel]:
    """One server (one model load) for every test in this module."""
    settings = InferenceSettings(max_texts=8, max_documents=8)
    async with serving(lambda: open_service(settings)) as server, channel_to(server) as channel:
        yield channel


@pytest.fixture
def stub(channel: grpc.aio.Channel) -> inference_pb2_grpc.InferenceServiceStub:
    return inference_pb2_grpc.InferenceServiceStub(channel)


async def _embed(stub: inference_pb2_grpc.InferenceServiceStub, *texts: str, model: str = "") -> np.ndarray:
    reply = await stub.Embed(inference_pb2.EmbedRequest(bank_id=BANK, texts=texts, model=model), timeout=10)
    assert reply.model == "use-multilingual-v3"
    assert reply.dimension == 512
    return np.array([list(e.values) for e in reply.embeddings], dtype=np.float32)


async def _status(
    stub: inference_pb2_grpc.InferenceServiceStub, request: object, method: str = "Embed"
) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await getattr(stub, method)(request, timeout=10)
    return error.value


async def test_readiness_reports_serving_once_the_model_is_warm(channel: grpc.aio.Channel) -> None:
    health = health_pb2_grpc.HealthStub(channel)
    statuses = []
    watch = health.Watch(health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=5)
    async for reply in watch:
        statuses.append(reply.status)
        if reply.status == health_pb2.HealthCheckResponse.SERVING:
            break
    watch.cancel()
    assert statuses[-1] == health_pb2.HealthCheckResponse.SERVING


async def test_embed_returns_one_unit_vector_of_512_dimensions_per_text_in_order(
    stub: inference_pb2_grpc.InferenceServiceStub,
) -> None:
    vectors = await _embed(stub, "The cat is sleeping on the sofa.", "上个季度利率大幅上升。")
    assert vectors.shape == (2, 512)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    alone = await _embed(stub, "上个季度利率大幅上升。")
    assert float(vectors[1] @ alone[0]) > 0.99


async def test_paraphrases_are_closer_than_unrelated_text_within_and_across_languages(
    stub: inference_pb2_grpc.InferenceServiceStub,
) -> None:
    cat_en, nap_en, rates_en, cat_zh, nap_zh, rates_zh = await _embed(
        stub,
        "The cat is sleeping on the sofa.",
        "A cat naps on the couch.",
        "Interest rates rose sharply last quarter.",
        "猫正在沙发上睡觉。",
        "一只猫在长沙发上打盹。",
        "上个季度利率大幅上升。",
    )
    assert cat_en @ nap_en > cat_en @ rates_en + 0.3
    assert cat_zh @ nap_zh > cat_zh @ rates_zh + 0.3
    assert cat_en @ cat_zh > cat_en @ rates_zh + 0.3
    assert rates_zh @ rates_en > rates_zh @ nap_en + 0.3


async def test_concurrent_calls_all_answer(stub: inference_pb2_grpc.InferenceServiceStub) -> None:
    texts = [f"Note {i}: the deploy finished." for i in range(20)]
    results = await asyncio.gather(*(_embed(stub, text) for text in texts))
    assert all(result.shape == (1, 512) for result in results)


async def test_packed_encodings_carry_the_same_vectors_as_repeated_floats(
    stub: inference_pb2_grpc.InferenceServiceStub,
) -> None:
    texts = ["The cat is sleeping on the sofa.", "猫正在沙发上睡觉。", "long " * 20_000]
    plain = await stub.Embed(inference_pb2.EmbedRequest(bank_id=BANK, texts=texts), timeout=10)
    expected = reply_vectors(plain, 3)
    for encoding, tolerance in (
        (inference_pb2.VECTOR_ENCODING_FLOAT32, 0.0),
        (inference_pb2.VECTOR_ENCODING_FLOAT16, 1e-3),
    ):
        reply = await stub.Embed(
            inference_pb2.EmbedRequest(bank_id=BANK, texts=texts, encoding=encoding), timeout=10
        )
        assert (reply.encoding, reply.model, reply.dimension) == (encoding, plain.model, 512)
        assert len(reply.embeddings) == 0
        assert list(reply.truncated_indices) == [2]
        np.testing.assert_allclose(reply_vectors(reply, 3), expected, atol=tolerance, rtol=0)
    empty = await stub.Embed(
        inference_pb2.EmbedRequest(bank_id=BANK, encoding=inference_pb2.VECTOR_ENCODING_FLOAT32), timeout=10
    )
    assert (empty.vectors, reply_vectors(empty, 0).shape) == (b"", (0, 512))


async def test_an_unknown_vector_encoding_is_rejected_naming_encoding(
    stub: inference_pb2_grpc.InferenceServiceStub,
) -> None:
    error = await _status(stub, inference_pb2.EmbedRequest(bank_id=BANK, texts=["x"], encoding=7))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (error.details() or "").startswith("encoding: unknown vector encoding 7")


async def test_a_generated_request_id_is_echoed_and_one_the_caller_sent_is_not(
    stub: inference_pb2_grpc.InferenceServiceStub,
) -> None:
    request = inference_pb2.EmbedRequest(bank_id=BANK, texts=["x"])
    generated = stub.Embed(request, timeout=10)
    echoed = dict(await generated.initial_metadata())
    assert re.fullmatch(r"[0-9a-f]{32}", str(echoed["x-request-id"]))
    await generated
    known = stub.Embed(request, timeout=10, metadata=(("x-request-id", "caller-chose-this"),))
    assert "x-request-id" not in dict(await known.initial_metadata())
    assert len((await known).embeddings) == 1


async def test_an_empty_request_names_the_model_and_returns_no_vectors(
    stub: inference_pb2_grpc.InferenceServiceStub,
) -> None:
    assert (await _embed(stub)).shape == (0,)


async def test_too_many_texts_are_rejected_naming_texts(
    stub: inference_pb2_grpc.InferenceServiceStub,
) -> None:
    error = await _status(stub, inference_pb2.EmbedRequest(bank_id=BANK, texts=["x"] * 9))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (error.details() or "").startswith("texts: at most 8 texts per request")


async def test_awkward_texts_embed_without_error_and_long_ones_are_reported_as_truncated(
    stub: inference_pb2_grpc.InferenceServiceStub,
) -> None:
    texts = ["", "  \n", "😀🎉🚀", "Mixed 中文 and English, русский, العربية", "long " * 20_000]
    for model in ("", "minilm-l6-v2"):
        reply = await stub.Embed(
            inference_pb2.EmbedRequest(bank_id=BANK, texts=texts, model=model), timeout=30
        )
        vectors = np.array([list(e.values) for e in reply.embeddings], dtype=np.float32)
        assert vectors.shape == (5, reply.dimension)
        assert np.all(np.isfinite(vectors))
        assert list(reply.truncated_indices) == [4]


async def test_the_english_model_is_served_under_its_name_beside_the_default(
    stub: inference_pb2_grpc.InferenceServiceStub,
) -> None:
    reply = await stub.Embed(
        inference_pb2.EmbedRequest(
            bank_id=BANK,
            texts=["The cat is sleeping on the sofa.", "A cat naps on the couch.", "Rates rose."],
            model="minilm-l6-v2",
            purpose=inference_pb2.EMBED_PURPOSE_QUERY,
        ),
        timeout=10,
    )
    assert (reply.model, reply.dimension) == ("minilm-l6-v2", 384)
    cat, nap, rates = (np.array(e.values) for e in reply.embeddings)
    assert cat @ nap > cat @ rates + 0.4


async def test_rerank_scores_every_document_in_order_with_the_default_reranker(
    stub: inference_pb2_grpc.InferenceServiceStub,
) -> None:
    documents = ["Interest rates rose sharply last quarter.", "The cat is sleeping on the sofa.", ""]
    reply = await stub.Rerank(
        inference_pb2.RerankRequest(bank_id=BANK, query="Where does the cat sleep?", documents=documents),
        timeout=10,
    )
    assert reply.model == "bi-encoder"
    assert len(reply.scores) == 3
    assert reply.scores[1] > reply.scores[0]
    empty = await stub.Rerank(inference_pb2.RerankRequest(bank_id=BANK, query="q"), timeout=10)
    assert (empty.model, list(empty.scores)) == ("bi-encoder", [])


async def test_too_many_documents_or_an_unknown_reranker_are_invalid_arguments(
    stub: inference_pb2_grpc.InferenceServiceStub,
) -> None:
    error = await _status(
        stub, inference_pb2.RerankRequest(bank_id=BANK, query="q", documents=["d"] * 9), "Rerank"
    )
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (error.details() or "").startswith("documents: at most 8 documents")
    error = await _status(
        stub, inference_pb2.RerankRequest(bank_id=BANK, query="q", documents=["d"], model="bge"), "Rerank"
    )
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (error.details() or "").startswith("model: unknown reranker 'bge'")


async def test_an_unknown_model_is_rejected_naming_model_in_both_methods(
    stub: inference_pb2_grpc.InferenceServiceStub,
) -> None:
    embed_error = await _status(stub, inference_pb2.EmbedRequest(bank_id=BANK, texts=["x"], model="gpt-9"))
    info_error = await _status(stub, inference_pb2.ModelInfoRequest(model="gpt-9"), "ModelInfo")
    for error in (embed_error, info_error):
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert (error.details() or "").startswith("model:")


async def test_a_request_without_a_bank_is_rejected(stub: inference_pb2_grpc.InferenceServiceStub) -> None:
    error = await _status(stub, inference_pb2.EmbedRequest(texts=["x"]))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "bank_id" in (error.details() or "")


async def test_model_info_gives_the_dimension_and_the_hash_of_the_model_file(
    stub: inference_pb2_grpc.InferenceServiceStub,
) -> None:
    for name in ("", "use-multilingual-v3"):
        info = await stub.ModelInfo(inference_pb2.ModelInfoRequest(model=name), timeout=10)
        assert (info.name, info.dimension, info.max_length) == ("use-multilingual-v3", 512, 0)
        assert re.fullmatch(r"[0-9a-f]{64}", info.content_hash)
        assert info.content_hash == file_sha256(packaged_use_path())
        assert list(info.models) == ["minilm-l6-v2", "use-minilm-blend", "use-multilingual-v3"]
        assert list(info.rerankers) == ["bi-encoder"]
    minilm = await stub.ModelInfo(inference_pb2.ModelInfoRequest(model="minilm-l6-v2"), timeout=10)
    assert (minilm.dimension, minilm.max_length) == (384, 256)


async def test_the_inference_bench_measures_every_mode_against_a_real_service_process(
    tmp_path: Path,
) -> None:
    args = argparse.Namespace(
        model="",
        texts=8,
        batch=4,
        concurrency=2,
        repeats=2,
        threads=1,
        runs=2,
        encoding="float16",
        json=tmp_path / "figures.json",
    )
    figures = await bench.measure(args)
    for key in ("raw_per_s", "service_batch_per_s", "service_concurrent_per_s", "p50_ms", "p95_ms", "rss_mb"):
        assert figures[key] > 0, key
    for key in ("service_stream_per_s", "stream_p50_ms", "stream_service_cpu_ms_per_text"):
        assert figures[key] > 0, key
    assert 0 < figures["stream_vs_batch_p25"] <= figures["stream_vs_batch_p75"]
    assert figures["raw_one_run_per_s"] > 0  # two runs: the one-run baseline is measured too
    assert (figures["runs"], figures["threads"], figures["encoding"]) == (2, 1, "float16")
    assert len(figures["rounds"]) == 2
    assert figures["concurrent_service_cpu_ms_per_text"] > 0
    assert 0 < figures["concurrent_vs_batch_p25"] <= figures["concurrent_vs_batch_p75"]
    json.dumps(figures)  # what --json writes
