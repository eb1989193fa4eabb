"""The multilingual USE model, the model registry and the inference settings, on the real packaged model."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from hindsight.inference.models import (
    ModelRegistry,
    file_sha256,
    l2_normalise,
    load_models,
    packaged_use_path,
)
from hindsight.inference.settings import DEFAULT_MODEL, InferenceSettings
from hindsight.runtime.errors import InvalidArgument
from hindsight.runtime.settings import SettingsError, load


@pytest.fixture(scope="module")
def registry() -> ModelRegistry:
    """The packaged model, loaded once for this module."""
    return load_models(InferenceSettings())


def _cosine(registry: ModelRegistry, first: str, second: str) -> float:
    vectors = registry.get().embed([first, second])
    return float(vectors[0] @ vectors[1])


def test_the_packaged_model_is_found_without_importing_its_package() -> None:
    path = packaged_use_path()
    assert path.name == "universal-sentence-encoder-multilingual.onnx"
    assert path.is_file()
    assert "nanoranker" not in sys.modules


def test_vectors_are_512_dimensional_unit_length_float32(registry: ModelRegistry) -> None:
    vectors = registry.get().embed(["The cat sleeps.", "猫在睡觉。", "x" * 500])
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


def test_a_model_path_override_replaces_the_packaged_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"HINDSIGHT_EMBED_MODEL_PATH=.*missing\.onnx"):
        load_models(InferenceSettings(model_path=str(tmp_path / "missing.onnx")))
