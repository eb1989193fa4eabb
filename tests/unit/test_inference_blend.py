"""The packaged blend: USE and MiniLM in one vector, MiniLM read only for Latin-script texts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hindsight.inference.blend import QUERY_MARK, BlendedEmbedder
from hindsight.inference.loading import load_models
from hindsight.inference.models import ModelRegistry
from hindsight.inference.settings import BLEND_MODEL, DEFAULT_MODEL, MINILM_MODEL, InferenceSettings
from hindsight.runtime.settings import SettingsError, load


@pytest.fixture(scope="module")
def registry() -> ModelRegistry:
    """The packaged models, loaded once for this module."""
    return load_models(InferenceSettings())


def _cosine(registry: ModelRegistry, model: str, first: str, second: str) -> float:
    vectors = registry.get(model).embed([first, second]).vectors
    return float(vectors[0] @ vectors[1])


def test_blend_vectors_are_unit_length_and_as_wide_as_both_models(registry: ModelRegistry) -> None:
    blend = registry.get(BLEND_MODEL)
    vectors = blend.embed(["The cat sleeps.", "猫在睡觉。", ""]).vectors
    assert blend.dimension == 512 + 384 == vectors.shape[1]
    np.testing.assert_allclose(np.linalg.norm(vectors[:2], axis=1), 1.0, atol=1e-5)


def test_two_english_texts_get_the_weighted_mean_of_both_models_cosines(registry: ModelRegistry) -> None:
    first, second = "I adopted a puppy last weekend.", "We got a new dog a few days ago."
    use = _cosine(registry, DEFAULT_MODEL, first, second)
    minilm = _cosine(registry, MINILM_MODEL, first, second)
    assert _cosine(registry, BLEND_MODEL, first, second) == pytest.approx(0.5 * use + 0.5 * minilm, abs=1e-4)


def test_chinese_texts_are_read_by_use_alone(registry: ModelRegistry) -> None:
    first, second = "我上周领养了一只小狗。", "我们前几天养了一条新狗。"
    vectors = registry.get(BLEND_MODEL).embed([first, second]).vectors
    assert not vectors[:, 512:].any()
    use = _cosine(registry, DEFAULT_MODEL, first, second)
    assert float(vectors[0] @ vectors[1]) == pytest.approx(use, abs=1e-4)


def test_the_weight_moves_the_english_cosine_between_the_two_models(registry: ModelRegistry) -> None:
    first, second = "My sister moved to Lisbon.", "She relocated to Portugal's capital."
    use, minilm = registry.get(DEFAULT_MODEL), registry.get(MINILM_MODEL)
    for weight in (0.0, 0.3, 1.0):
        vectors = BlendedEmbedder("b", use, minilm, weight).embed([first, second]).vectors
        expected = (1 - weight) * _cosine(registry, DEFAULT_MODEL, first, second) + weight * _cosine(
            registry, MINILM_MODEL, first, second
        )
        assert float(vectors[0] @ vectors[1]) == pytest.approx(expected, abs=1e-4)


def test_the_identity_changes_with_the_weight(registry: ModelRegistry) -> None:
    use, minilm = registry.get(DEFAULT_MODEL), registry.get(MINILM_MODEL)
    hashes = {BlendedEmbedder("b", use, minilm, weight).content_hash for weight in (0.3, 0.5, 0.7)}
    assert len(hashes) == 3
    with pytest.raises(ValueError, match="english_weight"):
        BlendedEmbedder("b", use, minilm, 1.5)


def test_settings_name_the_variable_when_the_blend_cannot_be_built() -> None:
    with pytest.raises(SettingsError, match="HINDSIGHT_EMBED_BLEND_WEIGHT"):
        load(InferenceSettings, {"HINDSIGHT_EMBED_BLEND_WEIGHT": "1.2"})
    with pytest.raises(SettingsError, match=f"{BLEND_MODEL} reads"):
        load(InferenceSettings, {"HINDSIGHT_EMBED_PACKAGED": f"{DEFAULT_MODEL},{BLEND_MODEL}"})


def test_a_long_query_is_read_by_minilm_from_its_end(registry: ModelRegistry) -> None:
    blend = registry.get(BLEND_MODEL)
    opening = " ".join(["We talked about the weather and the traffic on the way in."] * 25)  # > 256 pieces
    question = "Which restaurant did my sister recommend for the anniversary dinner?"
    as_query, as_text = blend.embed([QUERY_MARK + f"{opening} {question}", f"{opening} {question}"]).vectors
    end_alone = registry.get(MINILM_MODEL).embed([question]).vectors[0]
    english_half = slice(512, None)
    closeness = [float(v[english_half] @ end_alone) / math.sqrt(0.5) for v in (as_query, as_text)]
    assert closeness[0] > closeness[1] + 0.2  # the query kept its question; the stored text kept its opening
    np.testing.assert_allclose(as_query[:512], as_text[:512], atol=1e-6)  # USE reads both whole


def test_a_short_query_gets_the_same_vector_as_the_same_stored_text(registry: ModelRegistry) -> None:
    text = "Where did Caroline go hiking last summer?"
    as_query, as_text = registry.get(BLEND_MODEL).embed([QUERY_MARK + text, text]).vectors
    np.testing.assert_allclose(as_query, as_text, atol=1e-5)
